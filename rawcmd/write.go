package rawcmd

import (
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// Write is a legacy uverbs command (IB_USER_VERBS_CMD_*) sent through the UVERBS_METHOD_INVOKE_WRITE ioctl
// tunnel, as rdma-core does on every kernel that has it (4.20+).
//
// CoreIn is the command's core request struct WITHOUT the 8-byte struct ib_uverbs_cmd_hdr; for non-extended
// commands it still begins with the legacy 'response' u64, whose value the kernel ignores on this path (it
// writes the core response to CoreOut instead). For extended commands (Cmd has IB_USER_VERBS_CMD_FLAG_EXTENDED)
// CoreIn is the core request after the 24 bytes of headers. UHWIn / UHWOut are the driver's request and
// response (udata). Any part of zero length is left out.
type Write struct {
	Cmd     uint32
	CoreIn  []byte
	CoreOut []byte
	UHWIn   []byte
	UHWOut  []byte
}

// InvokeWrite sends w on fd, addressed to driverID, using (and resetting) c.
func (c *Cmd) InvokeWrite(fd int, driverID uint32, w *Write) error {
	c.SetWrite(driverID, w)
	return c.Invoke(fd)
}

// SetWrite resets c to the INVOKE_WRITE tunnel of w, addressed to driverID, without sending it: a command
// that is sent many times unchanged (or with only its inline core request changed) is built once. When
// w.CoreIn is not empty it is attribute 0, carried inline in Attrs[0].Data when it is at most 8 bytes long.
func (c *Cmd) SetWrite(driverID uint32, w *Write) {
	c.Reset(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE, driverID)
	if len(w.CoreIn) > 0 {
		c.BytesIn(abi.UVERBS_ATTR_CORE_IN, w.CoreIn)
	}
	if len(w.CoreOut) > 0 {
		c.BytesOut(abi.UVERBS_ATTR_CORE_OUT, w.CoreOut)
	}
	c.ConstIn(abi.UVERBS_ATTR_WRITE_CMD, uint64(w.Cmd))
	if len(w.UHWIn) > 0 {
		c.BytesIn(abi.UVERBS_ATTR_UHW_IN, w.UHWIn)
	}
	if len(w.UHWOut) > 0 {
		c.BytesOut(abi.UVERBS_ATTR_UHW_OUT, w.UHWOut)
	}
}

// Bytes views the memory of *p (a fixed-size ABI struct) as a byte slice, for CoreIn/CoreOut/UHW fields.
func Bytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

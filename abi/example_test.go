package abi_test

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// An ioctl request is one buffer: the 24-byte header followed by the
// attribute array (the flexible array member attrs[] of the C struct).
func ExampleIbUverbsIoctlHdr() {
	type request struct {
		hdr   abi.IbUverbsIoctlHdr
		attrs [2]abi.IbUverbsAttr
	}
	var r request
	r.hdr = abi.IbUverbsIoctlHdr{
		Length:   uint16(unsafe.Sizeof(r)),
		ObjectId: abi.UVERBS_OBJECT_DEVICE,
		MethodId: abi.UVERBS_METHOD_INVOKE_WRITE,
		NumAttrs: uint16(len(r.attrs)),
		DriverId: abi.RDMA_DRIVER_RXE,
	}
	r.attrs[0] = abi.IbUverbsAttr{AttrId: abi.UVERBS_ATTR_WRITE_CMD, Len: 8, Flags: abi.UVERBS_ATTR_F_MANDATORY,
		Data: abi.IB_USER_VERBS_CMD_ALLOC_PD}
	r.attrs[1] = abi.IbUverbsAttr{AttrId: abi.UVERBS_ATTR_UHW_IN}
	fmt.Println(r.hdr.Length, unsafe.Offsetof(r.attrs) == abi.SizeofIbUverbsIoctlHdr)
	fmt.Printf("ioctl %#x\n", abi.RDMA_VERBS_IOCTL)
	// Output:
	// 56 true
	// ioctl 0xc0181b01
}

// Union members are reached through accessor methods that point into the
// union's storage.
func ExampleIbUverbsAttr_EnumData() {
	var attr abi.IbUverbsAttr
	attr.EnumData().ElemId = 3
	fmt.Println(attr.AttrData)
	// Output: [3 0]
}

func ExampleRxeSendWr_Ud() {
	var wqe abi.RxeSendWqe
	wqe.Wr.Opcode = abi.IB_UVERBS_WR_SEND
	ud := wqe.Wr.Ud()
	ud.RemoteQpn = 0x11
	ud.RemoteQkey = 0x11111111
	ud.AhNum = 2
	// remote_qpn is the first word of the union, ah_num the fourth.
	fmt.Println(binary.NativeEndian.Uint32(wqe.Wr.Wr[0:]), binary.NativeEndian.Uint32(wqe.Wr.Wr[12:]))
	// Output: 17 2
}

package uverbs

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// XRCD is an XRC domain.
type XRCD struct {
	ctx    *Context
	handle uint32
	life
}

// XRCDFlags are OpenXRCD's open flags (the open(2) flags ibv_open_xrcd takes).
type XRCDFlags uint32

// XRC domain open flags.
const (
	XRCDCreate    XRCDFlags = unix.O_CREAT // create the domain if the file has none
	XRCDExclusive XRCDFlags = unix.O_EXCL  // with XRCDCreate: fail if the file already has one
)

// OpenXRCD opens an XRC domain (ibv_open_xrcd) associated with the file fd (-1 for none). Devices without XRC
// (rxe) answer ErrNotSupported.
func (c *Context) OpenXRCD(fd int, flags XRCDFlags) (*XRCD, error) {
	if err := c.addObject(); err != nil {
		return nil, wrap("open XRCD", c.dev.Name, err)
	}
	in := &abi.IbUverbsOpenXrcd{Fd: uint32(int32(fd)), Oflags: uint32(flags)}
	out := new(abi.IbUverbsOpenXrcdResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_OPEN_XRCD, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		c.dropObject()
		return nil, wrap("open XRCD", c.dev.Name, err)
	}
	return &XRCD{ctx: c, handle: out.XrcdHandle}, nil
}

// Handle is the kernel's handle.
func (x *XRCD) Handle() uint32 { return x.handle }

// Close closes the XRC domain (ibv_close_xrcd).
func (x *XRCD) Close() error {
	if x == nil {
		return nil
	}
	return x.life.close(func() error {
		if err := x.ctx.destroyObject(abi.UVERBS_OBJECT_XRCD, abi.UVERBS_METHOD_XRCD_DESTROY, abi.UVERBS_ATTR_DESTROY_XRCD_HANDLE, x.handle); err != nil {
			return wrap("close XRCD", x.ctx.dev.Name, err)
		}
		x.ctx.dropObject()
		return nil
	})
}

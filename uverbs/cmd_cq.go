package uverbs

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// The CQ commands, as rdma-core's cmd_cq.c: each builds one kernel command and returns what the kernel made.

// cqCreated is what CQ_CREATE made.
type cqCreated struct {
	created bool // the kernel object exists (destroy it if the provider then fails)
	handle  uint32
	cqe     int
}

// cmdCreateCQ issues CQ_CREATE for req (the provider's sizing of the caller's attributes) on channel (nil for
// none), with the kernel's CQ flags (IB_UVERBS_CQ_FLAGS_*; sent only when not 0, as libibverbs does) and the
// provider's driver data.
func (c *Context) cmdCreateCQ(channel *CompChannel, kflags uint32, req provider.CQParams, uhwIn, uhwOut []byte) (cqCreated, error) {
	respCQE := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE)
	h := cmd.NewObject(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_CQ_CQE, uint32(req.CQE))
	cmd.U64In(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, req.Handle)
	if channel != nil {
		cmd.FD(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, channel.fd)
	}
	if kflags != 0 {
		cmd.U32In(abi.UVERBS_ATTR_CREATE_CQ_FLAGS, kflags)
	}
	cmd.U32In(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, req.CompVector)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, ptr(respCQE), 4)
	cmd.Optional(cmd.FD(abi.UVERBS_ATTR_CREATE_CQ_EVENT_FD, c.asyncFD))
	addUHW(cmd, uhwIn, uhwOut)
	if err := cmd.Invoke(c.fd); err != nil {
		return cqCreated{}, err
	}
	return cqCreated{created: true, handle: cmd.Handle(h), cqe: int(*respCQE)}, nil
}

// cmdDestroyCQ issues CQ_DESTROY; the response counts the completion and async events the kernel reported.
func (c *Context) cmdDestroyCQ(handle uint32) (*abi.IbUverbsDestroyCqResp, error) {
	resp := new(abi.IbUverbsDestroyCqResp)
	cmd := c.newCmd(abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_DESTROY)
	cmd.Object(abi.UVERBS_ATTR_DESTROY_CQ_HANDLE, handle)
	cmd.PtrOut(abi.UVERBS_ATTR_DESTROY_CQ_RESP, ptr(resp), int(abi.SizeofIbUverbsDestroyCqResp))
	return resp, cmd.Invoke(c.fd)
}

// cmdResizeCQ issues RESIZE_CQ for at least cqe entries and returns the kernel's new size.
func (c *Context) cmdResizeCQ(handle uint32, cqe int, uhwIn, uhwOut []byte) (int, error) {
	in := &abi.IbUverbsResizeCq{CqHandle: handle, Cqe: uint32(cqe)}
	out := new(abi.IbUverbsResizeCqResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_RESIZE_CQ, CoreIn: rawcmd.Bytes(in),
		CoreOut: rawcmd.Bytes(out), UHWIn: uhwIn, UHWOut: uhwOut}); err != nil {
		return 0, err
	}
	return int(out.Cqe), nil
}

// cmdModifyCQ issues the extended MODIFY_CQ command with moderation (IB_CQ_MODERATE, its only attribute).
func (c *Context) cmdModifyCQ(handle uint32, m CQModeration) error {
	in := &abi.IbUverbsExModifyCq{CqHandle: handle, AttrMask: 1, Attr: abi.IbUverbsCqModeration{CqCount: m.Count, CqPeriod: m.Period}}
	return c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_EX_CMD_MODIFY_CQ | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED, CoreIn: rawcmd.Bytes(in)})
}

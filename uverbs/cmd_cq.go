package uverbs

import "github.com/goverbs/goverbs/uverbs/abi"

// The CQ commands, as rdma-core's cmd_cq.c: each builds one kernel command and returns what the kernel made.

// cqCreated is what CQ_CREATE made.
type cqCreated struct {
	created bool // the kernel object exists (destroy it if the provider then fails)
	handle  uint32
	cqe     int
}

// cmdCreateCQ issues CQ_CREATE for at least cqe entries with the provider's driver data.
func (c *Context) cmdCreateCQ(attr *CQAttr, uhandle uint64, cqe uint32, uhwIn, uhwOut []byte) (cqCreated, error) {
	respCQE := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE)
	h := cmd.NewObject(abi.UVERBS_ATTR_CREATE_CQ_HANDLE)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_CQ_CQE, cqe)
	cmd.U64In(abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, uhandle)
	if attr.Channel != nil {
		cmd.FD(abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, attr.Channel.fd)
	}
	cmd.U32In(abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, uint32(attr.CompVector))
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

package uverbs

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
)

// The SRQ commands, as rdma-core's cmd_srq.c: each builds one kernel command and returns what the kernel made.

// srqCreated is what SRQ_CREATE made.
type srqCreated struct {
	created       bool // the kernel object exists (destroy it if the provider then fails)
	handle        uint32
	maxWR, maxSGE uint32
	srqn          uint32
}

// cmdCreateSRQ issues SRQ_CREATE (basic, or XRC with xrcd and cq) with the provider's driver data.
func (c *Context) cmdCreateSRQ(pd *PD, xrcd *XRCD, cq *CQ, p provider.SRQParams, uhwIn, uhwOut []byte) (srqCreated, error) {
	maxWR, maxSGE, srqn := new(uint32), new(uint32), new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_SRQ, abi.UVERBS_METHOD_SRQ_CREATE)
	h := cmd.NewObject(abi.UVERBS_ATTR_CREATE_SRQ_HANDLE)
	cmd.Object(abi.UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, pd.handle)
	cmd.U64In(abi.UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, p.Handle)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_SRQ_MAX_WR, p.MaxWR)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_SRQ_MAX_SGE, p.MaxSGE)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_SRQ_LIMIT, p.Limit)
	if xrcd != nil {
		cmd.Object(abi.UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, xrcd.handle)
		cmd.Object(abi.UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, cq.handle)
		cmd.ConstIn(abi.UVERBS_ATTR_CREATE_SRQ_TYPE, abi.IB_UVERBS_SRQT_XRC)
	} else {
		cmd.ConstIn(abi.UVERBS_ATTR_CREATE_SRQ_TYPE, abi.IB_UVERBS_SRQT_BASIC)
	}
	cmd.Optional(cmd.FD(abi.UVERBS_ATTR_CREATE_SRQ_EVENT_FD, c.asyncFD))
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, ptr(maxWR), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, ptr(maxSGE), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, ptr(srqn), 4)
	addUHW(cmd, uhwIn, uhwOut)
	if err := cmd.Invoke(c.fd); err != nil {
		return srqCreated{}, err
	}
	return srqCreated{created: true, handle: cmd.Handle(h), maxWR: *maxWR, maxSGE: *maxSGE, srqn: *srqn}, nil
}

// cmdDestroySRQ issues SRQ_DESTROY.
func (c *Context) cmdDestroySRQ(handle uint32) error {
	events := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_SRQ, abi.UVERBS_METHOD_SRQ_DESTROY)
	cmd.Object(abi.UVERBS_ATTR_DESTROY_SRQ_HANDLE, handle)
	cmd.PtrOut(abi.UVERBS_ATTR_DESTROY_SRQ_RESP, ptr(events), 4)
	return cmd.Invoke(c.fd)
}

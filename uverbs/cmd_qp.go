package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// The QP commands, as rdma-core's cmd_qp.c: each builds one kernel command from the verb's request and returns
// what the kernel made. The verbs in qp.go validate, involve the provider and keep the books.

// qpCreated is what the kernel made.
type qpCreated struct {
	created bool // the kernel object exists (destroy it if the provider then fails)
	handle  uint32
	qpn     uint32
	cap     QPCap
}

// cmdCreateQP issues QP_CREATE on pd for the objects a names, with req's capacities (the provider's sizing of
// a.Cap) and the provider's driver data.
func (c *Context) cmdCreateQP(pd *PD, a *QPInitAttr, req provider.QPParams, uhwIn, uhwOut []byte) (qpCreated, error) {
	capIn := &abi.IbUverbsQpCap{MaxSendWr: req.Cap.MaxSendWR, MaxRecvWr: req.Cap.MaxRecvWR,
		MaxSendSge: req.Cap.MaxSendSGE, MaxRecvSge: req.Cap.MaxRecvSGE, MaxInlineData: req.Cap.MaxInlineData}
	capOut := new(abi.IbUverbsQpCap)
	qpn := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE)
	h := cmd.NewObject(abi.UVERBS_ATTR_CREATE_QP_HANDLE)
	// An XRC target QP names only its XRC domain; an XRC initiator has a send CQ and no receive side.
	if a.Type == QPTypeXRCRecv {
		cmd.Object(abi.UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, a.XRCD.handle)
	} else {
		cmd.Object(abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd.handle)
		cmd.Object(abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, a.SendCQ.handle)
	}
	if a.RecvCQ != nil {
		cmd.Object(abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, a.RecvCQ.handle)
	}
	if a.SRQ != nil {
		cmd.Object(abi.UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, a.SRQ.handle)
	}
	cmd.U64In(abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE, req.Handle)
	cmd.PtrIn(abi.UVERBS_ATTR_CREATE_QP_CAP, ptr(capIn), int(abi.SizeofIbUverbsQpCap))
	cmd.ConstIn(abi.UVERBS_ATTR_CREATE_QP_TYPE, uint64(a.Type))
	if req.SigAll {
		cmd.U32In(abi.UVERBS_ATTR_CREATE_QP_FLAGS, abi.IB_UVERBS_QP_CREATE_SQ_SIG_ALL)
	}
	cmd.Optional(cmd.FD(abi.UVERBS_ATTR_CREATE_QP_EVENT_FD, c.asyncFD))
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, ptr(capOut), int(abi.SizeofIbUverbsQpCap))
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, ptr(qpn), 4)
	addUHW(cmd, uhwIn, uhwOut)
	if err := cmd.Invoke(c.fd); err != nil {
		return qpCreated{}, err
	}
	return qpCreated{created: true, handle: cmd.Handle(h), qpn: *qpn, cap: QPCap{MaxSendWR: capOut.MaxSendWr,
		MaxRecvWR: capOut.MaxRecvWr, MaxSendSGE: capOut.MaxSendSge, MaxRecvSGE: capOut.MaxRecvSge,
		MaxInlineData: capOut.MaxInlineData}}, nil
}

// cmdDestroyQP issues QP_DESTROY and returns how many async events the kernel reported for the QP.
func (c *Context) cmdDestroyQP(handle uint32) (uint32, error) {
	events := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_DESTROY)
	cmd.Object(abi.UVERBS_ATTR_DESTROY_QP_HANDLE, handle)
	cmd.PtrOut(abi.UVERBS_ATTR_DESTROY_QP_RESP, ptr(events), 4)
	return *events, cmd.Invoke(c.fd)
}

// cmdModifyQP issues MODIFY_QP with the core request in: the legacy command, which carries no driver data (a
// provider's driver data with it is refused, EINVAL), or (extended) the extended one with the rate limit (sent
// whatever the mask; the kernel reads it only with the rate-limit bit) and the provider's driver request and
// response, as rdma-core's ibv_cmd_modify_qp_ex.
func (c *Context) cmdModifyQP(in *abi.IbUverbsModifyQp, extended bool, rate uint32, uhwIn, uhwOut []byte) error {
	if !extended && (uhwIn != nil || uhwOut != nil) {
		return fmt.Errorf("driver data with the legacy MODIFY_QP: %w", unix.EINVAL)
	}
	return c.write(modifyQPWrite(in, extended, rate, uhwIn, uhwOut))
}

// modifyQPWrite is the command cmdModifyQP sends.
func modifyQPWrite(in *abi.IbUverbsModifyQp, extended bool, rate uint32, uhwIn, uhwOut []byte) *rawcmd.Write {
	if !extended {
		return &rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_MODIFY_QP, CoreIn: rawcmd.Bytes(in)}
	}
	ex := &abi.IbUverbsExModifyQp{Base: *in, RateLimit: rate}
	resp := new(abi.IbUverbsExModifyQpResp)
	return &rawcmd.Write{Cmd: abi.IB_USER_VERBS_EX_CMD_MODIFY_QP | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED,
		CoreIn: rawcmd.Bytes(ex), CoreOut: rawcmd.Bytes(resp), UHWIn: uhwIn, UHWOut: uhwOut}
}

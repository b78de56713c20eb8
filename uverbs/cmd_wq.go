package uverbs

import (
	"encoding/binary"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// The WQ commands, as rdma-core's cmd_wq.c and cmd.c: each builds one kernel command and returns what the
// kernel made.

// wqCreated is what WQ_CREATE made.
type wqCreated struct {
	created       bool // the kernel object exists (destroy it if the provider then fails)
	handle        uint32
	maxWR, maxSGE uint32
	wqn           uint32
}

// cmdCreateWQ issues WQ_CREATE (a receive WQ) with the provider's driver data, the attributes libibverbs'
// ibv_icmd_create_wq sends (the flags always, 0 without any).
func (c *Context) cmdCreateWQ(pd *PD, cq *CQ, p provider.WQParams, uhwIn, uhwOut []byte) (wqCreated, error) {
	maxWR, maxSGE, wqn := new(uint32), new(uint32), new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_WQ, abi.UVERBS_METHOD_WQ_CREATE)
	h := cmd.NewObject(abi.UVERBS_ATTR_CREATE_WQ_HANDLE)
	cmd.U64In(abi.UVERBS_ATTR_CREATE_WQ_USER_HANDLE, p.Handle)
	cmd.Object(abi.UVERBS_ATTR_CREATE_WQ_PD_HANDLE, pd.handle)
	cmd.Object(abi.UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, cq.handle)
	cmd.ConstIn(abi.UVERBS_ATTR_CREATE_WQ_TYPE, abi.IB_UVERBS_WQT_RQ)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_WQ_MAX_WR, p.MaxWR)
	cmd.U32In(abi.UVERBS_ATTR_CREATE_WQ_MAX_SGE, p.MaxSGE)
	cmd.Optional(cmd.FD(abi.UVERBS_ATTR_CREATE_WQ_EVENT_FD, c.asyncFD))
	cmd.U32In(abi.UVERBS_ATTR_CREATE_WQ_FLAGS, p.Flags)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, ptr(maxWR), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, ptr(maxSGE), 4)
	cmd.PtrOut(abi.UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, ptr(wqn), 4)
	addUHW(cmd, uhwIn, uhwOut)
	if err := cmd.Invoke(c.fd); err != nil {
		return wqCreated{}, err
	}
	return wqCreated{created: true, handle: cmd.Handle(h), maxWR: *maxWR, maxSGE: *maxSGE, wqn: *wqn}, nil
}

// cmdDestroyWQ issues WQ_DESTROY and returns how many async events the kernel reported for the WQ.
func (c *Context) cmdDestroyWQ(handle uint32) (uint32, error) {
	events := new(uint32)
	cmd := c.newCmd(abi.UVERBS_OBJECT_WQ, abi.UVERBS_METHOD_WQ_DESTROY)
	cmd.Object(abi.UVERBS_ATTR_DESTROY_WQ_HANDLE, handle)
	cmd.PtrOut(abi.UVERBS_ATTR_DESTROY_WQ_RESP, ptr(events), 4)
	return *events, cmd.Invoke(c.fd)
}

// modifyWQIn is EX_MODIFY_WQ's core request, as libibverbs' ibv_cmd_modify_wq fills it: both states whatever
// the mask, the flags only with WQAttrFlags.
func modifyWQIn(handle uint32, a WQAttr, mask WQAttrMask) *abi.IbUverbsExModifyWq {
	in := &abi.IbUverbsExModifyWq{AttrMask: uint32(mask), WqHandle: handle, WqState: uint32(a.State),
		CurrWqState: uint32(a.CurState)}
	if mask&WQAttrFlags != 0 {
		in.Flags, in.FlagsMask = uint32(a.Flags), uint32(a.FlagsMask)
	}
	return in
}

// modifyWQWrite is the EX_MODIFY_WQ command: the core request, no core response, the provider's driver data.
func modifyWQWrite(in *abi.IbUverbsExModifyWq, uhwIn, uhwOut []byte) *rawcmd.Write {
	return &rawcmd.Write{Cmd: abi.IB_USER_VERBS_EX_CMD_MODIFY_WQ | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED,
		CoreIn: rawcmd.Bytes(in), UHWIn: uhwIn, UHWOut: uhwOut}
}

// putNative32 stores v in host order, as the kernel reads a __u32.
func putNative32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }

package rxe

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// The CQ ring holds struct ib_uverbs_wc entries, which verbs.WC reproduces exactly (a test pins every
// offset); the sizes are checked here at compile time.
var _ [abi.SizeofIbUverbsWc - unsafe.Sizeof(verbs.WC{})]struct{}
var _ [unsafe.Sizeof(verbs.WC{}) - abi.SizeofIbUverbsWc]struct{}

// cq is an rxe completion queue: a kernel-produced ring of ib_uverbs_wc entries.
type cq struct {
	ctx *context
	mu  sync.Mutex // guards q: Poll, Resize and Destroyed
	q   queue

	armMu sync.Mutex // guards arm
	arm   *armCmd
}

// armCmd is the REQ_NOTIFY_CQ command, built once when the CQ is made: Arm only changes the solicited flag in
// the core request, which travels inline in attribute 0 (rawcmd.Cmd.SetWrite), and makes one system call.
type armCmd struct {
	cmd rawcmd.Cmd
	req abi.IbUverbsReqNotifyCq
}

// Arm copies the request into the attribute's 8 data bytes: it must be exactly that long.
var _ = [1]struct{}{}[unsafe.Sizeof(abi.IbUverbsReqNotifyCq{})-8]

var _ provider.CQ = (*cq)(nil)

// CreateCQ takes part in CQ_CREATE: the driver response (struct rxe_create_cq_resp) describes the ring, which
// is mapped from the command fd.
func (c *context) CreateCQ(p provider.CQParams, create provider.Create[provider.CQParams, provider.CQResult]) (provider.CQ, provider.CQResult, error) {
	resp := new(abi.RxeCreateCqResp)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	q, err := mapQueue(c.fd, resp.Mi, abi.SizeofIbUverbsWc)
	if err != nil {
		return nil, res, opError("create CQ", "map completion ring", err)
	}
	cq := &cq{ctx: c, q: q, arm: new(armCmd)}
	cq.arm.req.CqHandle = res.Handle
	cq.arm.cmd.SetWrite(c.driverID, &rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, CoreIn: rawcmd.Bytes(&cq.arm.req)})
	return cq, res, nil
}

// Poll copies up to len(wc) completions out of the ring, oldest first, and returns how many. Immediate data
// (WCWithImm) is converted from the wire's big-endian to host order, and the flags from the kernel's numbering
// to IBV_WC_* (see wcFlags). A destroyed CQ, or one whose ring could not be mapped again after a resize, has no
// completions: it reports Destroyed.
func (cq *cq) Poll(wc []verbs.WC) (int, provider.Status) {
	cq.mu.Lock()
	q := &cq.q
	if !q.mapped() {
		cq.mu.Unlock()
		return 0, provider.Destroyed
	}
	n := 0
	cons := q.consumer()
	prod := q.produced()
	for n < len(wc) && cons != prod {
		w := &wc[n]
		*w = *(*verbs.WC)(q.elem(cons))
		w.Flags = wcFlags(uint32(w.Flags))
		if w.Flags&verbs.WCWithImm != 0 {
			w.Imm = binary.BigEndian.Uint32((*[4]byte)(unsafe.Pointer(&w.Imm))[:])
		}
		cons = q.release(cons)
		n++
	}
	cq.mu.Unlock()
	return n, provider.OK
}

// The kernel's enum ib_wc_flags (include/rdma/ib_verbs.h; not part of the uAPI headers), which rxe writes into
// the wc_flags of the ib_uverbs_wc entries of a user CQ, as the uverbs POLL_CQ command also passes it through.
const (
	kernelWCGRH            = 1 << 0 // IB_WC_GRH
	kernelWCWithImm        = 1 << 1 // IB_WC_WITH_IMM
	kernelWCWithInvalidate = 1 << 2 // IB_WC_WITH_INVALIDATE
	kernelWCIPCSumOK       = 1 << 3 // IB_WC_IP_CSUM_OK
)

// wcFlags converts kernel completion flags to the IBV_WC_* numbering of verbs.WCFlags. The two agree on GRH
// and WITH_IMM but swap the next two bits (kernel WITH_INVALIDATE is 1<<2, IBV_WC_WITH_INV 1<<3; IP_CSUM_OK the
// other way round). rdma-core's rxe provider copies the kernel's value unchanged, so a C program sees
// IBV_WC_IP_CSUM_OK on a receive that invalidated an rkey; here it is WCWithInv. Higher kernel bits (SMAC, VLAN,
// network header type) are set only on kernel-owned CQs and have no IBV_WC_* meaning; they are dropped.
func wcFlags(k uint32) verbs.WCFlags {
	var f verbs.WCFlags
	if k&kernelWCGRH != 0 {
		f |= verbs.WCWithGRH
	}
	if k&kernelWCWithImm != 0 {
		f |= verbs.WCWithImm
	}
	if k&kernelWCWithInvalidate != 0 {
		f |= verbs.WCWithInv
	}
	if k&kernelWCIPCSumOK != 0 {
		f |= verbs.WCIPCSumOK
	}
	return f
}

// Arm requests a completion event for the next completion (only for solicited ones if solicitedOnly): the
// legacy REQ_NOTIFY_CQ command through the INVOKE_WRITE tunnel, as a raw system call — the kernel does not wait
// on anything there (rxe marks the CQ under its spinlock, rxe_req_notify_cq; the uverbs ioctl path's small
// GFP_KERNEL allocation can only stall under memory pressure, as rxe's raw doorbell write can), and the
// scheduler's work around a system call was a measurable part of a message's cost in event mode (docs/perf.md).
func (cq *cq) Arm(solicitedOnly bool) error {
	cq.armMu.Lock()
	a := cq.arm
	if a == nil {
		cq.armMu.Unlock()
		return errArmDestroyed
	}
	a.req.SolicitedOnly = 0
	if solicitedOnly {
		a.req.SolicitedOnly = 1
	}
	a.cmd.Attrs[0].Data = *(*uint64)(unsafe.Pointer(&a.req)) // the 8-byte request, inline (native order)
	err := a.cmd.InvokeRaw(cq.ctx.fd)
	cq.armMu.Unlock()
	if err != nil {
		return opError("arm CQ", "REQ_NOTIFY_CQ", err)
	}
	return nil
}

// EventReceived needs no work on rxe: the kernel arms and disarms the CQ itself.
func (cq *cq) EventReceived() {}

// Resize takes part in RESIZE_CQ. The kernel copies the pending completions into a new ring and describes it
// in struct rxe_resize_cq_resp; the old ring is unmapped and the new one mapped while Poll is held off, since
// the kernel reads this side's consumer index during the copy.
func (cq *cq) Resize(cqe int, resize provider.Create[int, int]) (int, error) {
	resp := new(abi.RxeResizeCqResp)
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if !cq.q.mapped() {
		return 0, opError("resize CQ", "CQ has no ring (destroyed, or a previous resize failed to map)", unix.EINVAL)
	}
	n, err := resize(cqe, nil, rawcmd.Bytes(resp))
	if err != nil {
		return 0, err
	}
	cq.q.unmap()
	q, err := mapQueue(cq.ctx.fd, resp.Mi, abi.SizeofIbUverbsWc)
	if err != nil {
		return 0, opError("resize CQ", "map the new completion ring", err)
	}
	cq.q = q
	return n, nil
}

// Destroyed unmaps the ring after the kernel destroyed the CQ.
func (cq *cq) Destroyed() {
	cq.mu.Lock()
	cq.q.unmap()
	cq.mu.Unlock()
	cq.armMu.Lock()
	cq.arm = nil
	cq.armMu.Unlock()
}

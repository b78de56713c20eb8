package siw

import (
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// cq is a siw completion queue: num_cqe struct siw_cqe entries the kernel produces, then the struct siw_cq_ctrl
// whose flags word arms the CQ, in one mapping of the command fd at cq_key.
type cq struct {
	mu   sync.Mutex // guards r, get and ctrl: Poll, Arm and Destroyed
	r    ring
	get  uint32  // next entry to look at (rdma-core's cq_get, kept in range)
	ctrl *uint32 // the notify flags of struct siw_cq_ctrl after the entries; nil when unmapped
}

var _ provider.CQ = (*cq)(nil)

// CreateCQ takes part in CQ_CREATE: the driver response (struct siw_uresp_create_cq) gives the number of
// entries and the key of the mapping, which holds the entries and the notify word after them.
func (c *context) CreateCQ(p provider.CQParams, create provider.Create[provider.CQParams, provider.CQResult]) (provider.CQ, provider.CQResult, error) {
	resp := new(abi.SiwUrespCreateCq)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	r, err := mapRing(c.fd, resp.CqKey, resp.NumCqe, abi.SizeofSiwCqe, abi.SizeofSiwCqCtrl)
	if err != nil {
		return nil, res, opError("create CQ", "map the completion queue", err)
	}
	cq := &cq{r: r, ctrl: (*uint32)(r.end())}
	atomic.StoreUint32(cq.ctrl, abi.SIW_NOTIFY_NOT) // disarmed, as rdma-core leaves a new CQ
	return cq, res, nil
}

// Poll copies up to len(wc) completions out, oldest first, and hands each entry back to the kernel by
// clearing its flags after reading it. It stops at the first entry the kernel has not written (flags without
// SIW_WQE_VALID). A destroyed CQ reports Destroyed.
func (cq *cq) Poll(wc []verbs.WC) (int, provider.Status) {
	cq.mu.Lock()
	r := &cq.r
	if !r.mapped() {
		cq.mu.Unlock()
		return 0, provider.Destroyed
	}
	n := 0
	get := cq.get
	for n < len(wc) {
		p := r.slot(get)
		fw := flagsWord(p)
		// Acquire: the kernel writes the entry, then its flags (rdma-core reads the flags, then the entry).
		if unpackCQE(atomic.LoadUint32(fw)).flags&abi.SIW_WQE_VALID == 0 {
			break
		}
		e := *(*abi.SiwCqe)(p)
		decodeCQE(&e, &wc[n])
		// Release: the entry is read before the kernel may see it free and write the next completion into it.
		atomic.StoreUint32(fw, 0)
		get = r.next(get)
		n++
	}
	cq.get = get
	cq.mu.Unlock()
	return n, provider.OK
}

// cqeOpcodes maps the siw opcodes a user CQ can carry to IBV_WC_* (rdma-core's map_cqe_opcode): the send-side
// opcodes of the work request, and SIW_OP_RECEIVE for receives. The rest (READ_RESPONSE, INVAL_STAG, REG_MR)
// are the kernel's own or its in-kernel users', never a user CQ's.
var cqeOpcodes = [abi.SIW_OP_RECEIVE + 1]verbs.WCOpcode{
	abi.SIW_OP_WRITE:           verbs.WCRDMAWrite,
	abi.SIW_OP_READ:            verbs.WCRDMARead,
	abi.SIW_OP_READ_LOCAL_INV:  verbs.WCRDMARead,
	abi.SIW_OP_SEND:            verbs.WCSend,
	abi.SIW_OP_SEND_WITH_IMM:   verbs.WCSend,
	abi.SIW_OP_SEND_REMOTE_INV: verbs.WCSend,
	abi.SIW_OP_FETCH_AND_ADD:   verbs.WCFetchAdd,
	abi.SIW_OP_COMP_AND_SWAP:   verbs.WCCompSwap,
	abi.SIW_OP_RECEIVE:         verbs.WCRecv,
}

// cqeStatuses maps enum siw_wc_status to IBV_WC_* (rdma-core's map_cqe_status).
var cqeStatuses = [abi.SIW_NUM_WC_STATUS]verbs.WCStatus{
	abi.SIW_WC_SUCCESS:         verbs.WCSuccess,
	abi.SIW_WC_LOC_LEN_ERR:     verbs.WCLocLenErr,
	abi.SIW_WC_LOC_PROT_ERR:    verbs.WCLocProtErr,
	abi.SIW_WC_LOC_QP_OP_ERR:   verbs.WCLocQPOpErr,
	abi.SIW_WC_WR_FLUSH_ERR:    verbs.WCWRFlushErr,
	abi.SIW_WC_BAD_RESP_ERR:    verbs.WCBadRespErr,
	abi.SIW_WC_LOC_ACCESS_ERR:  verbs.WCLocAccessErr,
	abi.SIW_WC_REM_ACCESS_ERR:  verbs.WCRemAccessErr,
	abi.SIW_WC_REM_INV_REQ_ERR: verbs.WCRemInvReqErr,
	abi.SIW_WC_GENERAL_ERR:     verbs.WCGeneralErr,
}

// decodeCQE turns a completion the kernel wrote (a copy of it) into a verbs.WC. Every field is a value of
// memory the kernel, or anything else with the mapping, may have written, so nothing is trusted to be in range:
//
//   - the opcode and status go through rdma-core's tables (rdma-core indexes them unchecked); an entry
//     outside them is reported as a failed completion, WCGeneralErr, with the raw opcode and status in
//     VendorErr (opcode<<16 | status), so its wr_id is still returned and the queue moves on;
//   - the QP number is the low 32 bits of qp_id (the kernel writes the QP number there for user CQs);
//   - a completion flagged SIW_WQE_REM_INVAL reports WCWithInv and the invalidated STag in Imm (rdma-core
//     reports no flags; the kernel sets it only on its own CQs today, so this is for kernels that do more);
//   - siw has no immediate data in user space: Imm is 0 otherwise, and the fields siw has no notion of
//     (source QP, P_Key index, LIDs, SL, port) are 0 (rdma-core leaves them as they were in the caller's
//     ibv_wc).
func decodeCQE(e *abi.SiwCqe, wc *verbs.WC) {
	*wc = verbs.WC{WRID: e.Id, ByteLen: e.Bytes, QPNum: uint32(*e.QpId())}
	if int(e.Opcode) < len(cqeOpcodes) && int(e.Status) < len(cqeStatuses) {
		wc.Opcode = cqeOpcodes[e.Opcode]
		wc.Status = cqeStatuses[e.Status]
	} else {
		wc.Status = verbs.WCGeneralErr
		wc.VendorErr = uint32(e.Opcode)<<16 | uint32(e.Status)
	}
	if e.Flags&abi.SIW_WQE_REM_INVAL != 0 {
		wc.Flags = verbs.WCWithInv
		wc.Imm = *e.InvalStag()
	}
}

// Arm requests a completion event: it stores the notify flags the kernel reads when it writes a completion,
// as rdma-core's siw_notify_cq does (SIW_NOTIFY_SOLICITED for solicited-only, else SOLICITED and
// NEXT_COMPLETION). No system call: the kernel disarms the CQ itself (writes SIW_NOTIFY_NOT) when it raises
// the event. The store is sequentially consistent, so a Poll after Arm sees every completion the kernel wrote
// before it read the armed flags, which is the usual arm-then-poll rule.
func (cq *cq) Arm(solicitedOnly bool) error {
	v := uint32(abi.SIW_NOTIFY_SOLICITED | abi.SIW_NOTIFY_NEXT_COMPLETION)
	if solicitedOnly {
		v = abi.SIW_NOTIFY_SOLICITED
	}
	cq.mu.Lock()
	if cq.ctrl == nil {
		cq.mu.Unlock()
		return errArmDestroyed
	}
	atomic.StoreUint32(cq.ctrl, v)
	cq.mu.Unlock()
	return nil
}

// EventReceived needs no work on siw: the kernel disarms the CQ itself.
func (cq *cq) EventReceived() {}

// Resize is refused without asking the kernel: siw cannot resize a CQ (no resize_cq in the kernel driver, and
// none in rdma-core's siw provider, for which libibverbs answers EOPNOTSUPP).
func (cq *cq) Resize(int, provider.Create[int, int]) (int, error) {
	return 0, opError("resize CQ", "siw CQs cannot be resized", unix.EOPNOTSUPP)
}

// Destroyed unmaps the queue after the kernel destroyed the CQ.
func (cq *cq) Destroyed() {
	cq.mu.Lock()
	cq.r.unmap()
	cq.ctrl = nil
	cq.get = 0
	cq.mu.Unlock()
}

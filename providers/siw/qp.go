package siw

import (
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/internal/provider/doorbell"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
)

// qp is a siw queue pair: a send queue (struct siw_sqe entries), a receive queue unless the QP receives from an
// SRQ, and the doorbell.
type qp struct {
	// state is the verbs.QPState the core last reported. siw creates a QP in its IDLE state, which it reports
	// as INIT, and moves it to RTS itself when the iWARP connection is made (rdma_cm), so this is INIT from
	// creation and RTS is never required here: only states in which a post could not complete are refused.
	state atomic.Uint32

	sqMu   sync.Mutex // guards sq, sqPut and dbOwed: one PostSend batch, doorbell included, at a time
	sq     ring
	sqPut  uint32 // next SQE to fill (rdma-core's sq_put, kept in range)
	dbOwed bool   // the last doorbell failed: ring on every post until one succeeds
	limit  sendLimits

	rq *recvQueue // nil when the QP receives from an SRQ

	dbFD int                // where the doorbell is written: the command fd
	db   *doorbell.Doorbell // preallocated doorbell command
}

var _ provider.QP = (*qp)(nil)

// CreateQP takes part in QP_CREATE: the driver response (struct siw_uresp_create_qp) gives the numbers of send
// and receive entries and the keys of their mappings. A QP on an SRQ maps no receive queue (rdma-core's
// rule); one created with no receive entries and no SRQ has none to map (see recvQueue.empty).
func (c *context) CreateQP(p provider.QPParams, create provider.Create[provider.QPParams, provider.QPResult]) (provider.QP, provider.QPResult, error) {
	resp := new(abi.SiwUrespCreateQp)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	sq, err := mapRing(c.fd, resp.SqKey, resp.NumSqe, abi.SizeofSiwSqe, 0)
	if err != nil {
		return nil, res, opError("create QP", "map the send queue", err)
	}
	qp := &qp{sq: sq, limit: newSendLimits(res.Cap, p.SigAll), dbFD: c.fd, db: doorbell.New(res.Handle)}
	qp.state.Store(uint32(verbs.QPStateInit))
	switch {
	case p.HasSRQ:
	case resp.NumRqe == 0:
		qp.rq = &recvQueue{empty: true}
	default:
		qp.rq, err = mapRecvQueue(c.fd, resp.RqKey, resp.NumRqe, res.Cap.MaxRecvSGE)
		if err != nil {
			qp.sq.unmap()
			return nil, res, opError("create QP", "map the receive queue", err)
		}
	}
	return qp, res, nil
}

// sendState refuses a send in a state where the kernel would never carry it out: RESET (the core moved the
// QP there) and ERR. In ERR the kernel flushed the send queue when the QP entered it and does not look at it
// again, so a request posted then would never complete (rdma-core posts it anyway). Other states are left to
// the kernel: siw makes the QP RTS by itself when the connection is established, and the doorbell fails
// (ENOTCONN) before that.
func (qp *qp) sendState() provider.Status {
	switch verbs.QPState(qp.state.Load()) {
	case verbs.QPStateReset, verbs.QPStateErr:
		return provider.NotReady
	}
	return provider.OK
}

// PostSend writes wrs into the send queue in order, each published by its own flags store, and rings the
// doorbell when the kernel may be idle (the rule in doc.go). It returns how many were posted and OK, or why it
// stopped at wrs[n]: a refusal of validateSend, QueueFull when the next SQE is still the kernel's (rdma-core's
// "SQ overflow", ENOMEM), NotReady (sendState), or a failed doorbell, which is reported even when wrs[:n] are
// in the queue (the kernel may or may not run them; the next post rings again).
func (qp *qp) PostSend(wrs []verbs.SendWR) (n int, st provider.Status) {
	if len(wrs) == 0 {
		return 0, provider.OK
	}
	if st := qp.sendState(); st != provider.OK {
		return 0, st
	}
	qp.sqMu.Lock()
	q := &qp.sq
	if !q.mapped() {
		qp.sqMu.Unlock()
		return 0, provider.Destroyed
	}
	start := qp.sqPut
	put := start
	for n < len(wrs) {
		wr := &wrs[n]
		var r sendReq
		if r, st = validateSend(&qp.limit, wr); st != provider.OK {
			break
		}
		p := q.slot(put)
		if wqeOwnedByKernel(p) {
			st = provider.QueueFull
			break
		}
		publishWQE(p, encodeSend(p, &qp.limit, wr, r))
		put = q.next(put)
		n++
	}
	qp.sqPut = put
	if n > 0 {
		if dst := qp.doorbell(start, n); dst != provider.OK {
			st = dst
		}
	}
	qp.sqMu.Unlock()
	return n, st
}

// PostSendAll implements provider.QP: every request is validated and given a free SQE before any is written,
// so a refusal leaves the queue and the doorbell as they were; then they are written and published in order
// and the doorbell rule applied once, as for PostSend.
func (qp *qp) PostSendAll(wrs []verbs.SendWR) (bad int, st provider.Status) {
	if len(wrs) == 0 {
		return 0, provider.OK
	}
	if st := qp.sendState(); st != provider.OK {
		return 0, st
	}
	qp.sqMu.Lock()
	defer qp.sqMu.Unlock()
	q := &qp.sq
	if !q.mapped() {
		return 0, provider.Destroyed
	}
	start := qp.sqPut
	put := start
	for i := range wrs {
		if _, st := validateSend(&qp.limit, &wrs[i]); st != provider.OK {
			return i, st
		}
		// Entries the kernel holds are contiguous, so free entries stay free until written: checking each
		// one now is checking it for the writes below. More requests than entries meet start again.
		if uint64(i) >= uint64(q.num) || wqeOwnedByKernel(q.slot(put)) {
			return i, provider.QueueFull
		}
		put = q.next(put)
	}
	put = start
	for i := range wrs {
		r, _ := validateSend(&qp.limit, &wrs[i])
		p := q.slot(put)
		publishWQE(p, encodeSend(p, &qp.limit, &wrs[i], r))
		put = q.next(put)
	}
	qp.sqPut = put
	return len(wrs), qp.doorbell(start, len(wrs))
}

// doorbell applies rdma-core's doorbell rule after n SQEs were published from position start (sqMu held):
// the kernel is told only if the SQE before start is no longer VALID, that is, the kernel had taken every
// earlier request and may have found the queue empty and gone idle; while that SQE is still VALID the kernel
// has not reached it, and when it does it goes on to the new ones by itself. A post that filled the whole
// queue rings regardless (the entry before start is then one of its own). Unlike rdma-core, a failed doorbell
// is remembered and the next post rings whatever the rule says, since the kernel may hold requests it was
// never told about.
//
// The rule is safe only with the ordering both sides give it: this side stores the new SQEs' flags (release)
// and then loads the previous SQE's flags, sequentially consistent (Go's atomics), while the kernel clears a
// finished SQE's flags with a full barrier before it looks at the next one; so either the kernel sees the new
// SQE, or this side sees the previous one cleared and rings.
func (qp *qp) doorbell(start uint32, n int) provider.Status {
	q := &qp.sq
	if uint64(n) < uint64(q.num) && !qp.dbOwed && wqeOwnedByKernel(q.slot(q.prev(start))) {
		return provider.OK
	}
	if err := qp.db.Ring(qp.dbFD); err != nil {
		qp.dbOwed = true
		return provider.DoorbellFailed(errnoOf(err))
	}
	qp.dbOwed = false
	return provider.OK
}

// PostRecv writes wrs into the receive queue (no system call: the kernel reads the queue when messages
// arrive). It refuses QPs that receive from an SRQ (NoRecvQueue), and RESET and ERR (NotReady): the kernel
// flushes the receive queue when the QP enters ERR and never looks at it again.
func (qp *qp) PostRecv(wrs []verbs.RecvWR) (int, provider.Status) {
	if qp.rq == nil {
		return 0, provider.NoRecvQueue
	}
	switch verbs.QPState(qp.state.Load()) {
	case verbs.QPStateReset, verbs.QPStateErr:
		return 0, provider.NotReady
	}
	return qp.rq.post(wrs)
}

// StateChanged records the state the kernel accepted; posting is gated on it (sendState, PostRecv). The
// queues keep their positions across every transition: the kernel's siw keeps its own (sq_get, rq_get) too,
// and rdma-core never resets its sq_put or rq_put.
func (qp *qp) StateChanged(state verbs.QPState) { qp.state.Store(uint32(state)) }

// Destroyed unmaps the queues after the kernel destroyed the QP; later posts report Destroyed.
func (qp *qp) Destroyed() {
	qp.sqMu.Lock()
	qp.sq.unmap()
	qp.sqMu.Unlock()
	if qp.rq != nil {
		qp.rq.destroy()
	}
}

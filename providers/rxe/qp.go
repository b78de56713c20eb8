package rxe

import (
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/internal/provider/doorbell"
	"github.com/goverbs/goverbs/rawcmd"
)

// qp is an rxe queue pair: a send ring, a receive ring unless the QP receives from an SRQ, and the doorbell.
type qp struct {
	state atomic.Uint32 // verbs.QPState the kernel last accepted

	sqMu  sync.Mutex // guards sq and ssn: one PostSend batch at a time
	sq    queue
	ssn   uint32 // send sequence number of the next WQE
	limit sendLimits

	rq *recvRing // nil when the QP receives from an SRQ

	dbFD int                // where the doorbell is written: the command fd
	db   *doorbell.Doorbell // preallocated doorbell command
}

var _ provider.QP = (*qp)(nil)

// CreateQP takes part in QP_CREATE: the driver response (struct rxe_create_qp_resp) describes the receive and
// send rings, which are mapped from the command fd (no receive ring when the QP uses an SRQ). The send limits
// are the capacities the kernel granted, bounded by the send ring's element size.
func (c *context) CreateQP(p provider.QPParams, create provider.Create[provider.QPParams, provider.QPResult]) (provider.QP, provider.QPResult, error) {
	resp := new(abi.RxeCreateQpResp)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, res, err
	}
	qp := &qp{dbFD: c.fd, db: doorbell.New(res.Handle)}
	if !p.HasSRQ {
		rq, err := mapRecvRing(c.fd, resp.RqMi, res.Cap.MaxRecvSGE)
		if err != nil {
			return nil, res, opError("create QP", "map receive ring", err)
		}
		qp.rq = rq
	}
	sq, err := mapQueue(c.fd, resp.SqMi, abi.SizeofRxeSendWqe)
	if err != nil {
		if qp.rq != nil {
			qp.rq.q.unmap()
		}
		return nil, res, opError("create QP", "map send ring", err)
	}
	qp.sq = sq
	area := uint32(sq.elemSize() - abi.SizeofRxeSendWqe)
	qp.limit = sendLimits{
		qpType:    p.Type,
		maxSGE:    min(res.Cap.MaxSendSGE, area/abi.SizeofRxeSge),
		maxInline: min(res.Cap.MaxInlineData, area),
	}
	qp.limit.setCaps(p.DeviceCaps)
	return qp, res, nil
}

// PostSend writes wrs into the send ring in order and rings the doorbell once. It returns how many were posted;
// on error wrs[n] is the first one not posted. Validation follows rdma-core (EINVAL for too many SGEs, inline
// data over max_inline_data, misaligned or short atomics, a BIND_MW that is not on RC/UC or carries SGEs or
// immediate data, a UD send without an AH; ENOMEM when the ring is full). Before the QP reaches RTS nothing is
// written and EINVAL is returned, which is what the kernel's doorbell would answer. If the doorbell fails,
// wrs[:n] are in the ring and the error is the kernel's.
func (qp *qp) PostSend(wrs []verbs.SendWR) (n int, st provider.Status) {
	return qp.postSend(wrs, false)
}

// PostSendAll implements provider.QP: PostSend whose entries are published together at the end, or not at all
// when one cannot be posted (rdma-core's rxe wr_complete stores the producer index once, and not after an error).
func (qp *qp) PostSendAll(wrs []verbs.SendWR) (bad int, st provider.Status) {
	return qp.postSend(wrs, true)
}

// postSend writes wrs into the send ring and rings the doorbell. Each entry is published as it is written, or,
// with all, the entries are published together once every one is written.
func (qp *qp) postSend(wrs []verbs.SendWR, all bool) (n int, st provider.Status) {
	if len(wrs) == 0 {
		return 0, provider.OK
	}
	if verbs.QPState(qp.state.Load()) < verbs.QPStateRTS {
		return 0, provider.NotReady
	}
	qp.sqMu.Lock()
	q := &qp.sq
	if !q.mapped() {
		qp.sqMu.Unlock()
		return 0, provider.Destroyed
	}
	prod := q.producer()
	ssn := qp.ssn
	perr := provider.OK
	for n < len(wrs) {
		wr := &wrs[n]
		length := sgeSum(wr.SGL)
		if perr = validateSend(&qp.limit, wr, length); perr != provider.OK {
			break
		}
		if q.full(prod) {
			perr = provider.QueueFull
			break
		}
		encodeSend(q.elem(prod), &qp.limit, wr, length, ssn)
		ssn++
		if all {
			prod = q.next(prod)
		} else {
			prod = q.publish(prod)
		}
		n++
	}
	if all {
		if perr != provider.OK {
			qp.sqMu.Unlock()
			return n, perr
		}
		q.setProducer(prod)
	}
	qp.ssn = ssn
	qp.sqMu.Unlock()
	if n > 0 {
		if dberr := qp.db.Ring(qp.dbFD); dberr != nil {
			return n, provider.DoorbellFailed(errnoOf(dberr))
		}
	}
	return n, perr
}

// PostRecv writes wrs into the receive ring (no system call: the kernel reads the ring when messages arrive).
// It fails with EINVAL while the QP is in RESET and for QPs that receive from an SRQ.
func (qp *qp) PostRecv(wrs []verbs.RecvWR) (int, provider.Status) {
	if qp.rq == nil {
		return 0, provider.NoRecvQueue
	}
	if verbs.QPState(qp.state.Load()) == verbs.QPStateReset {
		return 0, provider.NotReady
	}
	return qp.rq.post(wrs)
}

// StateChanged records the state the kernel accepted; posting is gated on it. The kernel keeps the ring indices
// across RESET (it only clears the slots), so nothing else changes here.
func (qp *qp) StateChanged(state verbs.QPState) { qp.state.Store(uint32(state)) }

// Destroyed unmaps the rings after the kernel destroyed the QP; later posts fail with EINVAL.
func (qp *qp) Destroyed() {
	qp.sqMu.Lock()
	qp.sq.unmap()
	qp.sqMu.Unlock()
	if qp.rq != nil {
		qp.rq.destroy()
	}
}

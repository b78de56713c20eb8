package siw

import (
	"math"
	"sync"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
)

// recvQueue is a receive queue, a QP's own or an SRQ's: struct siw_rqe entries userspace produces and the
// kernel takes when a message arrives. Posting is shared memory only (no system call), as in rdma-core.
type recvQueue struct {
	mu     sync.Mutex // guards r and put: one PostRecv batch at a time
	r      ring
	put    uint32 // next entry to fill (rdma-core's rq_put / srq's rq_put, kept in range)
	maxSGE uint32
	// empty marks a QP created with no receive queue at all (max_recv_wr 0 and no SRQ: the kernel makes none
	// and returns no key). Every post finds it full. rdma-core fails such a QP's creation instead (it maps 0
	// bytes); a send-only QP is a reasonable thing to ask for.
	empty bool
}

// mapRecvQueue maps num receive entries at key; maxSGE is what the kernel granted, at most SIW_MAX_SGE.
func mapRecvQueue(fd int, key uint64, num, maxSGE uint32) (*recvQueue, error) {
	r, err := mapRing(fd, key, num, abi.SizeofSiwRqe, 0)
	if err != nil {
		return nil, err
	}
	return &recvQueue{r: r, maxSGE: min(maxSGE, abi.SIW_MAX_SGE)}, nil
}

// post writes wrs in order, each published by its own flags store: QueueFull when the next entry is still the
// kernel's (rdma-core's "RQ overflow", ENOMEM), TooManySGE for more SGEs than the queue's limit (checked in
// that order, as rdma-core does), TooLong for SGE lengths adding up to more than 2^32-1. A receive with no SGE
// is posted (a zero-length receive; rdma-core refuses it with EINVAL).
func (q *recvQueue) post(wrs []verbs.RecvWR) (n int, st provider.Status) {
	q.mu.Lock()
	r := &q.r
	if !r.mapped() {
		q.mu.Unlock()
		if q.empty {
			return 0, provider.QueueFull
		}
		return 0, provider.Destroyed
	}
	put := q.put
	st = provider.OK
	for n < len(wrs) {
		wr := &wrs[n]
		p := r.slot(put)
		if wqeOwnedByKernel(p) {
			st = provider.QueueFull
			break
		}
		if uint64(len(wr.SGL)) > uint64(q.maxSGE) {
			st = provider.TooManySGE
			break
		}
		if sgeSum(wr.SGL) > math.MaxUint32 {
			st = provider.TooLong
			break
		}
		publishWQE(p, encodeRecv(p, wr))
		put = r.next(put)
		n++
	}
	q.put = put
	q.mu.Unlock()
	return n, st
}

// destroy unmaps the queue.
func (q *recvQueue) destroy() {
	q.mu.Lock()
	q.r.unmap()
	q.mu.Unlock()
}

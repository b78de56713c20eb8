package rxe

import (
	"math"
	"sync"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
)

// recvRing is a receive ring, a QP's own or an SRQ's: userspace produces struct rxe_recv_wqe entries.
type recvRing struct {
	mu     sync.Mutex // guards q and maxSGE: one PostRecv batch (or SRQ resize) at a time
	q      queue
	maxSGE uint32
}

// mapRecvRing maps a receive ring; maxSGE is what the kernel granted, bounded by the element size.
func mapRecvRing(fd int, mi abi.Mminfo, maxSGE uint32) (*recvRing, error) {
	q, err := mapQueue(fd, mi, abi.SizeofRxeRecvWqe)
	if err != nil {
		return nil, err
	}
	r := &recvRing{}
	r.setQueue(q, maxSGE)
	return r, nil
}

// setQueue installs q (r.mu held or r not yet shared).
func (r *recvRing) setQueue(q queue, maxSGE uint32) {
	r.q = q
	r.maxSGE = min(maxSGE, uint32(q.elemSize()-abi.SizeofRxeRecvWqe)/abi.SizeofRxeSge)
}

// post writes wrs in order: ENOMEM when the ring is full, EINVAL for more SGEs than the ring's limit (checked in
// that order, as rdma-core does) or for SGE lengths that add up to more than 2^32-1.
func (r *recvRing) post(wrs []verbs.RecvWR) (n int, st provider.Status) {
	r.mu.Lock()
	q := &r.q
	if !q.mapped() {
		r.mu.Unlock()
		return 0, provider.Destroyed
	}
	prod := q.producer()
	perr := provider.OK
	for n < len(wrs) {
		wr := &wrs[n]
		if q.full(prod) {
			perr = provider.QueueFull
			break
		}
		if uint64(len(wr.SGL)) > uint64(r.maxSGE) {
			perr = provider.TooManySGE
			break
		}
		length := sgeSum(wr.SGL)
		if length > math.MaxUint32 {
			perr = provider.TooLong
			break
		}
		encodeRecv(q.elem(prod), wr, length)
		prod = q.publish(prod)
		n++
	}
	r.mu.Unlock()
	return n, perr
}

// destroy unmaps the ring.
func (r *recvRing) destroy() {
	r.mu.Lock()
	r.q.unmap()
	r.mu.Unlock()
}

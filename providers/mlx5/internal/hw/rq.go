package hw

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/mmio"
)

// RecvQueueConfig describes a QP's receive queue over caller-owned memory.
type RecvQueueConfig struct {
	// Buf is the RQ ring, WQECount << WQEShift bytes at the start of the QP buffer.
	Buf []byte
	// WQECount is rq.wqe_cnt (a power of two) and WQEShift is log2 of the WQE stride (>= 4).
	WQECount int
	WQEShift int
	// MaxPost is rq.max_post; 0 means WQECount.
	MaxPost int
	// DBR is the QP's doorbell record; the receive counter is its first word (MLX5_RCV_DBR).
	DBR DoorbellRecord
	// QPN names the QP in errors.
	QPN uint32
}

// RecvQueue posts receive WQEs (data segments only) and updates the receive doorbell record; receives never touch
// MMIO. Like SendQueue it is not safe for concurrent use.
//
// PostRecv addresses the ring through base, an unsafe pointer to buf's first byte: WQE idx (idx <= mask) is at
// idx << shift inside the WQECount << WQEShift bytes NewRecvQueue verified, and a WQE holds maxGS segments.
type RecvQueue struct {
	buf     []byte
	base    unsafe.Pointer
	mask    uint32
	shift   uint
	maxGS   int
	maxPost uint32
	dbr     DoorbellRecord
	qpn     uint32
	head    uint32
	tail    uint32
	wrid    []uint64
}

// NewRecvQueue returns a receive queue over cfg's memory.
func NewRecvQueue(cfg RecvQueueConfig) (*RecvQueue, error) {
	if cfg.MaxPost == 0 {
		cfg.MaxPost = cfg.WQECount
	}
	switch {
	case !isPow2(cfg.WQECount) || cfg.WQECount > 1<<16 || cfg.WQEShift < 4 || cfg.WQEShift > 16:
		return nil, fmt.Errorf("mlx5: new receive queue for QP %#x: bad geometry (%d WQEs, shift %d): %w",
			cfg.QPN, cfg.WQECount, cfg.WQEShift, errInvalid)
	case len(cfg.Buf) < cfg.WQECount<<cfg.WQEShift:
		return nil, fmt.Errorf("mlx5: new receive queue for QP %#x: buffer of %d bytes, need %d: %w",
			cfg.QPN, len(cfg.Buf), cfg.WQECount<<cfg.WQEShift, errInvalid)
	case cfg.MaxPost < 1 || cfg.MaxPost > cfg.WQECount:
		return nil, fmt.Errorf("mlx5: new receive queue for QP %#x: max post %d: %w", cfg.QPN, cfg.MaxPost, errInvalid)
	case !cfg.DBR.valid():
		return nil, fmt.Errorf("mlx5: new receive queue for QP %#x: missing doorbell record: %w", cfg.QPN, errInvalid)
	}
	buf := cfg.Buf[:cfg.WQECount<<cfg.WQEShift]
	return &RecvQueue{
		buf:     buf,
		base:    unsafe.Pointer(unsafe.SliceData(buf)),
		mask:    uint32(cfg.WQECount - 1),
		shift:   uint(cfg.WQEShift),
		maxGS:   1 << (cfg.WQEShift - 4),
		maxPost: uint32(cfg.MaxPost),
		dbr:     cfg.DBR,
		qpn:     cfg.QPN,
		wrid:    make([]uint64, cfg.WQECount),
	}, nil
}

// Outstanding returns the number of posted receives not yet completed.
func (rq *RecvQueue) Outstanding() int { return int(rq.head - loadTail(&rq.tail)) }

// Reset returns the queue to its state after creation (indices and the receive counter to zero).
func (rq *RecvQueue) Reset() {
	rq.head = 0
	storeTail(&rq.tail, 0)
	rq.dbr.set(0, 0)
}

// PostRecv writes one receive WQE per work request (non-empty SGEs, then a terminator when the WQE has room) and
// publishes them with one doorbell-record store (rdma-core mlx5_post_recv). It returns how many were posted and
// provider.OK, or, when wrs[n] could not be posted (the ones before it are), n and QueueFull when the queue is
// full, TooManySGE when a request has more SGEs than a WQE holds, TooLong when its lengths add up to more than
// 2^32-1 bytes (as rxe). No outcome allocates.
func (rq *RecvQueue) PostRecv(wrs []RecvWR) (int, provider.Status) {
	st := provider.OK
	nreq := 0
	head := rq.head
	for i := range wrs {
		w := &wrs[i]
		if head-loadTail(&rq.tail) >= rq.maxPost {
			st = provider.QueueFull
			break
		}
		if st = recvSGLStatus(w.SGL, rq.maxGS); st != provider.OK {
			break
		}
		idx := head & rq.mask
		wqe := unsafe.Add(rq.base, uintptr(idx)<<rq.shift)
		j := 0
		for k := range w.SGL {
			s := &w.SGL[k]
			if s.Length == 0 {
				continue
			}
			PutDataSeg((*[DataSegSize]byte)(unsafe.Add(wqe, j*DataSegSize))[:], s.Length, s.LKey, s.Addr)
			j++
		}
		if j < rq.maxGS {
			PutDataSegEnd((*[DataSegSize]byte)(unsafe.Add(wqe, j*DataSegSize))[:])
		}
		*(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(rq.wrid)), uintptr(idx)*8)) = w.WRID
		head++
		nreq++
	}
	if nreq > 0 {
		rq.head = head
		mmio.ToDeviceBarrier()
		rq.dbr.set(0, head&0xffff)
	}
	return nreq, st
}

// complete retires the receive WQE the device reported and returns its wr_id.
func (rq *RecvQueue) complete(wqeCounter uint16) uint64 {
	id := rq.wrid[uint32(wqeCounter)&rq.mask]
	storeTail(&rq.tail, rq.tail+1)
	return id
}

// retire is complete without the index: Poll's inline responder path.
func (rq *RecvQueue) retire(wqeCounter uint16) uint64 {
	id := *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(rq.wrid)), uintptr(uint32(wqeCounter)&rq.mask)*8))
	storeTail(&rq.tail, rq.tail+1)
	return id
}

// copyToRecvWQE is responder scatter-to-CQE: copy the payload the device put in the CQE into the WQE's buffers.
func (rq *RecvQueue) copyToRecvWQE(idx uint32, src []byte) WCStatus {
	return copyToScatter(rq.buf, int(idx)<<rq.shift, rq.maxGS, src)
}

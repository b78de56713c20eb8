package hw

import (
	"fmt"
	"sync"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/mmio"
)

// SRQConfig describes a shared receive queue over caller-owned memory.
type SRQConfig struct {
	// Buf holds WQECount WQEs of 1<<WQEShift bytes: a 16-byte next segment then data segments.
	Buf []byte
	// WQECount is a power of two; the queue accepts WQECount-1 outstanding receives (one WQE is the list tail).
	WQECount int
	// WQEShift is log2 of the WQE stride (>= 5).
	WQEShift int
	// DBR is the SRQ's doorbell record (one big-endian counter in the first word).
	DBR  DoorbellRecord
	SRQN uint32
}

// SRQ is a shared receive queue (rdma-core's SRQ without the ODP wait queue): free WQEs form a linked list through
// their next_wqe_index fields; posting takes from the head, completion returns a WQE to the tail.
//
// Unlike the other queues an SRQ is locked internally (rdma-core's srq->lock): the QPs that receive from it may
// complete into different CQs polled by different goroutines, and each of those polls returns WQEs to the free
// list. PostRecv takes the lock once per batch; a poll takes it once per SRQ completion.
type SRQ struct {
	mu      sync.Mutex
	buf     []byte
	shift   uint
	nwqe    int
	maxGS   int
	dbr     DoorbellRecord
	srqn    uint32
	head    int
	tail    int
	counter uint16
	wrid    []uint64
}

// NewSRQ returns an SRQ over cfg's memory and links all WQEs into the free list (rdma-core set_srq_buf_ll), so
// call it before the SRQ is handed to the kernel.
func NewSRQ(cfg SRQConfig) (*SRQ, error) {
	switch {
	case !isPow2(cfg.WQECount) || cfg.WQECount < 2 || cfg.WQECount > 1<<16 || cfg.WQEShift < 5 || cfg.WQEShift > 16:
		return nil, fmt.Errorf("mlx5: new SRQ %#x: bad geometry (%d WQEs, shift %d): %w",
			cfg.SRQN, cfg.WQECount, cfg.WQEShift, errInvalid)
	case len(cfg.Buf) < cfg.WQECount<<cfg.WQEShift:
		return nil, fmt.Errorf("mlx5: new SRQ %#x: buffer of %d bytes, need %d: %w",
			cfg.SRQN, len(cfg.Buf), cfg.WQECount<<cfg.WQEShift, errInvalid)
	case !cfg.DBR.valid():
		return nil, fmt.Errorf("mlx5: new SRQ %#x: missing doorbell record: %w", cfg.SRQN, errInvalid)
	}
	s := &SRQ{
		buf:   cfg.Buf[:cfg.WQECount<<cfg.WQEShift],
		shift: uint(cfg.WQEShift),
		nwqe:  cfg.WQECount,
		maxGS: (1<<cfg.WQEShift - SRQNextSegSize) / DataSegSize,
		dbr:   cfg.DBR,
		srqn:  cfg.SRQN,
		tail:  cfg.WQECount - 1,
		wrid:  make([]uint64, cfg.WQECount),
	}
	for i := 0; i < s.tail; i++ {
		be.PutUint16(s.wqe(i)[2:], uint16(i+1))
	}
	return s, nil
}

func (s *SRQ) wqe(i int) []byte { return s.buf[i<<s.shift : (i+1)<<s.shift] }

// SRQN returns the SRQ number.
func (s *SRQ) SRQN() uint32 { return s.srqn }

// SetSRQN records the SRQ number the kernel assigned (the SRQ is built before CREATE_SRQ, which needs its
// buffer).
func (s *SRQ) SetSRQN(n uint32) { s.srqn = n }

// PostRecv takes one free WQE per work request, writes its scatter list (and a terminator when there is room),
// and publishes the batch with one doorbell-record store of the 16-bit counter (rdma-core mlx5_post_srq_recv).
// It returns how many were posted and provider.OK, or n and why wrs[n] was not: TooManySGE, TooLong (lengths
// adding up to more than 2^32-1 bytes, as rxe), QueueFull when no WQE is free. No outcome allocates.
func (s *SRQ) PostRecv(wrs []RecvWR) (int, provider.Status) {
	st := provider.OK
	nreq := 0
	s.mu.Lock()
	for i := range wrs {
		w := &wrs[i]
		if st = recvSGLStatus(w.SGL, s.maxGS); st != provider.OK {
			break
		}
		if s.head == s.tail {
			st = provider.QueueFull
			break
		}
		s.wrid[s.head] = w.WRID
		next := s.wqe(s.head)
		s.head = int(be.Uint16(next[2:]))
		scat := next[SRQNextSegSize:]
		for k := range w.SGL {
			g := &w.SGL[k]
			PutDataSeg(scat[k*DataSegSize:], g.Length, g.LKey, g.Addr)
		}
		if len(w.SGL) < s.maxGS {
			PutDataSegEnd(scat[len(w.SGL)*DataSegSize:])
		}
		nreq++
	}
	if nreq > 0 {
		s.counter += uint16(nreq)
		mmio.ToDeviceBarrier()
		s.dbr.set(0, uint32(s.counter))
	}
	s.mu.Unlock()
	return nreq, st
}

// complete returns WQE idx (the CQE's wqe_counter) to the free list and its wr_id (rdma-core mlx5_free_srq_wqe).
// payload, when not nil, is a scattered-to-CQE receive, copied into the WQE's buffers first; the returned status
// is that copy's. ok is false for an index outside the queue.
func (s *SRQ) complete(idx uint16, payload []byte) (id uint64, st WCStatus, ok bool) {
	i := int(idx)
	if i >= s.nwqe {
		return 0, verbs.WCSuccess, false
	}
	s.mu.Lock()
	if payload != nil {
		st = copyToScatter(s.buf, i<<s.shift+SRQNextSegSize, s.maxGS, payload)
	}
	id = s.wrid[i]
	be.PutUint16(s.buf[s.tail<<s.shift+2:], idx)
	s.tail = i
	s.mu.Unlock()
	return id, st, true
}

package mlx5

import (
	"fmt"

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
// their next_wqe_index fields; posting takes from the head, completion returns a WQE to the tail. Not safe for
// concurrent use.
type SRQ struct {
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

// PostRecv takes one free WQE per work request, writes its scatter list (and a terminator when there is room),
// and publishes the batch with one doorbell-record store of the 16-bit counter (rdma-core mlx5_post_srq_recv).
// ENOMEM when no WQE is free; EINVAL for too many SGEs.
func (s *SRQ) PostRecv(wrs []RecvWR) (int, error) {
	var err error
	nreq := 0
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGL) > s.maxGS {
			err = errInvalid
			break
		}
		if s.head == s.tail {
			err = errQueueFull
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
	if err != nil {
		return nreq, fmt.Errorf("mlx5: post SRQ receive WR %d on SRQ %#x: %w", nreq, s.srqn, err)
	}
	return nreq, nil
}

// complete returns WQE idx (the CQE's wqe_counter) to the free list and its wr_id (rdma-core mlx5_free_srq_wqe).
func (s *SRQ) complete(idx uint16) (uint64, bool) {
	i := int(idx)
	if i >= s.nwqe {
		return 0, false
	}
	id := s.wrid[i]
	be.PutUint16(s.wqe(s.tail)[2:], idx)
	s.tail = i
	return id, true
}

// copyToRecvWQE is scatter-to-CQE for an SRQ receive.
func (s *SRQ) copyToRecvWQE(idx uint16, src []byte) WCStatus {
	return copyToScatter(s.buf, int(idx)<<s.shift+SRQNextSegSize, s.maxGS, src)
}

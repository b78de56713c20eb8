package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"runtime"
	"testing"
	"time"

	"github.com/goverbs/goverbs/mmio"
)

// BenchmarkLibmlx5 runs the work-request streams of the libmlx5 comparison (test/bench/cmd/mlx5bench, which runs
// the same loops through libmlx5 in libmlx5emu's C harness) on goverbs' queues with libmlx5's geometry: an RC QP
// sized for 64 send WRs of up to 4 SGEs or 128 inline bytes and 64 receives of one SGE, a shared 256-byte
// BlueFlame register used for inline WQEs only (MLX5_POST_SEND_PREFER_BF=0 on the C side), a 256-CQE CQ with
// CQE version 1. Sub-benchmarks: inline (one signaled 32-byte inline SEND + BlueFlame), doorbell (one signaled SEND
// with one SGE + 8-byte doorbell), list16 (16 RDMA writes, one doorbell), recv (one receive), pollsend and
// pollrecv (16 requester / responder CQEs per poll).
//
// The loops are the C harness's: operations are timed in batches (32 posts, 4 lists of 16, 16 polls = one pass
// over the CQ) and "ns/unit" is the batch time less the cost of an empty timed batch, per WR or CQE; retiring the
// WQEs and the device's owner-bit flips happen between batches, outside the timing. Under callgrind the measured
// methods are (*SendQueue).PostSend, (*RecvQueue).PostRecv and (*CQ).Poll. With -benchtime Nx, b.N is the number
// of operations (posts, lists, polls), as the harness's N.
func BenchmarkLibmlx5(b *testing.B) {
	for _, op := range []string{"inline", "doorbell", "list16", "recv", "pollsend", "pollrecv"} {
		b.Run(op, func(b *testing.B) { benchLibmlx5(b, op) })
	}
}

// libmlx5Env is the RC QP of the comparison.
type libmlx5Env struct {
	sq    *SendQueue
	rq    *RecvQueue
	cq    *CQ
	cqBuf []byte
	s     *libmlx5Streams
	pl    []byte
}

const libmlx5CQSize = 256

func newLibmlx5Env(tb testing.TB) *libmlx5Env {
	tb.Helper()
	l, err := SizeQP(QPTypeRC, QPCaps{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 1, MaxInlineData: 128},
		false, QueueLimits{MaxSQDescSz: 512, MaxRQDescSz: 512, MaxSendWQEBB: 32768, MaxRecvWR: 32768}, 4096)
	if err != nil {
		tb.Fatal(err)
	}
	e := &libmlx5Env{cqBuf: aligned(libmlx5CQSize * 64), pl: payload()}
	reg, _ := mmio.RegFromBytes(aligned(512))
	bf, err := NewBFReg(reg, 256, false)
	if err != nil {
		tb.Fatal(err)
	}
	dbr, _ := NewDoorbellRecord(aligned(8))
	e.sq, err = NewSendQueue(SendQueueConfig{Buf: aligned(l.SQWQECount * 64), WQECount: l.SQWQECount,
		MaxPost: l.Caps.MaxSendWR, MaxSGE: l.Caps.MaxSendSGE, MaxInline: l.Caps.MaxInlineData, QPN: gQPN,
		Type: QPTypeRC, DBR: dbr, BF: bf, BlueFlameInlineOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	e.rq, err = NewRecvQueue(RecvQueueConfig{Buf: aligned(l.RQWQECount << l.RQWQEShift), WQECount: l.RQWQECount,
		WQEShift: l.RQWQEShift, DBR: dbr, QPN: gQPN})
	if err != nil {
		tb.Fatal(err)
	}
	cqDBR, _ := NewDoorbellRecord(aligned(8))
	e.cq, err = NewCQ(CQConfig{Buf: e.cqBuf, CQECount: libmlx5CQSize, CQN: gCQN, DBR: cqDBR, CQEVersion: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.cq.Attach(&QP{QPN: gQPN, UserIndex: gUIdx, SQ: e.sq, RQ: e.rq}); err != nil {
		tb.Fatal(err)
	}
	e.s = newLibmlx5Streams(e.pl, 0x11223344)
	return e
}

// timerCost is the mean time of an empty timed region.
func timerCost() time.Duration {
	var sum time.Duration
	for range 10000 {
		t := time.Now()
		sum += time.Since(t)
	}
	return sum / 10000
}

func benchLibmlx5(b *testing.B, op string) {
	e := newLibmlx5Env(b)
	tc := timerCost()
	var ns time.Duration
	n, units := b.N, b.N
	b.ReportAllocs()
	runtime.LockOSThread() // one thread: mlx5bench sums callgrind's profiles of the threads that ran the ops
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	switch op {
	case "inline", "doorbell", "list16":
		w, batch := e.s.inline, 32
		switch op {
		case "doorbell":
			w = e.s.doorbell
		case "list16":
			w, batch, units = e.s.list16, 4, 16*n
		}
		for done := 0; done < n; {
			k := min(n-done, batch)
			t := time.Now()
			for range k {
				if _, st := e.sq.PostSend(w); st != provider.OK {
					b.Fatal(st)
				}
			}
			ns += time.Since(t) - tc
			done += k
			e.sq.tail = e.sq.head // the CQ retires them
		}
	case "recv":
		for done := 0; done < n; {
			k := min(n-done, 32)
			t := time.Now()
			for range k {
				if _, st := e.rq.PostRecv(e.s.recv); st != provider.OK {
					b.Fatal(st)
				}
			}
			ns += time.Since(t) - tc
			done += k
			e.rq.tail = e.rq.head
		}
	case "pollsend", "pollrecv":
		for i := uint32(0); i < libmlx5CQSize; i++ {
			if op == "pollrecv" {
				putCQE(e.cqBuf, libmlx5CQSize, i, cqeSpec{opcode: CQERespSend, qpn: gQPN, uidx: gUIdx,
					wqeCounter: uint16(i), byteCnt: 64})
			} else {
				putCQE(e.cqBuf, libmlx5CQSize, i, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN,
					uidx: gUIdx, wqeCounter: uint16(i)})
			}
		}
		var wcs [16]WC
		units = 16 * n
		for done := 0; done < n; {
			k := min(n-done, libmlx5CQSize/16)
			bad := false
			t := time.Now()
			for range k {
				got, st := e.cq.Poll(wcs[:])
				bad = bad || got != 16 || st != provider.OK
			}
			ns += time.Since(t) - tc
			if bad {
				b.Fatal("poll returned fewer than 16 CQEs")
			}
			done += k
			if e.cq.ci%libmlx5CQSize == 0 { // the device wrote the next pass
				for i := 63; i < len(e.cqBuf); i += 64 {
					e.cqBuf[i] ^= 1
				}
			}
		}
	}
	b.ReportMetric(float64(ns.Nanoseconds())/float64(units), "ns/unit")
}

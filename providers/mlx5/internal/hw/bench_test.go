package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

// benchSQ is an RC send queue of 256 blocks with a 256-byte BlueFlame register (bf_reg_size 512).
func benchSQ(tb testing.TB) *testSQ {
	tb.Helper()
	ts := newTestSQSized(tb, QPTypeRC, 256, false, 2, 4, 128)
	ring := aligned(256 * 64)
	sq, err := NewSendQueue(SendQueueConfig{Buf: ring, WQECount: 256, MaxPost: 64, MaxSGE: 4, MaxInline: 128,
		QPN: gQPN, Type: QPTypeRC, DBR: ts.sq.dbr, BF: ts.bf})
	if err != nil {
		tb.Fatal(err)
	}
	ts.sq, ts.ring = sq, ring
	return ts
}

func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	ts := benchSQ(t)
	pl := payload()
	inline := []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SGL: []SGE{{Addr: addrOf(pl), Length: 32}}}}
	list := make([]SendWR, 8)
	for i := range list {
		list[i] = SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGL: []SGE{gS1}}
	}
	zeroAllocs(t, "PostSend inline", func() {
		if _, st := ts.sq.PostSend(inline); st != provider.OK {
			t.Fatal(st)
		}
		ts.sq.tail = ts.sq.head
	})
	zeroAllocs(t, "PostSend list", func() {
		if _, st := ts.sq.PostSend(list); st != provider.OK {
			t.Fatal(st)
		}
		ts.sq.tail = ts.sq.head
	})

	e := newCQEnv(t)
	recv := []RecvWR{{WRID: 1, SGL: []SGE{gS1}}}
	zeroAllocs(t, "PostRecv", func() {
		if _, st := e.rq.PostRecv(recv); st != provider.OK {
			t.Fatal(st)
		}
		e.rq.tail = e.rq.head
	})
	s := benchSRQ(t)
	zeroAllocs(t, "SRQ post + complete", func() {
		idx := s.head
		if _, st := s.PostRecv(recv); st != provider.OK {
			t.Fatal(st)
		}
		if _, _, ok := s.complete(uint16(idx), nil); !ok {
			t.Fatal("SRQ completion refused")
		}
	})
	var wcs [4]WC
	zeroAllocs(t, "post + poll + arm", func() {
		if _, st := e.sq.sq.PostSend([]SendWR{sendWR(1, gS1)}); st != provider.OK {
			t.Fatal(st)
		}
		putCQE(e.cqBuf, 8, e.cq.ci, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx,
			wqeCounter: uint16(e.sq.sq.curPost - 1)})
		if n, st := e.cq.Poll(wcs[:]); n != 1 || st != provider.OK {
			t.Fatal(n, st)
		}
		e.cq.Arm(false)
	})
}

// zeroAllocs fails t when fn allocates (what is the case's name).
func zeroAllocs(t *testing.T, what string, fn func()) {
	t.Helper()
	if a := testing.AllocsPerRun(100, fn); a != 0 {
		t.Errorf("%s: %v allocs/op", what, a)
	}
}

// TestZeroAllocsOnErrors checks that refusals allocate nothing either: a post on a full queue, a refused opcode,
// too many SGEs, a CQE naming no queue.
func TestZeroAllocsOnErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	ts := benchSQ(t)
	for _, c := range []struct {
		name string
		wrs  []SendWR
		st   provider.Status
	}{
		{"bad opcode", []SendWR{{Opcode: 99}}, provider.BadOpcode},
		{"not supported", []SendWR{sendWR(1, gS1), {Opcode: verbs.WRBindMW}}, provider.OpcodeNotSupported},
		{"too many SGEs", []SendWR{sendWR(1, gS1, gS1, gS1, gS1, gS1)}, provider.TooManySGE},
	} {
		zeroAllocs(t, "PostSend "+c.name, func() {
			if _, st := ts.sq.PostSend(c.wrs); st != c.st {
				t.Fatal(st)
			}
			ts.sq.tail = ts.sq.head
		})
	}
	ts.sq.tail = ts.sq.head - ts.sq.maxPost // full
	zeroAllocs(t, "PostSend on a full queue", func() {
		if _, st := ts.sq.PostSend([]SendWR{sendWR(1, gS1)}); st != provider.QueueFull {
			t.Fatal(st)
		}
	})
	e := newCQEnv(t)
	zeroAllocs(t, "PostRecv on a full queue", func() {
		e.rq.tail = e.rq.head - e.rq.maxPost
		if _, st := e.rq.PostRecv([]RecvWR{{WRID: 1}}); st != provider.QueueFull {
			t.Fatal(st)
		}
	})
	var wcs [4]WC
	zeroAllocs(t, "Poll of an unknown CQE", func() {
		putCQE(e.cqBuf, 8, e.cq.ci, cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: 0x99, uidx: 99})
		if _, st := e.cq.Poll(wcs[:]); st != provider.UnknownCQE {
			t.Fatal(st)
		}
	})
}

// BenchmarkPostSendInline posts one signaled 32-byte inline SEND and rings the doorbell (BlueFlame copy of one
// 64-byte block, barriers included). Target: <= 20 ns/op, 0 allocs/op.
func BenchmarkPostSendInline(b *testing.B) {
	ts := benchSQ(b)
	pl := payload()
	w := []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SGL: []SGE{{Addr: addrOf(pl), Length: 32}}}}
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		if _, st := ts.sq.PostSend(w); st != provider.OK {
			b.Fatal(st)
		}
		ts.sq.tail = ts.sq.head // the CQ would retire it
	}
	c.report(b, b.N, "op")
}

// BenchmarkPostSendDoorbell posts one SEND with a gather entry on a register without BlueFlame (8-byte doorbell).
func BenchmarkPostSendDoorbell(b *testing.B) {
	ts := benchSQ(b)
	ts.bf.bufSize, ts.bf.maxDS = 0, 0
	w := []SendWR{sendWR(1, gS1)}
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		if _, st := ts.sq.PostSend(w); st != provider.OK {
			b.Fatal(st)
		}
		ts.sq.tail = ts.sq.head
	}
	c.report(b, b.N, "op")
}

// BenchmarkPostSendList posts 16 RDMA writes with one doorbell; ns/WR is reported.
func BenchmarkPostSendList(b *testing.B) {
	ts := benchSQ(b)
	list := make([]SendWR, 16)
	for i := range list {
		list[i] = SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGL: []SGE{gS1}}
	}
	list[15].Flags = verbs.SendSignaled
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		if _, st := ts.sq.PostSend(list); st != provider.OK {
			b.Fatal(st)
		}
		ts.sq.tail = ts.sq.head
	}
	c.report(b, b.N*len(list), "WR")
}

// BenchmarkPollCQE polls requester completions 16 at a time; cpu-ns/CQE is reported. The device's writes are
// simulated by flipping each CQE's owner bit once per pass (one byte store per CQE, inside the timing). With 256
// CQEs the ring stays in L1 (the parse cost); with 4096 (256 KiB) every CQE is a cache miss, closer to CQEs
// arriving by DMA.
func BenchmarkPollCQE(b *testing.B) {
	for _, count := range []int{256, 4096} {
		b.Run(fmt.Sprintf("cqes=%d", count), func(b *testing.B) {
			benchPoll(b, count, func(i uint32) cqeSpec {
				return cqeSpec{opcode: CQEReq, wqeOpcode: OpcodeSend, qpn: gQPN, uidx: gUIdx, wqeCounter: uint16(i)}
			})
		})
	}
}

// BenchmarkPollRecvCQE polls responder SEND completions (one receive WQE each, posted outside the timing is not
// possible without distorting it, so the receive queue's tail is simply advanced), 16 per poll; cpu-ns/CQE.
func BenchmarkPollRecvCQE(b *testing.B) {
	benchPoll(b, 256, func(i uint32) cqeSpec {
		return cqeSpec{opcode: CQERespSend, qpn: gQPN, uidx: gUIdx, wqeCounter: uint16(i), byteCnt: 64}
	})
}

// benchPoll polls a ring of count CQEs, CQE i written as spec(i), 16 per poll.
func benchPoll(b *testing.B, count int, spec func(i uint32) cqeSpec) {
	e := newCQEnv(b)
	buf := aligned(count * 64)
	cq, err := NewCQ(CQConfig{Buf: buf, CQECount: count, CQN: gCQN, DBR: e.cq.dbr, CQEVersion: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := cq.Attach(e.qp); err != nil {
		b.Fatal(err)
	}
	for i := uint32(0); i < uint32(count); i++ {
		putCQE(buf, count, i, spec(i))
	}
	var wcs [16]WC
	polled := 0
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		n, st := cq.Poll(wcs[:])
		if n != len(wcs) || st != provider.OK {
			b.Fatal(n, st)
		}
		polled += n
		if cq.ci%uint32(count) == 0 { // the device wrote the next pass
			for i := 63; i < len(buf); i += 64 {
				buf[i] ^= 1
			}
		}
	}
	c.report(b, polled, "CQE")
}

// BenchmarkPostRecv posts one receive and updates the doorbell record.
func BenchmarkPostRecv(b *testing.B) {
	e := newCQEnv(b)
	w := []RecvWR{{WRID: 1, SGL: []SGE{gS1}}}
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		if _, st := e.rq.PostRecv(w); st != provider.OK {
			b.Fatal(st)
		}
		e.rq.tail = e.rq.head
	}
	c.report(b, b.N, "op")
}

// benchSRQ is an SRQ of 64 WQEs with one SGE each.
func benchSRQ(tb testing.TB) *SRQ {
	tb.Helper()
	d, _ := NewDoorbellRecord(aligned(8))
	s, err := NewSRQ(SRQConfig{Buf: aligned(64 * 32), WQECount: 64, WQEShift: 5, DBR: d})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkSRQPostRecvComplete posts one SRQ receive and retires it as a completion would: the SRQ's lock is
// taken twice (post batch, completion).
func BenchmarkSRQPostRecvComplete(b *testing.B) {
	s := benchSRQ(b)
	w := []RecvWR{{WRID: 1, SGL: []SGE{gS1}}}
	b.ReportAllocs()
	var c threadCPU
	c.start()
	for b.Loop() {
		idx := s.head
		if _, st := s.PostRecv(w); st != provider.OK {
			b.Fatal(st)
		}
		s.complete(uint16(idx), nil)
	}
	c.report(b, b.N, "op")
}

// threadCPU measures the CPU time of the calling OS thread, so that benchmark results stay meaningful on a
// loaded machine where wall-clock ns/op includes time spent waiting for a core. Call start before the loop and
// report after it; the goroutine is locked to its thread in between.
type threadCPU struct{ t0 int64 }

const rusageThread = 1 // RUSAGE_THREAD

func threadNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func (c *threadCPU) start() {
	runtime.LockOSThread()
	c.t0 = threadNanos()
}

func (c *threadCPU) report(b *testing.B, units int, unit string) {
	d := threadNanos() - c.t0
	runtime.UnlockOSThread()
	if units > 0 {
		b.ReportMetric(float64(d)/float64(units), "cpu-ns/"+unit)
	}
}

package mlx5

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
)

// TestConcurrentPostPoll uses one mlx5 QP from several goroutines at once, as package uverbs allows: three
// goroutines post sends to QP a while one posts receives to QP b, one goroutine polls each CQ (retiring the send
// WQEs the posters reuse) and another arms the receive CQ, with the emulated device running in the background.
// Nothing serializes them but the adapters' own locks (the QP's send and receive locks, the CQ's lock) and the
// queues' atomic tails. Rings and doorbell records are Go memory here so that the race detector sees the
// orderings the device provides (see emuSys); run with -race. Every completion must arrive once, successful,
// and in each poster's order.
func TestConcurrentPostPoll(t *testing.T) {
	for _, bf := range []int{512, 0} {
		g := newGlueWith(t, bf, true)
		scq, rcq, a, b, src, slk, dst, dlk := g.rcPair()
		g.dev.Start()

		const posters, perPoster = 3, 400
		const total = posters * perPoster
		var recvPosted, sendsPosted atomic.Int64
		var done atomic.Bool
		deadline := time.Now().Add(2 * time.Minute)
		stuck := func() bool { return time.Now().After(deadline) }
		var wg sync.WaitGroup
		fail := func(format string, args ...any) { t.Errorf(format, args...); done.Store(true) }

		wg.Add(1)
		go func() { // receives for every send, ahead of them
			defer wg.Done()
			wr := []hw.RecvWR{{SGL: []hw.SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}}
			for n := int64(0); n < total && !done.Load(); {
				wr[0].WRID = uint64(n)
				switch _, st := b.PostRecv(wr); st {
				case provider.OK:
					n++
					recvPosted.Store(n)
				case provider.QueueFull:
					runtime.Gosched()
				default:
					fail("post receive %d: %v", n, st.Err())
				}
			}
		}()
		for p := 0; p < posters; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wr := []hw.SendWR{{Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
					SGL: []hw.SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}}}
				for i := 0; i < perPoster && !done.Load(); {
					// Never more sends than receives posted: an RNR would end the QP.
					if n := sendsPosted.Load(); n >= recvPosted.Load() || !sendsPosted.CompareAndSwap(n, n+1) {
						runtime.Gosched()
						continue
					}
					wr[0].WRID = uint64(p)<<32 | uint64(i)
					switch _, st := a.PostSend(wr); st {
					case provider.OK:
						i++
					case provider.QueueFull:
						sendsPosted.Add(-1)
						runtime.Gosched()
					default:
						fail("poster %d send %d: %v", p, i, st.Err())
					}
				}
			}()
		}
		poll := func(cq *cqAdapter, what string, check func(w *hw.WC)) {
			defer wg.Done()
			var wcs [8]hw.WC
			for got := 0; got < total && !done.Load(); {
				if stuck() {
					fail("%s: %d of %d completions after two minutes", what, got, total)
					return
				}
				n, st := cq.Poll(wcs[:])
				if st != provider.OK {
					fail("%s: poll: %v", what, st.Err())
					return
				}
				for i := range wcs[:n] {
					if wcs[i].Status != verbs.WCSuccess {
						fail("%s: completion %+v", what, wcs[i])
						return
					}
					check(&wcs[i])
				}
				got += n
				if n == 0 {
					runtime.Gosched()
				}
			}
		}
		var next [posters]uint64
		wg.Add(2)
		go poll(scq, "send CQ", func(w *hw.WC) {
			p, i := w.WRID>>32, w.WRID&0xffffffff
			if p >= posters || i != next[p] {
				fail("send completion %#x: poster %d's next is %d", w.WRID, p, next[min(p, posters-1)])
				return
			}
			next[p]++
		})
		var nextRecv uint64
		go poll(rcq, "receive CQ", func(w *hw.WC) {
			if w.WRID != nextRecv || w.ByteLen != 16 {
				fail("receive completion %+v, want wr_id %d of 16 bytes", w, nextRecv)
			}
			nextRecv++
		})
		stopArm := make(chan struct{})
		var armWG sync.WaitGroup
		armWG.Add(1)
		go func() { // arming races with the receive CQ's polls (the CQ lock orders them)
			defer armWG.Done()
			for {
				select {
				case <-stopArm:
					return
				default:
					rcq.Arm(false)
					runtime.Gosched()
				}
			}
		}()
		wg.Wait()
		close(stopArm)
		armWG.Wait()
		g.dev.Stop()
		if t.Failed() {
			return
		}
		for p, n := range next {
			if n != perPoster {
				t.Errorf("BlueFlame %d: poster %d: %d sends completed, want %d", bf, p, n, perPoster)
			}
		}
		if nextRecv != total {
			t.Errorf("BlueFlame %d: %d receives completed, want %d", bf, nextRecv, total)
		}
	}
}

// TestResetCleansCQs: a QP's transition to RESET removes its completions still in its CQs (rdma-core
// mlx5_modify_qp cleans both CQs) and zeroes its queues, while another QP's completions in the same CQ stay.
func TestResetCleansCQs(t *testing.T) {
	g := newGlue(t, 512)
	scq, rcq, a, b, src, slk, dst, dlk := g.rcPair()
	for i := 0; i < 3; i++ {
		for _, q := range []*qpAdapter{a, b} {
			if _, st := q.PostRecv([]hw.RecvWR{{WRID: uint64(i), SGL: []hw.SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}}); st != provider.OK {
				t.Fatal(st.Err())
			}
		}
	}
	send := func(q *qpAdapter, id uint64) {
		t.Helper()
		if _, st := q.PostSend([]hw.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
			SGL: []hw.SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}}}); st != provider.OK {
			t.Fatal(st.Err())
		}
	}
	send(a, 10)
	send(b, 20)
	send(a, 11)
	g.dev.Process()
	// scq: a's 10, b's 20, a's 11; rcq: b's receives 0 and 1 (from a), a's receive 0 (from b).
	a.StateChanged(verbs.QPStateReset)
	if n := a.SQ.Outstanding() + a.RQ.Outstanding(); n != 0 {
		t.Errorf("after RESET %d work requests outstanding, want 0", n)
	}
	got := pollN(t, scq, 1)
	if got[0].WRID != 20 || got[0].QPNum != b.QPN {
		t.Errorf("send CQ after a's RESET: %+v, want only b's send 20", got[0])
	}
	got = pollN(t, rcq, 2)
	for i, w := range got {
		if w.QPNum != b.QPN || w.WRID != uint64(i) {
			t.Errorf("receive CQ after a's RESET: completion %d = %+v, want b's receive %d", i, w, i)
		}
	}
	var wcs [4]hw.WC
	if n, st := scq.Poll(wcs[:]); n != 0 || st != provider.OK {
		t.Errorf("send CQ not empty: %d, %v", n, st)
	}
}

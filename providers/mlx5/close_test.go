package mlx5

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/internal/gate"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
)

// Close racing with the data path on mlx5 (issue #14, item 5), against the emulator: goroutines post sends and
// receives, run the device, poll both CQs and arm one, each call bracketed by its object's gate exactly as
// package uverbs brackets them (internal/gate; uverbs itself needs a kernel fd), while another goroutine closes
// the QPs and then the CQs the way uverbs' Close does: gate closed and drained, the object destroyed in the
// "kernel" (the emulator), then the provider's Destroyed, which unmaps the rings (real munmap: a later access
// faults) and returns doorbell records and BlueFlame registers to their pools.
//
// The data-path calls share one mutex with the emulator (which plays the device and the kernel and is not safe
// for concurrent use; TestConcurrentPostPoll runs the data path unserialized); Close and Destroyed do not take
// it. What must hold is that no call runs after its object's Destroyed, that a QP's Destroyed (which removes its
// completions from its CQs, then detaches it) does not race with those CQs' polls, and that no poll meets a
// completion of a destroyed QP. Run with -race.
func TestCloseRacesDataPath(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	var refused, unknown atomic.Int64
	for r := 0; r < rounds && !t.Failed(); r++ {
		closeRaceRound(t, r, &refused, &unknown)
	}
	t.Logf("%d rounds: %d calls refused as closed, %d polls met a completion of a destroyed QP", rounds, refused.Load(), unknown.Load())
	if refused.Load() == 0 {
		t.Error("no call ever raced with Close")
	}
	if unknown.Load() != 0 {
		t.Errorf("%d polls met a completion of a destroyed QP: its CQEs must be cleaned out when it is destroyed", unknown.Load())
	}
}

func closeRaceRound(t *testing.T, round int, refused, unknown *atomic.Int64) {
	g := newGlue(t, []int{512, 0}[round%2])
	scq, rcq, a, b, src, slk, dst, dlk := g.rcPair()

	var qa, qb, gs, gr gate.Gate // the objects' gates, as uverbs' QP and CQ hold them
	var mu sync.Mutex            // the caller's serialization of hw's queues and the emulator
	call := func(gt *gate.Gate, f func() provider.Status) bool {
		if !gt.Enter() {
			refused.Add(1)
			return false
		}
		mu.Lock()
		st := f()
		mu.Unlock()
		gt.Exit()
		switch st {
		case provider.OK, provider.QueueFull:
		case provider.UnknownCQE:
			unknown.Add(1)
		default:
			t.Errorf("round %d: %v", round, st.Err())
			return false
		}
		return true
	}
	var wg sync.WaitGroup
	worker := func(f func() bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f() {
			}
		}()
	}
	worker(func() bool {
		return call(&qb, func() provider.Status {
			_, st := b.PostRecv([]hw.RecvWR{{WRID: 1, SGL: []hw.SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}})
			return st
		})
	})
	for i := 0; i < 2; i++ {
		worker(func() bool {
			return call(&qa, func() provider.Status {
				_, st := a.PostSend([]hw.SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
					SGL: []hw.SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}}})
				if st == provider.OK {
					g.dev.Process()
				}
				return st
			})
		})
	}
	for _, c := range []struct {
		gt *gate.Gate
		cq *cqAdapter
	}{{&gs, scq}, {&gr, rcq}} {
		worker(func() bool {
			var wc [8]hw.WC
			return call(c.gt, func() provider.Status { _, st := c.cq.Poll(wc[:]); return st })
		})
	}
	worker(func() bool {
		return call(&gr, func() provider.Status { rcq.Arm(false); return provider.OK })
	})

	// Close as uverbs does: QPs first (the kernel refuses a CQ still in use), then the CQs. Destroyed runs
	// without the data-path mutex, concurrently with calls on the other objects.
	closeQP := func(gt *gate.Gate, q *qpAdapter) {
		if err := gt.Close(func() error {
			if err := g.dev.DestroyQP(q.QPN); err != nil {
				return err
			}
			q.Destroyed()
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	closeCQ := func(gt *gate.Gate, c *cqAdapter, cqn uint32) {
		if err := gt.Close(func() error {
			if err := g.dev.DestroyCQ(cqn); err != nil {
				return err
			}
			c.Destroyed()
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	for i := 0; i < round%5; i++ {
		mu.Lock()
		g.dev.Process()
		mu.Unlock()
	}
	closeQP(&qa, a)
	closeQP(&qb, b)
	closeCQ(&gs, scq, scq.CQN())
	closeCQ(&gr, rcq, rcq.CQN())
	wg.Wait()
}

// BenchmarkAdapterPollEmpty is the core's view of an mlx5 poll that finds nothing: the adapter (its CQ lock) and
// hw.CQ.Poll.
func BenchmarkAdapterPollEmpty(b *testing.B) {
	g := newGlue(b, 512)
	cq, _ := g.cq(64)
	var wc [8]hw.WC
	b.ReportAllocs()
	for b.Loop() {
		cq.Poll(wc[:])
	}
}

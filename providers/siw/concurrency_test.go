package siw

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// Concurrent posters on one send queue while a "kernel" goroutine takes requests: every request arrives
// exactly once, each poster's in its own order. Run with -race.
func TestConcurrentPostSend(t *testing.T) {
	const posters, perPoster, batch = 4, 2000, 5
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	f.withNullDoorbell(t)
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			wrs := make([]verbs.SendWR, perPoster)
			for i := range wrs {
				wrs[i] = verbs.SendWR{WRID: uint64(p)<<32 | uint64(i), Opcode: verbs.WRSend, SGL: []verbs.SGE{{Addr: uint64(i), Length: 1}}}
			}
			for len(wrs) > 0 {
				n, err := errOf(f.PostSend(wrs[:min(batch, len(wrs))]))
				wrs = wrs[n:]
				if err != nil {
					if !errors.Is(err, unix.ENOMEM) {
						t.Errorf("poster %d: %v", p, err)
						return
					}
					runtime.Gosched()
				}
			}
		}(p)
	}
	next := make([]uint64, posters)
	for got := 0; got < posters*perPoster; {
		e, ok := f.takeSQE()
		if !ok {
			runtime.Gosched()
			continue
		}
		poster, i := e.Id>>32, e.Id&0xffffffff
		if poster >= posters || i != next[poster] || e.Sge[0].Laddr != i {
			t.Fatalf("request %d: wr_id %#x laddr %d", got, e.Id, e.Sge[0].Laddr)
		}
		next[poster]++
		got++
	}
	wg.Wait()
}

// Concurrent pollers on one CQ while a "kernel" goroutine produces: every completion is returned once.
func TestConcurrentPoll(t *testing.T) {
	const pollers, total = 3, 20000
	k := newFakeKernel(t)
	c := k.newCQ(16)
	var mu sync.Mutex
	seen := make([]bool, total)
	count := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < pollers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := make([]verbs.WC, 4)
			for {
				n := pollN(c.Poll(wc))
				if n == 0 {
					select {
					case <-done:
						return
					default:
					}
					runtime.Gosched()
					continue
				}
				mu.Lock()
				for _, w := range wc[:n] {
					if w.WRID >= total || seen[w.WRID] {
						t.Errorf("completion %d returned twice or out of range", w.WRID)
					} else {
						seen[w.WRID] = true
						count++
					}
				}
				if count == total {
					close(done)
				}
				mu.Unlock()
			}
		}()
	}
	for id := uint64(0); id < total; {
		if c.produce(abi.SiwCqe{Id: id, Opcode: abi.SIW_OP_SEND}) {
			id++
		} else {
			runtime.Gosched()
		}
	}
	wg.Wait()
	if count != total {
		t.Fatalf("%d of %d completions returned", count, total)
	}
}

// Posting, polling and arming race with Destroyed without crashing: once the queues are gone, calls fail
// cleanly.
func TestConcurrentDestroy(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(testCap)
	f.withNullDoorbell(t)
	c := k.newCQ(8)
	s := k.newSRQ(8, 1)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if _, err := errOf(f.PostSend(sends(1))); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOMEM) {
				t.Errorf("PostSend: %v", err)
				return
			}
			f.PostRecv(recvs(0, 1, 1))
		}
	}()
	go func() {
		defer wg.Done()
		wc := make([]verbs.WC, 2)
		for i := 0; i < 2000; i++ {
			pollN(c.Poll(wc))
			c.Arm(i%2 == 0)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			s.PostRecv(recvs(0, 1, 1))
		}
	}()
	go func() {
		defer wg.Done()
		runtime.Gosched()
		f.Destroyed()
		c.Destroyed()
		s.Destroyed()
	}()
	wg.Wait()
	if _, err := errOf(f.PostSend(sends(1))); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend after Destroyed: %v", err)
	}
}

package rxe

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// Concurrent posters on one send queue while a "kernel" goroutine consumes it: every request arrives exactly
// once, each poster's requests in its own order, with consecutive send sequence numbers. Run with -race.
func TestConcurrentPostSend(t *testing.T) {
	const posters, perPoster, batch = 4, 2000, 5
	k := newFakeKernel(t)
	f := k.rtsQP(verbs.QPCap{MaxSendWR: 32, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})

	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			wrs := make([]verbs.SendWR, perPoster)
			for i := range wrs {
				wrs[i] = verbs.SendWR{WRID: uint64(p)<<32 | uint64(i), Opcode: verbs.WRSend,
					SGL: []verbs.SGE{{Addr: uint64(i), Length: 1}}}
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
	var ssn uint32
	for got := 0; got < posters*perPoster; {
		p, ok := consume(f.sq)
		if !ok {
			runtime.Gosched()
			continue
		}
		w := (*abi.RxeSendWqe)(p)
		poster, seq := w.Wr.WrId>>32, w.Wr.WrId&0xffffffff
		if poster >= posters || seq != next[poster] {
			t.Fatalf("WQE %d: wr_id %#x, expected poster %d's request %d", got, w.Wr.WrId, poster, next[poster%posters])
		}
		if w.Ssn != ssn || w.Dma.NumSge != 1 || w.Dma.Length != 1 {
			t.Fatalf("WQE %d: ssn %d (want %d), dma %+v", got, w.Ssn, ssn, w.Dma)
		}
		next[poster]++
		ssn++
		got++
		retire(f.sq)
	}
	wg.Wait()
}

// Concurrent pollers on one CQ while a "kernel" goroutine produces: every completion is returned exactly once.
func TestConcurrentPoll(t *testing.T) {
	const pollers, total = 3, 20000
	k := newFakeKernel(t)
	c := k.newCQ(15)
	var mu sync.Mutex
	seen := make([]bool, total)
	count := 0
	var wg sync.WaitGroup
	done := make(chan struct{})
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
		if c.produce(abi.IbUverbsWc{WrId: id}) {
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

// Posting and polling race with Destroyed and Resize without crashing: once the ring is gone, calls fail
// cleanly.
func TestConcurrentDestroy(t *testing.T) {
	k := newFakeKernel(t)
	f := k.rtsQP(testCap)
	c := k.newCQ(7)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if _, err := errOf(f.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}})); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOMEM) {
				t.Errorf("PostSend: %v", err)
				return
			}
			if _, ok := consume(f.sq); ok {
				retire(f.sq)
			}
		}
	}()
	go func() {
		defer wg.Done()
		wc := make([]verbs.WC, 2)
		for i := 0; i < 2000; i++ {
			pollN(c.Poll(wc))
		}
	}()
	go func() {
		defer wg.Done()
		runtime.Gosched()
		f.Destroyed()
		c.Destroyed()
	}()
	wg.Wait()
	if _, err := errOf(f.PostSend([]verbs.SendWR{{Opcode: verbs.WRSend}})); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("PostSend after Destroyed: %v", err)
	}
}

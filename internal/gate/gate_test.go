package gate

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// ring is an object whose calls touch a real mapping that its destroy unmaps: a call that got past Enter after
// destroy would fault (SIGSEGV), not merely race.
type ring struct {
	g   Gate
	mem []byte
}

func newRing(t testing.TB) *ring {
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	return &ring{mem: mem}
}

func (r *ring) call() bool {
	if !r.g.Enter() {
		return false
	}
	p := (*uint64)(unsafeAt(r.mem))
	atomic.AddUint64(p, 1)
	r.g.Exit()
	return true
}

func TestCloseWaitsForCallsInFlight(t *testing.T) {
	const rounds, callers = 100, 4
	for round := 0; round < rounds; round++ {
		r := newRing(t)
		var wg sync.WaitGroup
		var ok, refused atomic.Int64
		start := make(chan struct{})
		for i := 0; i < callers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					if !r.call() {
						refused.Add(1)
						return
					}
					ok.Add(1)
				}
			}()
		}
		close(start)
		for i := 0; i < round%7; i++ {
			runtime.Gosched()
		}
		if err := r.g.Close(func() error { return unix.Munmap(r.mem) }); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if refused.Load() != callers {
			t.Fatalf("round %d: %d callers saw the close, want %d", round, refused.Load(), callers)
		}
		if r.call() {
			t.Fatal("call admitted after Close")
		}
		if !r.g.Closed() {
			t.Fatal("Closed() false after Close")
		}
	}
}

func TestFailedCloseReopens(t *testing.T) {
	r := newRing(t)
	defer unix.Munmap(r.mem)
	busy := errors.New("busy")
	var inDestroy bool
	if err := r.g.Close(func() error { inDestroy = r.g.Enter(); return busy }); err != busy {
		t.Fatalf("Close: %v, want the destroy error", err)
	}
	if inDestroy {
		t.Fatal("a call was admitted while Close ran destroy")
	}
	if r.g.Closed() || !r.call() {
		t.Fatal("object not open again after a failed Close")
	}
	calls := 0
	for i := 0; i < 2; i++ {
		if err := r.g.Close(func() error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("destroy ran %d times, want once", calls)
	}
}

func BenchmarkEnterExit(b *testing.B) {
	var g Gate
	for b.Loop() {
		if g.Enter() {
			g.Exit()
		}
	}
}

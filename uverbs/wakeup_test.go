package uverbs

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// A Wakeup's eventfd keeps wakes until a wait consumes them; after Close it refuses to wake.
func TestWakeup(t *testing.T) {
	w, err := NewWakeup()
	if err != nil {
		t.Fatal(err)
	}
	readable := func() bool {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if readable() {
		t.Fatal("a new Wakeup is already woken")
	}
	for i := 0; i < 3; i++ {
		if err := w.Wake(); err != nil {
			t.Fatal(err)
		}
	}
	if !readable() {
		t.Fatal("Wake left the eventfd unreadable")
	}
	w.clear()
	if readable() {
		t.Fatal("clear left wakes behind")
	}
	w.clear() // nothing to consume: does not block
	if a := testing.AllocsPerRun(100, func() {
		w.Wake()
		w.clear()
	}); a != 0 {
		t.Errorf("Wake+clear: %v allocations", a)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Wake(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wake after Close: %v, want ErrClosed", err)
	}
	var nilW *Wakeup
	if err := nilW.Close(); err != nil {
		t.Fatal(err)
	}
}

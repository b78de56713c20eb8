package uverbs

import (
	"errors"
	"testing"
	"time"
)

// A verb inside the gate may take the object's mutex (Endpoint records the local endpoint under it, CreateCQ
// counts a channel's CQs under it) while Close waits for it: Close must not hold that mutex while it waits.
func TestCloseWaitsWithoutHoldingMu(t *testing.T) {
	var l life
	if err := l.enter(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error)
	go func() { closed <- l.close(func() error { l.mu.Lock(); l.mu.Unlock(); return nil }) }()
	time.Sleep(10 * time.Millisecond) // let Close start waiting
	l.mu.Lock()
	l.mu.Unlock()
	l.exit()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := l.enter(); !errors.Is(err, ErrClosed) {
		t.Fatalf("enter after Close: %v", err)
	}
}

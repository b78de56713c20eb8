package uverbs

import (
	"sync"
	"sync/atomic"
)

// life is the open/closed state every kernel-backed object shares. After Close the object's kernel handle may
// already name a newer object (the kernel reuses the lowest free handle), so every verb on a closed object must
// fail with ErrClosed before it reaches the kernel. The check is one atomic load (no lock), so the data path
// can make it on every call; the mutex only serializes Close with itself and with the object's own counters.
type life struct {
	mu     sync.Mutex
	closed atomic.Bool
}

// checkOpen is ErrClosed once the object is closed.
func (l *life) checkOpen() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return nil
}

// close runs destroy once, under the object's lock, and marks the object closed when it succeeds. Closing a
// closed object is a no-op.
func (l *life) close(destroy func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return nil
	}
	if err := destroy(); err != nil {
		return err
	}
	l.closed.Store(true)
	return nil
}

package uverbs

import "sync"

// life is the open/closed state every kernel-backed object shares. After Close the object's kernel handle may
// already name a newer object (the kernel reuses the lowest free handle), so every verb on a closed object must
// fail with ErrClosed before it reaches the kernel.
type life struct {
	mu     sync.Mutex
	closed bool
}

// checkOpen is ErrClosed once the object is closed.
func (l *life) checkOpen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}

// close runs destroy once, under the object's lock, and marks the object closed when it succeeds. Closing a
// closed object is a no-op.
func (l *life) close(destroy func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if err := destroy(); err != nil {
		return err
	}
	l.closed = true
	return nil
}

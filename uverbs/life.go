package uverbs

import (
	"sync"

	"github.com/goverbs/goverbs/internal/gate"
)

// life is the open/closed state every kernel-backed object shares. After Close the object's kernel handle may
// already name a newer object (the kernel reuses the lowest free handle), and its rings, doorbell records and
// mappings are released, so every verb on a closed object must fail with ErrClosed before it reaches the
// kernel or the provider.
//
// The verbs that use the handle or the provider's memory (the data path, arming, resizing, modifying) run
// between enter and exit: one atomic add each way, no lock. Close refuses new calls, waits for those in
// flight to leave, and only then destroys the object, so a call racing with Close either completes against a
// live object or fails with ErrClosed; it never touches an unmapped ring or a destroyed handle (internal/gate).
// A Close that fails (EBUSY: a CQ still used by a QP, say) reopens the object; calls that raced with it were
// refused with ErrClosed.
//
// closeMu serializes Close with itself. mu guards the object's own counters and fields; Close does not hold it
// while it waits for the calls in flight, since those may take it (Endpoint, CreateCQ on a channel).
type life struct {
	closeMu sync.Mutex
	mu      sync.Mutex
	g       gate.Gate
}

// checkOpen is ErrClosed once the object is closed (or closing). It is the check of the verbs that only name
// the object in a kernel command that creates something else (a PD for CreateMR, say).
func (l *life) checkOpen() error {
	if l.g.Closed() {
		return ErrClosed
	}
	return nil
}

// enter admits a call: ErrClosed once Close has begun, else nil and exit must follow.
func (l *life) enter() error {
	if !l.g.Enter() {
		return ErrClosed
	}
	return nil
}

// exit ends a call enter admitted.
func (l *life) exit() { l.g.Exit() }

// close waits for the calls in flight, then runs destroy once (without l.mu held: destroy takes it if it needs
// it) and marks the object closed when it succeeds. Closing a closed object is a no-op.
func (l *life) close(destroy func() error) error {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	return l.g.Close(destroy)
}

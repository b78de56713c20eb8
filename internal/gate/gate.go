// Package gate lets the calls on an object run concurrently, without a lock, while its Close waits for the
// calls already inside to leave before it releases what they use (rings, mappings, doorbell records, the
// kernel handle).
//
// A call is Enter … Exit: one atomic add on the way in, one on the way out. Close sets the closing bit, so
// every later Enter fails, waits until the calls in flight have left, then destroys. If destroy fails the
// object stays open: the bit is cleared and calls succeed again (calls that raced with the failed Close were
// refused as closed; see Close).
package gate

import (
	"runtime"
	"sync/atomic"
	"time"
)

// closing is the bit of Gate.state that refuses new calls; the bits below count the calls in flight.
const closing = 1 << 62

// Gate is the open/closing/closed state of one object. The zero value is open.
type Gate struct {
	state  atomic.Int64 // closing bit | calls in flight
	closed atomic.Bool  // destroy succeeded
}

// Enter starts a call: true if the object is open, and then Exit must follow; false once Close has begun.
func (g *Gate) Enter() bool {
	if g.state.Add(1)&closing != 0 {
		g.state.Add(-1)
		return false
	}
	return true
}

// Exit ends a call Enter admitted.
func (g *Gate) Exit() { g.state.Add(-1) }

// Closed reports whether Close has destroyed the object (or is closing it).
func (g *Gate) Closed() bool { return g.state.Load()&closing != 0 }

// Close refuses new calls, waits for the calls in flight to Exit, and runs destroy once. When destroy fails
// the gate opens again and its error is returned; calls made while it ran were refused. Closing a closed gate
// is a no-op. The owner serializes Close calls (a mutex of its own), and must not call Close between Enter and
// Exit of the same goroutine: it would wait for itself.
func (g *Gate) Close(destroy func() error) error {
	if g.closed.Load() {
		return nil
	}
	g.state.Add(closing)
	g.drain()
	if err := destroy(); err != nil {
		g.state.Add(-closing)
		return err
	}
	g.closed.Store(true)
	return nil
}

// drain waits until no call is in flight. Data-path calls are short (no call waits inside the gate), so it
// spins briefly, then yields, then sleeps.
func (g *Gate) drain() {
	for i := 0; g.state.Load() != closing; i++ {
		switch {
		case i < 64:
		case i < 1024:
			runtime.Gosched()
		default:
			time.Sleep(10 * time.Microsecond)
		}
	}
}

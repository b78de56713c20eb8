package perftest

import (
	"testing"
	"time"
)

// TestCounter checks that the cycle counter advances and that its rate over a short interval agrees with the
// rate ticksPerUsec measures since program start (the counter runs at a constant rate). Each end of the
// interval reads the counter between two clock readings that are close together: a test process preempted
// between the two reads (the unit tests run beside the lab's VMs at the lowest priority) would otherwise skew
// the short rate by the time it lost.
func TestCounter(t *testing.T) {
	c0, t0 := pairedRead(t)
	time.Sleep(200 * time.Millisecond)
	c1, t1 := pairedRead(t)
	if c1 <= c0 {
		t.Fatalf("counter went from %d to %d", c0, c1)
	}
	short := float64(c1-c0) / (float64(t1.Sub(t0)) / 1000)
	whole := ticksPerUsec()
	t.Logf("counter: %.2f ticks/us over 200 ms, %.2f since start", short, whole)
	if whole <= 0 || short/whole < 0.9 || short/whole > 1.1 {
		t.Fatalf("counter rate %.1f ticks/us over 200 ms, %.1f since start", short, whole)
	}
}

// pairedRead reads the counter and the clock together: the counter between two clock readings at most 100 µs
// apart (the best of up to 1000 tries), and the clock's midpoint.
func pairedRead(t *testing.T) (int64, time.Time) {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	var c int64
	var at time.Time
	for range 1000 {
		a := time.Now()
		x := cycles()
		b := time.Now()
		if d := b.Sub(a); d < best {
			best, c, at = d, x, a.Add(d/2)
			if d < 100*time.Microsecond {
				break
			}
		}
	}
	return c, at
}

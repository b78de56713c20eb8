package perftest

import (
	"testing"
	"time"
)

// TestCounter checks that the cycle counter advances and that its rate over a short interval agrees with the
// rate ticksPerUsec measures since program start (the counter runs at a constant rate).
func TestCounter(t *testing.T) {
	c0, t0 := cycles(), time.Now()
	time.Sleep(30 * time.Millisecond)
	c1, t1 := cycles(), time.Now()
	if c1 <= c0 {
		t.Fatalf("counter went from %d to %d", c0, c1)
	}
	short := float64(c1-c0) / (float64(t1.Sub(t0)) / 1000)
	whole := ticksPerUsec()
	t.Logf("counter: %.2f ticks/us over 30 ms, %.2f since start", short, whole)
	if whole <= 0 || short/whole < 0.9 || short/whole > 1.1 {
		t.Fatalf("counter rate %.1f ticks/us over 30 ms, %.1f since start", short, whole)
	}
}

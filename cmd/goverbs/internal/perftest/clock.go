package perftest

import "time"

// clock relates the cycle counter to the monotonic clock: the counter's rate is measured over the whole run
// (from program start to the report), where perftest samples it or reads /proc/cpuinfo.
var clock = struct {
	c0 int64
	t0 time.Time
}{cycles0(), time.Now()}

func cycles0() int64 { return cycles() }

// now is the timestamp the measured loops take.
func now() int64 { return cycles() }

// ticksPerUsec is the counter's rate in ticks per microsecond (perftest's get_cpu_mhz).
func ticksPerUsec() float64 {
	dc := cycles() - clock.c0
	dt := time.Since(clock.t0)
	if dc <= 0 || dt <= 0 {
		return 1000
	}
	return float64(dc) / (float64(dt) / 1000)
}

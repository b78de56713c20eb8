//go:build amd64 || arm64

package perftest

// cycles reads the CPU's time stamp counter (RDTSC on amd64, CNTVCT_EL0 on arm64), as perftest's get_cycles
// does: a few nanoseconds, no system call, where the monotonic clock may cost a system call in a VM.
func cycles() int64

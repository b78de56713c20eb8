//go:build !amd64 && !arm64

package perftest

import "time"

var monoBase = time.Now()

// cycles falls back to monotonic nanoseconds where goverbs has no counter instruction.
func cycles() int64 { return int64(time.Since(monoBase)) }

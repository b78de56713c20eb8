//go:build !amd64 || race

package hw

import "sync/atomic"

// storeTail is a release store where the hardware may reorder a plain store before earlier loads, and in race
// builds (see tail.go).
func storeTail(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

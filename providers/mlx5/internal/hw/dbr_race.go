//go:build race

package hw

import "sync/atomic"

// storeDBR is an atomic store in race builds: same single 32-bit store semantics for the device, plus the
// happens-before edge the race detector needs when an emulated device reads the record with atomic loads.
func storeDBR(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

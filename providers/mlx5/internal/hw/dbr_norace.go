//go:build !race

package hw

// storeDBR is a plain 32-bit store, as rdma-core's doorbell-record updates (ordered by ToDeviceBarrier).
func storeDBR(p *uint32, v uint32) { *p = v }

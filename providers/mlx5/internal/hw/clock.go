package hw

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The HCA core clock: a free-running 64-bit counter the device exposes as two big-endian 32-bit words, high
// then low, at the offset the GET_CONTEXT response names (hca_core_clock_offset) in a read-only page. The
// words are read separately, so a carry between them is caught by reading the high word again: when it
// changed, the read is repeated once (libmlx5 mlx5_read_clock's rule: two attempts, the last pair kept).

// Clock reads a mapped HCA core clock.
type Clock struct {
	hi, lo *uint32 // the two words, in the mapped page
}

// NewClock returns the clock at off in page (the mapping of ClockMmapOffset). The offset is taken within the
// page (libmlx5 masks it with the page size); it must leave 8 bytes, 4-byte aligned.
func NewClock(page []byte, off uint64) (*Clock, error) {
	o := int(off & uint64(len(page)-1))
	if len(page) == 0 || len(page)&(len(page)-1) != 0 || o%4 != 0 || o+8 > len(page) {
		return nil, fmt.Errorf("mlx5: HCA core clock at offset %#x of a %d-byte page: %w", off, len(page), errInvalid)
	}
	return &Clock{hi: (*uint32)(unsafe.Pointer(&page[o])), lo: (*uint32)(unsafe.Pointer(&page[o+4]))}, nil
}

// Read returns the clock in cycles.
func (c *Clock) Read() uint64 {
	return readClock(func(hi bool) uint32 {
		if hi {
			return atomic.LoadUint32(c.hi)
		}
		return atomic.LoadUint32(c.lo)
	})
}

// readClock is Read with the device's words read through load (raw, as stored: big-endian).
func readClock(load func(hi bool) uint32) uint64 {
	var hi, lo uint32
	for range 2 {
		hi = be32(load(true))
		lo = be32(load(false))
		if be32(load(true)) == hi {
			break
		}
	}
	return uint64(hi)<<32 | uint64(lo)
}

// be32 turns a big-endian word as loaded into its value.
func be32(raw uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], raw)
	return binary.BigEndian.Uint32(b[:])
}

package mlx5emu

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Memory helpers. Doorbell records, UAR words and the CQE ownership word are
// accessed atomically so that a driver using atomic stores/loads for them is
// race-detector clean against the background engine; everything else is
// ordinary memory ordered by those accesses.

func addrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

func aligned(b []byte, n uintptr) bool {
	return len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%n == 0
}

// loadBE32 atomically loads a big-endian 32-bit value stored at b[0:4].
func loadBE32(b []byte) uint32 {
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
	var t [4]byte
	binary.NativeEndian.PutUint32(t[:], v)
	return binary.BigEndian.Uint32(t[:])
}

// loadRaw64 atomically loads the 8 bytes at b[0:8] and returns them in memory order.
func loadRaw64(b []byte) [8]byte {
	v := atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[0])))
	var t [8]byte
	binary.NativeEndian.PutUint64(t[:], v)
	return t
}

// casRaw64 replaces the 8 bytes at b[0:8] by zero if they still equal old.
func casZero64(b []byte, old [8]byte) bool {
	return atomic.CompareAndSwapUint64((*uint64)(unsafe.Pointer(&b[0])), binary.NativeEndian.Uint64(old[:]), 0)
}

// storeRaw32 atomically stores 4 bytes (memory order) at b[0:4].
func storeRaw32(b []byte, v [4]byte) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), binary.NativeEndian.Uint32(v[:]))
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// atomicU64 returns the 8-byte aligned word at b[0:8] for atomic operations.
func atomicU64(b []byte) *uint64 { return (*uint64)(unsafe.Pointer(&b[0])) }

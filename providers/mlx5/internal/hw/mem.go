package hw

// This file holds the package's unsafe helpers. They cover needs that safe Go cannot meet: a single-instruction
// 32-bit store into a doorbell record the device may read at any time, and reading or writing host memory named
// by a raw virtual address (an SGE's addr) for inline sends and scatter-to-CQE. The send and completion hot paths
// (sq.go, cq.go, bf.go) also address their rings through base pointers, with the invariants stated there.

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// DoorbellRecord is the 8-byte doorbell record a QP, SRQ or CQ shares with the device (two big-endian 32-bit
// counters, MLX5_RCV_DBR/MLX5_SND_DBR for a QP, MLX5_CQ_SET_CI/MLX5_CQ_ARM_DB for a CQ, one counter for an SRQ).
// It lives in host memory that the kernel pinned (a page carved at cache-line strides, rdma-core dbrec.c).
type DoorbellRecord struct {
	p *[2]uint32
}

// NewDoorbellRecord returns the doorbell record at the start of b, which must hold at least 8 bytes, be 8-byte
// aligned and stay mapped while the queue is in use.
func NewDoorbellRecord(b []byte) (DoorbellRecord, error) {
	if len(b) < 8 {
		return DoorbellRecord{}, fmt.Errorf("mlx5: doorbell record needs 8 bytes, have %d: %w", len(b), errInvalid)
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%8 != 0 {
		return DoorbellRecord{}, fmt.Errorf("mlx5: doorbell record at %#x is not 8-byte aligned: %w", uintptr(p), errInvalid)
	}
	return DoorbellRecord{p: (*[2]uint32)(p)}, nil
}

// set stores v big-endian into counter i with one 32-bit store (storeDBR: a plain store, or an atomic one in race
// builds so that an emulated device's atomic loads see a happens-before edge).
func (d DoorbellRecord) set(i int, v uint32) {
	storeDBR(&d.p[i], toBE32(v))
}

// get returns counter i in host order.
func (d DoorbellRecord) get(i int) uint32 {
	return toBE32(d.p[i])
}

// valid reports whether d refers to memory.
func (d DoorbellRecord) valid() bool { return d.p != nil }

// toBE32 converts between host order and big-endian for a value that is stored natively.
func toBE32(v uint32) uint32 {
	if nativeLittle {
		return bits.ReverseBytes32(v)
	}
	return v
}

// hostBytes returns the n bytes of host memory at virtual address addr. The caller vouches that the range is
// mapped (it is inside a memory region registered with the device).
func hostBytes(addr uint64, n int) []byte {
	if n == 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// storeBE64 stores v big-endian at p with one 8-byte store. binary.BigEndian.PutUint64 is a sequence of byte
// stores that the compiler merges only when it knows nothing about v's bytes; when some are constant (a ctrl
// segment's zero opmod) it emits several narrower stores instead. p must be 8-byte aligned.
func storeBE64(p unsafe.Pointer, v uint64) {
	if nativeLittle {
		v = bits.ReverseBytes64(v)
	}
	*(*uint64)(p) = v
}

// copyBytes copies n bytes from src to dst (not overlapping). Inline payloads are small: up to 64 bytes it copies
// 16 and 8 bytes at a time with plain (possibly unaligned) loads and stores, which amd64 and arm64 allow on normal memory
// and which beat a call to memmove at this size; larger payloads use memmove.
func copyBytes(dst, src unsafe.Pointer, n uintptr) {
	if n > 64 {
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
		return
	}
	for ; n >= 16; n -= 16 {
		*(*[2]uint64)(dst) = *(*[2]uint64)(src)
		dst, src = unsafe.Add(dst, 16), unsafe.Add(src, 16)
	}
	if n >= 8 {
		*(*uint64)(dst) = *(*uint64)(src)
		dst, src, n = unsafe.Add(dst, 8), unsafe.Add(src, 8), n-8
	}
	for ; n > 0; n-- {
		*(*byte)(dst) = *(*byte)(src)
		dst, src = unsafe.Add(dst, 1), unsafe.Add(src, 1)
	}
}

// hostPtr returns host virtual address addr as a pointer (the caller vouches that it is mapped, as for hostBytes).
func hostPtr(addr uint64) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// addrOf returns the virtual address of b's first byte (test and example helper for building SGEs).
func addrOf(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// nativeUint64 loads 8 bytes in host order: the doorbell value is the ctrl segment's first 8 bytes verbatim.
func nativeUint64(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }

// nativeFromBE64 returns the native-order value whose in-memory bytes are v big-endian.
func nativeFromBE64(v uint64) uint64 {
	if nativeLittle {
		return bits.ReverseBytes64(v)
	}
	return v
}

// ownerByte returns a CQE's op_own byte, read as part of an atomic 32-bit load of the CQE's last word
// (wqe_counter, signature, op_own), the word a device writes last. On amd64 this is a plain MOVL; on arm64 an
// acquire load, which only strengthens the ordering FromDeviceBarrier provides. The CQE must be 4-byte aligned.
func ownerByte(cqe *[CQESize]byte) byte {
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&cqe[60])))
	if nativeLittle {
		return byte(w >> 24)
	}
	return byte(w)
}

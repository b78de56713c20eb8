package mmio

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// ErrMisaligned is returned when a register window or offset is not 8-byte aligned.
var ErrMisaligned = errors.New("mmio: misaligned register access")

// Reg is a window of device memory, usually a UAR page mapped with mmap(PROT_WRITE, MAP_SHARED). The zero Reg is
// empty; every access to it panics. A Reg keeps its memory reachable; it does not unmap it.
type Reg struct {
	base unsafe.Pointer
	size uintptr
}

// RegFromBytes returns a Reg over b, which must stay mapped for as long as the Reg is used. b's address must be
// 8-byte aligned (mmap returns page-aligned memory; tests may pass a Go slice).
func RegFromBytes(b []byte) (Reg, error) {
	if len(b) == 0 {
		return Reg{}, fmt.Errorf("mmio: register window is empty")
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%8 != 0 {
		return Reg{}, fmt.Errorf("mmio: register window at %#x: %w", uintptr(p), ErrMisaligned)
	}
	return Reg{base: p, size: uintptr(len(b))}, nil
}

// Len returns the size of the window in bytes.
func (r Reg) Len() int { return int(r.size) }

// Sub returns the window [off, off+n) of r. It panics if that is out of range or off is not 8-byte aligned.
func (r Reg) Sub(off, n uintptr) Reg {
	if off%8 != 0 || off > r.size || n > r.size-off || n == 0 {
		panic(fmt.Sprintf("mmio: sub-window [%#x,+%#x) of %#x-byte register", off, n, r.size))
	}
	return Reg{base: unsafe.Add(r.base, off), size: n}
}

// Write64 stores v at byte offset off with one aligned 8-byte store (mmio_write64_be / mmio_write64_le: the bytes
// of v are written in this CPU's native order, so pass a value loaded natively from the big-endian source). It
// panics if off is not 8-byte aligned or out of range. Write64 does not order itself against other stores; use
// [WCStart] before and [FlushWrites] after, as rdma-core does.
func (r Reg) Write64(off uintptr, v uint64) {
	// For an 8-byte aligned off, off+7 cannot overflow. The checks panic with a fixed error value rather than a
	// formatted message so that Write64 stays cheap enough to inline into the doorbell paths.
	if off%8 != 0 || off+7 >= r.size {
		panic(ErrOutOfRange)
	}
	write64((*uint64)(unsafe.Add(r.base, off)), v)
}

// ErrOutOfRange is the panic value of a register access that is misaligned or outside the window.
var ErrOutOfRange = errors.New("mmio: register access misaligned or out of range")

// Copy64 copies src (exactly 64 bytes, 8-byte aligned) to byte offset off (8-byte aligned) in ascending address
// order with 8-byte (amd64) or 16-byte (arm64) stores: one block of rdma-core's mmio_memcpy_x64 and the unit of a
// BlueFlame write. It panics on a short src, misalignment or an out-of-range offset.
func (r Reg) Copy64(off uintptr, src []byte) {
	s := unsafe.Pointer(unsafe.SliceData(src))
	if len(src) < 64 || (off|uintptr(s))%8 != 0 || off >= r.size || r.size-off < 64 {
		panic(ErrOutOfRange)
	}
	copy64((*uint64)(unsafe.Add(r.base, off)), (*uint64)(s))
}

// CopyBlock is [Reg.Copy64] for a 64-byte block (a basic block of a ring) to a 64-byte aligned offset (a
// BlueFlame buffer): the same stores, with one alignment and one range check, cheap enough to inline into a
// BlueFlame copy loop. It panics if off is not a multiple of 64 or the block does not fit the window. src should
// be 8-byte aligned for speed; its loads are plain loads from normal memory, which both architectures allow
// unaligned.
func (r Reg) CopyBlock(off uintptr, src *[64]byte) {
	// For a 64-byte aligned off, off+63 cannot overflow.
	if off%64 != 0 || off+63 >= r.size {
		panic(ErrOutOfRange)
	}
	copy64((*uint64)(unsafe.Add(r.base, off)), (*uint64)(unsafe.Pointer(src)))
}

// WCWrite64 is [WCStart], [Reg.Write64], [FlushWrites] as one call: the 8-byte doorbell on a register no other
// goroutine writes (rdma-core post_send_db for an unshared bfreg). Same checks and panics as Write64.
func (r Reg) WCWrite64(off uintptr, v uint64) {
	if off%8 != 0 || off+7 >= r.size {
		panic(ErrOutOfRange)
	}
	wcWrite64((*uint64)(unsafe.Add(r.base, off)), v)
}

// WCCopyBlock is [WCStart], [Reg.CopyBlock], [FlushWrites] as one call: a one-block BlueFlame write to a
// register no other goroutine writes. Same checks and panics as CopyBlock.
func (r Reg) WCCopyBlock(off uintptr, src *[64]byte) {
	if off%64 != 0 || off+63 >= r.size {
		panic(ErrOutOfRange)
	}
	wcCopy64((*uint64)(unsafe.Add(r.base, off)), (*uint64)(unsafe.Pointer(src)))
}

// WCLock is the spinlock rdma-core takes around a BlueFlame write to a shared register (mmio_wc_spinlock). The
// zero WCLock is unlocked. Lock acquires it and then, on architectures where the lock alone does not order
// earlier stores before write-combining ones (arm64), issues [WCStart]; on amd64 the locked instruction is the
// barrier. The holder calls [FlushWrites] before Unlock, inside the lock.
type WCLock struct {
	v atomic.Uint32
}

// Lock acquires l, spinning (and yielding the processor) while another goroutine holds it.
func (l *WCLock) Lock() {
	for !l.v.CompareAndSwap(0, 1) {
		for l.v.Load() != 0 {
			runtime.Gosched()
		}
	}
	if wcLockNeedsStart {
		WCStart()
	}
}

// Unlock releases l. It does not flush; call [FlushWrites] first.
func (l *WCLock) Unlock() { l.v.Store(0) }

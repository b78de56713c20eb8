// Package mmio holds the few memory-ordering and device-register primitives that a userspace RDMA data path needs
// and that Go cannot express without assembly: the barriers rdma-core defines in util/udma_barrier.h, an
// exact-width aligned 8-byte store for doorbells, and the 64-byte ascending copy used for BlueFlame.
//
// # Semantics (mirroring rdma-core for amd64 and arm64)
//
//	function           rdma-core name               amd64                arm64
//	ToDeviceBarrier    udma_to_device_barrier       compiler barrier     DMB OSHST
//	FromDeviceBarrier  udma_from_device_barrier     LFENCE               DMB OSHLD
//	FlushWrites        mmio_flush_writes            SFENCE               DSB ST
//	WCStart            mmio_wc_start                SFENCE               DSB ST
//	Reg.Write64        mmio_write64_be              one MOVQ store       one 64-bit STR
//	Reg.Copy64         mmio_memcpy_x64 (64 bytes)   8 MOVQ stores, asc.  VLD1/VST1 of 4 x 128-bit
//	Reg.CopyBlock      the same, from a *[64]byte to a 64-byte aligned offset
//	Reg.WCWrite64      WCStart; Write64; FlushWrites     (one routine: SFENCE, MOVQ, SFENCE / DSB, STR, DSB)
//	Reg.WCCopyBlock    WCStart; CopyBlock; FlushWrites   (one routine, for an unshared BlueFlame register)
//
// Every primitive is a Go assembly function. Go never inlines assembly and never moves memory accesses across a
// call, so each call is also a compiler barrier; the amd64 ToDeviceBarrier is an empty function for exactly that
// reason (x86 keeps stores to write-back memory in order, as rdma-core relies on).
//
// Doorbell stores must never go through sync/atomic (StoreUint64 is XCHG on amd64 and STLR on arm64) nor through
// copy()/memmove (no width or order guarantee). The tests disassemble the built functions and pin the exact
// instructions, so a toolchain change that altered them would fail the build's tests.
//
// # Registers
//
// A [Reg] is a window of mapped device memory (a UAR page from mmap, or plain memory when a device is emulated).
// Its methods check bounds and alignment, so callers outside this package need no unsafe code. A failed check
// panics with [ErrOutOfRange]: a fixed value rather than a formatted message, which keeps the store methods small
// enough for the compiler to inline into a doorbell path (the assembly call itself is never inlined).
package mmio

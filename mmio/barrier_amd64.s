#include "textflag.h"

// COPY64_SI_DI copies the 64 bytes at SI to DI through AX: eight 8-byte stores in ascending address order.
#define COPY64_SI_DI \
	MOVQ 0(SI), AX; MOVQ AX, 0(DI); \
	MOVQ 8(SI), AX; MOVQ AX, 8(DI); \
	MOVQ 16(SI), AX; MOVQ AX, 16(DI); \
	MOVQ 24(SI), AX; MOVQ AX, 24(DI); \
	MOVQ 32(SI), AX; MOVQ AX, 32(DI); \
	MOVQ 40(SI), AX; MOVQ AX, 40(DI); \
	MOVQ 48(SI), AX; MOVQ AX, 48(DI); \
	MOVQ 56(SI), AX; MOVQ AX, 56(DI)

// func ToDeviceBarrier()
// x86 does not reorder stores to write-back memory; the call itself is the compiler barrier.
TEXT ·ToDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	RET

// func FromDeviceBarrier()
TEXT ·FromDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	LFENCE
	RET

// func FlushWrites()
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET

// func WCStart()
TEXT ·WCStart(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET

// func write64(p *uint64, v uint64)
TEXT ·write64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), AX
	MOVQ AX, (DI)
	RET

// func copy64(dst, src *uint64)
// Eight 8-byte stores in ascending address order, like rdma-core's generic mmio_memcpy_x64.
TEXT ·copy64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	COPY64_SI_DI
	RET

// func wcWrite64(p *uint64, v uint64)
// WCStart, one 8-byte store, FlushWrites: an unshared doorbell write in one call.
TEXT ·wcWrite64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), AX
	SFENCE
	MOVQ AX, (DI)
	SFENCE
	RET

// func wcCopy64(dst, src *uint64)
// WCStart, the eight ascending 8-byte stores of copy64, FlushWrites: an unshared one-block BlueFlame write.
TEXT ·wcCopy64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	SFENCE
	COPY64_SI_DI
	SFENCE
	RET

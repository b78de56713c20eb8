#include "textflag.h"

// DMB/DSB option encodings (CRm): OSHLD = 1, OSHST = 2, ST = 14.

// func ToDeviceBarrier()
TEXT ·ToDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	DMB	$2	// dmb oshst
	RET

// func FromDeviceBarrier()
TEXT ·FromDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	DMB	$1	// dmb oshld
	RET

// func FlushWrites()
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	DSB	$14	// dsb st
	RET

// func WCStart()
TEXT ·WCStart(SB), NOSPLIT|NOFRAME, $0-0
	DSB	$14	// dsb st
	RET

// func write64(p *uint64, v uint64)
TEXT ·write64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	MOVD	R1, (R0)
	RET

// func copy64(dst, src *uint64)
// One 64-byte load into four vector registers and one 64-byte store from them (rdma-core: vld4q_u64/vst4q_u64).
TEXT ·copy64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	dst+0(FP), R0
	MOVD	src+8(FP), R1
	VLD1	(R1), [V0.D2, V1.D2, V2.D2, V3.D2]
	VST1	[V0.D2, V1.D2, V2.D2, V3.D2], (R0)
	RET

// func wcWrite64(p *uint64, v uint64)
// WCStart, one 8-byte store, FlushWrites: an unshared doorbell write in one call.
TEXT ·wcWrite64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	DSB	$14	// dsb st
	MOVD	R1, (R0)
	DSB	$14	// dsb st
	RET

// func wcCopy64(dst, src *uint64)
// WCStart, the 64-byte VLD1/VST1 pair of copy64, FlushWrites: an unshared one-block BlueFlame write.
TEXT ·wcCopy64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	dst+0(FP), R0
	MOVD	src+8(FP), R1
	DSB	$14	// dsb st
	VLD1	(R1), [V0.D2, V1.D2, V2.D2, V3.D2]
	VST1	[V0.D2, V1.D2, V2.D2, V3.D2], (R0)
	DSB	$14	// dsb st
	RET

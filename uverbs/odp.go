package uverbs

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"golang.org/x/sys/unix"
)

// On-demand paging (ODP). An MR registered with AccessOnDemand is not pinned: the device (for rxe, the kernel
// driver) faults its pages in when a transfer touches them and follows the process's page tables when they
// change (munmap, MADV_DONTNEED, fork's copy-on-write), so a region may cover memory that was never touched
// and may be larger than RLIMIT_MEMLOCK. Explicit ODP only: implicit ODP (one MR over the whole address space)
// is neither offered by goverbs nor implemented by rxe.
//
// What rxe does, by kernel: no ODP before Linux 6.15 (RegMR with AccessOnDemand is ErrNotSupported, decided
// from the capabilities before any system call); from 6.15 RC send/recv/write/read/atomics and UD send/recv
// with ODP MRs; from 6.16 also RDMA FLUSH and ATOMIC WRITE (ODPFlush, ODPAtomicWrite); from 6.17 prefetch
// (PD.AdviseMR). docs/kernels.md has the matrix as the lab measured it, and a defect of rxe's ODP copy in
// 7.3.4: a transfer (each packet of it) that does not start at a page boundary of an ODP MR reads from or
// writes to the start of that page instead.

// ODPGeneralCap is a device's general on-demand paging capabilities (odp_caps.general_caps, enum
// ib_uverbs_odp_general_cap_bits).
type ODPGeneralCap uint64

// General ODP capabilities.
const (
	ODPSupport         ODPGeneralCap = 1 << 0 // AccessOnDemand MRs can be registered
	ODPSupportImplicit ODPGeneralCap = 1 << 1 // implicit ODP (one MR over the whole address space)
)

// The names ibv_devinfo prints.
var odpGeneralCapNames = [...]string{"ODP_SUPPORT", "ODP_SUPPORT_IMPLICIT"}

// String names the set bits ("ODP_SUPPORT"); unnamed bits print in hex, none as "0".
func (c ODPGeneralCap) String() string { return enumstr.Flags(odpGeneralCapNames[:], uint64(c)) }

// ODPTransportCap says which operations of one transport may use ODP MRs (odp_caps.per_transport_caps and
// xrc_odp_caps, enum ib_uverbs_odp_transport_cap_bits). The bits are the responder's and the requester's
// operations alike: ODPWrite covers an ODP MR as the source of an RDMA WRITE and as its target.
type ODPTransportCap uint32

// Per-transport ODP capabilities. ODPFlush and ODPAtomicWrite are Linux 6.16 additions (the generated ABI
// follows 6.1's headers, so their values are written out here).
const (
	ODPSend        ODPTransportCap = 1 << 0
	ODPRecv        ODPTransportCap = 1 << 1
	ODPWrite       ODPTransportCap = 1 << 2
	ODPRead        ODPTransportCap = 1 << 3
	ODPAtomic      ODPTransportCap = 1 << 4
	ODPSRQRecv     ODPTransportCap = 1 << 5
	ODPFlush       ODPTransportCap = 1 << 6
	ODPAtomicWrite ODPTransportCap = 1 << 7
)

// The names ibv_devinfo prints (rdma-core from v57 for the last two).
var odpTransportCapNames = [...]string{"SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ",
	"SUPPORT_ATOMIC", "SUPPORT_SRQ", "SUPPORT_FLUSH", "SUPPORT_ATOMIC_WRITE"}

// String names the set bits ("SUPPORT_SEND|SUPPORT_RECV"); unnamed bits print in hex, none as "0".
func (c ODPTransportCap) String() string { return enumstr.Flags(odpTransportCapNames[:], uint64(c)) }

// ODPCaps are a device's on-demand paging capabilities, as QueryDevice reports them.
type ODPCaps struct {
	General ODPGeneralCap
	RC      ODPTransportCap
	UC      ODPTransportCap
	UD      ODPTransportCap
	XRC     ODPTransportCap
}

// ODP gathers the attributes' ODP capabilities.
func (a *DeviceAttr) ODP() ODPCaps {
	return ODPCaps{General: a.ODPGeneralCaps, RC: a.ODPRCCaps, UC: a.ODPUCCaps, UD: a.ODPUDCaps, XRC: a.XRCODPCaps}
}

// checkODPAccess refuses AccessOnDemand on a device that does not advertise ODP_SUPPORT, as checkFlushAccess
// does for the flush bits: Linux 6.1 answers such a registration with EINVAL, later kernels with EOPNOTSUPP;
// both mean "not supported".
func (c *Context) checkODPAccess(access Access) error {
	if access&AccessOnDemand == 0 {
		return nil
	}
	if _, err := c.deviceCaps(); err != nil {
		return err
	}
	if c.odp&ODPSupport == 0 {
		return fmt.Errorf("access ON_DEMAND: the device does not advertise on-demand paging (ODP_SUPPORT; rxe has it from Linux 6.15): %w", unix.EOPNOTSUPP)
	}
	return nil
}

// AdviseMRAdvice is the advice PD.AdviseMR gives (enum ib_uverbs_advise_mr_advice).
type AdviseMRAdvice uint32

// Advice values.
const (
	// AdvicePrefetch faults the pages in for reading.
	AdvicePrefetch AdviseMRAdvice = abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
	// AdvicePrefetchWrite faults the pages in writable (the MR must allow local write).
	AdvicePrefetchWrite AdviseMRAdvice = abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
	// AdvicePrefetchNoFault maps the pages that are already present and faults nothing in.
	AdvicePrefetchNoFault AdviseMRAdvice = abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
)

var adviceNames = [...]string{"PREFETCH", "PREFETCH_WRITE", "PREFETCH_NO_FAULT"}

// String is the advice's name ("PREFETCH_WRITE").
func (a AdviseMRAdvice) String() string {
	return enumstr.Name(adviceNames[:], uint64(a), "AdviseMRAdvice")
}

// AdviseMRFlags modify PD.AdviseMR (enum ib_uverbs_advise_mr_flag).
type AdviseMRFlags uint32

// AdviseMR flags.
const (
	// AdviseMRFlush makes the advice synchronous: AdviseMR returns once the pages are mapped, and reports a
	// failure to map them. Without it the prefetch is queued and best effort.
	AdviseMRFlush AdviseMRFlags = abi.IB_UVERBS_ADVISE_MR_FLAG_FLUSH
)

var adviseFlagNames = [...]string{"FLUSH"}

// String names the set flags ("FLUSH"); unnamed bits print in hex, none as "0".
func (f AdviseMRFlags) String() string { return enumstr.Flags(adviseFlagNames[:], uint64(f)) }

// maxAdviseSGEs is the most SGEs one AdviseMR carries: the attribute's length is 16 bits.
const maxAdviseSGEs = math.MaxUint16 / int(unsafe.Sizeof(SGE{}))

// The kernel reads the list as struct ib_uverbs_sge: SGE must keep that layout.
var _ = [1]struct{}{}[unsafe.Sizeof(SGE{})-abi.SizeofIbUverbsSge]

// AdviseMR gives the device advice about ranges of ODP MRs of this PD (ibv_advise_mr): today, to prefetch
// their pages so that the first transfers need not fault them in. Each SGE names a range by address, length
// and the MR's local key; the MRs must be AccessOnDemand MRs of this PD with local write access (rxe looks them
// up as local-write MRs). With AdviseMRFlush the call returns when the pages are mapped; without it the work
// is queued and only a bad key or argument is reported.
//
// Bad input (no SGEs, more than 4095, an unknown advice or flag) is refused with EINVAL before any system
// call. A kernel or device without advise_mr (rxe before Linux 6.17, or built without ODP) answers
// ErrNotSupported. rxe on 7.3 answers EINVAL for an lkey that names no MR of this PD with local write, and for
// a synchronous prefetch of a pinned (non-ODP) MR; an asynchronous one is accepted and does nothing.
func (pd *PD) AdviseMR(advice AdviseMRAdvice, flags AdviseMRFlags, sges []SGE) error {
	c := pd.ctx
	if err := pd.enter(); err != nil {
		return wrap("advise MR", c.dev.Name, err)
	}
	defer pd.exit()
	if advice > AdvicePrefetchNoFault {
		return wrap("advise MR", c.dev.Name, fmt.Errorf("unknown advice %d: %w", uint32(advice), unix.EINVAL))
	}
	if flags&^AdviseMRFlush != 0 {
		return wrap("advise MR", c.dev.Name, fmt.Errorf("unknown flags %#x: %w", uint32(flags&^AdviseMRFlush), unix.EINVAL))
	}
	if len(sges) == 0 || len(sges) > maxAdviseSGEs {
		return wrap("advise MR", c.dev.Name, fmt.Errorf("%d SGEs (1 to %d): %w", len(sges), maxAdviseSGEs, unix.EINVAL))
	}
	cmd := c.newCmd(abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_ADVISE_MR)
	cmd.Object(abi.UVERBS_ATTR_ADVISE_MR_PD_HANDLE, pd.handle)
	cmd.ConstIn(abi.UVERBS_ATTR_ADVISE_MR_ADVICE, uint64(advice))
	cmd.U32In(abi.UVERBS_ATTR_ADVISE_MR_FLAGS, uint32(flags))
	cmd.PtrIn(abi.UVERBS_ATTR_ADVISE_MR_SGE_LIST, unsafe.Pointer(&sges[0]), len(sges)*int(unsafe.Sizeof(SGE{})))
	if err := cmd.Invoke(c.fd); err != nil {
		return wrapf(c.dev.Name, err, "advise MR (%v, flags %v, %d SGEs)", advice, flags, len(sges))
	}
	return nil
}

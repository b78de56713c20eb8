package rxe

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
)

// The SGE arrays of work requests are copied into WQEs as one block: verbs.SGE and struct rxe_sge must have
// the same layout (pinned by a test, sizes checked here at compile time).
var _ [abi.SizeofRxeSge - unsafe.Sizeof(verbs.SGE{})]struct{}
var _ [unsafe.Sizeof(verbs.SGE{}) - abi.SizeofRxeSge]struct{}

// sendLimits are a send queue's capacities: what the kernel granted, bounded by the ring's element stride; and
// which optional RC opcodes the device has.
type sendLimits struct {
	qpType      verbs.QPType
	maxSGE      uint32
	maxInline   uint32
	flush       verbs.FlushType // the placement types the device advertises (FLUSH_GLOBAL/PERSISTENT)
	atomicWrite bool            // ATOMIC_WRITE advertised
}

// Device capability bits (IB_UVERBS_DEVICE_*, Linux 6.2+) that enable FLUSH and ATOMIC WRITE.
const (
	capFlushGlobal     = 1 << 38
	capFlushPersistent = 1 << 39
	capAtomicWrite     = 1 << 40
)

// setCaps fills the optional-opcode part of sendLimits from the device's capability flags (rdma-core's
// rxe provider offers FLUSH and ATOMIC WRITE on RC QPs only).
func (l *sendLimits) setCaps(caps uint64) {
	if l.qpType != verbs.QPTypeRC {
		return
	}
	if caps&capFlushGlobal != 0 {
		l.flush |= verbs.FlushGlobal
	}
	if caps&capFlushPersistent != 0 {
		l.flush |= verbs.FlushPersistent
	}
	l.atomicWrite = caps&capAtomicWrite != 0
}

// sgeSum is the total length of an SGE list. It is computed in 64 bits: a list whose total does not fit the
// WQE's 32-bit length is refused instead of wrapping (rdma-core's unsigned sum wraps).
func sgeSum(sgl []verbs.SGE) uint64 {
	var n uint64
	for i := range sgl {
		n += uint64(sgl[i].Length)
	}
	return n
}

// ibv_wr_opcode values libibverbs defines that package verbs does not name.
const (
	wrTSO     verbs.WROpcode = 10 // IBV_WR_TSO (raw packet QPs)
	wrDriver1 verbs.WROpcode = 11 // IBV_WR_DRIVER1
)

// validateSend checks a send work request the way rdma-core's rxe provider does (plus: known opcodes only, a
// total length that fits 32 bits, and a UD send names an address handle with a kernel AH number). length is
// sgeSum(wr.SGL).
func validateSend(l *sendLimits, wr *verbs.SendWR, length uint64) provider.Status {
	if wr.Opcode > verbs.WRSendWithInv {
		switch wr.Opcode {
		case verbs.WRFlush:
			return validateFlush(l, wr)
		case verbs.WRAtomicWrite:
			return validateAtomicWrite(l, wr)
		case wrTSO, wrDriver1:
			return provider.OpcodeNotSupported // defined by libibverbs, not built by rxe
		}
		return provider.BadOpcode
	}
	if uint64(len(wr.SGL)) > uint64(l.maxSGE) {
		return provider.TooManySGE
	}
	if length > math.MaxUint32 {
		return provider.TooLong
	}
	switch wr.Opcode {
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
		if length < 8 || wr.RemoteAddr&7 != 0 {
			return provider.BadAtomic
		}
	case verbs.WRBindMW:
		if length != 0 || len(wr.SGL) != 0 || wr.Imm != 0 ||
			(l.qpType != verbs.QPTypeRC && l.qpType != verbs.QPTypeUC) {
			return provider.BadBindMW
		}
	case verbs.WRSend, verbs.WRSendWithImm:
		if l.qpType == verbs.QPTypeUD {
			if wr.AH == nil {
				return provider.NoAH
			}
			if wr.AH.Num == 0 {
				return provider.BadAH
			}
		}
	}
	if wr.Flags&verbs.SendInline != 0 && length > uint64(l.maxInline) {
		return provider.InlineTooLong
	}
	return provider.OK
}

// validateFlush checks an RDMA FLUSH: the device must advertise the placement types asked for (which the
// kernel also requires of the target MR), on an RC QP, with no local data.
func validateFlush(l *sendLimits, wr *verbs.SendWR) provider.Status {
	if l.flush == 0 {
		return provider.OpcodeNotSupported
	}
	f := &wr.Flush
	if l.qpType != verbs.QPTypeRC || len(wr.SGL) != 0 || f.Type == 0 ||
		f.Type&^(verbs.FlushGlobal|verbs.FlushPersistent) != 0 || f.Level > verbs.FlushMR {
		return provider.BadFlush
	}
	if f.Type&^l.flush != 0 {
		return provider.OpcodeNotSupported
	}
	return provider.OK
}

// validateAtomicWrite checks an RDMA ATOMIC WRITE: 8 bytes (Swap) to an aligned remote address of an RC QP.
func validateAtomicWrite(l *sendLimits, wr *verbs.SendWR) provider.Status {
	if !l.atomicWrite {
		return provider.OpcodeNotSupported
	}
	if l.qpType != verbs.QPTypeRC || len(wr.SGL) != 0 || wr.RemoteAddr&7 != 0 {
		return provider.BadAtomicWrite
	}
	return provider.OK
}

// encodeSend writes the validated work request wr into the send WQE at p (a ring slot with room for the WQE
// header plus l.maxSGE SGEs and l.maxInline bytes), with send sequence number ssn. length is sgeSum(wr.SGL).
func encodeSend(p unsafe.Pointer, l *sendLimits, wr *verbs.SendWR, length uint64, ssn uint32) {
	wqe := (*abi.RxeSendWqe)(p)
	*wqe = abi.RxeSendWqe{}
	w := &wqe.Wr
	w.WrId = wr.WRID
	w.Opcode = uint32(wr.Opcode)
	w.SendFlags = uint32(wr.Flags)
	switch wr.Opcode {
	case verbs.WRRDMAWriteWithImm, verbs.WRSendWithImm:
		binary.BigEndian.PutUint32(w.Ex[:], wr.Imm) // imm_data is __be32
	case verbs.WRSendWithInv, verbs.WRLocalInv:
		*w.InvalidateRkey() = wr.Imm // invalidate_rkey is host order
	}
	switch wr.Opcode {
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead:
		r := w.Rdma()
		r.RemoteAddr = wr.RemoteAddr
		r.Rkey = wr.RKey
	case verbs.WRSend, verbs.WRSendWithImm:
		if l.qpType == verbs.QPTypeUD {
			ud := w.Ud()
			ud.RemoteQpn = wr.RemoteQPN
			ud.RemoteQkey = wr.RemoteQKey
			ud.AhNum = wr.AH.Num
		}
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd:
		a := w.Atomic()
		a.RemoteAddr = wr.RemoteAddr
		a.CompareAdd = wr.CompareAdd
		a.Swap = wr.Swap
		a.Rkey = wr.RKey
	case verbs.WRFlush:
		// struct rxe_send_wr's flush member: remote_addr, length, rkey, type, level over the union (the ABI is
		// generated from Linux 6.1's headers, which predate it). rdma-core's rxe provider leaves its length 0
		// and puts the length in the DMA info, as here.
		u := (*[24]byte)(unsafe.Pointer(w.Rdma()))
		binary.NativeEndian.PutUint64(u[0:], wr.RemoteAddr)
		binary.NativeEndian.PutUint32(u[12:], wr.RKey)
		u[16] = byte(wr.Flush.Type)
		u[17] = byte(wr.Flush.Level)
		length = uint64(wr.Flush.Length)
	case verbs.WRAtomicWrite:
		r := w.Rdma()
		r.RemoteAddr = wr.RemoteAddr
		r.Rkey = wr.RKey
		// The 8 bytes go in the DMA info's atomic_wr, where inline data would be.
		binary.NativeEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(p, abi.SizeofRxeSendWqe)), 8), wr.Swap)
		length = 8
	case verbs.WRBindMW:
		m := w.Mw()
		m.Addr = wr.Bind.Addr
		m.Length = wr.Bind.Length
		m.MrLkey = wr.Bind.MRLKey
		m.MwRkey = wr.Bind.MWRKey
		m.Rkey = wr.Bind.NewRKey
		m.Access = wr.Bind.Access
	}

	data := unsafe.Add(p, abi.SizeofRxeSendWqe)
	if wr.Flags&verbs.SendInline != 0 {
		dst := unsafe.Slice((*byte)(data), l.maxInline)
		off := uint32(0)
		for i := range wr.SGL {
			s := &wr.SGL[i]
			if s.Length == 0 {
				continue
			}
			off += uint32(copy(dst[off:], unsafe.Slice((*byte)(addrPointer(s.Addr)), s.Length)))
		}
	} else {
		// Element by element: a send has one or a few SGEs, where a copy() would call memmove.
		dst := unsafe.Slice((*verbs.SGE)(data), len(wr.SGL))
		for i, sge := range wr.SGL {
			dst[i] = sge
		}
	}

	wqe.Iova = wr.RemoteAddr
	wqe.Dma.Length = uint32(length)
	wqe.Dma.Resid = uint32(length)
	wqe.Dma.NumSge = uint32(len(wr.SGL))
	wqe.Ssn = ssn
}

// encodeRecv writes a receive work request into the receive WQE at p (a ring slot with room for len(wr.SGL)
// SGEs after the header). length is sgeSum(wr.SGL), at most 2^32-1.
func encodeRecv(p unsafe.Pointer, wr *verbs.RecvWR, length uint64) {
	wqe := (*abi.RxeRecvWqe)(p)
	*wqe = abi.RxeRecvWqe{}
	wqe.WrId = wr.WRID
	if len(wr.SGL) > 0 {
		copy(unsafe.Slice((*verbs.SGE)(unsafe.Add(p, abi.SizeofRxeRecvWqe)), len(wr.SGL)), wr.SGL)
	}
	wqe.Dma.Length = uint32(length)
	wqe.Dma.Resid = uint32(length)
	wqe.Dma.NumSge = uint32(len(wr.SGL))
}

// addrPointer turns the user virtual address a (an SGE address of caller memory) into a pointer for copying
// inline data. It stores the address into a pointer's storage rather than converting an integer expression,
// which is how an address that came from outside the Go type system (a C or mmap'd buffer, or Go memory the
// caller keeps alive) is turned back into a pointer.
func addrPointer(a uint64) unsafe.Pointer {
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(a)
	return p
}

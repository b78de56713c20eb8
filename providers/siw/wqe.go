package siw

import (
	"math"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
)

// sendLimits are a send queue's capacities: what the kernel granted, bounded by what a struct siw_sqe holds
// (SIW_MAX_SGE SGEs; SIW_MAX_INLINE bytes of inline data in sge[1..]).
type sendLimits struct {
	maxSGE    uint32
	maxInline uint32
	sigAll    bool // every request generates a completion (the QP was created with sq_sig_all)
}

func newSendLimits(c verbs.QPCap, sigAll bool) sendLimits {
	return sendLimits{
		maxSGE:    min(c.MaxSendSGE, abi.SIW_MAX_SGE),
		maxInline: min(c.MaxInlineData, abi.SIW_MAX_INLINE),
		sigAll:    sigAll,
	}
}

// ibv_wr_opcode values libibverbs defines that package verbs does not name.
const (
	wrTSO     verbs.WROpcode = 10 // IBV_WR_TSO (raw packet QPs)
	wrDriver1 verbs.WROpcode = 11 // IBV_WR_DRIVER1
)

// sendOpcode maps a work request opcode to siw's, as rdma-core's map_send_opcode does: RDMA WRITE, SEND, RDMA
// READ and SEND_WITH_INV. Every other opcode libibverbs defines is one rdma-core's siw refuses (immediate
// data, atomics, LOCAL_INV, BIND_MW, TSO, DRIVER1) or does not know (FLUSH, ATOMIC WRITE): OpcodeNotSupported.
// A value libibverbs does not define is BadOpcode.
func sendOpcode(op verbs.WROpcode) (uint8, provider.Status) {
	switch op {
	case verbs.WRRDMAWrite:
		return abi.SIW_OP_WRITE, provider.OK
	case verbs.WRSend:
		return abi.SIW_OP_SEND, provider.OK
	case verbs.WRRDMARead:
		return abi.SIW_OP_READ, provider.OK
	case verbs.WRSendWithInv:
		return abi.SIW_OP_SEND_REMOTE_INV, provider.OK
	case verbs.WRRDMAWriteWithImm, verbs.WRSendWithImm, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd,
		verbs.WRLocalInv, verbs.WRBindMW, wrTSO, wrDriver1, verbs.WRFlush, verbs.WRAtomicWrite:
		return 0, provider.OpcodeNotSupported
	}
	return 0, provider.BadOpcode
}

// sendReq is a validated send work request: its siw opcode, whether its data goes inline, and the total of
// its SGE lengths.
type sendReq struct {
	opcode uint8
	inline bool
	length uint64
}

// validateSend checks a send work request against the queue's limits, the way rdma-core's siw provider does,
// with these additions (each a request rdma-core would hand to the kernel for it to fail, or get wrong):
//
//   - SendInline is honoured for SEND and RDMA WRITE, which are the opcodes siw carries inline data for, and
//     ignored for RDMA READ (whose SGEs are where data lands: nothing to copy); an inline SEND_WITH_INV is
//     OpcodeNotSupported;
//   - inline data longer than the QP's max_inline_data (at most SIW_MAX_INLINE) is InlineTooLong; any number
//     of SGEs may feed it, as in rdma-core;
//   - otherwise more SGEs than the QP's max_send_sge (at most SIW_MAX_SGE) is TooManySGE, and so is an RDMA
//     READ with more than one: iWARP's read request names one sink buffer (the kernel's siw uses sge[0] only);
//   - SGE lengths adding up to more than 2^32-1 are TooLong.
func validateSend(l *sendLimits, wr *verbs.SendWR) (sendReq, provider.Status) {
	op, st := sendOpcode(wr.Opcode)
	if st != provider.OK {
		return sendReq{}, st
	}
	r := sendReq{opcode: op, length: sgeSum(wr.SGL)}
	if wr.Flags&verbs.SendInline != 0 {
		switch op {
		case abi.SIW_OP_SEND, abi.SIW_OP_WRITE:
			r.inline = true
		case abi.SIW_OP_SEND_REMOTE_INV:
			return sendReq{}, provider.OpcodeNotSupported
		}
	}
	if r.inline {
		if r.length > uint64(l.maxInline) {
			return sendReq{}, provider.InlineTooLong
		}
		return r, provider.OK
	}
	if uint64(len(wr.SGL)) > uint64(l.maxSGE) || (op == abi.SIW_OP_READ && len(wr.SGL) > 1) {
		return sendReq{}, provider.TooManySGE
	}
	if r.length > math.MaxUint32 {
		return sendReq{}, provider.TooLong
	}
	return r, provider.OK
}

// sgeSum is the total length of an SGE list, in 64 bits so that an overflowing total is seen.
func sgeSum(sgl []verbs.SGE) uint64 {
	var n uint64
	for i := range sgl {
		n += uint64(sgl[i].Length)
	}
	return n
}

// sendFlags are the SQE flags for a request (rdma-core's map_send_flags, plus SIGNALLED on a QP created with
// sq_sig_all, as rdma-core adds it): VALID is set by the caller's publication, never here.
func sendFlags(l *sendLimits, wr *verbs.SendWR, r sendReq) uint16 {
	var f uint16
	if wr.Flags&verbs.SendSignaled != 0 || l.sigAll {
		f |= abi.SIW_WQE_SIGNALLED
	}
	if wr.Flags&verbs.SendSolicited != 0 {
		f |= abi.SIW_WQE_SOLICITED
	}
	if r.inline {
		f |= abi.SIW_WQE_INLINE
	}
	if wr.Flags&verbs.SendFence != 0 {
		f |= abi.SIW_WQE_READ_FENCE
	}
	return f
}

// encodeSend writes the validated request wr into the free SQE at p, every field except the flags word, and
// returns the flags word that publishes it (publishWQE). Fields the opcode does not use are zeroed (rdma-core
// leaves whatever the union held): rkey is the remote key for READ and WRITE and the STag to invalidate for
// SEND_WITH_INV (wr.Imm, ibv_send_wr's invalidate_rkey; rdma-core passes wr.rdma.rkey there, which libibverbs
// callers do not set for this opcode); raddr is the remote address for READ and WRITE.
//
// Inline data is copied into sge[1..] and described by sge[0] (length; address and key 0, which the kernel
// replaces with the data's own address), with num_sge 1 (0 for no SGEs at all). Otherwise the SGEs are copied
// into sge[0..num_sge), and an empty list leaves sge[0] zeroed.
func encodeSend(p unsafe.Pointer, l *sendLimits, wr *verbs.SendWR, r sendReq) wqeWord {
	sqe := (*abi.SiwSqe)(p)
	sqe.Id = wr.WRID
	sqe.Rkey, sqe.Raddr = 0, 0
	switch r.opcode {
	case abi.SIW_OP_WRITE, abi.SIW_OP_READ:
		sqe.Rkey, sqe.Raddr = wr.RKey, wr.RemoteAddr
	case abi.SIW_OP_SEND_REMOTE_INV:
		sqe.Rkey = wr.Imm
	}
	numSGE := uint8(len(wr.SGL))
	if r.inline {
		dst := unsafe.Slice((*byte)(unsafe.Pointer(&sqe.Sge[1])), abi.SIW_MAX_INLINE)
		off := 0
		for i := range wr.SGL {
			s := &wr.SGL[i]
			if s.Length != 0 {
				off += copy(dst[off:], unsafe.Slice((*byte)(addrPointer(s.Addr)), s.Length))
			}
		}
		sqe.Sge[0] = abi.SiwSge{Length: uint32(off)}
		numSGE = min(numSGE, 1)
	} else {
		for i := range wr.SGL {
			s := &wr.SGL[i]
			sqe.Sge[i] = abi.SiwSge{Laddr: s.Addr, Length: s.Length, Lkey: s.LKey}
		}
		if len(wr.SGL) == 0 {
			sqe.Sge[0] = abi.SiwSge{}
		}
	}
	return wqeWord{flags: abi.SIW_WQE_VALID | sendFlags(l, wr, r), numSGE: numSGE, opcode: r.opcode}
}

// encodeRecv writes a receive request (at most SIW_MAX_SGE SGEs, checked by the caller) into the free RQE at
// p, every field except the flags word, and returns the flags word that publishes it: flags exactly
// SIW_WQE_VALID (the kernel takes an RQE whose flags equal VALID), num_sge, opcode 0 (the kernel's own).
func encodeRecv(p unsafe.Pointer, wr *verbs.RecvWR) wqeWord {
	rqe := (*abi.SiwRqe)(p)
	rqe.Id = wr.WRID
	for i := range wr.SGL {
		s := &wr.SGL[i]
		rqe.Sge[i] = abi.SiwSge{Laddr: s.Addr, Length: s.Length, Lkey: s.LKey}
	}
	return wqeWord{flags: abi.SIW_WQE_VALID, numSGE: uint8(len(wr.SGL))}
}

// addrPointer turns the user virtual address a (an SGE address of caller memory) into a pointer for copying
// inline data. It stores the address into a pointer's storage rather than converting an integer expression,
// which is how an address that came from outside the Go type system (a C or mmap'd buffer, or Go memory the
// caller keeps alive and pinned) is turned back into a pointer.
func addrPointer(a uint64) unsafe.Pointer {
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(a)
	return p
}

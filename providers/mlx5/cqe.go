package mlx5

import "github.com/goverbs/goverbs/providers/mlx5/internal/wr"

// CQE geometry and fields (struct mlx5_cqe64, struct mlx5_err_cqe in mlx5dv.h). All multi-byte fields are
// big-endian.
const (
	CQESize = 64

	cqeOffWQEID        = 2
	cqeOffMLPath       = 17
	cqeOffSLID         = 22
	cqeOffFlagsRQPN    = 24
	cqeOffSRQNUIdx     = 32
	cqeOffImmInvalPKey = 36
	cqeOffByteCnt      = 44
	cqeOffTimestamp    = 48
	cqeOffSopDropQPN   = 56
	cqeOffWQECounter   = 60
	cqeOffSignature    = 62
	cqeOffOpOwn        = 63
	cqeOffVendorErr    = 54 // mlx5_err_cqe.vendor_err_synd
	cqeOffSyndrome     = 55 // mlx5_err_cqe.syndrome
)

// CQE opcodes (op_own >> 4, MLX5_CQE_*).
const (
	CQEReq         = 0
	CQERespWRImm   = 1
	CQERespSend    = 2
	CQERespSendImm = 3
	CQERespSendInv = 4
	CQEResizeCQ    = 5
	CQENoPacket    = 6
	CQESigErr      = 12
	CQEReqErr      = 13
	CQERespErr     = 14
	CQEInvalid     = 15
)

// op_own low bits.
const (
	CQEOwnerMask      = 0x1
	InlineScatter32   = 0x4 // MLX5_INLINE_SCATTER_32: payload (<= 32 bytes) is at the start of this CQE
	InlineScatter64   = 0x8 // MLX5_INLINE_SCATTER_64: payload is in the preceding 64 bytes (128-byte CQEs)
	cqeInvalidStamped = CQEInvalid << 4
)

// Error CQE syndromes (MLX5_CQE_SYNDROME_*).
const (
	SyndromeLocalLengthErr     = 0x01
	SyndromeLocalQPOpErr       = 0x02
	SyndromeLocalProtErr       = 0x04
	SyndromeWRFlushErr         = 0x05
	SyndromeMWBindErr          = 0x06
	SyndromeBadRespErr         = 0x10
	SyndromeLocalAccessErr     = 0x11
	SyndromeRemoteInvalReqErr  = 0x12
	SyndromeRemoteAccessErr    = 0x13
	SyndromeRemoteOpErr        = 0x14
	SyndromeTransportRetryExc  = 0x15
	SyndromeRNRRetryExcErr     = 0x16
	SyndromeRemoteAbortedErr   = 0x22
	VendorSyndromeODPPageFault = 0x93
)

// SyndromeStatus maps an error CQE's syndrome to a work-completion status (rdma-core mlx5_handle_error_cqe);
// unknown syndromes are WCGeneralErr.
func SyndromeStatus(syndrome uint8) WCStatus {
	switch syndrome {
	case SyndromeLocalLengthErr:
		return wr.WCLocLenErr
	case SyndromeLocalQPOpErr:
		return wr.WCLocQPOpErr
	case SyndromeLocalProtErr:
		return wr.WCLocProtErr
	case SyndromeWRFlushErr:
		return wr.WCWRFlushErr
	case SyndromeMWBindErr:
		return wr.WCMWBindErr
	case SyndromeBadRespErr:
		return wr.WCBadRespErr
	case SyndromeLocalAccessErr:
		return wr.WCLocAccessErr
	case SyndromeRemoteInvalReqErr:
		return wr.WCRemInvReqErr
	case SyndromeRemoteAccessErr:
		return wr.WCRemAccessErr
	case SyndromeRemoteOpErr:
		return wr.WCRemOpErr
	case SyndromeTransportRetryExc:
		return wr.WCRetryExcErr
	case SyndromeRNRRetryExcErr:
		return wr.WCRNRRetryExcErr
	case SyndromeRemoteAbortedErr:
		return wr.WCRemAbortErr
	}
	return wr.WCGeneralErr
}

// requesterOpcode maps the WQE opcode a requester CQE echoes (sop_drop_qpn >> 24) to the completion's opcode,
// flags and, for reads and atomics, its byte count (rdma-core handle_good_req). ok is false for opcodes this
// provider never posts.
func requesterOpcode(op uint8, byteCnt uint32) (wcOp WCOpcode, flags WCFlags, byteLen uint32, ok bool) {
	switch op {
	case OpcodeRDMAWriteImm:
		return wr.WCRDMAWrite, wr.WCWithImm, 0, true
	case OpcodeRDMAWrite:
		return wr.WCRDMAWrite, 0, 0, true
	case OpcodeSendImm:
		return wr.WCSend, wr.WCWithImm, 0, true
	case OpcodeSend, OpcodeSendInval:
		return wr.WCSend, 0, 0, true
	case OpcodeRDMARead:
		return wr.WCRDMARead, 0, byteCnt, true
	case OpcodeAtomicCS:
		return wr.WCCompSwap, 0, AtomicSize, true
	case OpcodeAtomicFA:
		return wr.WCFetchAdd, 0, AtomicSize, true
	case OpcodeTSO:
		return wr.WCTSO, 0, 0, true
	}
	return 0, 0, 0, false
}

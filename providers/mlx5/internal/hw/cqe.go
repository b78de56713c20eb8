package hw

import "github.com/goverbs/goverbs/verbs"

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
	CQEReqErr      = 13
	CQERespErr     = 14
	CQEInvalid     = 15
)

// op_own low bits.
const (
	CQEOwnerMask      = 0x1
	InlineScatter32   = 0x4 // MLX5_INLINE_SCATTER_32: payload (<= 32 bytes) is at the start of this CQE
	cqeInvalidStamped = CQEInvalid << 4
)

// Error CQE syndromes (MLX5_CQE_SYNDROME_*).
const (
	SyndromeLocalLengthErr    = 0x01
	SyndromeLocalQPOpErr      = 0x02
	SyndromeLocalProtErr      = 0x04
	SyndromeWRFlushErr        = 0x05
	SyndromeMWBindErr         = 0x06
	SyndromeBadRespErr        = 0x10
	SyndromeLocalAccessErr    = 0x11
	SyndromeRemoteInvalReqErr = 0x12
	SyndromeRemoteAccessErr   = 0x13
	SyndromeRemoteOpErr       = 0x14
	SyndromeTransportRetryExc = 0x15
	SyndromeRNRRetryExcErr    = 0x16
	SyndromeRemoteAbortedErr  = 0x22
)

// SyndromeStatus maps an error CQE's syndrome to a work-completion status (rdma-core mlx5_handle_error_cqe);
// unknown syndromes are WCGeneralErr.
func SyndromeStatus(syndrome uint8) WCStatus {
	switch syndrome {
	case SyndromeLocalLengthErr:
		return verbs.WCLocLenErr
	case SyndromeLocalQPOpErr:
		return verbs.WCLocQPOpErr
	case SyndromeLocalProtErr:
		return verbs.WCLocProtErr
	case SyndromeWRFlushErr:
		return verbs.WCWRFlushErr
	case SyndromeMWBindErr:
		return verbs.WCMWBindErr
	case SyndromeBadRespErr:
		return verbs.WCBadRespErr
	case SyndromeLocalAccessErr:
		return verbs.WCLocAccessErr
	case SyndromeRemoteInvalReqErr:
		return verbs.WCRemInvReqErr
	case SyndromeRemoteAccessErr:
		return verbs.WCRemAccessErr
	case SyndromeRemoteOpErr:
		return verbs.WCRemOpErr
	case SyndromeTransportRetryExc:
		return verbs.WCRetryExcErr
	case SyndromeRNRRetryExcErr:
		return verbs.WCRNRRetryExcErr
	case SyndromeRemoteAbortedErr:
		return verbs.WCRemAbortErr
	}
	return verbs.WCGeneralErr
}

// reqOp is what a requester CQE's echoed WQE opcode means for the work completion. The byte count is
// byteCnt&cntMask | fixed: the CQE's byte count for an RDMA read, 8 for atomics, 0 otherwise.
type reqOp struct {
	opcode  WCOpcode
	flags   WCFlags
	cntMask uint32
	fixed   uint32
}

// reqOps maps the WQE opcode a requester CQE echoes (sop_drop_qpn >> 24) to the completion's opcode, flags and
// byte count (rdma-core handle_good_req). Opcodes this provider never posts map to WCSend with no flags.
var reqOps = [256]reqOp{
	OpcodeRDMAWriteImm: {opcode: verbs.WCRDMAWrite, flags: verbs.WCWithImm},
	OpcodeRDMAWrite:    {opcode: verbs.WCRDMAWrite},
	OpcodeSendImm:      {opcode: verbs.WCSend, flags: verbs.WCWithImm},
	OpcodeSend:         {opcode: verbs.WCSend},
	OpcodeSendInval:    {opcode: verbs.WCSend},
	OpcodeRDMARead:     {opcode: verbs.WCRDMARead, cntMask: ^uint32(0)},
	OpcodeAtomicCS:     {opcode: verbs.WCCompSwap, fixed: AtomicSize},
	OpcodeAtomicFA:     {opcode: verbs.WCFetchAdd, fixed: AtomicSize},
	OpcodeTSO:          {opcode: wcTSO},
}

// requesterOpcode decodes a requester CQE's echoed WQE opcode with its byte count.
func requesterOpcode(op uint8, byteCnt uint32) (WCOpcode, WCFlags, uint32) {
	r := &reqOps[op]
	return r.opcode, r.flags, byteCnt&r.cntMask | r.fixed
}

// respOp is what a successful responder CQE's opcode means for the work completion: opcode, flags, and whether
// imm_inval_pkey is reported as Imm (immediate data or the invalidated rkey).
type respOp struct {
	opcode  WCOpcode
	flags   WCFlags
	immMask uint32
}

// respOps is indexed by the responder CQE opcode & 3 (RESP_SEND_INV 4 -> 0, RESP_WR_IMM 1, RESP_SEND 2,
// RESP_SEND_IMM 3), as parse decodes them (rdma-core handle_responder).
var respOps = [4]respOp{
	CQERespSendInv & 3: {opcode: verbs.WCRecv, flags: verbs.WCWithInv, immMask: ^uint32(0)},
	CQERespWRImm:       {opcode: verbs.WCRecvRDMAWithImm, flags: verbs.WCWithImm, immMask: ^uint32(0)},
	CQERespSend:        {opcode: verbs.WCRecv},
	CQERespSendImm:     {opcode: verbs.WCRecv, flags: verbs.WCWithImm, immMask: ^uint32(0)},
}

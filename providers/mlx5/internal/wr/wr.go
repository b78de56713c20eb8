// Package wr holds minimal work-request and work-completion types for the mlx5 data path. They mirror libibverbs'
// struct ibv_sge, ibv_send_wr, ibv_recv_wr and ibv_wc field for field (minus the linked-list pointers: a batch is a
// slice) and use the same enum values, so the lead can replace them with the uverbs types by changing the aliases
// in package mlx5.
//
// Differences from C, on purpose:
//   - Immediate data (SendWR.ImmData, WC.ImmData) is the 32-bit value in host order; the WQE and CQE carry it
//     big-endian. (ibv_send_wr.imm_data is __be32, i.e. C callers store htobe32(value).)
//   - The UD address handle is a pointer to an mlx5 address vector, not an ibv_ah.
package wr

// SGE is one scatter/gather element (struct ibv_sge).
type SGE struct {
	Addr   uint64 // virtual address inside a registered memory region
	Length uint32
	LKey   uint32
}

// Opcode is a send work-request opcode (enum ibv_wr_opcode).
type Opcode uint32

// Send work-request opcodes (enum ibv_wr_opcode values).
const (
	WRRDMAWrite        Opcode = 0
	WRRDMAWriteWithImm Opcode = 1
	WRSend             Opcode = 2
	WRSendWithImm      Opcode = 3
	WRRDMARead         Opcode = 4
	WRAtomicCmpAndSwp  Opcode = 5
	WRAtomicFetchAdd   Opcode = 6
	WRLocalInv         Opcode = 7
	WRBindMW           Opcode = 8
	WRSendWithInv      Opcode = 9
	WRTSO              Opcode = 10
	WRDriver1          Opcode = 11
	WRAtomicWrite      Opcode = 15
)

// SendFlags are send work-request flags (enum ibv_send_flags).
type SendFlags uint32

// Send flags (enum ibv_send_flags values).
const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
	SendIPCsum    SendFlags = 1 << 4
)

// SendWR is one send work request (struct ibv_send_wr without next; sg_list/num_sge is SGL).
type SendWR struct {
	WRID   uint64
	SGL    []SGE
	Opcode Opcode
	Flags  SendFlags
	// ImmData is the immediate value (host order) for *_WITH_IMM opcodes.
	ImmData uint32
	// InvalidateRKey is the rkey to invalidate for WRSendWithInv.
	InvalidateRKey uint32
	// RemoteAddr and RKey address the peer's memory for RDMA and atomic opcodes (wr.rdma / wr.atomic).
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd is the compare value (CMP_AND_SWP) or the addend (FETCH_AND_ADD); Swap is the swap value.
	CompareAdd uint64
	Swap       uint64
	// AH, RemoteQPN and RemoteQKey address a UD destination (wr.ud). AH is provider specific.
	AH         AddressHandle
	RemoteQPN  uint32
	RemoteQKey uint32
}

// AddressHandle is the provider's address vector for UD sends: a pointer to the 48-byte mlx5 address vector
// (struct mlx5_wqe_av), big-endian as the hardware reads it. A nil AddressHandle is invalid for UD.
type AddressHandle = *[48]byte

// RecvWR is one receive work request (struct ibv_recv_wr without next).
type RecvWR struct {
	WRID uint64
	SGL  []SGE
}

// Status is a work-completion status (enum ibv_wc_status).
type Status uint32

// Work-completion statuses (enum ibv_wc_status values).
const (
	WCSuccess          Status = 0
	WCLocLenErr        Status = 1
	WCLocQPOpErr       Status = 2
	WCLocEECOpErr      Status = 3
	WCLocProtErr       Status = 4
	WCWRFlushErr       Status = 5
	WCMWBindErr        Status = 6
	WCBadRespErr       Status = 7
	WCLocAccessErr     Status = 8
	WCRemInvReqErr     Status = 9
	WCRemAccessErr     Status = 10
	WCRemOpErr         Status = 11
	WCRetryExcErr      Status = 12
	WCRNRRetryExcErr   Status = 13
	WCLocRDDViolErr    Status = 14
	WCRemInvRDReqErr   Status = 15
	WCRemAbortErr      Status = 16
	WCInvEECNErr       Status = 17
	WCInvEECStateErr   Status = 18
	WCFatalErr         Status = 19
	WCRespTimeoutErr   Status = 20
	WCGeneralErr       Status = 21
	WCTMErr            Status = 22
	WCTMRndvIncomplete Status = 23
)

var statusNames = [...]string{
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "Work Request Flushed Error", "memory management operation error",
	"bad response error", "local access error", "remote invalid request error", "remote access error",
	"remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
	"local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
	"invalid EE context state", "fatal error", "response timeout error", "general error",
	"TM error", "TM software rendezvous",
}

// String returns the text ibv_wc_status_str gives.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// WCOpcode is a work-completion opcode (enum ibv_wc_opcode).
type WCOpcode uint32

// Work-completion opcodes (enum ibv_wc_opcode values).
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCBindMW          WCOpcode = 5
	WCLocalInv        WCOpcode = 6
	WCTSO             WCOpcode = 7
	WCAtomicWrite     WCOpcode = 9
	WCRecv            WCOpcode = 1 << 7
	WCRecvRDMAWithImm WCOpcode = WCRecv + 1
)

// WCFlags are work-completion flags (enum ibv_wc_flags).
type WCFlags uint32

// Work-completion flags (enum ibv_wc_flags values).
const (
	WCGRH      WCFlags = 1 << 0
	WCWithImm  WCFlags = 1 << 1
	WCIPCsumOK WCFlags = 1 << 2
	WCWithInv  WCFlags = 1 << 3
)

// WC is one work completion (struct ibv_wc). Fields other than WRID, Status, VendorErr and QPNum are valid only
// when Status is WCSuccess, as in libibverbs.
type WC struct {
	WRID      uint64
	Status    Status
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// ImmData is the immediate value (host order) when Flags has WCWithImm.
	ImmData uint32
	// InvalidatedRKey is the rkey the peer invalidated when Flags has WCWithInv (ibv_wc shares it with imm_data).
	InvalidatedRKey uint32
	QPNum           uint32
	SrcQP           uint32
	Flags           WCFlags
	PKeyIndex       uint16
	SLID            uint16
	SL              uint8
	DLIDPathBits    uint8
}

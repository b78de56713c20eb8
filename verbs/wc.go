package verbs

import "github.com/goverbs/goverbs/internal/enumstr"

// WCStatus is a work completion's status (enum ibv_wc_status numbering). As an error (WC.Err) its text is its
// name; errors.Is(err, WCRetryExcErr) matches it.
type WCStatus uint32

// Work completion statuses.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
	WCTMErr
	WCTMRndvIncomplete
)

var wcStatusNames = [...]string{"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",
	"REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR",
	"INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR",
	"TM_RNDV_INCOMPLETE"}

// String is the status's name ("SUCCESS", "RETRY_EXC_ERR").
func (s WCStatus) String() string { return enumstr.Name(wcStatusNames[:], uint64(s), "WCStatus") }

// Error makes a failed status an error (see WC.Err); its text is the status's name.
func (s WCStatus) Error() string { return s.String() }

// WCOpcode is a work completion's operation (enum ibv_wc_opcode; receive opcodes have bit 7 set).
type WCOpcode uint32

// Work completion opcodes.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCBindMW          WCOpcode = 5
	WCLocalInv        WCOpcode = 6
	WCFlush           WCOpcode = 8 // RDMA FLUSH (Linux 6.2+)
	WCAtomicWrite     WCOpcode = 9 // RDMA ATOMIC WRITE (Linux 6.2+)
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

var wcOpcodeNames = [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "COMP_SWAP", "FETCH_ADD", "BIND_MW",
	"LOCAL_INV", "TSO", "FLUSH", "ATOMIC_WRITE"}

func (o WCOpcode) String() string {
	switch o {
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return enumstr.Name(wcOpcodeNames[:], uint64(o), "WCOpcode")
}

// WCFlags are a work completion's flags (enum ibv_wc_flags).
type WCFlags uint32

// Work completion flags.
const (
	// WCWithGRH: for UD, the first 40 bytes of the receive buffer hold a GRH. rxe sets it on every receive
	// completion of a user CQ, RC and UC included (the kernel's rxe_resp.c do_complete: wc_flags =
	// IB_WC_GRH), and libibverbs' rxe provider copies the kernel's completion as it is, so C programs see it
	// on RC receives too; goverbs reports the same. On RC it says nothing about the buffer, which holds no GRH.
	WCWithGRH  WCFlags = 1 << 0
	WCWithImm  WCFlags = 1 << 1 // WC.Imm holds immediate data
	WCIPCSumOK WCFlags = 1 << 2 // the device checked the IP checksum
	WCWithInv  WCFlags = 1 << 3 // WC.Imm holds the rkey the sender invalidated
)

var wcFlagNames = [...]string{"GRH", "WITH_IMM", "IP_CSUM_OK", "WITH_INV"}

func (f WCFlags) String() string { return enumstr.Flags(wcFlagNames[:], uint64(f)) }

// WC is one work completion (struct ibv_wc). Its layout is exactly the kernel's struct ib_uverbs_wc (48 bytes),
// so a provider whose device writes that format (rxe) fills it with one copy.
type WC struct {
	WRID         uint64 // the work request's WRID
	Status       WCStatus
	Opcode       WCOpcode // valid only when Status is WCSuccess
	VendorErr    uint32   // the device's own error code for a failed completion
	ByteLen      uint32   // bytes received (receive completions)
	Imm          uint32   // immediate data (host order) when Flags&WCWithImm, invalidated rkey when WCWithInv
	QPNum        uint32   // the local QP the completion belongs to
	SrcQP        uint32   // the sender's QP (UD receives)
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	_            uint8
}

// Err is nil for a successful completion and otherwise the status as an error: its text names the status,
// errors.Is(err, WCRemAccessErr) matches it and errors.As(err, new(WCStatus)) extracts it. It never allocates.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return wc.Status
}

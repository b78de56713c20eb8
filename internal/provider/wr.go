package provider

// Work requests and completions shared by the verbs API (package uverbs re-exports them by alias) and every
// provider. They are plain values in caller-owned slices: posting and polling never allocate.

// SGE is one scatter/gather element: a range of registered memory. Same layout as struct ibv_sge.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// WROpcode is a send work request opcode (IB_UVERBS_WR_* numbering, as ibv_wr_opcode).
type WROpcode uint32

// Send work request opcodes.
const (
	WRRDMAWrite         WROpcode = 0
	WRRDMAWriteWithImm  WROpcode = 1
	WRSend              WROpcode = 2
	WRSendWithImm       WROpcode = 3
	WRRDMARead          WROpcode = 4
	WRAtomicCmpAndSwp   WROpcode = 5
	WRAtomicFetchAndAdd WROpcode = 6
	WRLocalInv          WROpcode = 7
	WRBindMW            WROpcode = 8
	WRSendWithInv       WROpcode = 9
)

// SendFlags are IBV_SEND_* flags.
type SendFlags uint32

// Send flags.
const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
)

// AHData is what a provider made of an address handle when it was created: everything the data path needs to
// address a UD destination without a lookup. Num is the kernel's AH number (rxe); AV holds a provider-formatted
// address vector (mlx5: the 48-byte struct mlx5_wqe_av).
type AHData struct {
	Handle uint32
	Num    uint32
	AV     [48]byte
}

// MWBind describes a memory-window bind carried in a send work request (WRBindMW).
type MWBind struct {
	MWRKey  uint32 // the rkey the window has now
	NewRKey uint32 // the rkey it will have once bound
	MRLKey  uint32 // the lkey of the memory region the window is bound to
	Addr    uint64
	Length  uint64
	Access  uint32 // IBV_ACCESS_* bits
}

// SendWR is one send work request (struct ibv_send_wr without the linked list: requests are posted as a slice).
type SendWR struct {
	WRID   uint64
	SGL    []SGE // for inline sends the bytes at the SGEs' addresses are copied into the WQE
	Opcode WROpcode
	Flags  SendFlags
	// Imm is the immediate data (host byte order; it travels big-endian) for *_WITH_IMM, or the rkey to
	// invalidate for WRSendWithInv and WRLocalInv.
	Imm uint32

	// RDMA and atomic operations.
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64 // atomic: compare (CAS) or add (FAA)
	Swap       uint64 // atomic: swap (CAS)

	// UD.
	AH         *AHData
	RemoteQPN  uint32
	RemoteQKey uint32

	// Memory window bind.
	Bind MWBind
}

// RecvWR is one receive work request.
type RecvWR struct {
	WRID uint64
	SGL  []SGE
}

// WCStatus is a work completion status (IBV_WC_* numbering).
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

// WCOpcode is a work completion opcode (IBV_WC_* numbering; receive opcodes have bit 7 set).
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
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

// WCFlags are IBV_WC_* completion flags.
type WCFlags uint32

// Work completion flags.
const (
	WCWithGRH  WCFlags = 1 << 0
	WCWithImm  WCFlags = 1 << 1
	WCIPCSumOK WCFlags = 1 << 2
	WCWithInv  WCFlags = 1 << 3
)

// WC is one work completion. Its layout is exactly the kernel's struct ib_uverbs_wc (48 bytes), so a provider
// whose device writes that format (rxe) fills it with one copy; a layout test pins every offset.
type WC struct {
	WRID         uint64
	Status       WCStatus
	Opcode       WCOpcode
	VendorErr    uint32
	ByteLen      uint32
	Imm          uint32 // immediate data (host order) when Flags&WCWithImm, invalidated rkey when WCWithInv
	QPNum        uint32
	SrcQP        uint32
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	_            uint8
}

package verbs

import "github.com/goverbs/goverbs/internal/enumstr"

// SGE is one scatter/gather element: a range of registered memory (struct ibv_sge). Addr is a number, which
// keeps nothing alive and follows nothing that moves: name memory outside the Go heap (an MR's buffer,
// uverbs.AllocBuffer, mmap), or, for an inline send from a Go value, pin it first (runtime.Pinner), since a
// value that does not escape lives on the goroutine's stack, and a stack moves when it grows.
type SGE struct {
	Addr   uint64 // start address (the MR's iova space)
	Length uint32 // bytes
	LKey   uint32 // the local key of the MR that holds the range
}

// WROpcode is a send work request's operation (IB_UVERBS_WR_* numbering, as enum ibv_wr_opcode).
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
	// WRFlush (RDMA FLUSH, Linux 6.2+, rxe) makes Flush.Length bytes at RemoteAddr (or the whole MR) visible
	// or persistent at the responder; the MR needs the matching flush access.
	WRFlush WROpcode = 14
	// WRAtomicWrite (RDMA ATOMIC WRITE, Linux 6.2+, rxe) writes the 8 bytes of Swap at RemoteAddr (8-byte
	// aligned) atomically; no SGE.
	WRAtomicWrite WROpcode = 15
)

var wrOpcodeNames = [...]string{"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
	"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW", "SEND_WITH_INV", "TSO", "DRIVER1", "",
	"", "FLUSH", "ATOMIC_WRITE"}

// FlushType is where an RDMA FLUSH places the data (enum ibv_placement_type): a bit set.
type FlushType uint8

// Flush placement types.
const (
	FlushGlobal     FlushType = 1 << 0 // visible to every agent at the responder (global visibility)
	FlushPersistent FlushType = 1 << 1 // persistent (the MR must be on persistent memory)
)

var flushTypeNames = [...]string{"GLOBAL", "PERSISTENT"}

func (t FlushType) String() string { return enumstr.Flags(flushTypeNames[:], uint64(t)) }

// FlushLevel is what an RDMA FLUSH covers (enum ibv_selectivity_level).
type FlushLevel uint8

// Flush selectivity levels.
const (
	FlushRange FlushLevel = 0 // Flush.Length bytes from RemoteAddr
	FlushMR    FlushLevel = 1 // the whole memory region RKey names
)

var flushLevelNames = [...]string{"RANGE", "MR"}

func (l FlushLevel) String() string { return enumstr.Name(flushLevelNames[:], uint64(l), "FlushLevel") }

// Flush is the part of a send work request an RDMA FLUSH (WRFlush) needs besides RemoteAddr and RKey.
type Flush struct {
	Length uint32 // bytes from RemoteAddr (FlushRange)
	Type   FlushType
	Level  FlushLevel
}

func (o WROpcode) String() string { return enumstr.Name(wrOpcodeNames[:], uint64(o), "WROpcode") }

// SendFlags are a send work request's flags (enum ibv_send_flags).
type SendFlags uint32

// Send flags.
const (
	SendFence     SendFlags = 1 << 0 // wait for earlier RDMA READs and atomics before this request
	SendSignaled  SendFlags = 1 << 1 // generate a completion (on a QP without SigAll)
	SendSolicited SendFlags = 1 << 2 // raise a solicited event at the receiver
	SendInline    SendFlags = 1 << 3 // copy the data into the work queue entry (up to QPCap.MaxInlineData)
)

var sendFlagNames = [...]string{"FENCE", "SIGNALED", "SOLICITED", "INLINE"}

func (f SendFlags) String() string { return enumstr.Flags(sendFlagNames[:], uint64(f)) }

// AHData is the data path's view of an address handle, filled by the provider when the handle is created
// (uverbs.AH.Data): everything a UD send needs to address its destination without a lookup. Its fields are the
// provider's: treat the value as opaque and put the pointer in SendWR.AH.
type AHData struct {
	Handle uint32   // the kernel object's handle
	Num    uint32   // the kernel's AH number (rxe), else 0
	AV     [48]byte // a provider-formatted address vector (mlx5: struct mlx5_wqe_av), else zero
}

// MWBind describes a memory-window bind carried by a send work request with opcode WRBindMW.
type MWBind struct {
	MWRKey  uint32 // the rkey the window has now
	NewRKey uint32 // the rkey it will have once bound
	MRLKey  uint32 // the lkey of the memory region the window is bound to
	Addr    uint64 // start of the window inside the MR
	Length  uint64 // length of the window
	Access  uint32 // IBV_ACCESS_* bits the window grants
}

// IncRKey is the rkey a window or MR gets on its next bind or fast registration (ibv_inc_rkey): the key's low
// 8 bits, the part the consumer owns, advance by one and wrap; the upper 24 bits, the device's index, stay.
// Use it for MWBind.NewRKey.
func IncRKey(rkey uint32) uint32 { return rkey&^0xff | (rkey+1)&0xff }

// SendWR is one send work request (struct ibv_send_wr without the linked list: requests are posted as a slice).
type SendWR struct {
	WRID   uint64 // returned in the completion
	SGL    []SGE  // the data; for inline sends the bytes at the SGEs' addresses are copied into the queue entry
	Opcode WROpcode
	Flags  SendFlags
	// Imm is the immediate data (host byte order; it travels big-endian) for *_WITH_IMM, or the rkey to
	// invalidate for WRSendWithInv and WRLocalInv.
	Imm uint32

	// RDMA and atomic operations.
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd and Swap are the atomic operands, host integers (as libibverbs' compare_add and swap): they
	// travel big-endian in the AtomicETH and the responder applies them to the 8 bytes at RemoteAddr as a
	// 64-bit integer of its own byte order. The original value lands in the local SGE's 8 bytes as the device
	// writes it, unconverted, as in libibverbs: rxe writes it in host byte order (little-endian on amd64 and
	// arm64; the lab's tests read it with binary.NativeEndian); hardware may write it big-endian (Mellanox
	// called this IBV_EXP_ATOMIC_HCA_REPLY_BE; mlx5 is unproven here).
	CompareAdd uint64 // atomic: compare (CAS) or add (FAA)
	Swap       uint64 // atomic: swap (CAS); the value WRAtomicWrite stores (its 8 bytes in host byte order)
	Flush      Flush  // WRFlush

	// UD.
	AH         *AHData
	RemoteQPN  uint32
	RemoteQKey uint32

	// Memory window bind.
	Bind MWBind
}

// RecvWR is one receive work request (struct ibv_recv_wr without the linked list).
type RecvWR struct {
	WRID uint64 // returned in the completion
	SGL  []SGE  // where the incoming message is written
}

// SendOps are the operations a QP's work-request builder may post (enum ibv_qp_create_send_ops_flags,
// IBV_QP_EX_WITH_*), given at creation in uverbs.QPInitAttr.SendOps.
type SendOps uint64

// Send operations.
const (
	SendOpRDMAWrite         SendOps = 1 << 0
	SendOpRDMAWriteWithImm  SendOps = 1 << 1
	SendOpSend              SendOps = 1 << 2
	SendOpSendWithImm       SendOps = 1 << 3
	SendOpRDMARead          SendOps = 1 << 4
	SendOpAtomicCmpAndSwp   SendOps = 1 << 5
	SendOpAtomicFetchAndAdd SendOps = 1 << 6
	SendOpLocalInv          SendOps = 1 << 7
	SendOpBindMW            SendOps = 1 << 8
	SendOpSendWithInv       SendOps = 1 << 9
	SendOpTSO               SendOps = 1 << 10
	SendOpFlush             SendOps = 1 << 11
	SendOpAtomicWrite       SendOps = 1 << 12
)

var sendOpNames = [...]string{"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
	"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW", "SEND_WITH_INV", "TSO", "FLUSH",
	"ATOMIC_WRITE"}

func (o SendOps) String() string { return enumstr.Flags(sendOpNames[:], uint64(o)) }

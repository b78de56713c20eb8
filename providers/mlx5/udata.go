package mlx5

import (
	"encoding/binary"
	"fmt"
)

// Driver-specific command payloads (UHW_IN / UHW_OUT, uapi rdma/mlx5-abi.h). These are host-endian. Until the
// generated uverbs/abi structs land they are encoded here with explicit offsets checked against the 6.1 header
// (see udata_test.go); the field names follow the C ones.

var ne = binary.NativeEndian

// Payload sizes (sizeof on x86-64 and arm64).
const (
	SizeofAllocUcontextReqV2 = 32
	SizeofAllocUcontextResp  = 72
	SizeofCreateCQ           = 32
	SizeofCreateCQResp       = 8
	SizeofResizeCQ           = 16
	SizeofCreateQP           = 56
	SizeofCreateQPResp       = 40
	SizeofCreateSRQ          = 32
	SizeofCreateSRQResp      = 8
	SizeofCreateAHResp       = 16
)

// Request flags and capabilities (mlx5-abi.h).
const (
	MLX5_IB_ALLOC_UCTX_DEVX = 1
	MLX5_LIB_CAP_4K_UAR     = 1
	MLX5_LIB_CAP_DYN_UAR    = 2

	MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD   = 1
	MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX = 2

	MLX5_QP_FLAG_SIGNATURE      = 1
	MLX5_QP_FLAG_SCATTER_CQE    = 2
	MLX5_QP_FLAG_BFREG_INDEX    = 8
	MLX5_QP_FLAG_UAR_PAGE_INDEX = 1 << 10
)

// AllocUcontextReq is struct mlx5_ib_alloc_ucontext_req_v2.
type AllocUcontextReq struct {
	TotalNumBfregs      uint32
	NumLowLatencyBfregs uint32
	Flags               uint32
	CompMask            uint32
	MaxCQEVersion       uint8
	LibCaps             uint64
}

// DefaultAllocUcontextReq returns what rdma-core sends by default: 16 bfregs, 4 low-latency, CQE version 1,
// DEVX, and lib_caps. dynUAR selects MLX5_LIB_CAP_DYN_UAR (then the kernel allocates no static bfregs and
// every CQ/QP needs a UAR object).
func DefaultAllocUcontextReq(dynUAR bool) AllocUcontextReq {
	r := AllocUcontextReq{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, Flags: MLX5_IB_ALLOC_UCTX_DEVX,
		MaxCQEVersion: 1, LibCaps: MLX5_LIB_CAP_4K_UAR}
	if dynUAR {
		r.LibCaps |= MLX5_LIB_CAP_DYN_UAR
	}
	return r
}

// Marshal encodes r into its 32-byte wire form.
func (r AllocUcontextReq) Marshal() []byte {
	b := make([]byte, SizeofAllocUcontextReqV2)
	ne.PutUint32(b[0:], r.TotalNumBfregs)
	ne.PutUint32(b[4:], r.NumLowLatencyBfregs)
	ne.PutUint32(b[8:], r.Flags)
	ne.PutUint32(b[12:], r.CompMask)
	b[16] = r.MaxCQEVersion
	ne.PutUint64(b[24:], r.LibCaps)
	return b
}

// AllocUcontextResp is struct mlx5_ib_alloc_ucontext_resp.
type AllocUcontextResp struct {
	QPTabSize          uint32
	BfRegSize          uint32
	TotBfregs          uint32
	CacheLineSize      uint32
	MaxSQDescSz        uint16
	MaxRQDescSz        uint16
	MaxSendWQEBB       uint32
	MaxRecvWR          uint32
	MaxSRQRecvWR       uint32
	NumPorts           uint16
	FlowActionFlags    uint16
	CompMask           uint32
	ResponseLength     uint32
	CQEVersion         uint8
	CmdsSuppUHW        uint8
	EthMinInline       uint8
	ClockInfoVersions  uint8
	HCACoreClockOffset uint64
	LogUARSize         uint32
	NumUARsPerPage     uint32
	NumDynBfregs       uint32
	DumpFillMkey       uint32
}

// ParseAllocUcontextResp decodes the response. The kernel writes only as many bytes as it knows; fields past the
// end of b are zero. At least the first 16 bytes (through cache_line_size) are required.
func ParseAllocUcontextResp(b []byte) (AllocUcontextResp, error) {
	var r AllocUcontextResp
	if len(b) < 16 {
		return r, fmt.Errorf("mlx5: parse alloc_ucontext response: %d bytes, need at least 16: %w", len(b), errInvalid)
	}
	var f [SizeofAllocUcontextResp]byte
	copy(f[:], b)
	r.QPTabSize = ne.Uint32(f[0:])
	r.BfRegSize = ne.Uint32(f[4:])
	r.TotBfregs = ne.Uint32(f[8:])
	r.CacheLineSize = ne.Uint32(f[12:])
	r.MaxSQDescSz = ne.Uint16(f[16:])
	r.MaxRQDescSz = ne.Uint16(f[18:])
	r.MaxSendWQEBB = ne.Uint32(f[20:])
	r.MaxRecvWR = ne.Uint32(f[24:])
	r.MaxSRQRecvWR = ne.Uint32(f[28:])
	r.NumPorts = ne.Uint16(f[32:])
	r.FlowActionFlags = ne.Uint16(f[34:])
	r.CompMask = ne.Uint32(f[36:])
	r.ResponseLength = ne.Uint32(f[40:])
	r.CQEVersion = f[44]
	r.CmdsSuppUHW = f[45]
	r.EthMinInline = f[46]
	r.ClockInfoVersions = f[47]
	r.HCACoreClockOffset = ne.Uint64(f[48:])
	r.LogUARSize = ne.Uint32(f[56:])
	r.NumUARsPerPage = ne.Uint32(f[60:])
	r.NumDynBfregs = ne.Uint32(f[64:])
	r.DumpFillMkey = ne.Uint32(f[68:])
	return r, nil
}

// mlx5dv context flags (enum mlx5dv_context_flags).
const (
	MLX5DV_CONTEXT_FLAGS_CQE_V1    = 1 << 0
	MLX5DV_CONTEXT_FLAGS_BLUEFLAME = 1 << 8 // rdma-core v58 (PR #1614)
)

// Caps is what the mlx5 provider reports about a context (the part of mlx5dv_query_device that depends only on
// alloc_ucontext).
type Caps struct {
	// BlueFlame is true when the kernel returned a non-zero bf_reg_size, which it does only if its write-combining
	// self test passed; otherwise every QP rings the 8-byte doorbell (rdma-core v58 MLX5DV_CONTEXT_FLAGS_BLUEFLAME).
	BlueFlame bool
	// BFRegSize is bf_reg_size; each register has two halves of BFRegSize/2 bytes.
	BFRegSize  int
	CQEVersion int
	// UARSize and UARsPerPage describe the UAR layout; an old kernel that reports neither means one UAR of
	// pageSize per page (rdma-core mlx5.c).
	UARSize, UARsPerPage int
	Limits               QueueLimits
}

// CapsFromResp derives the provider capabilities from an alloc_ucontext response.
func CapsFromResp(r AllocUcontextResp, pageSize int) Caps {
	c := Caps{
		BlueFlame:  r.BfRegSize != 0,
		BFRegSize:  int(r.BfRegSize),
		CQEVersion: int(r.CQEVersion),
		Limits: QueueLimits{MaxSQDescSz: int(r.MaxSQDescSz), MaxRQDescSz: int(r.MaxRQDescSz),
			MaxSendWQEBB: int(r.MaxSendWQEBB), MaxRecvWR: int(r.MaxRecvWR)},
	}
	if r.LogUARSize == 0 && r.NumUARsPerPage == 0 {
		c.UARSize, c.UARsPerPage = pageSize, 1
	} else {
		c.UARSize, c.UARsPerPage = 1<<r.LogUARSize, int(r.NumUARsPerPage)
	}
	return c
}

// ContextFlags returns the mlx5dv_context flags these capabilities imply (CQE_V1, BLUEFLAME).
func (c Caps) ContextFlags() uint64 {
	var f uint64
	if c.CQEVersion == 1 {
		f |= MLX5DV_CONTEXT_FLAGS_CQE_V1
	}
	if c.BlueFlame {
		f |= MLX5DV_CONTEXT_FLAGS_BLUEFLAME
	}
	return f
}

// CreateCQ is struct mlx5_ib_create_cq.
type CreateCQ struct {
	BufAddr, DBAddr uint64
	CQESize         uint32
	CQECompEn       uint8
	CQECompResFmt   uint8
	Flags           uint16
	UARPageIndex    uint16
}

// Marshal encodes c into its 32-byte wire form.
func (c CreateCQ) Marshal() []byte {
	b := make([]byte, SizeofCreateCQ)
	ne.PutUint64(b[0:], c.BufAddr)
	ne.PutUint64(b[8:], c.DBAddr)
	ne.PutUint32(b[16:], c.CQESize)
	b[20], b[21] = c.CQECompEn, c.CQECompResFmt
	ne.PutUint16(b[22:], c.Flags)
	ne.PutUint16(b[24:], c.UARPageIndex)
	return b
}

// ResizeCQ is struct mlx5_ib_resize_cq.
type ResizeCQ struct {
	BufAddr uint64
	CQESize uint16
}

// Marshal encodes r into its 16-byte wire form.
func (r ResizeCQ) Marshal() []byte {
	b := make([]byte, SizeofResizeCQ)
	ne.PutUint64(b[0:], r.BufAddr)
	ne.PutUint16(b[8:], r.CQESize)
	return b
}

// CreateQP is struct mlx5_ib_create_qp.
type CreateQP struct {
	BufAddr, DBAddr        uint64
	SQWQECount, RQWQECount uint32
	RQWQEShift, Flags      uint32
	UIdx, BfregIndex       uint32
	SQBufAddr              uint64
	ECEOptions             uint32
	DCIStreams             [2]uint8
}

// Marshal encodes q into its 56-byte wire form.
func (q CreateQP) Marshal() []byte {
	b := make([]byte, SizeofCreateQP)
	ne.PutUint64(b[0:], q.BufAddr)
	ne.PutUint64(b[8:], q.DBAddr)
	ne.PutUint32(b[16:], q.SQWQECount)
	ne.PutUint32(b[20:], q.RQWQECount)
	ne.PutUint32(b[24:], q.RQWQEShift)
	ne.PutUint32(b[28:], q.Flags)
	ne.PutUint32(b[32:], q.UIdx)
	ne.PutUint32(b[36:], q.BfregIndex)
	ne.PutUint64(b[40:], q.SQBufAddr)
	ne.PutUint32(b[48:], q.ECEOptions)
	b[52], b[53] = q.DCIStreams[0], q.DCIStreams[1]
	return b
}

// CreateQPResp is struct mlx5_ib_create_qp_resp.
type CreateQPResp struct {
	BfregIndex, ECEOptions, CompMask uint32
	TIRN, TISN, RQN, SQN             uint32
	TIRICMAddr                       uint64
}

// ParseCreateQPResp decodes the response; at least bfreg_index (4 bytes) must be present, later fields default
// to zero.
func ParseCreateQPResp(b []byte) (CreateQPResp, error) {
	var r CreateQPResp
	if len(b) < 4 {
		return r, fmt.Errorf("mlx5: parse create_qp response: %d bytes: %w", len(b), errInvalid)
	}
	var f [SizeofCreateQPResp]byte
	copy(f[:], b)
	r.BfregIndex = ne.Uint32(f[0:])
	r.ECEOptions = ne.Uint32(f[4:])
	r.CompMask = ne.Uint32(f[8:])
	r.TIRN = ne.Uint32(f[12:])
	r.TISN = ne.Uint32(f[16:])
	r.RQN = ne.Uint32(f[20:])
	r.SQN = ne.Uint32(f[24:])
	r.TIRICMAddr = ne.Uint64(f[32:])
	return r, nil
}

// CreateSRQ is struct mlx5_ib_create_srq.
type CreateSRQ struct {
	BufAddr, DBAddr uint64
	Flags, UIdx     uint32
}

// Marshal encodes s into its 32-byte wire form.
func (s CreateSRQ) Marshal() []byte {
	b := make([]byte, SizeofCreateSRQ)
	ne.PutUint64(b[0:], s.BufAddr)
	ne.PutUint64(b[8:], s.DBAddr)
	ne.PutUint32(b[16:], s.Flags)
	ne.PutUint32(b[24:], s.UIdx)
	return b
}

// ParseNumberResp decodes the 8-byte responses that carry one number first (mlx5_ib_create_cq_resp.cqn,
// mlx5_ib_create_srq_resp.srqn).
func ParseNumberResp(b []byte) (uint32, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("mlx5: parse create response: %d bytes: %w", len(b), errInvalid)
	}
	return ne.Uint32(b), nil
}

// ParseCreateAHResp returns the destination MAC from struct mlx5_ib_create_ah_resp.
func ParseCreateAHResp(b []byte) ([6]byte, error) {
	var mac [6]byte
	if len(b) < 10 {
		return mac, fmt.Errorf("mlx5: parse create_ah response: %d bytes: %w", len(b), errInvalid)
	}
	copy(mac[:], b[4:10])
	return mac, nil
}

// mmap commands (enum mlx5_ib_mmap_cmd).
const (
	MLX5_IB_MMAP_REGULAR_PAGE = 0
	MLX5_IB_MMAP_WC_PAGE      = 2
	MLX5_IB_MMAP_NC_PAGE      = 3
	MLX5_IB_MMAP_CORE_CLOCK   = 5
	MLX5_IB_MMAP_ALLOC_WC     = 6
	MLX5_IB_MMAP_CLOCK_INFO   = 7
)

// MmapOffset returns the mmap file offset for cmd and index: pgoff = cmd<<8 | (index & 0xff) | (index>>8)<<16,
// times the page size (rdma-core set_command/set_extended_index).
func MmapOffset(cmd, index uint32, pageSize int) int64 {
	pg := uint64(cmd)<<8 | uint64(index&0xff) | uint64(index>>8)<<16
	return int64(pg) * int64(pageSize)
}

// StaticBfreg locates static bfreg bfi (4 per UAR) for a context with uarsPerPage UARs per system page: the system
// page to map, the register's byte offset in it, whether it can do BlueFlame (bfi 0 never does) and whether it
// needs the lock: rdma-core need_uuar_lock, where with i = bfi/2 + bfi%2 the registers with i >= totBfregs - lowLat
// are dedicated (low latency) and bfi 0 is never locked.
func StaticBfreg(bfi, uarsPerPage, bfRegSize, totBfregs, lowLat int) (page, offset int, blueFlame, shared bool) {
	uar := bfi / 4
	page = uar / uarsPerPage
	offset = AdapterPageSize*(uar%uarsPerPage) + BFOffset + (bfi%4)*bfRegSize
	blueFlame = bfi != 0 && bfRegSize != 0
	shared = bfi != 0 && bfi/2+bfi%2 < totBfregs-lowLat
	return page, offset, blueFlame, shared
}

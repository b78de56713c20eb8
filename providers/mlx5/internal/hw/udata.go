package hw

import (
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

// Driver-specific command payloads (UHW_IN / UHW_OUT): builders that fill the generated abi structs with
// the values rdma-core's mlx5 provider sends, and parsers for the responses. Send a request with
// rawcmd.Bytes(&req); the golden vectors pin every builder's bytes against gcc's layout of the 6.1 header.

// DefaultAllocUcontextReq returns rdma-core's GET_CONTEXT request: 16 bfregs, 4 of them low latency, CQE version
// 1, DEVX, MLX5_LIB_CAP_4K_UAR, plus MLX5_LIB_CAP_DYN_UAR when dynUAR (then the kernel allocates no static bfregs,
// reports tot_bfregs 0, and every CQ and QP needs a UAR object's page id).
func DefaultAllocUcontextReq(dynUAR bool) abi.Mlx5IbAllocUcontextReqV2 {
	r := abi.Mlx5IbAllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, Flags: abi.MLX5_IB_ALLOC_UCTX_DEVX,
		MaxCqeVersion: 1, LibCaps: abi.MLX5_LIB_CAP_4K_UAR}
	if dynUAR {
		r.LibCaps |= abi.MLX5_LIB_CAP_DYN_UAR
	}
	return r
}

// bytesOf is the byte view of an ABI struct (host layout, no pointers).
func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

// mlx5dv context flags (enum mlx5dv_context_flags).
const (
	MLX5DV_CONTEXT_FLAGS_CQE_V1    = 1 << 0
	MLX5DV_CONTEXT_FLAGS_BLUEFLAME = 1 << 8 // rdma-core v58 (PR #1614)
)

// Caps is what the mlx5 provider reports about a context (the part of mlx5dv_query_device that depends only on
// the GET_CONTEXT response).
type Caps struct {
	// BlueFlame is true when the kernel returned a non-zero bf_reg_size, which it does only if its write-combining
	// self test passed; otherwise every QP rings the 8-byte doorbell (rdma-core v58 MLX5DV_CONTEXT_FLAGS_BLUEFLAME).
	BlueFlame bool
	// BFRegSize is bf_reg_size; each register has two halves of BFRegSize/2 bytes (the BFReg buffer size).
	BFRegSize  int
	CQEVersion int
	// UARSize and UARsPerPage describe the UAR layout; an old kernel that reports neither means one UAR of
	// pageSize per page (rdma-core mlx5.c).
	UARSize, UARsPerPage int
	Limits               QueueLimits
}

// CapsFromResp derives the provider capabilities from a GET_CONTEXT response.
func CapsFromResp(r *abi.Mlx5IbAllocUcontextResp, pageSize int) Caps {
	c := Caps{
		BlueFlame:  r.BfRegSize != 0,
		BFRegSize:  int(r.BfRegSize),
		CQEVersion: int(r.CqeVersion),
		Limits: QueueLimits{MaxSQDescSz: int(r.MaxSqDescSz), MaxRQDescSz: int(r.MaxRqDescSz),
			MaxSendWQEBB: int(r.MaxSendWqebb), MaxRecvWR: int(r.MaxRecvWr)},
	}
	if r.LogUarSize == 0 && r.NumUarsPerPage == 0 {
		c.UARSize, c.UARsPerPage = pageSize, 1
	} else {
		c.UARSize, c.UARsPerPage = 1<<min(r.LogUarSize, 30), int(r.NumUarsPerPage)
	}
	return c
}

// ContextFlags returns the mlx5dv_context flags these capabilities imply (CQE_V1, BLUEFLAME). The MPW, CQE
// compression and packet-pacing flags come from QUERY_DEVICE's vendor capabilities and are not derived here.
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

// CreateCQReq returns the CQ_CREATE driver request for a CQ of 64-byte CQEs at bufAddr with its doorbell record at
// dbAddr; with uarPage >= 0 it names the UAR object page for the arm doorbell (MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX;
// 6.1 takes 16 bits).
func CreateCQReq(bufAddr, dbAddr uint64, uarPage int) abi.Mlx5IbCreateCq {
	r := abi.Mlx5IbCreateCq{BufAddr: bufAddr, DbAddr: dbAddr, CqeSize: CQESize}
	if uarPage >= 0 {
		r.Flags |= abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
		r.UarPageIndex = uint16(uarPage)
	}
	return r
}

// ResizeCQReq returns the RESIZE_CQ driver request for a new buffer of 64-byte CQEs.
func ResizeCQReq(bufAddr uint64) abi.Mlx5IbResizeCq {
	return abi.Mlx5IbResizeCq{BufAddr: bufAddr, CqeSize: CQESize}
}

// CreateQPReq returns the QP_CREATE driver request for a QP laid out by l at bufAddr with its doorbell record at
// dbAddr. uidx is the user index (0xffffff when the context's CQE version is 0); uarPage >= 0 names the BlueFlame
// UAR object page (MLX5_QP_FLAG_UAR_PAGE_INDEX). scatterCQE sets MLX5_QP_FLAG_SCATTER_CQE, rdma-core's default.
func CreateQPReq(l QPLayout, bufAddr, dbAddr uint64, uidx uint32, uarPage int, scatterCQE bool) abi.Mlx5IbCreateQp {
	r := abi.Mlx5IbCreateQp{BufAddr: bufAddr, DbAddr: dbAddr, SqWqeCount: uint32(l.SQWQECount),
		RqWqeCount: uint32(l.RQWQECount), RqWqeShift: uint32(l.RQWQEShift), Uidx: uidx}
	if scatterCQE {
		r.Flags |= abi.MLX5_QP_FLAG_SCATTER_CQE
	}
	if uarPage >= 0 {
		r.Flags |= abi.MLX5_QP_FLAG_UAR_PAGE_INDEX
		r.BfregIndex = uint32(uarPage)
	}
	return r
}

// CreateSRQReq returns the SRQ_CREATE driver request.
func CreateSRQReq(bufAddr, dbAddr uint64, uidx uint32) abi.Mlx5IbCreateSrq {
	return abi.Mlx5IbCreateSrq{BufAddr: bufAddr, DbAddr: dbAddr, Uidx: uidx}
}

// ECECreateTrigger is the ece_options of a QP_CREATE request on a device with ECE (the context's response has
// MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE): ECE version 1 in the top nibble, which asks the device to start the
// QP's ECE negotiation; the response's ece_options are the QP's first options (libmlx5 mlx5_create_qp).
const ECECreateTrigger = 0x10000000

// ModifyQPECEReq returns the extended MODIFY_QP driver request that applies the ECE options set with
// ibv_set_ece (libmlx5 mlx5_modify_qp with set_ece pending): only ece_options set. The driver response is an
// abi.Mlx5IbModifyQpResp, whose ece_options are the options the device accepted.
func ModifyQPECEReq(options uint32) abi.Mlx5IbModifyQp {
	return abi.Mlx5IbModifyQp{EceOptions: options}
}

// RateLimitReq returns the extended MODIFY_QP driver request of a rate limit (libmlx5
// mlx5_modify_qp_rate_limit): the burst information, no ECE options (a pending ibv_set_ece waits for the next
// ordinary modify). There is no driver response.
func RateLimitReq(maxBurst uint32, typicalPkt uint16) abi.Mlx5IbModifyQp {
	return abi.Mlx5IbModifyQp{BurstInfo: abi.Mlx5IbBurstInfo{MaxBurstSz: maxBurst, TypicalPktSz: typicalPkt}}
}

// ClockMmapOffset is the mmap offset of the page holding the HCA core clock (MLX5_IB_MMAP_CORE_CLOCK in the
// command bits of the page index, as libmlx5 mlx5_map_internal_clock maps it, read-only).
func ClockMmapOffset(pageSize int) int64 {
	return int64(abi.MLX5_IB_MMAP_CORE_CLOCK) << mmapCmdShift * int64(pageSize)
}

// mmapCmdShift is MLX5_IB_MMAP_CMD_SHIFT: where the mmap command sits in the page index.
const mmapCmdShift = 8

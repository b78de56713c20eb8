package hw

import "encoding/binary"

// Send WQE geometry (mlx5dv.h).
const (
	SendWQEBB    = 64 // MLX5_SEND_WQE_BB: the basic block of the send queue
	sendWQEShift = 6  // MLX5_SEND_WQE_SHIFT

	CtrlSegSize     = 16 // struct mlx5_wqe_ctrl_seg
	RaddrSegSize    = 16 // struct mlx5_wqe_raddr_seg
	AtomicSegSize   = 16 // struct mlx5_wqe_atomic_seg
	DataSegSize     = 16 // struct mlx5_wqe_data_seg
	DatagramSegSize = 48 // struct mlx5_wqe_datagram_seg (= struct mlx5_wqe_av)
	SRQNextSegSize  = 16 // struct mlx5_wqe_srq_next_seg
	inlineHdrSize   = 4  // struct mlx5_wqe_inl_data_seg
)

// WQE opcodes (MLX5_OPCODE_*, mlx5dv.h).
const (
	OpcodeSendInval    = 0x01
	OpcodeRDMAWrite    = 0x08
	OpcodeRDMAWriteImm = 0x09
	OpcodeSend         = 0x0a
	OpcodeSendImm      = 0x0b
	OpcodeTSO          = 0x0e
	OpcodeRDMARead     = 0x10
	OpcodeAtomicCS     = 0x11
	OpcodeAtomicFA     = 0x12
)

// Ctrl segment fm_ce_se bits (MLX5_WQE_CTRL_*).
const (
	CtrlCQUpdate  = 0x08 // generate a CQE (signaled)
	CtrlSolicited = 0x02
	CtrlFence     = 0x80
)

// Other data-path constants (mlx5dv.h).
const (
	InlineSeg    = 0x80000000 // MLX5_INLINE_SEG: set in an inline segment's byte_count
	InvalidLKey  = 0x100      // MLX5_INVALID_LKEY: terminates a receive scatter list
	ExtendedUDAV = 0x80000000 // MLX5_EXTENDED_UD_AV: set in the datagram segment's dqp_dct
	AtomicSize   = 8          // MLX5_ATOMIC_SIZE: byte_count forced on an atomic's data segment
)

var be = binary.BigEndian

// PutRaddrSeg writes a remote-address segment (raddr, rkey, reserved 0) at b[0:16].
func PutRaddrSeg(b []byte, raddr uint64, rkey uint32) {
	_ = b[15]
	be.PutUint64(b[0:], raddr)
	be.PutUint32(b[8:], rkey)
	be.PutUint32(b[12:], 0)
}

// PutAtomicSeg writes an atomic segment at b[0:16]: swap_add then compare. For compare-and-swap swapAdd is the
// swap value and compare the compare value; for fetch-and-add swapAdd is the addend (rdma-core leaves compare
// unwritten there; we write the given value, normally 0).
func PutAtomicSeg(b []byte, swapAdd, compare uint64) {
	_ = b[15]
	be.PutUint64(b[0:], swapAdd)
	be.PutUint64(b[8:], compare)
}

// PutDataSeg writes a data (scatter/gather) segment at b[0:16], as mlx5dv_set_data_seg does.
func PutDataSeg(b []byte, length, lkey uint32, addr uint64) {
	_ = b[15]
	be.PutUint32(b[0:], length)
	be.PutUint32(b[4:], lkey)
	be.PutUint64(b[8:], addr)
}

// PutDataSegEnd writes the receive scatter-list terminator (byte_count 0, lkey MLX5_INVALID_LKEY, addr 0).
func PutDataSegEnd(b []byte) { PutDataSeg(b, 0, InvalidLKey, 0) }

// PutInlineHeader writes an inline segment's 4-byte header for n bytes of inline data.
func PutInlineHeader(b []byte, n uint32) { be.PutUint32(b[0:], n|InlineSeg) }

// InlineDS returns the number of 16-byte units an inline segment with n data bytes occupies (0 when n is 0).
func InlineDS(n int) int {
	if n == 0 {
		return 0
	}
	return (inlineHdrSize + n + 15) / 16
}

// PutDatagramSeg writes a UD datagram segment at b[0:48]: the AH's address vector, then dqp_dct = remoteQPN |
// MLX5_EXTENDED_UD_AV and the Q_Key (rdma-core set_datagram_seg).
func PutDatagramSeg(b []byte, av *[48]byte, remoteQPN, qkey uint32) {
	_ = b[47]
	copy(b[:48], av[:])
	be.PutUint32(b[8:], remoteQPN|ExtendedUDAV)
	be.PutUint32(b[0:], qkey)
}

package mlx5emu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutMatchesMlx5dv compares the constants and offsets used by the
// emulator and by the test writer with those printed from mlx5dv.h by
// testdata/genlayout.c (go generate).
func TestLayoutMatchesMlx5dv(t *testing.T) {
	f, err := os.Open("testdata/mlx5dv_layout.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		c[name] = v
	}
	want := []struct {
		name string
		vals []uint64 // emulator value, test-writer value, ...
	}{
		{"MLX5_RCV_DBR", []uint64{0 / 4}},
		{"MLX5_SND_DBR", []uint64{4 / 4}},
		{"MLX5_OPCODE_NOP", []uint64{opNOP, tOpNOP}},
		{"MLX5_OPCODE_SEND_INVAL", []uint64{opSendInval, tOpSendInval}},
		{"MLX5_OPCODE_RDMA_WRITE", []uint64{opRDMAWrite, tOpRDMAWrite}},
		{"MLX5_OPCODE_RDMA_WRITE_IMM", []uint64{opRDMAWriteImm, tOpRDMAWriteImm}},
		{"MLX5_OPCODE_SEND", []uint64{opSend, tOpSend}},
		{"MLX5_OPCODE_SEND_IMM", []uint64{opSendImm, tOpSendImm}},
		{"MLX5_OPCODE_RDMA_READ", []uint64{opRDMARead, tOpRDMARead}},
		{"MLX5_OPCODE_ATOMIC_CS", []uint64{opAtomicCS, tOpAtomicCS}},
		{"MLX5_OPCODE_ATOMIC_FA", []uint64{opAtomicFA, tOpAtomicFA}},
		{"MLX5_INLINE_SCATTER_32", []uint64{inlineScatter}},
		{"MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR", []uint64{synLocLen}},
		{"MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR", []uint64{synLocQPOp}},
		{"MLX5_CQE_SYNDROME_LOCAL_PROT_ERR", []uint64{synLocProt}},
		{"MLX5_CQE_SYNDROME_WR_FLUSH_ERR", []uint64{synWRFlush}},
		{"MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR", []uint64{synRemInvReq}},
		{"MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR", []uint64{synRemAccess}},
		{"MLX5_CQE_SYNDROME_REMOTE_OP_ERR", []uint64{synRemOp}},
		{"MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR", []uint64{synRetryExc}},
		{"MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR", []uint64{synRNRRetry}},
		{"MLX5_CQE_OWNER_MASK", []uint64{1}},
		{"MLX5_CQE_REQ", []uint64{cqeReq, tCQEReq}},
		{"MLX5_CQE_RESP_WR_IMM", []uint64{cqeRespWrImm, tCQERespWrImm}},
		{"MLX5_CQE_RESP_SEND", []uint64{cqeRespSend, tCQERespSend}},
		{"MLX5_CQE_RESP_SEND_IMM", []uint64{cqeRespSendImm, tCQERespSendImm}},
		{"MLX5_CQE_RESP_SEND_INV", []uint64{cqeRespSendInv, tCQERespSendInv}},
		{"MLX5_CQE_REQ_ERR", []uint64{cqeReqErr, tCQEReqErr}},
		{"MLX5_CQE_RESP_ERR", []uint64{cqeRespErr, tCQERespErr}},
		{"MLX5_CQE_INVALID", []uint64{0xf0 >> 4, tCQEInvalid}},
		{"MLX5_CQ_DOORBELL", []uint64{CQDoorbellOffset}},
		{"MLX5_CQ_DB_REQ_NOT_SOL", []uint64{1 << 24}},
		{"MLX5_INVALID_LKEY", []uint64{invalidLKey}},
		{"MLX5_EXTENDED_UD_AV", []uint64{extendedUDAV}},
		{"MLX5_WQE_CTRL_CQ_UPDATE", []uint64{ctrlCQUpdate, tCQUpdate}},
		{"MLX5_WQE_CTRL_SOLICITED", []uint64{ctrlSolicited, tSolicited}},
		{"MLX5_WQE_CTRL_FENCE", []uint64{tFence}},
		{"MLX5_SEND_WQE_BB", []uint64{64}},
		{"MLX5_INLINE_SEG", []uint64{inlineSegFlag}},
		// Offsets the emulator and the writer use as literals.
		{"sizeof(mlx5_wqe_ctrl_seg)", []uint64{16}},
		{"offsetof(mlx5_wqe_ctrl_seg.opmod_idx_opcode)", []uint64{0}},
		{"offsetof(mlx5_wqe_ctrl_seg.qpn_ds)", []uint64{4}},
		{"offsetof(mlx5_wqe_ctrl_seg.fm_ce_se)", []uint64{11}},
		{"offsetof(mlx5_wqe_ctrl_seg.imm)", []uint64{12}},
		{"sizeof(mlx5_wqe_data_seg)", []uint64{16}},
		{"offsetof(mlx5_wqe_data_seg.byte_count)", []uint64{0}},
		{"offsetof(mlx5_wqe_data_seg.lkey)", []uint64{4}},
		{"offsetof(mlx5_wqe_data_seg.addr)", []uint64{8}},
		{"sizeof(mlx5_wqe_raddr_seg)", []uint64{16}},
		{"offsetof(mlx5_wqe_raddr_seg.raddr)", []uint64{0}},
		{"offsetof(mlx5_wqe_raddr_seg.rkey)", []uint64{8}},
		{"sizeof(mlx5_wqe_atomic_seg)", []uint64{16}},
		{"offsetof(mlx5_wqe_atomic_seg.swap_add)", []uint64{0}},
		{"offsetof(mlx5_wqe_atomic_seg.compare)", []uint64{8}},
		{"sizeof(mlx5_wqe_av)", []uint64{48}},
		{"offsetof(mlx5_wqe_av.key.qkey.qkey)", []uint64{0}},
		{"offsetof(mlx5_wqe_av.dqp_dct)", []uint64{8}},
		{"offsetof(mlx5_wqe_av.stat_rate_sl)", []uint64{12}},
		{"offsetof(mlx5_wqe_av.tclass)", []uint64{26}},
		{"offsetof(mlx5_wqe_av.hop_limit)", []uint64{27}},
		{"offsetof(mlx5_wqe_av.grh_gid_fl)", []uint64{28}},
		{"offsetof(mlx5_wqe_av.rgid)", []uint64{32}},
		{"sizeof(mlx5_wqe_srq_next_seg)", []uint64{16}},
		{"offsetof(mlx5_wqe_srq_next_seg.next_wqe_index)", []uint64{2}},
		{"sizeof(mlx5_cqe64)", []uint64{64}},
		{"offsetof(mlx5_cqe64.slid)", []uint64{22}},
		{"offsetof(mlx5_cqe64.flags_rqpn)", []uint64{24}},
		{"offsetof(mlx5_cqe64.srqn_uidx)", []uint64{32}},
		{"offsetof(mlx5_cqe64.imm_inval_pkey)", []uint64{36}},
		{"offsetof(mlx5_cqe64.byte_cnt)", []uint64{44}},
		{"offsetof(mlx5_cqe64.sop_drop_qpn)", []uint64{56}},
		{"offsetof(mlx5_cqe64.wqe_counter)", []uint64{60}},
		{"offsetof(mlx5_cqe64.signature)", []uint64{62}},
		{"offsetof(mlx5_cqe64.op_own)", []uint64{63}},
		{"sizeof(mlx5_err_cqe)", []uint64{64}},
		{"offsetof(mlx5_err_cqe.srqn)", []uint64{32}},
		{"offsetof(mlx5_err_cqe.vendor_err_synd)", []uint64{54}},
		{"offsetof(mlx5_err_cqe.syndrome)", []uint64{55}},
		{"offsetof(mlx5_err_cqe.s_wqe_opcode_qpn)", []uint64{56}},
		{"offsetof(mlx5_err_cqe.wqe_counter)", []uint64{60}},
		{"offsetof(mlx5_err_cqe.op_own)", []uint64{63}},
	}
	seen := map[string]bool{}
	for _, w := range want {
		got, ok := c[w.name]
		if !ok {
			t.Errorf("%s missing from testdata", w.name)
			continue
		}
		seen[w.name] = true
		for i, v := range w.vals {
			if v != got {
				t.Errorf("%s: value %d is %d, mlx5dv.h says %d", w.name, i, v, got)
			}
		}
	}
	for name := range c {
		if !seen[name] {
			t.Errorf("%s generated but not checked", name)
		}
	}
}

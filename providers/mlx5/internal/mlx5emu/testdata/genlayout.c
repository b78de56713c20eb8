/*
 * Test-data generator for package mlx5emu (not part of the build): prints
 * the mlx5dv.h layouts and constants the emulator and its tests rely on,
 * one "NAME VALUE" per line. Run through `go generate` in the package
 * directory; layout_test.go compares the output with the Go side.
 */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/mlx5dv.h>

#define C(x) printf("%s %lu\n", #x, (unsigned long)(x))
#define O(s, f) printf("offsetof(%s.%s) %lu\n", #s, #f, (unsigned long)offsetof(struct s, f))
#define S(s) printf("sizeof(%s) %lu\n", #s, (unsigned long)sizeof(struct s))

int main(void)
{
	C(MLX5_RCV_DBR); C(MLX5_SND_DBR);
	C(MLX5_OPCODE_NOP); C(MLX5_OPCODE_SEND_INVAL); C(MLX5_OPCODE_RDMA_WRITE);
	C(MLX5_OPCODE_RDMA_WRITE_IMM); C(MLX5_OPCODE_SEND); C(MLX5_OPCODE_SEND_IMM);
	C(MLX5_OPCODE_RDMA_READ); C(MLX5_OPCODE_ATOMIC_CS); C(MLX5_OPCODE_ATOMIC_FA);
	C(MLX5_INLINE_SCATTER_32);
	C(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR); C(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	C(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR); C(MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	C(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR); C(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	C(MLX5_CQE_SYNDROME_REMOTE_OP_ERR); C(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	C(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	C(MLX5_CQE_OWNER_MASK); C(MLX5_CQE_REQ); C(MLX5_CQE_RESP_WR_IMM); C(MLX5_CQE_RESP_SEND);
	C(MLX5_CQE_RESP_SEND_IMM); C(MLX5_CQE_RESP_SEND_INV); C(MLX5_CQE_REQ_ERR);
	C(MLX5_CQE_RESP_ERR); C(MLX5_CQE_INVALID);
	C(MLX5_CQ_DOORBELL); C(MLX5_CQ_DB_REQ_NOT_SOL);
	C(MLX5_INVALID_LKEY); C(MLX5_EXTENDED_UD_AV);
	C(MLX5_WQE_CTRL_CQ_UPDATE); C(MLX5_WQE_CTRL_SOLICITED); C(MLX5_WQE_CTRL_FENCE);
	C(MLX5_SEND_WQE_BB); C(MLX5_INLINE_SEG);

	S(mlx5_wqe_ctrl_seg);
	O(mlx5_wqe_ctrl_seg, opmod_idx_opcode); O(mlx5_wqe_ctrl_seg, qpn_ds);
	O(mlx5_wqe_ctrl_seg, fm_ce_se); O(mlx5_wqe_ctrl_seg, imm);
	S(mlx5_wqe_data_seg);
	O(mlx5_wqe_data_seg, byte_count); O(mlx5_wqe_data_seg, lkey); O(mlx5_wqe_data_seg, addr);
	S(mlx5_wqe_raddr_seg);
	O(mlx5_wqe_raddr_seg, raddr); O(mlx5_wqe_raddr_seg, rkey);
	S(mlx5_wqe_atomic_seg);
	O(mlx5_wqe_atomic_seg, swap_add); O(mlx5_wqe_atomic_seg, compare);
	S(mlx5_wqe_av);
	O(mlx5_wqe_av, key.qkey.qkey); O(mlx5_wqe_av, dqp_dct); O(mlx5_wqe_av, stat_rate_sl);
	O(mlx5_wqe_av, tclass); O(mlx5_wqe_av, hop_limit); O(mlx5_wqe_av, grh_gid_fl);
	O(mlx5_wqe_av, rgid);
	S(mlx5_wqe_srq_next_seg);
	O(mlx5_wqe_srq_next_seg, next_wqe_index);
	S(mlx5_cqe64);
	O(mlx5_cqe64, slid); O(mlx5_cqe64, flags_rqpn); O(mlx5_cqe64, srqn_uidx);
	O(mlx5_cqe64, imm_inval_pkey); O(mlx5_cqe64, byte_cnt); O(mlx5_cqe64, sop_drop_qpn);
	O(mlx5_cqe64, wqe_counter); O(mlx5_cqe64, signature); O(mlx5_cqe64, op_own);
	S(mlx5_err_cqe);
	O(mlx5_err_cqe, srqn); O(mlx5_err_cqe, vendor_err_synd); O(mlx5_err_cqe, syndrome);
	O(mlx5_err_cqe, s_wqe_opcode_qpn); O(mlx5_err_cqe, wqe_counter); O(mlx5_err_cqe, op_own);
	return 0;
}

/*
 * Golden-vector generator for goverbs' mlx5 data path. Built and run only by `go generate` (see ../main.go).
 *
 * Every WQE is assembled with rdma-core's public mlx5dv.h helpers (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg,
 * mlx5dv_set_dgram_seg) and segment structs; every CQE is filled through struct mlx5_cqe64 / struct
 * mlx5_err_cqe. The output is one "name hex" line per vector. The inputs mirror the case tables in
 * providers/mlx5/golden_test.go by name.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <rdma/mlx5-abi.h>

#define RING_BBS 8
#define QPN 0xabc123u
#define CQN 0x000456u

static uint8_t ring[RING_BBS * MLX5_SEND_WQE_BB];
static uint32_t cur_post;
static uint8_t payload[256];

static void emit(const char *kind, const char *name, const void *p, size_t n)
{
	const uint8_t *b = p;
	printf("%s.%s ", kind, name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

static void *bb(uint32_t idx) { return ring + (idx & (RING_BBS - 1)) * MLX5_SEND_WQE_BB; }
static uint8_t *qend(void) { return ring + sizeof(ring); }

/* One send work request, as the Go test describes it. */
struct sge { uint32_t len, lkey; uint64_t addr; };
struct wqe_in {
	uint8_t opcode;       /* MLX5_OPCODE_* */
	uint8_t fm_ce_se;
	uint32_t imm;         /* host order */
	int raddr;            /* 1: remote address segment */
	uint64_t remote_addr;
	uint32_t rkey;
	int atomic;           /* 1: atomic segment */
	uint64_t swap_add, compare;
	int ud;               /* 1: datagram segment */
	struct mlx5_wqe_av av;
	uint32_t rqpn, qkey;
	int inl;              /* 1: inline from payload[] */
	int nsge;
	struct sge sg[4];
};

/* Build one WQE at cur_post; returns ds. */
static int build(const struct wqe_in *in)
{
	uint8_t *ctrl = bb(cur_post);
	uint8_t *seg = ctrl + sizeof(struct mlx5_wqe_ctrl_seg);
	int ds = 1;

	if (in->raddr) {
		struct mlx5_wqe_raddr_seg *r = (void *)seg;
		r->raddr = htobe64(in->remote_addr);
		r->rkey = htobe32(in->rkey);
		r->reserved = 0;
		seg += sizeof(*r);
		ds++;
	}
	if (in->atomic) {
		struct mlx5_wqe_atomic_seg *a = (void *)seg;
		a->swap_add = htobe64(in->swap_add);
		a->compare = htobe64(in->compare);
		seg += sizeof(*a);
		ds++;
	}
	if (in->ud) {
		uint8_t rmac[6], rgid[16];
		memcpy(rmac, in->av.rmac, 6);
		memcpy(rgid, in->av.rgid, 16);
		mlx5dv_set_dgram_seg((struct mlx5_wqe_datagram_seg *)seg, (uint64_t)in->qkey << 32, in->rqpn, 1,
				     in->av.stat_rate_sl, in->av.fl_mlid, be16toh(in->av.rlid), rmac, in->av.tclass,
				     in->av.hop_limit, be32toh(in->av.grh_gid_fl), rgid);
		seg += sizeof(struct mlx5_wqe_datagram_seg);
		ds += sizeof(struct mlx5_wqe_datagram_seg) / 16;
		if (seg == qend())
			seg = ring;
	}
	if (in->inl) {
		struct mlx5_wqe_inl_data_seg *h = (void *)seg;
		uint8_t *d = seg + sizeof(*h);
		uint32_t total = 0;
		for (int i = 0; i < in->nsge; i++) {
			const uint8_t *src = payload + in->sg[i].addr; /* addr = offset into payload */
			uint32_t n = in->sg[i].len;
			total += n;
			if (d + n > qend()) {
				size_t c = qend() - d;
				memcpy(d, src, c);
				src += c;
				n -= c;
				d = ring;
			}
			memcpy(d, src, n);
			d += n;
		}
		if (total) {
			h->byte_count = htobe32(total | MLX5_INLINE_SEG);
			ds += (total + sizeof(*h) + 15) / 16;
		}
	} else {
		for (int i = 0; i < in->nsge; i++) {
			if (seg == qend())
				seg = ring;
			if (!in->sg[i].len)
				continue;
			mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)seg, in->atomic ? 8 : in->sg[i].len,
					    in->sg[i].lkey, in->sg[i].addr);
			seg += sizeof(struct mlx5_wqe_data_seg);
			ds++;
		}
	}
	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)ctrl, cur_post & 0xffff, in->opcode, 0, QPN, in->fm_ce_se, ds, 0,
			    htobe32(in->imm));
	cur_post += (ds * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
	return ds;
}

static void start(uint32_t cp)
{
	memset(ring, 0, sizeof(ring));
	cur_post = cp;
}

static void finish(const char *name)
{
	__be32 dbr = htobe32(cur_post & 0xffff);
	emit("wqe", name, ring, sizeof(ring));
	emit("sqdbr", name, &dbr, sizeof(dbr));
}

static const struct sge S1 = { 0x1000, 0x11223344, 0x00007f0011223340ull };
static const struct sge S2 = { 0x40, 0x55667788, 0x00007f00aabbcc00ull };
static const struct sge S3 = { 0x8, 0x99aabbcc, 0x00007f0000001000ull };
static const struct sge S0 = { 0, 0xdeadbeef, 0x00007f00deadbe00ull };

static void av_ib(struct mlx5_wqe_av *av)
{
	memset(av, 0, sizeof(*av));
	/* IB: fl_mlid = src_path_bits, rlid = dlid, rate 10 Gbps (ibv 3 -> 8) << 4 | sl 5 */
	av->fl_mlid = 0x03;
	av->rlid = htobe16(0x0017);
	av->stat_rate_sl = (8 << 4) | 5;
}

static void av_roce(struct mlx5_wqe_av *av)
{
	static const uint8_t mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
	static const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 233, 0, 2 };
	uint32_t fl = 0x12345;
	uint32_t lo = fl & 0x3fff, hi = fl & 0xfc000;

	memset(av, 0, sizeof(*av));
	lo ^= hi >> 14;
	av->rlid = htobe16((uint16_t)(lo | 0xC000));           /* RoCE v2 UDP source port from the flow label */
	av->stat_rate_sl = (0 << 4) | ((3 & 7) << 1);          /* unlimited rate, SL 3 */
	av->tclass = 0x20;
	av->hop_limit = 64;
	av->grh_gid_fl = htobe32((0u << 30) | (1u << 20) | fl); /* GRH bit 0 on RoCE, sgid index 1 */
	memcpy(av->rmac, mac, 6);
	memcpy(av->rgid, gid, 16);
}

static void wqes(void)
{
	struct wqe_in w;

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .nsge = 1, .sg = { S1 } };
	build(&w);
	finish("rc_send");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND_IMM, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED,
			     .imm = 0xdeadbeef, .nsge = 1, .sg = { S2 } };
	build(&w);
	finish("rc_send_imm_solicited");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND_INVAL, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .imm = 0x00c0ffee,
			     .nsge = 1, .sg = { S1 } };
	build(&w);
	finish("rc_send_inv");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = 0, .nsge = 3, .sg = { S1, S0, S2 } };
	build(&w);
	finish("rc_send_zero_len_sge_unsignaled");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_RDMA_WRITE, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE,
			     .raddr = 1, .remote_addr = 0x0000123456789a00ull, .rkey = 0x0badf00d, .nsge = 2, .sg = { S1, S2 } };
	build(&w);
	finish("rc_rdma_write_fence");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_RDMA_WRITE_IMM, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .imm = 0x01020304,
			     .raddr = 1, .remote_addr = 0x0000123456789a00ull, .rkey = 0x0badf00d, .nsge = 1, .sg = { S1 } };
	build(&w);
	finish("rc_rdma_write_imm");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_RDMA_READ, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .raddr = 1,
			     .remote_addr = 0x0000123456789a00ull, .rkey = 0x0badf00d, .nsge = 1, .sg = { S1 } };
	build(&w);
	finish("rc_rdma_read");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_ATOMIC_CS, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .raddr = 1,
			     .remote_addr = 0x0000123456789a08ull, .rkey = 0x0badf00d, .atomic = 1,
			     .swap_add = 0x1111111122222222ull, .compare = 0x3333333344444444ull, .nsge = 1, .sg = { S3 } };
	build(&w);
	finish("rc_atomic_cmp_swap");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_ATOMIC_FA, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .raddr = 1,
			     .remote_addr = 0x0000123456789a08ull, .rkey = 0x0badf00d, .atomic = 1,
			     .swap_add = 0x0000000000000005ull, .compare = 0, .nsge = 1, .sg = { S1 } };
	build(&w);
	finish("rc_atomic_fetch_add");

	/* Inline: 20 bytes from two SGEs (addr = offset into the payload pattern). */
	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .inl = 1, .nsge = 2,
			     .sg = { { 12, 0, 0 }, { 8, 0, 100 } } };
	build(&w);
	finish("rc_send_inline");

	/* Inline of 100 bytes starting in the last basic block, with a 16-bit index wrap (cur_post 0x1ffff). */
	start(0x1ffff);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .inl = 1, .nsge = 1,
			     .sg = { { 100, 0, 7 } } };
	build(&w);
	finish("rc_send_inline_wrap");

	/* RDMA write with four data segments starting in the last basic block: two wrap to the start. */
	start(7);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_RDMA_WRITE, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .raddr = 1,
			     .remote_addr = 0x0000123456789a00ull, .rkey = 0x0badf00d, .nsge = 4, .sg = { S1, S2, S3, S1 } };
	build(&w);
	finish("rc_rdma_write_data_wrap");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_RDMA_WRITE, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .raddr = 1,
			     .remote_addr = 0x0000000000001000ull, .rkey = 0x00000042, .nsge = 1, .sg = { S2 } };
	build(&w);
	finish("uc_rdma_write");

	/* Two WQEs in one post: unsignaled send then signaled send. */
	start(3);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = 0, .nsge = 1, .sg = { S1 } };
	build(&w);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .nsge = 1, .sg = { S2 } };
	build(&w);
	finish("rc_send_batch");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .ud = 1, .rqpn = 0x000001,
			     .qkey = 0x11111111, .nsge = 1, .sg = { S2 } };
	av_ib(&w.av);
	build(&w);
	finish("ud_send_ib");

	start(0);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND_IMM, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .imm = 0xfeedface,
			     .ud = 1, .rqpn = 0x00beef, .qkey = 0x80010000, .inl = 1, .nsge = 1, .sg = { { 30, 0, 40 } } };
	av_roce(&w.av);
	build(&w);
	finish("ud_send_roce_inline_imm");

	/* UD starting in the last block: ctrl + datagram fill it exactly, the data segment wraps to the start. */
	start(7);
	w = (struct wqe_in){ .opcode = MLX5_OPCODE_SEND, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE, .ud = 1, .rqpn = 0x000001,
			     .qkey = 0x11111111, .nsge = 1, .sg = { S1 } };
	av_roce(&w.av);
	build(&w);
	finish("ud_send_wrap");
}

/* Receive WQEs: a 64-byte stride (4 data segments). */
static void recvs(void)
{
	uint8_t rq[2 * 64];
	struct mlx5_wqe_data_seg *d;

	memset(rq, 0, sizeof(rq));
	d = (void *)rq;
	mlx5dv_set_data_seg(&d[0], S1.len, S1.lkey, S1.addr);
	mlx5dv_set_data_seg(&d[1], S2.len, S2.lkey, S2.addr);
	mlx5dv_set_data_seg(&d[2], 0, MLX5_INVALID_LKEY, 0); /* terminator */
	d = (void *)(rq + 64);
	mlx5dv_set_data_seg(&d[0], S3.len, S3.lkey, S3.addr); /* zero-length SGE skipped before it */
	mlx5dv_set_data_seg(&d[1], 0, MLX5_INVALID_LKEY, 0);
	emit("rq", "two_wqes", rq, sizeof(rq));

	/* SRQ: 4 WQEs of 64 bytes (next segment + 3 data segments), after posting one WR with two SGEs. */
	uint8_t srq[4 * 64];
	memset(srq, 0, sizeof(srq));
	for (int i = 0; i < 3; i++) {
		struct mlx5_wqe_srq_next_seg *n = (void *)(srq + i * 64);
		n->next_wqe_index = htobe16(i + 1);
	}
	d = (void *)(srq + sizeof(struct mlx5_wqe_srq_next_seg));
	mlx5dv_set_data_seg(&d[0], S1.len, S1.lkey, S1.addr);
	mlx5dv_set_data_seg(&d[1], S2.len, S2.lkey, S2.addr);
	mlx5dv_set_data_seg(&d[2], 0, MLX5_INVALID_LKEY, 0);
	emit("srq", "one_wqe", srq, sizeof(srq));
	__be32 db = htobe32(1);
	emit("srqdbr", "one_wqe", &db, sizeof(db));
}

struct cqe_in {
	uint8_t opcode;     /* MLX5_CQE_* */
	uint8_t wqe_opcode; /* requester: MLX5_OPCODE_* */
	uint16_t wqe_counter;
	uint32_t byte_cnt, uidx, imm_inval_pkey, flags_rqpn;
	uint16_t slid;
	uint8_t ml_path;
	uint8_t scatter;    /* bytes of payload in the CQE (MLX5_INLINE_SCATTER_32) */
};

static void cqe(const char *name, const struct cqe_in *in)
{
	struct mlx5_cqe64 c;

	memset(&c, 0, sizeof(c));
	c.wqe_counter = htobe16(in->wqe_counter);
	c.byte_cnt = htobe32(in->byte_cnt);
	c.srqn_uidx = htobe32(in->uidx);
	c.imm_inval_pkey = htobe32(in->imm_inval_pkey);
	c.flags_rqpn = htobe32(in->flags_rqpn);
	c.slid = htobe16(in->slid);
	c.ml_path = in->ml_path;
	c.sop_drop_qpn = htobe32((uint32_t)in->wqe_opcode << 24 | QPN);
	c.op_own = in->opcode << 4 | (in->scatter ? MLX5_INLINE_SCATTER_32 : 0);
	/* A scattered payload occupies the start of the CQE, over the fields that share those bytes. */
	if (in->scatter)
		memcpy(&c, payload, in->scatter);
	emit("cqe", name, &c, sizeof(c));
}

static void err_cqe(const char *name, uint8_t opcode, uint8_t syndrome, uint8_t vendor, uint16_t counter)
{
	struct mlx5_err_cqe c;

	memset(&c, 0, sizeof(c));
	c.srqn = htobe32(7);
	c.vendor_err_synd = vendor;
	c.syndrome = syndrome;
	c.s_wqe_opcode_qpn = htobe32((uint32_t)MLX5_OPCODE_SEND << 24 | QPN);
	c.wqe_counter = htobe16(counter);
	c.op_own = opcode << 4;
	emit("cqe", name, &c, sizeof(c));
}

static void cqes(void)
{
	struct cqe_in c;

	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_SEND, .wqe_counter = 0, .uidx = 7 };
	cqe("req_send", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_RDMA_WRITE_IMM, .wqe_counter = 0, .uidx = 7 };
	cqe("req_rdma_write_imm", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_RDMA_READ, .wqe_counter = 0, .uidx = 7,
			     .byte_cnt = 4096 };
	cqe("req_rdma_read", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_ATOMIC_CS, .wqe_counter = 0, .uidx = 7,
			     .byte_cnt = 8 };
	cqe("req_atomic_cs", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_ATOMIC_FA, .wqe_counter = 0, .uidx = 7,
			     .byte_cnt = 8 };
	cqe("req_atomic_fa", &c);
	/* The signaled WQE at index 2 retires the unsignaled ones at 0 and 1. */
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_SEND, .wqe_counter = 2, .uidx = 7 };
	cqe("req_send_retires_unsignaled", &c);
	/* RDMA read of 24 bytes scattered into the CQE. */
	c = (struct cqe_in){ .opcode = MLX5_CQE_REQ, .wqe_opcode = MLX5_OPCODE_RDMA_READ, .wqe_counter = 0, .uidx = 7,
			     .byte_cnt = 24, .scatter = 24 };
	cqe("req_rdma_read_scatter", &c);

	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_SEND, .wqe_counter = 0, .uidx = 7, .byte_cnt = 100,
			     .flags_rqpn = 5u << 24 | 0x000abc, .slid = 0x0017, .ml_path = 0x83, .imm_inval_pkey = 3 };
	cqe("resp_send", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_SEND_IMM, .wqe_counter = 0, .uidx = 7, .byte_cnt = 4,
			     .imm_inval_pkey = 0x01020304, .flags_rqpn = 0x000001 };
	cqe("resp_send_imm", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_WR_IMM, .wqe_counter = 0, .uidx = 7, .byte_cnt = 65536,
			     .imm_inval_pkey = 0xcafef00d };
	cqe("resp_rdma_write_imm", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_SEND_INV, .wqe_counter = 0, .uidx = 7, .byte_cnt = 10,
			     .imm_inval_pkey = 0xabcd1234 };
	cqe("resp_send_inv", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_SEND, .wqe_counter = 0, .uidx = 7, .byte_cnt = 140,
			     .flags_rqpn = 1u << 28 | 0u << 24 | 0x00beef };
	cqe("resp_send_grh", &c);
	c = (struct cqe_in){ .opcode = MLX5_CQE_RESP_SEND, .wqe_counter = 0, .uidx = 7, .byte_cnt = 24, .scatter = 24 };
	cqe("resp_send_scatter", &c);

	static const struct { const char *name; uint8_t syn; } syn[] = {
		{ "local_length", MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR },
		{ "local_qp_op", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
		{ "local_prot", MLX5_CQE_SYNDROME_LOCAL_PROT_ERR },
		{ "wr_flush", MLX5_CQE_SYNDROME_WR_FLUSH_ERR },
		{ "mw_bind", MLX5_CQE_SYNDROME_MW_BIND_ERR },
		{ "bad_resp", MLX5_CQE_SYNDROME_BAD_RESP_ERR },
		{ "local_access", MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR },
		{ "remote_inval_req", MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR },
		{ "remote_access", MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ "remote_op", MLX5_CQE_SYNDROME_REMOTE_OP_ERR },
		{ "transport_retry_exc", MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR },
		{ "rnr_retry_exc", MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR },
		{ "remote_aborted", MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR },
		{ "unknown", 0x99 },
	};
	char name[64];
	for (size_t i = 0; i < sizeof(syn) / sizeof(syn[0]); i++) {
		snprintf(name, sizeof(name), "req_err_%s", syn[i].name);
		err_cqe(name, MLX5_CQE_REQ_ERR, syn[i].syn, 0x42, 0);
	}
	err_cqe("resp_err_wr_flush", MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0x00, 0);
}

/* CQ arm: doorbell record word and the 8 bytes of the MMIO write at MLX5_CQ_DOORBELL. */
static void arm(const char *name, uint32_t arm_sn, uint32_t cons_index, int solicited)
{
	uint32_t sn = arm_sn & 3, ci = cons_index & 0xffffff;
	uint32_t cmd = solicited ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
	uint64_t doorbell = ((uint64_t)(sn << 28 | cmd | ci) << 32) | CQN;
	__be32 rec = htobe32(sn << 28 | cmd | ci);
	__be64 reg = htobe64(doorbell);

	emit("armdbr", name, &rec, sizeof(rec));
	emit("armreg", name, &reg, sizeof(reg));
}

/* Driver command payloads (host-endian), filled through the 6.1 uAPI structs. */
static void udata(void)
{
	struct mlx5_ib_alloc_ucontext_req_v2 req = {
		.total_num_bfregs = 16, .num_low_latency_bfregs = 4, .flags = MLX5_IB_ALLOC_UCTX_DEVX,
		.max_cqe_version = 1, .lib_caps = MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR,
	};
	emit("udata", "alloc_ucontext_req", &req, sizeof(req));

	struct mlx5_ib_alloc_ucontext_resp resp = {
		.qp_tab_size = 1 << 18, .bf_reg_size = 512, .tot_bfregs = 0, .cache_line_size = 64,
		.max_sq_desc_sz = 512, .max_rq_desc_sz = 512, .max_send_wqebb = 32768, .max_recv_wr = 32768,
		.max_srq_recv_wr = 32767, .num_ports = 1, .flow_action_flags = 0, .comp_mask = 7,
		.response_length = sizeof(resp), .cqe_version = 1, .cmds_supp_uhw = 3, .eth_min_inline = 1,
		.clock_info_versions = 1, .hca_core_clock_offset = 0x1234, .log_uar_size = 12, .num_uars_per_page = 1,
		.num_dyn_bfregs = 256, .dump_fill_mkey = 0x77,
	};
	emit("udata", "alloc_ucontext_resp", &resp, sizeof(resp));

	struct mlx5_ib_create_cq cq = {
		.buf_addr = 0x7f0000100000ull, .db_addr = 0x7f0000200040ull, .cqe_size = 64,
		.flags = MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX, .uar_page_index = 0x1234,
	};
	emit("udata", "create_cq", &cq, sizeof(cq));

	struct mlx5_ib_resize_cq rcq = { .buf_addr = 0x7f0000300000ull, .cqe_size = 64 };
	emit("udata", "resize_cq", &rcq, sizeof(rcq));

	struct mlx5_ib_create_qp qp = {
		.buf_addr = 0x7f0000400000ull, .db_addr = 0x7f0000200080ull, .sq_wqe_count = 256, .rq_wqe_count = 128,
		.rq_wqe_shift = 4, .flags = MLX5_QP_FLAG_SCATTER_CQE | MLX5_QP_FLAG_UAR_PAGE_INDEX, .uidx = 7,
		.bfreg_index = 0x10001, .ece_options = 0x10000000,
	};
	emit("udata", "create_qp", &qp, sizeof(qp));

	struct mlx5_ib_create_qp_resp qpr = {
		.bfreg_index = 5, .ece_options = 0x10000001, .comp_mask = 15, .tirn = 1, .tisn = 2, .rqn = 3, .sqn = 4,
		.tir_icm_addr = 0x1122334455667788ull,
	};
	emit("udata", "create_qp_resp", &qpr, sizeof(qpr));

	struct mlx5_ib_create_srq srq = {
		.buf_addr = 0x7f0000500000ull, .db_addr = 0x7f00002000c0ull, .flags = 0, .uidx = 9,
	};
	emit("udata", "create_srq", &srq, sizeof(srq));

	struct mlx5_ib_create_ah_resp ah = { .response_length = 16, .dmac = { 2, 0x11, 0x22, 0x33, 0x44, 0x55 } };
	emit("udata", "create_ah_resp", &ah, sizeof(ah));
}

int main(void)
{
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	wqes();
	recvs();
	cqes();
	arm("first", 0, 0, 0);
	arm("solicited_after_polls", 1, 5, 1);
	arm("sn_wraps_ci_masked", 6, 0x1234567, 0);
	udata();
	return 0;
}

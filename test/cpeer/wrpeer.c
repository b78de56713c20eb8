// wrpeer is rdma-core's side of the extended-verbs interop test (cmd/goverbs/internal/interop
// TestLabAtomicWriteFlushPeers): libibverbs' extended work-request API (ibv_wr_atomic_write, ibv_wr_flush,
// ibv_wr_rdma_write, ibv_wr_send_imm) and extended CQ (ibv_create_cq_ex, ibv_start_poll / ibv_next_poll /
// ibv_end_poll and the ibv_wc_read_* fields) as the requester, or as the responder whose memory goverbs writes
// and flushes and which receives goverbs' SEND. It is a test-only harness, compiled in the lab by the test
// (test/labtest.BuildCPeer); nothing of it is in goverbs.
//
//   wrpeer -d DEV -g GIDX -r requester|responder [-p PORT] [-b]
//
// It listens on PORT for the Go side's TCP connection and exchanges a connection record (cpeer.h, magic
// "GVWR"; the responder's buffer and rkey; the requester's W[0..1] carry the 64-bit value it writes). Both
// sides say "ready" over TCP once their QP is in RTS (the responder has posted a receive by then), before any
// request flows. The requester, in one ibv_wr_start/ibv_wr_complete batch, writes the value with ATOMIC WRITE
// at the responder's offset 64, RDMA WRITEs the 16 bytes "flushed payload!" at offset 4096, FLUSHes that range
// (global visibility) and SENDs the 16 bytes "immediate hello!" with immediate data 0x600d; it checks the four
// completions (wr_id 1..4, opcodes ATOMIC_WRITE, RDMA_WRITE, FLUSH, SEND) and tells the Go side over TCP. The
// responder registers 8 KiB with FLUSH_GLOBAL access, waits for the Go side's word over TCP that it is done,
// polls its receive (status, opcode RECV, byte_len, imm_data, wc_flags WITH_IMM, qp_num) and prints what its
// memory holds. Both poll their extended CQ (IBV_WC_STANDARD_FLAGS) with ibv_start_poll. With -b (basic, for
// devices without ATOMIC WRITE and FLUSH: rxe before Linux 6.2) the chain is the RDMA WRITE and the SEND only
// and the responder's memory has no flush access. Exit status 0 when every step succeeded.
//
// libibverbs declares ibv_wr_flush from rdma-core 47 on, and the host's headers may be older (bookworm's 44):
// the declarations it needs from 47's verbs.h are repeated below when missing. struct ibv_qp_ex grew wr_flush
// directly after wr_atomic_write, its last member in 44, so the layout below is 47's. The program runs against
// the libibverbs of the root it runs in (trixie's 56, sid's 65), which sets wr_flush.
#include "cpeer.h"
#include <stddef.h>

#define MAGIC 0x52575647u /* "GVWR" */

#ifndef IBV_ACCESS_FLUSH_GLOBAL
#define IBV_ACCESS_FLUSH_GLOBAL (1 << 8)
#endif
#define QP_EX_WITH_FLUSH (1 << 11)
#define WC_FLUSH 8
#define FLUSH_GLOBAL 1
#define FLUSH_RANGE 0

struct qp_ex_47 {
	struct ibv_qp_ex ex;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level);
};

// poll_ex waits for n completions of the extended CQ with one ibv_start_poll ... ibv_end_poll per batch and
// checks each against wr_id ids[i], success and opcode want[i]; for a receive it also checks byte_len, the
// immediate data and its flag, and the QP number.
static void poll_ex(struct ibv_cq_ex *cq, int n, const uint64_t *ids, const int *want, uint32_t qpn)
{
	struct ibv_poll_cq_attr attr = {};
	for (int got = 0; got < n;) {
		int ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			continue;
		if (ret)
			die("ibv_start_poll failed");
		do {
			if (cq->status != IBV_WC_SUCCESS || cq->wr_id != ids[got] ||
			    (int)ibv_wc_read_opcode(cq) != want[got]) {
				fprintf(stderr, "wrpeer: completion %d: wr_id %llu status %s opcode %d, want %llu, success, %d\n",
					got, (unsigned long long)cq->wr_id, ibv_wc_status_str(cq->status),
					ibv_wc_read_opcode(cq), (unsigned long long)ids[got], want[got]);
				exit(1);
			}
			if (want[got] == IBV_WC_RECV &&
			    (ibv_wc_read_byte_len(cq) != 16 || !(ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM) ||
			     ntohl(ibv_wc_read_imm_data(cq)) != 0x600d || ibv_wc_read_qp_num(cq) != qpn)) {
				fprintf(stderr, "wrpeer: receive: byte_len %u flags %#x imm %#x qp_num %#x\n",
					ibv_wc_read_byte_len(cq), ibv_wc_read_wc_flags(cq),
					ntohl(ibv_wc_read_imm_data(cq)), ibv_wc_read_qp_num(cq));
				exit(1);
			}
			got++;
		} while (got < n && (ret = ibv_next_poll(cq)) == 0);
		if (ret && ret != ENOENT)
			die("ibv_next_poll failed");
		ibv_end_poll(cq);
	}
}

int main(int argc, char **argv)
{
	prog = "wrpeer";
	const char *dev = NULL, *port = "18515", *role = NULL;
	int gidx = 1, opt, basic = 0;
	while ((opt = getopt(argc, argv, "d:g:r:p:b")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'r': role = optarg; break;
		case 'p': port = optarg; break;
		case 'b': basic = 1; break;
		default: die("usage: wrpeer -d DEV -g GIDX -r requester|responder [-p PORT] [-b]");
		}
	}
	if (!dev || !role || (strcmp(role, "requester") && strcmp(role, "responder")))
		die("usage: wrpeer -d DEV -g GIDX -r requester|responder [-p PORT] [-b]");
	int requester = !strcmp(role, "requester");
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct ibv_device **list;
	struct ibv_context *ctx = open_device(dev, &list);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		die_errno("ibv_alloc_pd");
	uint8_t *buf;
	const size_t len = 8192;
	if (posix_memalign((void **)&buf, 4096, len))
		die("out of memory");
	memset(buf, 0, len);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (!requester)
		access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | (basic ? 0 : IBV_ACCESS_FLUSH_GLOBAL);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);
	if (!mr)
		die_errno("ibv_reg_mr");
	struct ibv_cq_init_attr_ex cqa = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS};
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &cqa);
	if (!cqx)
		die_errno("ibv_create_cq_ex");
	struct ibv_cq *cq = ibv_cq_ex_to_cq(cqx);
	struct ibv_qp_init_attr_ex qia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.comp_mask = IBV_QP_INIT_ATTR_PD};
	if (requester) {
		qia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM;
		if (!basic)
			qia.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE | QP_EX_WITH_FLUSH;
	}
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qia);
	if (!qp)
		die_errno("ibv_create_qp_ex");

	struct record me = {.magic = MAGIC, .qpn = qp->qp_num, .psn = (uint32_t)(getpid() * 7919) & 0xffffff,
		.addr = (uintptr_t)buf, .rkey = mr->rkey}, them;
	my_gid(ctx, gidx, &me);
	int fd = tcp_accept(port);
	exchange(fd, &me, &them);
	rc_connect(qp, gidx, me.psn, &them, access, 14);
	if (!requester) { // after RESET: rxe refuses a receive posted there
		struct ibv_sge sge = {.addr = (uintptr_t)buf + 6144, .length = 64, .lkey = mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 5, .sg_list = &sge, .num_sge = 1}, *bad;
		if ((errno = ibv_post_recv(qp, &rwr, &bad)))
			die_errno("ibv_post_recv");
	}
	// Both QPs are ready before any request flows: a request that reaches a responder QP still on its way
	// to RTR is refused (REM_ACCESS_ERR for an ATOMIC WRITE, seen in the lab).
	uint8_t ready[8];
	full_write(fd, "ready\0\0\0", 8);
	full_read(fd, ready, 8);

	uint8_t done[8];
	if (requester) {
		struct qp_ex_47 *qpx = (struct qp_ex_47 *)ibv_qp_to_qp_ex(qp);
		if (!qpx || (!basic && !qpx->wr_flush))
			die("this libibverbs does not offer ibv_wr_flush (rdma-core 47 or newer does)");
		uint64_t value = (uint64_t)them.w[1] << 32 | them.w[0];
		memcpy(buf, "flushed payload!", 16);
		memcpy(buf + 256, "immediate hello!", 16);
		ibv_wr_start(&qpx->ex);
		if (!basic) {
			qpx->ex.wr_id = 1;
			qpx->ex.wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(&qpx->ex, them.rkey, them.addr + 64, &value);
		}
		qpx->ex.wr_id = 2;
		qpx->ex.wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(&qpx->ex, them.rkey, them.addr + 4096);
		ibv_wr_set_sge(&qpx->ex, mr->lkey, (uintptr_t)buf, 16);
		if (!basic) {
			qpx->ex.wr_id = 3;
			qpx->ex.wr_flags = IBV_SEND_SIGNALED;
			qpx->wr_flush(&qpx->ex, them.rkey, them.addr + 4096, 16, FLUSH_GLOBAL, FLUSH_RANGE);
		}
		qpx->ex.wr_id = 4;
		qpx->ex.wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(&qpx->ex, htonl(0x600d));
		ibv_wr_set_sge(&qpx->ex, mr->lkey, (uintptr_t)buf + 256, 16);
		if ((errno = ibv_wr_complete(&qpx->ex)))
			die_errno("ibv_wr_complete");
		if (basic) {
			const uint64_t ids[] = {2, 4};
			const int want[] = {IBV_WC_RDMA_WRITE, IBV_WC_SEND};
			poll_ex(cqx, 2, ids, want, qp->qp_num);
		} else {
			const uint64_t ids[] = {1, 2, 3, 4};
			const int want[] = {IBV_WC_ATOMIC_WRITE, IBV_WC_RDMA_WRITE, WC_FLUSH, IBV_WC_SEND};
			poll_ex(cqx, 4, ids, want, qp->qp_num);
		}
		full_write(fd, "done\0\0\0\0", 8);
		if (basic)
			printf("wrpeer: requester: RDMA WRITE and SEND with immediate completed\n");
		else
			printf("wrpeer: requester: ATOMIC WRITE %#018llx, RDMA WRITE, FLUSH and SEND with immediate completed\n",
			       (unsigned long long)value);
	} else {
		full_read(fd, done, 8);
		const uint64_t ids[] = {5};
		const int want[] = {IBV_WC_RECV};
		poll_ex(cqx, 1, ids, want, qp->qp_num);
		if (basic)
			printf("wrpeer: responder: bytes %.16s, received %.16s with immediate 0x600d\n",
			       (const char *)buf + 4096, (const char *)buf + 6144);
		else
			printf("wrpeer: responder: word %#018llx, bytes %.16s, received %.16s with immediate 0x600d\n",
			       (unsigned long long)get64(buf + 64), (const char *)buf + 4096, (const char *)buf + 6144);
	}
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}

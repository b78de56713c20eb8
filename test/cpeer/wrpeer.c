// wrpeer is rdma-core's side of the RDMA ATOMIC WRITE and RDMA FLUSH interop test (test/interop
// TestLabAtomicWriteFlushPeers): through libibverbs' extended work-request API (ibv_wr_atomic_write,
// ibv_wr_flush) as the requester, or as the responder whose memory goverbs writes and flushes. It is a test-only
// harness, compiled in the lab by the test (test/labtest.BuildCPeer); nothing of it is in goverbs.
//
//   wrpeer -d DEV -g GIDX -r requester|responder [-p PORT]
//
// It listens on PORT for the Go side's TCP connection and exchanges a connection record (cpeer.h, magic
// "GVWR"; the responder's buffer and rkey; the requester's W[0..1] carry the 64-bit value it writes). Both
// sides say "ready" over TCP once their QP is in RTS, before any request flows. The requester, in one
// ibv_wr_start/ibv_wr_complete batch, writes the value with ATOMIC WRITE at the responder's offset 64, RDMA
// WRITEs the 16 bytes "flushed payload!" at offset 4096 and FLUSHes that range (global visibility), checks the
// three completions (opcodes ATOMIC_WRITE, RDMA_WRITE, FLUSH) and tells the Go side over TCP. The responder
// registers 8 KiB with FLUSH_GLOBAL access, waits for the Go side's word over TCP that it is done, and prints
// what its memory holds. Exit status 0 when every step succeeded.
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

static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int n = 0; n == 0;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			die("ibv_poll_cq failed");
	}
	check_wc(wc, "work");
}

int main(int argc, char **argv)
{
	prog = "wrpeer";
	const char *dev = NULL, *port = "18515", *role = NULL;
	int gidx = 1, opt;
	while ((opt = getopt(argc, argv, "d:g:r:p:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'r': role = optarg; break;
		case 'p': port = optarg; break;
		default: die("usage: wrpeer -d DEV -g GIDX -r requester|responder [-p PORT]");
		}
	}
	if (!dev || !role || (strcmp(role, "requester") && strcmp(role, "responder")))
		die("usage: wrpeer -d DEV -g GIDX -r requester|responder [-p PORT]");
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
		access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_FLUSH_GLOBAL;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);
	if (!mr)
		die_errno("ibv_reg_mr");
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		die_errno("ibv_create_cq");
	struct ibv_qp_init_attr_ex qia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.comp_mask = IBV_QP_INIT_ATTR_PD};
	if (requester) {
		qia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE | QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE;
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
	// Both QPs are ready before any request flows: a request that reaches a responder QP still on its way
	// to RTR is refused (REM_ACCESS_ERR for an ATOMIC WRITE, seen in the lab).
	uint8_t ready[8];
	full_write(fd, "ready\0\0\0", 8);
	full_read(fd, ready, 8);

	uint8_t done[8];
	if (requester) {
		struct qp_ex_47 *qpx = (struct qp_ex_47 *)ibv_qp_to_qp_ex(qp);
		if (!qpx || !qpx->wr_flush)
			die("this libibverbs does not offer ibv_wr_flush (rdma-core 47 or newer does)");
		uint64_t value = (uint64_t)them.w[1] << 32 | them.w[0];
		memcpy(buf, "flushed payload!", 16);
		ibv_wr_start(&qpx->ex);
		qpx->ex.wr_id = 1;
		qpx->ex.wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(&qpx->ex, them.rkey, them.addr + 64, &value);
		qpx->ex.wr_id = 2;
		qpx->ex.wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(&qpx->ex, them.rkey, them.addr + 4096);
		ibv_wr_set_sge(&qpx->ex, mr->lkey, (uintptr_t)buf, 16);
		qpx->ex.wr_id = 3;
		qpx->ex.wr_flags = IBV_SEND_SIGNALED;
		qpx->wr_flush(&qpx->ex, them.rkey, them.addr + 4096, 16, FLUSH_GLOBAL, FLUSH_RANGE);
		if ((errno = ibv_wr_complete(&qpx->ex)))
			die_errno("ibv_wr_complete");
		const int want[] = {IBV_WC_ATOMIC_WRITE, IBV_WC_RDMA_WRITE, WC_FLUSH};
		for (int i = 0; i < 3; i++) {
			struct ibv_wc wc;
			poll_one(cq, &wc);
			if (wc.wr_id != (uint64_t)i + 1 || (int)wc.opcode != want[i]) {
				fprintf(stderr, "wrpeer: completion %d: wr_id %llu opcode %d, want %d and %d\n", i,
					(unsigned long long)wc.wr_id, wc.opcode, i + 1, want[i]);
				exit(1);
			}
		}
		full_write(fd, "done\0\0\0\0", 8);
		printf("wrpeer: requester: ATOMIC WRITE %#018llx, RDMA WRITE and FLUSH completed\n",
		       (unsigned long long)value);
	} else {
		full_read(fd, done, 8);
		printf("wrpeer: responder: word %#018llx, bytes %.16s\n", (unsigned long long)get64(buf + 64),
		       (const char *)buf + 4096);
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

// soakpeer is the C side of the soak (test/faults TestLabSoak): it streams checksummed messages over an RC QP
// with rdma-core's libibverbs, or receives and checks them, in the protocol the Go side speaks. It is a
// test-only harness, compiled in the lab by the test (test/labtest.BuildCPeer); nothing of it is in goverbs.
//
//   soakpeer -d DEV -g GIDX -m send|write -r sender|receiver -s SIZE -n COUNT -w SLOTS [-p PORT] [HOST]
//
// Without HOST it listens on PORT for the Go side's TCP connection, with HOST it connects. Over TCP each side
// sends a 64-byte record (little-endian): magic "GVSK", version 1, QPN, PSN, GID[16], buffer address, rkey,
// SIZE, SLOTS, mode (0 send, 1 write), COUNT. Both connect their RC QPs (MTU 1024, local ACK timeout 12 = 16.8 ms,
// retry 7, RNR retry 7). A message is SIZE bytes: sequence number (u64), CRC-32C of the payload (u32), payload length
// (u32), payload. The sender sends message seq from its header slot seq%SLOTS and a read-only payload pool
// (two SGEs) — as a SEND into the receiver's slot seq%SLOTS, or as an RDMA WRITE WITH IMM (imm = seq) there.
// The receiver checks every message (order, length, checksum), then returns a credit (an 8-byte SEND
// carrying seq) that lets the sender reuse the slot. Two barriers over TCP bound the stream: after connecting
// its QP and posting its receives each side writes one byte and reads the other's, so nothing is sent to a QP
// not yet ready; at the end the receiver writes COUNT and the byte count, and the sender, once every send has
// completed, answers with one byte, so the receiver keeps its QP until the sender has the last
// acknowledgment (rxe retries a retry count of 7 for ever: a lost last ACK towards a destroyed QP would leave
// the sender retransmitting). Exit status 0 when every message arrived intact and in order, 1 with a message
// on stderr otherwise.
#include "cpeer.h"
#include <nmmintrin.h>

#define MAGIC 0x4b535647u /* "GVSK" */
#define HDR 16
#define POOL_OFFSETS 251
#define POOL_STRIDE 4093

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint64_t c = 0xffffffffu;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
	}
	uint32_t c32 = (uint32_t)c;
	for (; n; n--, p++)
		c32 = _mm_crc32_u8(c32, *p);
	return ~c32;
}

struct peer {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *pool_mr;
	uint8_t *buf, *pool;
	size_t size, slots;
	int armed;
	unsigned long events;
};

// next polls up to max completions, waiting for a completion event when there are none.
static int next(struct peer *p, struct ibv_wc *wc, int max)
{
	for (;;) {
		int n = ibv_poll_cq(p->cq, max, wc);
		if (n < 0)
			die("ibv_poll_cq failed");
		if (n > 0)
			return n;
		if (!p->armed) {
			if (ibv_req_notify_cq(p->cq, 0))
				die("ibv_req_notify_cq failed");
			p->armed = 1;
			continue;
		}
		struct ibv_cq *cq;
		void *cq_ctx;
		if (ibv_get_cq_event(p->ch, &cq, &cq_ctx))
			die_errno("ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
		p->armed = 0;
		p->events++;
	}
}

static void post_recv(struct peer *p, uint64_t id, uint64_t addr, uint32_t len)
{
	struct ibv_sge sge = {.addr = addr, .length = len, .lkey = p->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0}, *bad;
	if (ibv_post_recv(p->qp, &wr, &bad))
		die_errno("ibv_post_recv");
}

int main(int argc, char **argv)
{
	prog = "soakpeer";
	const char *dev = NULL, *port = "18515", *mode = "send", *role = NULL;
	int gidx = 1, opt;
	unsigned long long count = 0;
	size_t size = 65536, slots = 16;
	while ((opt = getopt(argc, argv, "d:g:m:r:s:n:w:p:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'r': role = optarg; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': count = strtoull(optarg, NULL, 0); break;
		case 'w': slots = strtoul(optarg, NULL, 0); break;
		case 'p': port = optarg; break;
		default:
			die("usage: soakpeer -d DEV -g GIDX -m send|write -r sender|receiver -s SIZE -n COUNT -w SLOTS [-p PORT] [HOST]");
		}
	}
	const char *host = optind < argc ? argv[optind] : NULL;
	int write_mode = !strcmp(mode, "write");
	if (!dev || !role || (strcmp(role, "sender") && strcmp(role, "receiver")) || (!write_mode && strcmp(mode, "send")))
		die("usage: soakpeer -d DEV -g GIDX -m send|write -r sender|receiver -s SIZE -n COUNT -w SLOTS [-p PORT] [HOST]");
	int sender = !strcmp(role, "sender");
	if (size < HDR + 8 || size % 8 || !slots || !count)
		die("SIZE must be a multiple of 8 and at least 24, SLOTS and COUNT at least 1");
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct peer p = {.size = size, .slots = slots};
	struct ibv_device **list;
	p.ctx = open_device(dev, &list);
	if (!(p.ch = ibv_create_comp_channel(p.ctx)) || !(p.pd = ibv_alloc_pd(p.ctx)))
		die_errno("create a completion channel and a PD");
	size_t buflen = slots * size + slots * 8;
	if (posix_memalign((void **)&p.buf, 4096, buflen))
		die("out of memory");
	memset(p.buf, 0, buflen);
	p.mr = ibv_reg_mr(p.pd, p.buf, buflen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!p.mr)
		die_errno("ibv_reg_mr");
	size_t payload = size - HDR, poollen = POOL_OFFSETS * POOL_STRIDE + payload;
	uint32_t sums[POOL_OFFSETS];
	if (sender) {
		if (posix_memalign((void **)&p.pool, 4096, poollen))
			die("out of memory");
		uint64_t x = 0x9e3779b97f4a7c15ull;
		for (size_t i = 0; i < poollen; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p.pool[i] = (uint8_t)(x >> 32);
		}
		for (int k = 0; k < POOL_OFFSETS; k++)
			sums[k] = crc32c(p.pool + (size_t)k * POOL_STRIDE, payload);
		if (!(p.pool_mr = ibv_reg_mr(p.pd, p.pool, poollen, 0)))
			die_errno("ibv_reg_mr (pool)");
	}
	if (!(p.cq = ibv_create_cq(p.ctx, 4 * slots, NULL, p.ch, 0)))
		die_errno("ibv_create_cq");
	struct ibv_qp_init_attr qia = {.send_cq = p.cq, .recv_cq = p.cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2 * slots, .max_recv_wr = slots, .max_send_sge = 2, .max_recv_sge = 1}};
	if (!(p.qp = ibv_create_qp(p.pd, &qia)))
		die_errno("ibv_create_qp");

	struct record me = {.magic = MAGIC, .qpn = p.qp->qp_num, .psn = (uint32_t)(getpid() * 7919) & 0xffffff,
		.addr = (uintptr_t)p.buf, .rkey = p.mr->rkey, .w = {size, slots, write_mode}, .count = count}, them;
	my_gid(p.ctx, gidx, &me);
	int fd = host ? tcp_connect(host, port) : tcp_accept(port);
	exchange(fd, &me, &them);
	if (them.w[0] != size || them.w[1] != slots || them.w[2] != (uint32_t)write_mode || them.count != count)
		die("the peer runs another size, slot count, mode or message count");
	rc_connect(p.qp, gidx, me.psn, &them, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 12);

	uint8_t *credits = p.buf + slots * size, rec[16], ready = 'R';
	struct ibv_wc wc[32];
	uint64_t bytes = 0;
	char msg[200];
	if (sender) {
		uint64_t seq = 0, completed = 0, credited = 0;
		for (size_t i = 0; i < slots; i++)
			post_recv(&p, i, (uintptr_t)(credits + i * 8), 8);
		full_write(fd, &ready, 1);
		full_read(fd, &ready, 1);
		while (completed < count || credited < count) {
			while (seq < count && seq < completed + slots && seq < credited + slots) {
				size_t slot = seq % slots, k = (seq * 0x9e3779b97f4a7c15ull >> 40) % POOL_OFFSETS;
				uint8_t *h = p.buf + slot * size;
				put64(h, seq);
				put32(h + 8, sums[k]);
				put32(h + 12, payload);
				struct ibv_sge sge[2] = {{.addr = (uintptr_t)h, .length = HDR, .lkey = p.mr->lkey},
					{.addr = (uintptr_t)(p.pool + k * POOL_STRIDE), .length = payload, .lkey = p.pool_mr->lkey}};
				struct ibv_send_wr wr = {.wr_id = seq, .sg_list = sge, .num_sge = 2,
					.send_flags = IBV_SEND_SIGNALED}, *bad;
				if (write_mode) {
					wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
					wr.imm_data = htonl((uint32_t)seq);
					wr.wr.rdma.remote_addr = them.addr + slot * size;
					wr.wr.rdma.rkey = them.rkey;
				} else {
					wr.opcode = IBV_WR_SEND;
				}
				if (ibv_post_send(p.qp, &wr, &bad))
					die_errno("ibv_post_send");
				seq++;
			}
			int k = next(&p, wc, 32);
			for (int i = 0; i < k; i++) {
				check_wc(&wc[i], "work");
				if (wc[i].opcode & IBV_WC_RECV) {
					uint64_t c = get64(credits + wc[i].wr_id * 8);
					if (c != credited) {
						snprintf(msg, sizeof(msg), "credit %llu returned message %llu",
							 (unsigned long long)credited, (unsigned long long)c);
						die(msg);
					}
					credited++;
					post_recv(&p, wc[i].wr_id, (uintptr_t)(credits + wc[i].wr_id * 8), 8);
				} else {
					if (wc[i].wr_id != completed)
						die("send completions out of order");
					completed++;
					bytes += size;
				}
			}
		}
		full_read(fd, rec, 16);
		if (get64(rec) != count || get64(rec + 8) != bytes) {
			snprintf(msg, sizeof(msg), "the receiver checked %llu messages, %llu bytes; sent %llu, %llu",
				 (unsigned long long)get64(rec), (unsigned long long)get64(rec + 8),
				 (unsigned long long)count, (unsigned long long)bytes);
			die(msg);
		}
		full_write(fd, &ready, 1); // every send has completed: the receiver may destroy its QP
	} else {
		// Credit c travels from slot c%SLOTS of the credit area; it is posted once message c is checked and
		// the send queue has room (at most sq_depth credits in flight).
		uint64_t expected = 0, credit_posted = 0, credit_done = 0, sq_depth = 2 * slots;
		for (size_t i = 0; i < slots; i++)
			post_recv(&p, i, (uintptr_t)(p.buf + i * size), write_mode ? 0 : size);
		full_write(fd, &ready, 1);
		full_read(fd, &ready, 1);
		while (expected < count || credit_done < count) {
			int k = next(&p, wc, 32);
			for (int i = 0; i < k; i++) {
				check_wc(&wc[i], "work");
				if (!(wc[i].opcode & IBV_WC_RECV)) {
					credit_done++;
					continue;
				}
				size_t slot = expected % slots;
				uint8_t *m = p.buf + slot * size;
				const char *bad = NULL;
				if (wc[i].wr_id != slot)
					bad = "completed in another slot";
				else if (wc[i].byte_len != size)
					bad = "has another length";
				else if (write_mode && (!(wc[i].wc_flags & IBV_WC_WITH_IMM) || ntohl(wc[i].imm_data) != (uint32_t)expected))
					bad = "carries another immediate";
				else if (get64(m) != expected)
					bad = "carries another sequence number";
				else if (get32(m + 12) != payload)
					bad = "carries another payload length";
				else if (crc32c(m + HDR, payload) != get32(m + 8))
					bad = "fails its checksum";
				if (bad) {
					snprintf(msg, sizeof(msg), "message %llu %s (header seq %llu)", (unsigned long long)expected, bad,
						 (unsigned long long)get64(m));
					die(msg);
				}
				bytes += size;
				post_recv(&p, slot, (uintptr_t)m, write_mode ? 0 : size);
				expected++;
			}
			for (; credit_posted < expected && credit_posted - credit_done < sq_depth; credit_posted++) {
				uint8_t *c = credits + (credit_posted % slots) * 8;
				put64(c, credit_posted);
				struct ibv_sge sge = {.addr = (uintptr_t)c, .length = 8, .lkey = p.mr->lkey};
				struct ibv_send_wr wr = {.wr_id = credit_posted, .sg_list = &sge, .num_sge = 1,
					.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bwr;
				if (ibv_post_send(p.qp, &wr, &bwr))
					die_errno("ibv_post_send (credit)");
			}
		}
		put64(rec, count);
		put64(rec + 8, bytes);
		full_write(fd, rec, 16);
		full_read(fd, &ready, 1); // the sender has every acknowledgment
	}
	printf("soakpeer: %s %s: %llu messages, %llu bytes intact and in order, %lu completion events\n",
	       sender ? "sent" : "received", mode, (unsigned long long)count, (unsigned long long)bytes, p.events);
	close(fd);
	ibv_destroy_qp(p.qp);
	ibv_destroy_cq(p.cq);
	ibv_dereg_mr(p.mr);
	if (p.pool_mr)
		ibv_dereg_mr(p.pool_mr);
	ibv_dealloc_pd(p.pd);
	ibv_destroy_comp_channel(p.ch);
	ibv_close_device(p.ctx);
	ibv_free_device_list(list);
	return 0;
}

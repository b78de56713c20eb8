// cpeer.h: what the lab's test-only C peers (soakpeer.c, wrpeer.c) share: errors, little-endian fields, the TCP
// side channel, the 64-byte connection record, and an RC connect. Compiled in the lab by the tests
// (test/labtest.BuildCPeer) against the installed libibverbs; nothing of it is in goverbs.
#ifndef CPEER_H
#define CPEER_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *prog = "cpeer";

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", prog, what);
	exit(1);
}

static inline void die_errno(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static inline void put32(uint8_t *b, uint32_t v) { v = htole32(v); memcpy(b, &v, 4); }
static inline void put64(uint8_t *b, uint64_t v) { v = htole64(v); memcpy(b, &v, 8); }
static inline uint32_t get32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return le32toh(v); }
static inline uint64_t get64(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return le64toh(v); }

static inline void full_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die_errno("TCP write");
		b += k;
		n -= k;
	}
}

static inline void full_read(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die_errno("TCP read");
		if (k == 0)
			die("TCP read: the peer closed the connection");
		b += k;
		n -= k;
	}
}

// record is the 64-byte connection record each side sends (test/labtest.CPeerRecord): magic, version 1, QPN,
// PSN, GID, buffer address, rkey, then four words and a count whose meaning is the peer's (soakpeer: size,
// slots, mode, count).
struct record {
	uint32_t magic, qpn, psn;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey, w[4];
	uint64_t count;
};

static inline void encode(uint8_t b[64], const struct record *in)
{
	memset(b, 0, 64);
	put32(b, in->magic);
	put32(b + 4, 1);
	put32(b + 8, in->qpn);
	put32(b + 12, in->psn);
	memcpy(b + 16, in->gid, 16);
	put64(b + 32, in->addr);
	put32(b + 40, in->rkey);
	for (int i = 0; i < 3; i++)
		put32(b + 44 + 4 * i, in->w[i]);
	put64(b + 56, in->count);
}

static inline void decode(const uint8_t b[64], uint32_t magic, struct record *in)
{
	if (get32(b) != magic || get32(b + 4) != 1)
		die("the peer's record has another magic or version");
	in->magic = magic;
	in->qpn = get32(b + 8);
	in->psn = get32(b + 12);
	memcpy(in->gid, b + 16, 16);
	in->addr = get64(b + 32);
	in->rkey = get32(b + 40);
	for (int i = 0; i < 3; i++)
		in->w[i] = get32(b + 44 + 4 * i);
	in->count = get64(b + 56);
}

// exchange sends mine and returns the peer's record.
static inline void exchange(int fd, const struct record *mine, struct record *theirs)
{
	uint8_t rec[64];
	encode(rec, mine);
	full_write(fd, rec, 64);
	full_read(fd, rec, 64);
	decode(rec, mine->magic, theirs);
}

static inline int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *r;
	int fd = -1, err = getaddrinfo(host, port, &hints, &res);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", prog, host, gai_strerror(err));
		exit(1);
	}
	for (r = res; r; r = r->ai_next) {
		fd = socket(r->ai_family, r->ai_socktype, r->ai_protocol);
		if (fd >= 0 && connect(fd, r->ai_addr, r->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		die_errno("TCP connect");
	return fd;
}

// tcp_accept listens on port (dual-stack) and returns the first connection.
static inline int tcp_accept(const char *port)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(atoi(port)), .sin6_addr = in6addr_any};
	int one = 1, zero = 0, fd, lfd = socket(AF_INET6, SOCK_STREAM, 0);
	if (lfd < 0)
		die_errno("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1))
		die_errno("TCP listen");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die_errno("TCP accept");
	close(lfd);
	return fd;
}

// open_device opens the device called name (the list is freed by the caller after closing it).
static inline struct ibv_context *open_device(const char *name, struct ibv_device ***list)
{
	int n;
	struct ibv_context *ctx = NULL;
	*list = ibv_get_device_list(&n);
	for (int i = 0; *list && i < n; i++)
		if (!strcmp(ibv_get_device_name((*list)[i]), name))
			ctx = ibv_open_device((*list)[i]);
	if (!ctx)
		die("no such device, or it cannot be opened");
	return ctx;
}

// my_gid fills the record's GID with port 1's GID gidx.
static inline void my_gid(struct ibv_context *ctx, int gidx, struct record *r)
{
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		die_errno("ibv_query_gid");
	memcpy(r->gid, gid.raw, 16);
}

// rc_connect takes an RC QP through INIT, RTR and RTS to the peer of theirs over port 1 with GID index gidx
// (MTU 1024, one outstanding READ/atomic each way, RNR retry 7, retry 7), granting access.
static inline void rc_connect(struct ibv_qp *qp, int gidx, uint32_t my_psn, const struct record *theirs, int access,
		       uint8_t timeout)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die_errno("modify QP to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = theirs->qpn;
	a.rq_psn = theirs->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.sgid_index = gidx;
	memcpy(a.ah_attr.grh.dgid.raw, theirs->gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die_errno("modify QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC))
		die_errno("modify QP to RTS");
}

static inline void check_wc(const struct ibv_wc *wc, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: %s completion %llu failed: %s (%d)\n", prog, what,
			(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status), wc->status);
		exit(1);
	}
}
#endif

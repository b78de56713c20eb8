/*
 * Test-only harness: runs Debian's installed libibverbs + rdma-core's libmlx5 (ibverbs-providers 44) against an
 * emulated kernel, so that libmlx5 builds its WQEs into ordinary memory and rings its doorbells there. It is
 * built with cc by the hw package's tests and by test/bench/cmd/mlx5bench; no Go package links it, and it
 * contains no rdma-core code: it calls the public verbs/mlx5dv API and fakes the kernel underneath.
 *
 * The kernel is faked by symbol interposition in this executable (linked with -rdynamic, so the shared libraries'
 * calls bind here first):
 *   - socket(AF_NETLINK) fails, so libibverbs falls back to sysfs discovery; SYSFS_PATH points at a fake tree
 *     (made by main) with class/infiniband_verbs/uverbs0 naming mlx5_0, a Mellanox ConnectX-5 PCI modalias and
 *     dev 1:3;
 *   - stat("/dev/infiniband/uverbs0") answers for /dev/null, and open of it opens /dev/null (a character device 1:3, so libibverbs' fstat check
 *     passes) and remembers the descriptor;
 *   - ioctl on it fails with ENOTTY ("no ioctl framework"), so libibverbs uses the legacy write() commands
 *     (in dmdump mode the device-memory methods, which have no write() form, are answered);
 *   - write on it answers those commands (GET_CONTEXT with the mlx5 ALLOC_UCONTEXT response, QUERY_PORT,
 *     ALLOC_PD, REG_MR, CREATE_CQ, CREATE_QP with QPN and bfreg index, MODIFY_QP, ...);
 *   - mmap on it (UAR and BlueFlame pages) returns ordinary anonymous memory.
 *
 * Modes:
 *   harness dump          the WQE bytes, doorbell records and BlueFlame register contents of each work-request
 *                         stream, as "name hex" lines, plus the queue geometry ("name value" lines)
 *   harness extdump       with a kernel that offers ECE, the HCA core clock and the dump-fill mkey: the commands
 *                         and driver data of ibv_set_ece + ibv_modify_qp, ibv_modify_qp_rate_limit, the answers
 *                         of ibv_query_ece, ibv_query_rt_values_ex and ibv_alloc_null_mr ("name value" lines)
 *   harness wqdump        a receive WQ and an RSS indirection table: the commands and driver data of
 *                         ibv_create_wq, ibv_modify_wq, ibv_create_rwq_ind_table and the destroys, the ring and
 *                         doorbell record after ibv_post_wq_recv, and libmlx5's answers ("name value" lines)
 *   harness dmdump        with a kernel that answers the extended QUERY_DEVICE (max_dm_size) and the device-memory
 *                         ioctls (DM_ALLOC, DM_FREE, libmlx5's DM_QUERY, MR's DM_MR_REG and REG_DMABUF_MR; every
 *                         other ioctl is still ENOTTY): the attributes of ibv_alloc_dm, ibv_reg_dm_mr,
 *                         ibv_free_dm, ibv_reg_dmabuf_mr and ibv_import_dm, the mappings libmlx5 asks for, the
 *                         bytes ibv_memcpy_to_dm writes and the answers ("name value" lines)
 *   harness count OP N    N operations (callgrind: --toggle-collect=op_*)
 *   harness time OP N     N operations; prints "ns/op X" per unit (WR, CQE): CLOCK_MONOTONIC around batches of
 *                         operations only, less the cost of the clock reads
 * OP: inline, doorbell, list16, recv, pollsend, pollrecv (ibv_post_send, ibv_post_recv, ibv_poll_cq), and the
 * extended API's: wr-inline, wr-doorbell, wr-list16 (the first three streams built with ibv_wr_start ...
 * ibv_wr_complete on an extended RC QP made by ibv_create_qp_ex with IBV_QP_EX_WITH_SEND | _RDMA_WRITE) and
 * pollex-send, pollex-recv (the poll streams read with ibv_start_poll, ibv_next_poll, ibv_end_poll from a CQ made
 * by ibv_create_cq_ex; IBV_CREATE_CQ_ATTR_SINGLE_THREADED when MLX5_SINGLE_THREADED=1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5-abi.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_cmds.h>

/* ---------------------------------------------------------------- the emulated kernel */

#define QPN_BASE 0xabc123
#define CQN_BASE 0x000456
#define LKEY 0x11223344
#define BFREG_INDEX 1

static int ufd = -1;
static int nqp, ncq, nmr, npd;
static uint32_t qp_uidx[8]; /* uidx libmlx5 gave each QP (cqe_version 1), by creation order */
static int trace;

/* extdump mode: the emulated kernel offers ECE, the clock page and the dump-fill mkey, and the last command's
 * core request and driver data are kept for printing. */
#define EXT_CLOCK_OFFSET 0x7f08 /* hca_core_clock_offset: libmlx5 keeps its offset within the page */
#define EXT_DUMP_FILL_MKEY 0x1d0f
#define EXT_CREATE_ECE 0x10000003 /* the ece_options CREATE_QP answers */
#define EXT_MODIFY_ECE_BITS 0x00000100 /* what MODIFY_QP adds to the options asked for in its answer */
static int ext;
static unsigned char *clock_page;
/* wqdump mode: the handles and numbers the emulated kernel gives WQs and indirection tables. */
#define WQ_HANDLE_BASE 0x21
#define WQN_BASE 0x000789
#define IND_TBL_HANDLE 0x31
#define IND_TBL_NUM 0x000abc
static int nwq;
/* dmdump mode: the answers of the device-memory ioctls, and the last ioctl's attributes kept for printing. */
#define DM_MAX_SIZE (1 << 17)
#define DM_HANDLE 0x41
#define DM_START_OFFSET 0x12340 /* libmlx5 keeps its offset within the page */
#define DM_PAGE_INDEX 0x0105
#define DM_MR_HANDLE 0x51
#define DM_LKEY 0x5a5a01
#define DM_RKEY 0x5a5a02
/* ... and of REG_DMABUF_MR and of libmlx5's DM query (an import of DM_HANDLE: another page, the same offset
 * within it, IMPORT_DM_LENGTH bytes). */
#define DMABUF_MR_HANDLE 0x52
#define DMABUF_LKEY 0x6b6b01
#define DMABUF_RKEY 0x6b6b02
#define IMPORT_DM_PAGE_INDEX 0x0107
#define IMPORT_DM_LENGTH 9000
static int dmmode;
static unsigned char *dm_page;
static off_t dm_off;
static size_t dm_len;
static struct {
	int object, method, n;
	struct ib_uverbs_attr a[16];
} lastio;
static int ncmds;
static struct {
	uint32_t cmd;
	int ex;
	unsigned char core[512], drv[256];
	size_t core_len, drv_len;
	unsigned out_words, drv_out_words;
} last;

static int (*real_open)(const char *, int, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_socket)(int, int, int);

static void resolve(void)
{
	if (real_open)
		return;
	real_open = dlsym(RTLD_NEXT, "open");
	real_write = dlsym(RTLD_NEXT, "write");
	real_mmap = dlsym(RTLD_NEXT, "mmap");
	real_socket = dlsym(RTLD_NEXT, "socket");
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	resolve();
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!strncmp(path, "/dev/infiniband/uverbs", 22)) {
		ufd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
		return ufd;
	}
	return real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int stat(const char *path, struct stat *st)
{
	static int (*real_stat)(const char *, struct stat *);

	if (!real_stat)
		real_stat = dlsym(RTLD_NEXT, "stat");
	if (!strncmp(path, "/dev/infiniband/uverbs", 22)) /* libibverbs checks the node exists */
		return real_stat("/dev/null", st);
	return real_stat(path, st);
}
int stat64(const char *path, struct stat64 *st) __attribute__((alias("stat")));

int socket(int domain, int type, int protocol)
{
	resolve();
	if (domain == AF_NETLINK) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return real_socket(domain, type, protocol);
}

/* The device-memory methods (dmdump mode): the attributes are kept, the outputs written as the kernel writes
 * them (a new object's handle into the attribute itself, the rest through their pointers). */
static int verbs_ioctl(struct ib_uverbs_ioctl_hdr *h)
{
	int n = h->num_attrs < 16 ? h->num_attrs : 16;

	if (!((h->object_id == UVERBS_OBJECT_DM &&
	       (h->method_id == UVERBS_METHOD_DM_ALLOC || h->method_id == UVERBS_METHOD_DM_FREE ||
		h->method_id == MLX5_IB_METHOD_DM_QUERY)) ||
	      (h->object_id == UVERBS_OBJECT_MR &&
	       (h->method_id == UVERBS_METHOD_DM_MR_REG || h->method_id == UVERBS_METHOD_REG_DMABUF_MR)))) {
		errno = ENOTTY;
		return -1;
	}
	ncmds++;
	lastio.object = h->object_id;
	lastio.method = h->method_id;
	lastio.n = n;
	memcpy(lastio.a, h->attrs, n * sizeof(h->attrs[0]));
	for (int i = 0; i < n; i++) {
		struct ib_uverbs_attr *a = &h->attrs[i];
		uint64_t v;
		uint16_t v16;
		uint32_t v32;

		if (h->object_id == UVERBS_OBJECT_DM && h->method_id == UVERBS_METHOD_DM_ALLOC) {
			if (a->attr_id == UVERBS_ATTR_ALLOC_DM_HANDLE)
				a->data = DM_HANDLE;
			if (a->attr_id == MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET) {
				v = DM_START_OFFSET;
				memcpy((void *)(uintptr_t)a->data, &v, sizeof(v));
			}
			if (a->attr_id == MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX) {
				v16 = DM_PAGE_INDEX;
				memcpy((void *)(uintptr_t)a->data, &v16, sizeof(v16));
			}
		}
		if (h->object_id == UVERBS_OBJECT_DM && h->method_id == MLX5_IB_METHOD_DM_QUERY) {
			if (a->attr_id == MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET) {
				v = DM_START_OFFSET;
				memcpy((void *)(uintptr_t)a->data, &v, sizeof(v));
			}
			if (a->attr_id == MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX) {
				v16 = IMPORT_DM_PAGE_INDEX;
				memcpy((void *)(uintptr_t)a->data, &v16, sizeof(v16));
			}
			if (a->attr_id == MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH) {
				v = IMPORT_DM_LENGTH;
				memcpy((void *)(uintptr_t)a->data, &v, sizeof(v));
			}
		}
		if (h->object_id == UVERBS_OBJECT_MR && h->method_id == UVERBS_METHOD_REG_DMABUF_MR) {
			if (a->attr_id == UVERBS_ATTR_REG_DMABUF_MR_HANDLE)
				a->data = DMABUF_MR_HANDLE;
			if (a->attr_id == UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY ||
			    a->attr_id == UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY) {
				v32 = a->attr_id == UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY ? DMABUF_LKEY : DMABUF_RKEY;
				memcpy((void *)(uintptr_t)a->data, &v32, sizeof(v32));
			}
		}
		if (h->object_id == UVERBS_OBJECT_MR && h->method_id == UVERBS_METHOD_DM_MR_REG) {
			if (a->attr_id == UVERBS_ATTR_REG_DM_MR_HANDLE)
				a->data = DM_MR_HANDLE;
			if (a->attr_id == UVERBS_ATTR_REG_DM_MR_RESP_LKEY || a->attr_id == UVERBS_ATTR_REG_DM_MR_RESP_RKEY) {
				v32 = a->attr_id == UVERBS_ATTR_REG_DM_MR_RESP_LKEY ? DM_LKEY : DM_RKEY;
				memcpy((void *)(uintptr_t)a->data, &v32, sizeof(v32));
			}
		}
	}
	return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
	/* Only the fake device is ever asked here: answer "no ioctl framework" (ENOTTY), which makes libibverbs
	 * use the write() ABI for every command. Other descriptors go to the kernel. */
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (fd == ufd) {
		if (dmmode && req == RDMA_VERBS_IOCTL)
			return verbs_ioctl(arg);
		errno = ENOTTY;
		return -1;
	}
	static int (*real_ioctl)(int, unsigned long, void *);
	if (!real_ioctl)
		real_ioctl = dlsym(RTLD_NEXT, "ioctl");
	return real_ioctl(fd, req, arg);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	resolve();
	if (fd == ufd && fd >= 0) { /* UAR, BlueFlame, clock pages: ordinary memory */
		void *p = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (off == (off_t)MLX5_IB_MMAP_CORE_CLOCK << 8 << 12) /* the clock page (4 KiB pages) */
			clock_page = p;
		if (((off >> 12 >> 8) & 0xff) == MLX5_IB_MMAP_DEVICE_MEM) { /* MEMIC device memory */
			dm_page = p;
			dm_off = off;
			dm_len = len;
		}
		return p;
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));

static void put(uint64_t addr, const void *p, size_t n) { memcpy((void *)(uintptr_t)addr, p, n); }

static ssize_t command(const void *buf, size_t len)
{
	const struct ib_uverbs_cmd_hdr *h = buf;
	uint32_t cmd = h->command & ~IB_USER_VERBS_CMD_FLAG_EXTENDED;
	int ex = !!(h->command & IB_USER_VERBS_CMD_FLAG_EXTENDED);
	const char *body = (const char *)(h + 1);
	uint64_t resp;

	if (ex) {
		const struct ib_uverbs_ex_cmd_hdr *xh = (const void *)body;
		resp = xh->response;
		body = (const char *)(xh + 1);
	} else {
		resp = *(const uint64_t *)body;
	}
	if (trace)
		fprintf(stderr, "fakekernel: cmd %u%s in %u out %u\n", cmd, ex ? " (ex)" : "", h->in_words, h->out_words);
	ncmds++;
	memset(&last, 0, sizeof(last));
	last.cmd = cmd;
	last.ex = ex;
	if (ex) {
		const struct ib_uverbs_ex_cmd_hdr *xh = (const void *)(h + 1);
		last.core_len = h->in_words * 8 < sizeof(last.core) ? h->in_words * 8 : sizeof(last.core);
		memcpy(last.core, body, last.core_len);
		last.drv_len = xh->provider_in_words * 8 < sizeof(last.drv) ? xh->provider_in_words * 8 : sizeof(last.drv);
		memcpy(last.drv, body + h->in_words * 8, last.drv_len);
		last.out_words = h->out_words;
		last.drv_out_words = xh->provider_out_words;
	}
	switch (cmd) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		const struct mlx5_ib_alloc_ucontext_req_v2 *rq = (const void *)(body + sizeof(struct ib_uverbs_get_context));
		struct {
			struct ib_uverbs_get_context_resp c;
			struct mlx5_ib_alloc_ucontext_resp d;
		} r = {0};
		r.c.async_fd = real_open("/dev/null", O_RDONLY | O_CLOEXEC);
		r.c.num_comp_vectors = 1;
		r.d.qp_tab_size = 1 << 18;
		r.d.bf_reg_size = 512;
		r.d.tot_bfregs = rq->total_num_bfregs;
		r.d.cache_line_size = 64;
		r.d.max_sq_desc_sz = 512;
		r.d.max_rq_desc_sz = 512;
		r.d.max_send_wqebb = 32768;
		r.d.max_recv_wr = 32768;
		r.d.max_srq_recv_wr = 32767;
		r.d.num_ports = 1;
		r.d.cqe_version = rq->max_cqe_version >= 1 ? 1 : 0;
		r.d.eth_min_inline = 0;
		r.d.log_uar_size = 12;
		r.d.num_uars_per_page = 1;
		if (ext) {
			r.d.comp_mask = MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET |
					MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY | MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE;
			r.d.hca_core_clock_offset = EXT_CLOCK_OFFSET;
			r.d.dump_fill_mkey = EXT_DUMP_FILL_MKEY;
		}
		r.d.response_length = sizeof(r.d);
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_CMD_QUERY_DEVICE: {
		/* The legacy command only (libibverbs falls back to it when the extended one is refused): enough for
		 * libmlx5 to learn that the device has HCA atomics, which its extended QP's atomic ops require. */
		struct ib_uverbs_query_device_resp r = {0};

		if (ex && !dmmode) {
			errno = EOPNOTSUPP;
			return -1;
		}
		r.max_qp = 1 << 18;
		r.max_qp_wr = 32768;
		r.max_sge = 30;
		r.max_cq = 1 << 24;
		r.max_cqe = 1 << 22;
		r.max_pd = 1 << 24;
		r.max_mr = 1 << 24;
		r.max_qp_rd_atom = 16;
		r.max_qp_init_rd_atom = 16;
		r.atomic_cap = IBV_ATOMIC_HCA;
		r.phys_port_cnt = 1;
		if (ex) { /* dmdump: the extended answer, for max_dm_size */
			struct ib_uverbs_ex_query_device_resp x = {0};

			x.base = r;
			x.max_dm_size = DM_MAX_SIZE;
			x.response_length = sizeof(x) < h->out_words * 8 ? sizeof(x) : h->out_words * 8;
			put(resp, &x, x.response_length);
			break;
		}
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port_resp r = {0};
		r.state = IBV_PORT_ACTIVE;
		r.max_mtu = r.active_mtu = IBV_MTU_4096;
		r.gid_tbl_len = 1;
		r.pkey_tbl_len = 1;
		r.lid = 1;
		r.sm_lid = 1;
		r.max_msg_sz = 1u << 30;
		r.link_layer = IBV_LINK_LAYER_INFINIBAND;
		r.phys_state = 5;
		r.active_width = 2;
		r.active_speed = 32;
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		struct {
			struct ib_uverbs_alloc_pd_resp c;
			struct mlx5_ib_alloc_pd_resp d;
		} r = {{npd + 1}, {0x10 + npd}};
		npd++;
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_CMD_REG_MR: {
		struct ib_uverbs_reg_mr_resp r = {nmr + 1, LKEY + nmr, LKEY + nmr};
		nmr++;
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_CQ: {
		const struct ib_uverbs_create_cq *c = (const void *)body;
		uint32_t cqe = ex ? ((const struct ib_uverbs_ex_create_cq *)body)->cqe : c->cqe;
		struct {
			struct ib_uverbs_ex_create_cq_resp c;
			struct mlx5_ib_create_cq_resp d;
		} r = {0};
		r.c.base.cq_handle = ncq + 1;
		r.c.base.cqe = cqe;
		r.c.response_length = sizeof(r.c);
		r.d.cqn = CQN_BASE + ncq;
		ncq++;
		if (ex) {
			put(resp, &r.c, sizeof(r.c));
			put(resp + h->out_words * 8, &r.d, sizeof(r.d));
		} else {
			put(resp, &r.c.base, sizeof(r.c.base));
			put(resp + sizeof(r.c.base), &r.d, sizeof(r.d));
		}
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_QP: {
		const struct mlx5_ib_create_qp *d;
		struct ib_uverbs_ex_create_qp_resp rc = {0};
		struct mlx5_ib_create_qp_resp rd = {0};
		uint32_t msw, mrw, mss, mrs, mid;

		if (ex) {
			const struct ib_uverbs_ex_create_qp *q = (const void *)body;
			d = (const void *)(body + h->in_words * 8);
			msw = q->max_send_wr; mrw = q->max_recv_wr; mss = q->max_send_sge; mrs = q->max_recv_sge;
			mid = q->max_inline_data;
		} else {
			const struct ib_uverbs_create_qp *q = (const void *)body;
			d = (const void *)(q + 1);
			msw = q->max_send_wr; mrw = q->max_recv_wr; mss = q->max_send_sge; mrs = q->max_recv_sge;
			mid = q->max_inline_data;
		}
		if (nqp < 8)
			qp_uidx[nqp] = d->uidx;
		last.drv_len = sizeof(*d);
		memcpy(last.drv, d, sizeof(*d));
		if (ext)
			rd.ece_options = EXT_CREATE_ECE;
		rc.base.qp_handle = nqp + 1;
		rc.base.qpn = QPN_BASE + nqp;
		rc.base.max_send_wr = msw;
		rc.base.max_recv_wr = mrw;
		rc.base.max_send_sge = mss;
		rc.base.max_recv_sge = mrs;
		rc.base.max_inline_data = mid;
		rc.response_length = sizeof(rc);
		rd.bfreg_index = BFREG_INDEX;
		nqp++;
		if (ex) {
			put(resp, &rc, sizeof(rc));
			put(resp + h->out_words * 8, &rd, sizeof(rd));
		} else {
			put(resp, &rc.base, sizeof(rc.base));
			put(resp + sizeof(rc.base), &rd, sizeof(rd));
		}
		break;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP:
		if (ex) {
			const struct ib_uverbs_ex_cmd_hdr *xh = (const void *)(h + 1);
			struct ib_uverbs_ex_modify_qp_resp r = {0, sizeof(r)};
			if (h->out_words)
				put(resp, &r, sizeof(r));
			if (xh->provider_out_words * 8 >= sizeof(struct mlx5_ib_modify_qp_resp) &&
			    last.drv_len >= sizeof(struct mlx5_ib_modify_qp)) {
				const struct mlx5_ib_modify_qp *d = (const void *)last.drv;
				struct mlx5_ib_modify_qp_resp rd = {sizeof(rd), 0, 0, 0};
				rd.ece_options = d->ece_options ? d->ece_options | EXT_MODIFY_ECE_BITS : 0;
				put(resp + h->out_words * 8, &rd, sizeof(rd));
			}
		}
		break;
	case IB_USER_VERBS_EX_CMD_CREATE_WQ: {
		/* The answer of the mlx5 kernel: max_wr the ring's WQEs, max_sge the data segments a WQE holds. */
		const struct mlx5_ib_create_wq *d = (const void *)(body + h->in_words * 8);
		struct ib_uverbs_ex_create_wq_resp r = {0};
		struct mlx5_ib_create_wq_resp rd = {sizeof(rd), 0};

		if (!ex || h->in_words * 8 < sizeof(struct ib_uverbs_ex_create_wq)) {
			errno = EINVAL;
			return -1;
		}
		r.response_length = sizeof(r);
		r.wq_handle = WQ_HANDLE_BASE + nwq;
		r.max_wr = d->rq_wqe_count;
		r.max_sge = (1u << d->rq_wqe_shift) / 16;
		r.wqn = WQN_BASE + nwq;
		nwq++;
		put(resp, &r, sizeof(r));
		if (((const struct ib_uverbs_ex_cmd_hdr *)(h + 1))->provider_out_words)
			put(resp + h->out_words * 8, &rd, sizeof(rd));
		break;
	}
	case IB_USER_VERBS_EX_CMD_DESTROY_WQ: {
		struct ib_uverbs_ex_destroy_wq_resp r = {0, sizeof(r), 0, 0};
		if (h->out_words)
			put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL: {
		struct ib_uverbs_ex_create_rwq_ind_table_resp r = {0, sizeof(r), IND_TBL_HANDLE, IND_TBL_NUM};
		put(resp, &r, sizeof(r));
		break;
	}
	case IB_USER_VERBS_EX_CMD_MODIFY_WQ:
	case IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL:
	case IB_USER_VERBS_CMD_DESTROY_QP:
	case IB_USER_VERBS_CMD_DESTROY_CQ:
	case IB_USER_VERBS_CMD_DEREG_MR:
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		break; /* responses of the destroys are only event counts: zero */
	default:
		if (trace)
			fprintf(stderr, "fakekernel: command %u not emulated\n", cmd);
		errno = EOPNOTSUPP;
		return -1;
	}
	return len;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	resolve();
	if (fd == ufd && fd >= 0)
		return command(buf, len);
	return real_write(fd, buf, len);
}

/* ---------------------------------------------------------------- the fake sysfs tree */

/* Every file and directory made, removed in reverse order at exit. */
static char made[32][512];
static int nmade;

static void remember(const char *p)
{
	if (nmade < 32)
		snprintf(made[nmade++], sizeof(made[0]), "%s", p);
}

static void cleanup(void)
{
	while (nmade > 0)
		remove(made[--nmade]);
}

static void wfile(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	remember(p);
	f = fopen(p, "w");
	if (!f) {
		perror(p);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *path)
{
	char p[512];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (!mkdir(p, 0755))
				remember(p);
			*s = '/';
		}
	if (!mkdir(p, 0755))
		remember(p);
}

static void make_sysfs(void)
{
	static char root[] = "/tmp/libmlx5emu-XXXXXX";
	char d[512];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(2);
	}
	remember(root);
	atexit(cleanup);
	snprintf(d, sizeof(d), "%s/class/infiniband_verbs", root);
	mkdirs(d);
	wfile(d, "abi_version", "6\n");
	snprintf(d, sizeof(d), "%s/class/infiniband_verbs/uverbs0/device", root);
	mkdirs(d);
	wfile(d, "modalias", "pci:v000015B3d00001017sv000015B3sd00000008bc02sc00i00\n");
	snprintf(d, sizeof(d), "%s/class/infiniband_verbs/uverbs0", root);
	wfile(d, "ibdev", "mlx5_0\n");
	wfile(d, "abi_version", "1\n");
	wfile(d, "dev", "1:3\n"); /* /dev/null's numbers: open() hands out /dev/null */
	snprintf(d, sizeof(d), "%s/class/infiniband/mlx5_0/device", root);
	mkdirs(d);
	wfile(d, "modalias", "pci:v000015B3d00001017sv000015B3sd00000008bc02sc00i00\n");
	snprintf(d, sizeof(d), "%s/class/infiniband/mlx5_0", root);
	wfile(d, "node_type", "1: CA\n");
	wfile(d, "node_guid", "0002:c903:0000:0001\n");
	wfile(d, "fw_ver", "16.35.1012\n");
	setenv("SYSFS_PATH", root, 1);
}

/* ---------------------------------------------------------------- the verbs objects */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *cq;
static struct ibv_qp *rc, *ud;
static struct ibv_ah *ah;
static struct mlx5dv_qp drc, dud;
static struct ibv_qp_cap caprc, capud; /* the capabilities libmlx5 reported back */
static struct mlx5dv_cq dcq;
static uint32_t cq_n; /* CQEs written (= consumed) so far */
static unsigned char payload[256];

#define CQ_SIZE 256

static void die(const char *what)
{
	fprintf(stderr, "libmlx5emu: %s failed: %s\n", what, strerror(errno));
	exit(1);
}

/* make_qp creates a QP in RTS: with ibv_create_qp, or, for send_ops != 0, with ibv_create_qp_ex and those
 * send_ops_flags (an extended QP, posted with ibv_wr_*). */
static struct ibv_qp *make_qp_ops(enum ibv_qp_type type, struct mlx5dv_qp *dv, struct ibv_qp_cap *cap, uint64_t send_ops)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 1,
			.max_inline_data = 128},
	};
	struct ibv_qp_attr a = {0};
	struct mlx5dv_obj o = {0};
	struct ibv_qp *qp;

	if (send_ops) {
		struct ibv_qp_init_attr_ex ix = {
			.send_cq = cq, .recv_cq = cq, .qp_type = type, .cap = ia.cap, .pd = pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .send_ops_flags = send_ops,
		};
		qp = ibv_create_qp_ex(ctx, &ix);
		if (!qp)
			die("ibv_create_qp_ex");
		ia.cap = ix.cap;
	} else {
		qp = ibv_create_qp(pd, &ia);
		if (!qp)
			die("ibv_create_qp");
	}
	*cap = ia.cap;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (type == IBV_QPT_RC) {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("modify INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = 0x4567;
		a.rq_psn = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.dlid = 2;
		a.ah_attr.port_num = 1;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("modify RTR");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 1;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			die("modify RTS");
	} else {
		a.qkey = 0x11111111;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
			die("modify INIT");
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			die("modify RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			die("modify RTS");
	}
	o.qp.in = qp;
	o.qp.out = dv;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP))
		die("mlx5dv_init_obj(QP)");
	/* A clean ring, so that bytes libmlx5 does not write compare as zero on both sides. */
	memset(dv->sq.buf, 0, dv->sq.wqe_cnt * dv->sq.stride);
	memset(dv->rq.buf, 0, dv->rq.wqe_cnt * dv->rq.stride);
	return qp;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, struct mlx5dv_qp *dv, struct ibv_qp_cap *cap)
{
	return make_qp_ops(type, dv, cap, 0);
}

static void setup(void)
{
	struct ibv_device **list;
	struct mlx5dv_obj o = {0};
	int n;

	make_sysfs();
	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "libmlx5emu: libibverbs found no device in the fake sysfs (is ibverbs-providers' "
				"libmlx5 installed?)\n");
		exit(3);
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	if (!mlx5dv_is_supported(list[0])) {
		fprintf(stderr, "libmlx5emu: the device is not driven by libmlx5\n");
		exit(3);
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	for (int i = 0; i < 256; i++)
		payload[i] = i * 7 + 3;
	mr = ibv_reg_mr(pd, payload, sizeof(payload), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	cq = ibv_create_cq(ctx, CQ_SIZE - 1, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	o.cq.in = cq;
	o.cq.out = &dcq;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ))
		die("mlx5dv_init_obj(CQ)");
	if (dcq.cqe_cnt != CQ_SIZE || dcq.cqe_size != 64) {
		fprintf(stderr, "libmlx5emu: CQ of %u CQEs of %u bytes, want %u of 64\n", dcq.cqe_cnt, dcq.cqe_size,
			CQ_SIZE);
		exit(1);
	}
	rc = make_qp(IBV_QPT_RC, &drc, &caprc);
	ud = make_qp(IBV_QPT_UD, &dud, &capud);
	struct ibv_ah_attr aa = {.dlid = 0x1234, .sl = 3, .src_path_bits = 0, .port_num = 1};
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah");
}

/* put_cqe writes the next CQE the way the device would: into slot cq_n % CQ_SIZE with the owner bit of pass
 * cq_n / CQ_SIZE (the format of the hw package's putCQE). */
static void put_cqe(uint32_t n, uint8_t opcode, uint8_t wqe_opcode, uint32_t qpn, uint32_t uidx,
		    uint16_t wqe_counter, uint32_t byte_cnt)
{
	struct mlx5_cqe64 *e = (void *)((char *)dcq.buf + (n % CQ_SIZE) * 64);

	memset(e, 0, 64);
	e->srqn_uidx = htobe32(uidx);
	e->byte_cnt = htobe32(byte_cnt);
	e->sop_drop_qpn = htobe32((uint32_t)wqe_opcode << 24 | qpn);
	e->wqe_counter = htobe16(wqe_counter);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->op_own = opcode << 4 | ((n / CQ_SIZE) & 1);
}

static void consume(int want)
{
	struct ibv_wc wc[16];
	int got = 0;

	while (got < want) {
		int n = ibv_poll_cq(cq, want - got > 16 ? 16 : want - got, wc);
		if (n <= 0) {
			fprintf(stderr, "libmlx5emu: poll returned %d after %d of %d CQEs\n", n, got, want);
			exit(1);
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "libmlx5emu: completion status %d\n", wc[i].status);
				exit(1);
			}
		got += n;
	}
}

/* retire_sq completes the send queue up to WQE index idx with one requester CQE (libmlx5 retires every WQE up to
 * the one a CQE names). */
static void retire_sq_of(struct ibv_qp *qp, uint32_t uidx, uint16_t idx)
{
	put_cqe(cq_n++, MLX5_CQE_REQ, MLX5_OPCODE_SEND, qp->qp_num, uidx, idx, 0);
	consume(1);
}

static void retire_sq(uint16_t idx) { retire_sq_of(rc, qp_uidx[0], idx); }

static void retire_rq(int k)
{
	for (int i = 0; i < k; i++)
		put_cqe(cq_n++, MLX5_CQE_RESP_SEND, 0, rc->qp_num, qp_uidx[0], 0, 64);
	consume(k);
}

/* ---------------------------------------------------------------- the work-request streams */

static struct ibv_sge sge_inline, sge1;
static struct ibv_send_wr wr_inline, wr_db, wr_list[16], wr_ud;
static struct ibv_recv_wr wr_recv;
static struct ibv_sge sge_recv;

static void make_wrs(void)
{
	sge_inline = (struct ibv_sge){.addr = (uintptr_t)payload, .length = 32, .lkey = mr->lkey};
	sge1 = (struct ibv_sge){.addr = 0x00007f0011223340, .length = 0x1000, .lkey = 0x11223344};
	wr_inline = (struct ibv_send_wr){.wr_id = 1, .sg_list = &sge_inline, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	wr_db = (struct ibv_send_wr){.wr_id = 1, .sg_list = &sge1, .num_sge = 1, .opcode = IBV_WR_SEND,
				     .send_flags = IBV_SEND_SIGNALED};
	for (int i = 0; i < 16; i++) {
		wr_list[i] = (struct ibv_send_wr){.wr_id = i, .sg_list = &sge1, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE, .next = i < 15 ? &wr_list[i + 1] : NULL};
		wr_list[i].wr.rdma.remote_addr = 0x1000;
		wr_list[i].wr.rdma.rkey = 7;
	}
	wr_list[15].send_flags = IBV_SEND_SIGNALED;
	wr_ud = (struct ibv_send_wr){.wr_id = 2, .sg_list = &sge_inline, .num_sge = 1, .opcode = IBV_WR_SEND,
				     .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	wr_ud.wr.ud.ah = ah;
	wr_ud.wr.ud.remote_qpn = 0x4567;
	wr_ud.wr.ud.remote_qkey = 0x11111111;
	sge_recv = (struct ibv_sge){.addr = 0x00007f0011223340, .length = 0x1000, .lkey = 0x11223344};
	wr_recv = (struct ibv_recv_wr){.wr_id = 1, .sg_list = &sge_recv, .num_sge = 1};
}

/* The measured operations: callgrind collects inside op_* only (--toggle-collect=op_*). */
__attribute__((noinline)) int op_post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, wr, &bad);
}

__attribute__((noinline)) int op_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad;
	return ibv_post_recv(qp, wr, &bad);
}

__attribute__((noinline)) int op_poll(struct ibv_cq *c, int n, struct ibv_wc *wc) { return ibv_poll_cq(c, n, wc); }

/* The extended API's streams (count/time modes wr-*): the inline, doorbell and list16 streams built with
 * ibv_wr_* on the extended QP, one chain per call. */
__attribute__((noinline)) int op_wr_inline(struct ibv_qp_ex *q)
{
	ibv_wr_start(q);
	q->wr_id = 1, q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_inline_data(q, payload, 32);
	return ibv_wr_complete(q);
}

__attribute__((noinline)) int op_wr_doorbell(struct ibv_qp_ex *q)
{
	ibv_wr_start(q);
	q->wr_id = 1, q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x1000);
	return ibv_wr_complete(q);
}

__attribute__((noinline)) int op_wr_list16(struct ibv_qp_ex *q)
{
	ibv_wr_start(q);
	for (int i = 0; i < 16; i++) {
		q->wr_id = i, q->wr_flags = i == 15 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_rdma_write(q, 7, 0x1000);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x1000);
	}
	return ibv_wr_complete(q);
}

/* op_pollex reads up to n completions with ibv_start_poll / ibv_next_poll / ibv_end_poll; of each it reads
 * wr_id, status, opcode and byte_len (the Go side reads the same fields of its WC). It returns how many it read
 * (the sum of the fields in *sum), or -1 for a failed completion. */
__attribute__((noinline)) int op_pollex(struct ibv_cq_ex *c, int n, uint64_t *sum)
{
	struct ibv_poll_cq_attr a = {0};
	uint64_t s = 0;
	int got = 0;

	if (ibv_start_poll(c, &a))
		return 0;
	do {
		if (c->status != IBV_WC_SUCCESS) {
			got = -1;
			break;
		}
		s += c->wr_id + ibv_wc_read_opcode(c) + ibv_wc_read_byte_len(c);
		got++;
	} while (got < n && ibv_next_poll(c) == 0);
	ibv_end_poll(c);
	*sum += s;
	return got;
}

/* ---------------------------------------------------------------- dump mode */

static void hex(const char *name, const void *p, size_t n)
{
	printf("%s ", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", ((const unsigned char *)p)[i]);
	printf("\n");
}

static uint32_t sq_pi(struct mlx5dv_qp *d) { return be32toh(d->dbrec[MLX5_SND_DBR]); }

/* dump_posted prints what a post wrote from SQ producer index from on: the WQE blocks (unwrapped: no stream
 * here wraps the ring), the doorbell record and the BlueFlame register (cleared before the post). */
static void dump_posted(const char *name, struct mlx5dv_qp *d, uint32_t from)
{
	char n[128];
	uint32_t to = sq_pi(d);

	snprintf(n, sizeof(n), "%s.wqe", name);
	hex(n, (char *)d->sq.buf + (from % d->sq.wqe_cnt) * 64, (to - from) * 64);
	snprintf(n, sizeof(n), "%s.dbr", name);
	hex(n, d->dbrec, 8);
	snprintf(n, sizeof(n), "%s.bf", name);
	hex(n, d->bf.reg, 2 * d->bf.size);
}

static void dump_send(const char *name, struct ibv_qp *qp, struct mlx5dv_qp *d, struct ibv_send_wr *wr)
{
	uint32_t from = sq_pi(d);

	memset(d->bf.reg, 0, 2 * d->bf.size);
	if (op_post(qp, wr)) {
		fprintf(stderr, "libmlx5emu: ibv_post_send(%s) failed\n", name);
		exit(1);
	}
	dump_posted(name, d, from);
}

static void dump(void)
{
	printf("rc.qpn %u\nrc.sq_wqe_cnt %u\nrc.rq_wqe_cnt %u\nrc.rq_stride %u\nrc.bf_size %u\n", rc->qp_num,
	       drc.sq.wqe_cnt, drc.rq.wqe_cnt, drc.rq.stride, drc.bf.size);
	printf("ud.qpn %u\nud.sq_wqe_cnt %u\nud.bf_size %u\n", ud->qp_num, dud.sq.wqe_cnt, dud.bf.size);
	printf("rc.cap %u %u %u %u %u\nud.cap %u %u %u %u %u\n", caprc.max_send_wr, caprc.max_recv_wr,
	       caprc.max_send_sge, caprc.max_recv_sge, caprc.max_inline_data, capud.max_send_wr, capud.max_recv_wr,
	       capud.max_send_sge, capud.max_recv_sge, capud.max_inline_data);
	printf("lkey %u\npayload %lu\n", mr->lkey, (unsigned long)(uintptr_t)payload);
	dump_send("inline", rc, &drc, &wr_inline);
	dump_send("doorbell", rc, &drc, &wr_db);
	dump_send("list16", rc, &drc, wr_list);
	dump_send("ud_inline", ud, &dud, &wr_ud);
	if (op_recv(rc, &wr_recv)) {
		fprintf(stderr, "libmlx5emu: ibv_post_recv failed\n");
		exit(1);
	}
	hex("recv.wqe", drc.rq.buf, drc.rq.stride);
	hex("recv.dbr", drc.dbrec, 8);
}

/* ---------------------------------------------------------------- wrdump mode */

/* Work-request chains posted with libibverbs' extended QP API (ibv_wr_start ... ibv_wr_complete, libmlx5's
 * mlx5_send_wr_*) on extended RC and UD QPs; the same dump as dump mode. The Go side (the hw package's
 * TestLibmlx5WRBuilder) posts the SendWR lists goverbs' work-request builder makes for the same calls. */
static struct ibv_qp *rcx, *udx;
static struct mlx5dv_qp drcx, dudx;

static void wr_seq(struct ibv_qp_ex *q, int seq)
{
	struct ibv_sge sl[2] = {{.addr = 0x00007f0011223340, .length = 0x100, .lkey = 0x11223344},
				{.addr = 0x00007f0011225000, .length = 0x80, .lkey = 0x11223355}};
	struct ibv_data_buf db[2] = {{payload, 16}, {payload + 16, 24}};

	switch (seq) {
	case 0: /* wr_send */
		q->wr_id = 1, q->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(q);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x1000);
		break;
	case 1: /* wr_chain3: the closing note's three-WR chain */
		q->wr_id = 11, q->wr_flags = 0;
		ibv_wr_rdma_write(q, 7, 0x1000);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x1000);
		q->wr_id = 12, q->wr_flags = 0;
		ibv_wr_send_imm(q, htobe32(0x1234));
		ibv_wr_set_inline_data(q, payload, 32);
		q->wr_id = 13, q->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(q, 7, 0x2000);
		ibv_wr_set_sge_list(q, 2, sl);
		break;
	case 2: /* wr_atomics */
		q->wr_id = 21, q->wr_flags = 0;
		ibv_wr_atomic_cmp_swp(q, 9, 0x3000, 5, 6);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 8);
		q->wr_id = 22, q->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(q, 9, 0x3008, 3);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223348, 8);
		break;
	case 3: /* wr_inv (LOCAL_INV and BIND_MW are UMR WQEs, which goverbs' mlx5 does not build) */
		q->wr_id = 31, q->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_inv(q, 0x77);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x40);
		break;
	case 4: /* wr_write_imm_list: inline data from two buffers */
		q->wr_id = 41, q->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
		ibv_wr_rdma_write_imm(q, 7, 0x1000, htobe32(0xabcd));
		ibv_wr_set_inline_data_list(q, 2, db);
		break;
	case 5: /* wr_ud */
		q->wr_id = 51, q->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(q, htobe32(0x55));
		ibv_wr_set_ud_addr(q, ah, 0x4567, 0x11111111);
		ibv_wr_set_sge(q, 0x11223344, 0x00007f0011223340, 0x200);
		break;
	}
}

static void dump_wr(const char *name, struct ibv_qp *qp, struct mlx5dv_qp *d, int seq)
{
	struct ibv_qp_ex *q = ibv_qp_to_qp_ex(qp);
	uint32_t from = sq_pi(d);

	memset(d->bf.reg, 0, 2 * d->bf.size);
	ibv_wr_start(q);
	wr_seq(q, seq);
	if (ibv_wr_complete(q)) {
		fprintf(stderr, "libmlx5emu: ibv_wr_complete(%s) failed\n", name);
		exit(1);
	}
	dump_posted(name, d, from);
}

static void wrdump(void)
{
	struct ibv_qp_cap c;
	const uint64_t rc_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV |
				IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

	rcx = make_qp_ops(IBV_QPT_RC, &drcx, &c, rc_ops);
	printf("rcx.qpn %u\nrcx.sq_wqe_cnt %u\nrcx.cap %u %u %u %u %u\n", rcx->qp_num, drcx.sq.wqe_cnt,
	       c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge, c.max_inline_data);
	udx = make_qp_ops(IBV_QPT_UD, &dudx, &c, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	printf("udx.qpn %u\nudx.sq_wqe_cnt %u\nudx.cap %u %u %u %u %u\n", udx->qp_num, dudx.sq.wqe_cnt,
	       c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge, c.max_inline_data);
	printf("bf_size %u\npayload %lu\n", drcx.bf.size, (unsigned long)(uintptr_t)payload);
	dump_wr("wr_send", rcx, &drcx, 0);
	dump_wr("wr_chain3", rcx, &drcx, 1);
	dump_wr("wr_atomics", rcx, &drcx, 2);
	dump_wr("wr_inv", rcx, &drcx, 3);
	dump_wr("wr_write_imm_list", rcx, &drcx, 4);
	dump_wr("wr_ud", udx, &dudx, 5);
}

/* ---------------------------------------------------------------- extdump mode */

static void dump_last(const char *name)
{
	char n[128];

	printf("%s.cmd %u\n%s.ex %d\n", name, last.cmd, name, last.ex);
	snprintf(n, sizeof(n), "%s.core", name);
	if (last.core_len)
		hex(n, last.core, last.core_len);
	snprintf(n, sizeof(n), "%s.drv", name);
	if (last.drv_len)
		hex(n, last.drv, last.drv_len);
	printf("%s.out_words %u\n%s.drv_out_words %u\n", name, last.out_words, name, last.drv_out_words);
}

/* A fresh RC QP in RESET: its creation's driver data, then ECE on its first modify. */
static void extdump(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_ece ece = {0};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_qp_rate_limit_attr rl = {.rate_limit = 1000000};
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	struct ibv_mr *nmr;
	int before;

	if (!qp)
		die("ibv_create_qp");
	printf("create.ece_options %u\n", ((const struct mlx5_ib_create_qp *)last.drv)->ece_options);
	if (ibv_query_ece(qp, &ece))
		die("ibv_query_ece");
	printf("created.vendor %u\ncreated.options %u\n", ece.vendor_id, ece.options);

	ece = (struct ibv_ece){.vendor_id = 0x15b3, .options = 0x10000005};
	printf("set_ece.ret %d\n", ibv_set_ece(qp, &ece));
	if (ibv_query_ece(qp, &ece))
		die("ibv_query_ece");
	printf("pending.options %u\n", ece.options);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT (ECE)");
	dump_last("ece_modify");
	if (ibv_query_ece(qp, &ece))
		die("ibv_query_ece");
	printf("modified.options %u\n", ece.options);
	a.qp_state = IBV_QPS_INIT;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("modify INIT (no ECE)");
	dump_last("plain_modify");
	ece = (struct ibv_ece){.vendor_id = 0x1234, .options = 1};
	printf("set_ece_vendor.ret %d\n", ibv_set_ece(qp, &ece));
	ece = (struct ibv_ece){.vendor_id = 0, .options = 1};
	printf("set_ece_zero.ret %d\n", ibv_set_ece(qp, &ece));
	ece = (struct ibv_ece){.vendor_id = 0x15b3, .options = 1, .comp_mask = 1};
	printf("set_ece_mask.ret %d\n", ibv_set_ece(qp, &ece));

	printf("rate.ret %d\n", ibv_modify_qp_rate_limit(qp, &rl));
	dump_last("rate");
	rl = (struct ibv_qp_rate_limit_attr){.rate_limit = 1000000, .max_burst_sz = 4096, .typical_pkt_sz = 1024};
	printf("rate_burst.ret %d\n", ibv_modify_qp_rate_limit(qp, &rl));
	rl = (struct ibv_qp_rate_limit_attr){.max_burst_sz = 4096};
	printf("rate_burst_norate.ret %d\n", ibv_modify_qp_rate_limit(qp, &rl));
	rl = (struct ibv_qp_rate_limit_attr){.rate_limit = 1, .comp_mask = 1};
	printf("rate_mask.ret %d\n", ibv_modify_qp_rate_limit(qp, &rl));

	if (!clock_page) {
		fprintf(stderr, "libmlx5emu: libmlx5 mapped no clock page\n");
		exit(1);
	}
	{
		uint32_t hi = htobe32(0x00000012), lo = htobe32(0x3456789a);
		memcpy(clock_page + (EXT_CLOCK_OFFSET & 4095), &hi, 4);
		memcpy(clock_page + (EXT_CLOCK_OFFSET & 4095) + 4, &lo, 4);
	}
	before = ncmds;
	printf("clock.ret %d\n", ibv_query_rt_values_ex(ctx, &v));
	printf("clock.mask %u\nclock.sec %ld\nclock.nsec %ld\nclock.cmds %d\n", v.comp_mask, (long)v.raw_clock.tv_sec,
	       (long)v.raw_clock.tv_nsec, ncmds - before);
	v.comp_mask = IBV_VALUES_MASK_RESERVED;
	printf("clock_mask.ret %d\n", ibv_query_rt_values_ex(ctx, &v));

	before = ncmds;
	nmr = ibv_alloc_null_mr(pd);
	if (!nmr)
		die("ibv_alloc_null_mr");
	printf("null.lkey %u\nnull.rkey %u\nnull.addr %lu\nnull.length %zu\nnull.cmds %d\n", nmr->lkey, nmr->rkey,
	       (unsigned long)(uintptr_t)nmr->addr, nmr->length, ncmds - before);
	before = ncmds;
	if (ibv_dereg_mr(nmr))
		die("ibv_dereg_mr(null MR)");
	printf("null_dereg.cmds %d\n", ncmds - before);
	ibv_destroy_qp(qp);
}

/* ---------------------------------------------------------------- wqdump mode */

/* A receive WQ of 5 WRs of 3 SGEs on the CQ: its creation, the move to RDY (and one whose expected state is
 * wrong), a flags change, three receives (the last with more SGEs than a WQE holds), an indirection table
 * listing it twice, the destroys, and a WQ of no WRs. */
static void wqdump(void)
{
	struct ibv_wq_init_attr wa = {.wq_type = IBV_WQT_RQ, .max_wr = 5, .max_sge = 3, .pd = pd, .cq = cq};
	struct ibv_wq_attr a = {.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE, .wq_state = IBV_WQS_RDY,
				.curr_wq_state = IBV_WQS_RESET};
	struct ibv_sge s[5] = {{0x10002000, 100, 0x1111}, {0x10003000, 0, 0x2222}, {0x10004000, 300, 0x3333},
			       {0x10005000, 64, 0x4444}, {0x10006000, 8, 0x5555}};
	struct ibv_recv_wr w[3] = {{.wr_id = 1, .sg_list = s, .num_sge = 3, .next = &w[1]},
				   {.wr_id = 2, .sg_list = s + 3, .num_sge = 1, .next = &w[2]},
				   {.wr_id = 3, .sg_list = s, .num_sge = 5}};
	struct ibv_recv_wr *bad = NULL;
	struct mlx5dv_rwq drwq;
	struct mlx5dv_obj o = {0};
	struct ibv_rwq_ind_table *t;
	struct ibv_wq *wq, *tbl[2];
	struct ibv_rwq_ind_table_init_attr ia = {.log_ind_tbl_size = 1, .ind_tbl = tbl};
	const struct mlx5_ib_create_wq *d;
	int ret;

	printf("wq.prior_qps %d\n", nqp);
	wq = ibv_create_wq(ctx, &wa);
	if (!wq)
		die("ibv_create_wq");
	dump_last("wq_create");
	d = (const void *)last.drv;
	printf("wq_create.wqe_count %u\nwq_create.wqe_shift %u\nwq_create.user_index %u\nwq_create.flags %u\n"
	       "wq_create.comp_mask %u\nwq_create.buf_page_offset %lu\n", d->rq_wqe_count, d->rq_wqe_shift,
	       d->user_index, d->flags, d->comp_mask, (unsigned long)(d->buf_addr % 4096));
	printf("wq.max_wr %u\nwq.max_sge %u\nwq.wq_num %u\nwq.state %d\n", wa.max_wr, wa.max_sge, wq->wq_num, wq->state);
	o.rwq.in = wq;
	o.rwq.out = &drwq;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_RWQ))
		die("mlx5dv_init_obj(RWQ)");
	printf("rwq.wqe_cnt %u\nrwq.stride %u\nrwq.addrs_match %d\n", drwq.wqe_cnt, drwq.stride,
	       (uintptr_t)drwq.buf == d->buf_addr && (uintptr_t)drwq.dbrec == d->db_addr);

	printf("wq_modify.ret %d\n", ibv_modify_wq(wq, &a));
	dump_last("wq_modify");
	printf("wq.state_after %d\n", wq->state);
	printf("wq_modify_cur.ret %d\n", ibv_modify_wq(wq, &a));
	a = (struct ibv_wq_attr){.attr_mask = IBV_WQ_ATTR_FLAGS, .flags = IBV_WQ_FLAGS_SCATTER_FCS,
				 .flags_mask = IBV_WQ_FLAGS_SCATTER_FCS | IBV_WQ_FLAGS_CVLAN_STRIPPING};
	printf("wq_flags.ret %d\n", ibv_modify_wq(wq, &a));
	dump_last("wq_flags");
	a.flags_mask = IBV_WQ_FLAGS_RESERVED;
	printf("wq_flags_unknown.ret %d\n", ibv_modify_wq(wq, &a));
	a.attr_mask = IBV_WQ_ATTR_RESERVED;
	printf("wq_mask_unknown.ret %d\n", ibv_modify_wq(wq, &a));

	ret = ibv_post_wq_recv(wq, w, &bad);
	printf("post.ret %d\npost.bad %d\n", ret, bad ? (int)bad->wr_id : 0);
	hex("post.ring", drwq.buf, drwq.wqe_cnt * drwq.stride);
	printf("post.dbrec %u\n", be32toh(drwq.dbrec[0]));

	tbl[0] = tbl[1] = wq;
	t = ibv_create_rwq_ind_table(ctx, &ia);
	if (!t)
		die("ibv_create_rwq_ind_table");
	dump_last("ind_create");
	printf("ind.handle %u\nind.num %u\n", t->ind_tbl_handle, t->ind_tbl_num);
	if (ibv_destroy_rwq_ind_table(t))
		die("ibv_destroy_rwq_ind_table");
	dump_last("ind_destroy");
	if (ibv_destroy_wq(wq))
		die("ibv_destroy_wq");
	dump_last("wq_destroy");
	wa.max_wr = 0;
	errno = 0;
	wq = ibv_create_wq(ctx, &wa);
	printf("wq_zero.errno %d\n", wq ? 0 : errno);
}

/* ---------------------------------------------------------------- dmdump mode */

/* The last ioctl's attributes: "id:len:flags:value" each, the value an input's inline data, or "out" for an
 * output (a new object's handle, a pointer the kernel writes). */
static void dump_io(const char *name, const uint16_t *outs, int nouts)
{
	printf("%s.object %d\n%s.method %d\n%s.attrs ", name, lastio.object, name, lastio.method, name);
	for (int i = 0; i < lastio.n; i++) {
		const struct ib_uverbs_attr *a = &lastio.a[i];
		int out = 0;

		for (int j = 0; j < nouts; j++)
			out |= a->attr_id == outs[j];
		if (out)
			printf("%s%u:%u:%u:out", i ? "," : "", a->attr_id, a->len, a->flags);
		else
			printf("%s%u:%u:%u:%llu", i ? "," : "", a->attr_id, a->len, a->flags, (unsigned long long)a->data);
	}
	printf("\n");
}

/* 5000 bytes aligned to 8: the allocation, the mapping, copies in and out (and the ones libmlx5 refuses), an MR
 * on 256 bytes from 16 (and the rights it refuses), the frees, and a request past max_dm_size; then a dma-buf
 * MR and an imported DM. */
static void dmdump(void)
{
	static const uint16_t alloc_outs[] = {UVERBS_ATTR_ALLOC_DM_HANDLE, MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET,
					      MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX};
	static const uint16_t mr_outs[] = {UVERBS_ATTR_REG_DM_MR_HANDLE, UVERBS_ATTR_REG_DM_MR_RESP_LKEY,
					   UVERBS_ATTR_REG_DM_MR_RESP_RKEY};
	static const uint16_t dmabuf_outs[] = {UVERBS_ATTR_REG_DMABUF_MR_HANDLE, UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY,
					       UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY};
	static const uint16_t import_outs[] = {MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX,
					       MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH};
	struct ibv_alloc_dm_attr a = {.length = 5000, .log_align_req = 3};
	unsigned char src[64], dst[64];
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	int before;

	for (int i = 0; i < 64; i++)
		src[i] = i * 3 + 1;
	before = ncmds;
	dm = ibv_alloc_dm(ctx, &a);
	if (!dm)
		die("ibv_alloc_dm");
	dump_io("dm_alloc", alloc_outs, 3);
	printf("dm_alloc.cmds %d\ndm.handle %u\n", ncmds - before, dm->handle);
	printf("dm.mmap_off %lld\ndm.mmap_len %zu\n", (long long)dm_off, dm_len);
	printf("to.ret %d\n", ibv_memcpy_to_dm(dm, 8, src, 64));
	hex("to.page", dm_page + (DM_START_OFFSET & 4095), 80);
	memset(dst, 0, sizeof(dst));
	printf("from.ret %d\n", ibv_memcpy_from_dm(dst, dm, 8, 64));
	hex("from.data", dst, 64);
	printf("to_unaligned_off.ret %d\n", ibv_memcpy_to_dm(dm, 2, src, 4));
	printf("to_unaligned_len.ret %d\n", ibv_memcpy_to_dm(dm, 4, src, 6));
	printf("to_past_end.ret %d\n", ibv_memcpy_to_dm(dm, 4996, src, 8));
	printf("from_past_end.ret %d\n", ibv_memcpy_from_dm(dst, dm, 4992, 12));

	mr = ibv_reg_dm_mr(pd, dm, 16, 256, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_dm_mr");
	dump_io("dm_mr", mr_outs, 3);
	printf("dm_mr.lkey %u\ndm_mr.rkey %u\ndm_mr.addr %lu\ndm_mr.length %zu\n", mr->lkey, mr->rkey,
	       (unsigned long)(uintptr_t)mr->addr, mr->length);
	errno = 0;
	printf("dm_mr_based.errno %d\n", ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE) ? 0 : errno);
	errno = 0;
	printf("dm_mr_bind.errno %d\n",
	       ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND) ? 0 : errno);
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr(DM MR)");
	if (ibv_free_dm(dm))
		die("ibv_free_dm");
	dump_io("dm_free", NULL, 0);
	a.length = DM_MAX_SIZE + 1;
	before = ncmds;
	errno = 0;
	dm = ibv_alloc_dm(ctx, &a);
	printf("dm_big.errno %d\ndm_big.cmds %d\n", dm ? 0 : errno, ncmds - before);

	/* A dma-buf MR: 8192 bytes from 4096 of dma-buf fd 77 (a number only: the fake kernel imports nothing) at
	 * I/O virtual address 0x7f0000001000, LOCAL_WRITE|REMOTE_READ. */
	mr = ibv_reg_dmabuf_mr(pd, 4096, 8192, 0x7f0000001000ULL, 77, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_dmabuf_mr");
	dump_io("dmabuf_mr", dmabuf_outs, 3);
	printf("dmabuf_mr.handle %u\ndmabuf_mr.lkey %u\ndmabuf_mr.rkey %u\ndmabuf_mr.addr %lu\ndmabuf_mr.length %zu\n",
	       mr->handle, mr->lkey, mr->rkey, (unsigned long)(uintptr_t)mr->addr, mr->length);
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr(dma-buf MR)");

	/* Device memory of handle DM_HANDLE imported: libmlx5's query, the page it maps, where a copy lands. */
	before = ncmds;
	dm = ibv_import_dm(ctx, DM_HANDLE);
	if (!dm)
		die("ibv_import_dm");
	dump_io("dm_import", import_outs, 3);
	printf("dm_import.cmds %d\ndm_import.handle %u\n", ncmds - before, dm->handle);
	printf("dm_import.mmap_off %lld\ndm_import.mmap_len %zu\n", (long long)dm_off, dm_len);
	printf("import_to.ret %d\n", ibv_memcpy_to_dm(dm, IMPORT_DM_LENGTH - 16, src, 16));
	hex("import_to.page", dm_page + (DM_START_OFFSET & 4095) + IMPORT_DM_LENGTH - 16, 16);
	printf("import_past_end.ret %d\n", ibv_memcpy_to_dm(dm, IMPORT_DM_LENGTH - 8, src, 16));
	before = ncmds;
	ibv_unimport_dm(dm);
	printf("dm_unimport.cmds %d\n", ncmds - before);
}

/* ---------------------------------------------------------------- count and time modes */

/* The loops are those of the hw package's BenchmarkLibmlx5 (libmlx5_bench_test.go): the operations are timed in
 * batches (32 posts, 4 lists of 16, 16 polls = one pass over the CQ) with CLOCK_MONOTONIC, minus the cost of an
 * empty timed batch; retiring the posted WQEs (a CQE written and polled) and the device's owner-bit flips happen
 * between batches, outside the timing and outside callgrind's collection (op_* only). */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double timer_cost(void)
{
	double t, sum = 0;
	for (int i = 0; i < 10000; i++) {
		t = now();
		sum += now() - t;
	}
	return sum / 10000;
}

#define BATCH 32 /* posts between retirements (the queues hold 64 and more) */
#define LISTS 4  /* lists of 16 between retirements */

/* run_ex runs the extended API's operations (wr-*, pollex-*): the loops of run's inline/doorbell/list16 and
 * pollsend/pollrecv, on an extended RC QP (made here, after setup's QPs, so the other operations' objects are
 * unchanged) and on an extended CQ. */
static double run_ex(const char *op, long n, double tc)
{
	double ns = 0, t;
	long done = 0;

	if (!strncmp(op, "wr-", 3)) {
		struct ibv_qp_cap c;
		struct mlx5dv_qp d;
		struct ibv_qp *qp = make_qp_ops(IBV_QPT_RC, &d, &c, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
		struct ibv_qp_ex *q = ibv_qp_to_qp_ex(qp);
		uint32_t uidx = qp_uidx[nqp - 1];
		uint16_t idx = sq_pi(&d);
		int (*f)(struct ibv_qp_ex *) = NULL;
		long per = 1, batch = BATCH;

		if (!strcmp(op, "wr-inline"))
			f = op_wr_inline;
		else if (!strcmp(op, "wr-doorbell"))
			f = op_wr_doorbell;
		else if (!strcmp(op, "wr-list16"))
			f = op_wr_list16, per = 16, batch = LISTS;
		if (!f) {
			fprintf(stderr, "libmlx5emu: unknown operation %s\n", op);
			exit(2);
		}
		while (done < n) {
			long k = n - done < batch ? n - done : batch;
			t = now();
			for (long i = 0; i < k; i++)
				if (f(q))
					die("ibv_wr_complete");
			ns += now() - t - tc;
			idx += k * per;
			done += k;
			retire_sq_of(qp, uidx, idx - 1);
		}
		return ns / (n * per);
	}
	if (!strcmp(op, "pollex-send") || !strcmp(op, "pollex-recv")) { /* n polls of 16: ns per CQE */
		const char *st = getenv("MLX5_SINGLE_THREADED");
		int recv = op[7] == 'r';
		struct ibv_cq_init_attr_ex ca = {.cqe = CQ_SIZE - 1, .wc_flags = IBV_WC_STANDARD_FLAGS,
						 .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS};
		struct mlx5dv_obj o = {0};
		struct mlx5dv_cq dc;
		struct ibv_cq_ex *cx;
		uint64_t sum = 0;

		if (st && !strcmp(st, "1"))
			ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
		cx = ibv_create_cq_ex(ctx, &ca);
		if (!cx)
			die("ibv_create_cq_ex");
		o.cq.in = ibv_cq_ex_to_cq(cx);
		o.cq.out = &dc;
		if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ))
			die("mlx5dv_init_obj(CQ ex)");
		if (dc.cqe_cnt != CQ_SIZE || dc.cqe_size != 64) {
			fprintf(stderr, "libmlx5emu: extended CQ of %u CQEs of %u bytes\n", dc.cqe_cnt, dc.cqe_size);
			exit(1);
		}
		dcq = dc; /* put_cqe writes into the extended CQ's ring */
		for (uint32_t i = 0; i < CQ_SIZE; i++) {
			if (recv)
				put_cqe(i, MLX5_CQE_RESP_SEND, 0, rc->qp_num, qp_uidx[0], i, 64);
			else
				put_cqe(i, MLX5_CQE_REQ, MLX5_OPCODE_SEND, rc->qp_num, qp_uidx[0], i, 0);
		}
		while (done < n) {
			long k = n - done < CQ_SIZE / 16 ? n - done : CQ_SIZE / 16;
			int bad = 0;
			t = now();
			for (long i = 0; i < k; i++)
				bad |= op_pollex(cx, 16, &sum) != 16;
			ns += now() - t - tc;
			if (bad) {
				fprintf(stderr, "libmlx5emu: extended poll read fewer than 16 CQEs\n");
				exit(1);
			}
			done += k;
			cq_n += 16 * k;
			if (cq_n % CQ_SIZE == 0) /* the device wrote the next pass */
				for (uint32_t j = 63; j < CQ_SIZE * 64; j += 64)
					((unsigned char *)dcq.buf)[j] ^= 1;
		}
		return ns / (16.0 * n);
	}
	fprintf(stderr, "libmlx5emu: unknown operation %s\n", op);
	exit(2);
}

static double run(const char *op, long n, double tc)
{
	double ns = 0, t;
	uint16_t idx = sq_pi(&drc);
	long done = 0;

	if (!strncmp(op, "wr-", 3) || !strncmp(op, "pollex-", 7))
		return run_ex(op, n, tc);
	if (!strcmp(op, "inline") || !strcmp(op, "doorbell") || !strcmp(op, "list16")) {
		struct ibv_send_wr *w = op[0] == 'i' ? &wr_inline : op[0] == 'd' ? &wr_db : wr_list;
		long per = op[0] == 'l' ? 16 : 1, batch = op[0] == 'l' ? LISTS : BATCH;
		while (done < n) {
			long k = n - done < batch ? n - done : batch;
			t = now();
			for (long i = 0; i < k; i++)
				if (op_post(rc, w))
					die("ibv_post_send");
			ns += now() - t - tc;
			idx += k * per;
			done += k;
			retire_sq(idx - 1);
		}
		return ns / (n * per);
	}
	if (!strcmp(op, "recv")) {
		while (done < n) {
			long k = n - done < BATCH ? n - done : BATCH;
			t = now();
			for (long i = 0; i < k; i++)
				if (op_recv(rc, &wr_recv))
					die("ibv_post_recv");
			ns += now() - t - tc;
			done += k;
			retire_rq(k);
		}
		return ns / n;
	}
	if (!strcmp(op, "pollsend") || !strcmp(op, "pollrecv")) { /* n polls of 16: ns per CQE */
		int recv = op[4] == 'r';
		struct ibv_wc wc[16];
		for (uint32_t i = 0; i < CQ_SIZE; i++) {
			if (recv)
				put_cqe(i, MLX5_CQE_RESP_SEND, 0, rc->qp_num, qp_uidx[0], i, 64);
			else
				put_cqe(i, MLX5_CQE_REQ, MLX5_OPCODE_SEND, rc->qp_num, qp_uidx[0], i, 0);
		}
		while (done < n) {
			long k = n - done < CQ_SIZE / 16 ? n - done : CQ_SIZE / 16;
			int bad = 0;
			t = now();
			for (long i = 0; i < k; i++)
				bad |= op_poll(cq, 16, wc) != 16;
			ns += now() - t - tc;
			if (bad || wc[0].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "libmlx5emu: poll returned fewer than 16 CQEs\n");
				exit(1);
			}
			done += k;
			cq_n += 16 * k;
			if (cq_n % CQ_SIZE == 0) /* the device wrote the next pass */
				for (uint32_t j = 63; j < CQ_SIZE * 64; j += 64)
					((unsigned char *)dcq.buf)[j] ^= 1;
		}
		return ns / (16.0 * n);
	}
	fprintf(stderr, "libmlx5emu: unknown operation %s\n", op);
	exit(2);
}

int main(int argc, char **argv)
{
	trace = getenv("LIBMLX5EMU_TRACE") != NULL;
	ext = argc >= 2 && !strcmp(argv[1], "extdump");
	dmmode = argc >= 2 && !strcmp(argv[1], "dmdump");
	if (argc < 2) {
		fprintf(stderr, "usage: %s dump | wrdump | extdump | wqdump | dmdump | count OP N | time OP N\n", argv[0]);
		return 2;
	}
	setup();
	make_wrs();
	if (!strcmp(argv[1], "dump")) {
		dump();
		return 0;
	}
	if (!strcmp(argv[1], "wrdump")) {
		wrdump();
		return 0;
	}
	if (ext) {
		extdump();
		return 0;
	}
	if (dmmode) {
		dmdump();
		return 0;
	}
	if (!strcmp(argv[1], "wqdump")) {
		wqdump();
		return 0;
	}
	if (argc == 4 && (!strcmp(argv[1], "count") || !strcmp(argv[1], "time"))) {
		double ns = run(argv[2], atol(argv[3]), argv[1][0] == 't' ? timer_cost() : 0);
		if (argv[1][0] == 't')
			printf("ns/op %.3f\n", ns);
		return 0;
	}
	fprintf(stderr, "usage: %s dump | wrdump | extdump | wqdump | dmdump | count OP N | time OP N\n", argv[0]);
	return 2;
}

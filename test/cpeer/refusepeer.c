// refusepeer.c: what libibverbs answers on a device for the calls goverbs refuses there, one "case errno" line
// each (0: the call succeeded; the object is destroyed at once). TestRefusalsMatchLibibverbs
// (test/conformance) runs it with sid's libibverbs (rdma-core 65) and the VM's own (44) on rxe and asserts
// goverbs' counterpart answers the same errno, typed ErrNotSupported where it is EOPNOTSUPP. Built against the
// host's headers (rdma-core 44): every call here is declared there.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(const char *name, int err)
{
	printf("%s %d\n", name, err);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "refusepeer: cannot open %s\n", name);
		exit(1);
	}
	return ctx;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	if (argc != 2) {
		fprintf(stderr, "usage: refusepeer DEVICE\n");
		return 2;
	}
	ctx = open_dev(argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq) {
		fprintf(stderr, "refusepeer: PD or CQ: %s\n", strerror(errno));
		return 1;
	}

	{
		struct ibv_td_init_attr a = {0};
		struct ibv_td *td;

		errno = 0;
		td = ibv_alloc_td(ctx, &a);
		report("alloc_td", td ? 0 : errno);
		if (td)
			ibv_dealloc_td(td);
	}
	{
		struct ibv_parent_domain_init_attr a = {.pd = pd};
		struct ibv_pd *p;

		errno = 0;
		p = ibv_alloc_parent_domain(ctx, &a);
		report("alloc_parent_domain", p ? 0 : errno);
		if (p)
			ibv_dealloc_pd(p);
	}
	{
		struct ibv_xrcd_init_attr a = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1, .oflags = O_CREAT};
		struct ibv_xrcd *x;

		errno = 0;
		x = ibv_open_xrcd(ctx, &a);
		report("open_xrcd", x ? 0 : errno);
		if (x)
			ibv_close_xrcd(x);
	}
	{
		struct ibv_modify_cq_attr a = {.attr_mask = IBV_CQ_ATTR_MODERATE, .moderate = {.cq_count = 1, .cq_period = 1}};

		report("modify_cq", ibv_modify_cq(cq, &a));
	}
	{
		struct ibv_cq_init_attr_ex a = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
		struct ibv_cq_ex *c;

		errno = 0;
		c = ibv_create_cq_ex(ctx, &a);
		report("create_cq_ex_timestamp", c ? 0 : errno);
		if (c)
			ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	}
	{
		struct ibv_cq_init_attr_ex a = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS, .flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN};
		struct ibv_cq_ex *c;

		errno = 0;
		c = ibv_create_cq_ex(ctx, &a);
		report("create_cq_ex_ignore_overrun", c ? 0 : errno);
		if (c)
			ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	}
	{
		struct ibv_qp_init_attr_ex a = {.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .pd = pd,
			.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_TSO};
		struct ibv_qp *q;

		errno = 0;
		q = ibv_create_qp_ex(ctx, &a);
		report("create_qp_ex_tso", q ? 0 : errno);
		if (q)
			ibv_destroy_qp(q);
	}
	{
		/* rdma-core 65's ibv_query_port_speed, reached by dlsym (the host's headers predate it); a library
		 * without it prints nothing for the case. */
		int (*qps)(struct ibv_context *, uint32_t, uint64_t *) =
			(int (*)(struct ibv_context *, uint32_t, uint64_t *))dlsym(RTLD_DEFAULT, "ibv_query_port_speed");
		uint64_t speed = 0;

		if (qps)
			report("query_port_speed", qps(ctx, 1, &speed));
	}
	{
		struct ibv_context *c;

		errno = 0;
		c = ibv_import_device(ctx->cmd_fd);
		report("import_device", c ? 0 : errno);
		if (c)
			ibv_close_device(c);
	}
	{
		struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
			.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
		struct ibv_qp *q = ibv_create_qp(pd, &a);

		if (!q) {
			fprintf(stderr, "refusepeer: QP: %s\n", strerror(errno));
			return 1;
		}
		/* Not an errno: the answer (0, data in order not guaranteed, for a device without the hint). */
		report("query_qp_data_in_order", ibv_query_qp_data_in_order(q, IBV_WR_RDMA_WRITE, 0));
		ibv_destroy_qp(q);
	}
	/* "c:" cases: calls goverbs has no counterpart for ("not yet" in docs/api-coverage.md, whose summary says
	 * libibverbs refuses them on rxe too); the test asserts that libibverbs refuses each. Device memory, the
	 * WQ and the indirection table (of no WQs: libibverbs asks for the provider's op first), the null MR, the
	 * device clock, the rate limit and ECE among them are paired cases (goverbs has them for mlx5 and must
	 * refuse them here as libibverbs does). */
	{
		struct ibv_alloc_dm_attr a = {.length = 4096};
		struct ibv_dm *dm;

		errno = 0;
		dm = ibv_alloc_dm(ctx, &a);
		report("alloc_dm", dm ? 0 : errno);
		if (dm)
			ibv_free_dm(dm);
	}
	{
		/* Device memory of handle 0 (none: the provider's op is asked first). */
		struct ibv_dm *dm;

		errno = 0;
		dm = ibv_import_dm(ctx, 0);
		report("import_dm", dm ? 0 : errno);
		if (dm)
			ibv_unimport_dm(dm);
	}
	{
		struct ibv_counters_init_attr a = {0};
		struct ibv_counters *c;

		errno = 0;
		c = ibv_create_counters(ctx, &a);
		report("c:create_counters", c ? 0 : errno);
		if (c)
			ibv_destroy_counters(c);
	}
	{
		struct ibv_wq_init_attr a = {.wq_type = IBV_WQT_RQ, .max_wr = 4, .max_sge = 1, .pd = pd, .cq = cq};
		struct ibv_wq *wq;

		errno = 0;
		wq = ibv_create_wq(ctx, &a);
		report("create_wq", wq ? 0 : errno);
		if (wq)
			ibv_destroy_wq(wq);
	}
	{
		struct ibv_rwq_ind_table_init_attr a = {.log_ind_tbl_size = 0, .ind_tbl = NULL};
		struct ibv_rwq_ind_table *t;

		errno = 0;
		t = ibv_create_rwq_ind_table(ctx, &a);
		report("create_rwq_ind_table", t ? 0 : errno);
		if (t)
			ibv_destroy_rwq_ind_table(t);
	}
	{
		struct ibv_mr *mr;

		errno = 0;
		mr = ibv_alloc_null_mr(pd);
		report("alloc_null_mr", mr ? 0 : errno);
		if (mr)
			ibv_dereg_mr(mr);
	}
	{
		struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};

		report("query_rt_values_ex", ibv_query_rt_values_ex(ctx, &v));
	}
	{
		/* ESP flow actions: no driver of Linux 6.1 or later implements them (mlx5 was the only one). */
		struct ibv_flow_action_esp_attr a;
		struct ibv_flow_action *fa;

		memset(&a, 0, sizeof(a));
		errno = 0;
		fa = ibv_create_flow_action_esp(ctx, &a);
		report("c:create_flow_action_esp", fa ? 0 : errno);
		if (fa)
			ibv_destroy_flow_action(fa);
	}
	{
		/* Completion counters (rdma-core 65, IBVERBS_1.18; only EFA implements them): reached by dlsym with
		 * the attribute layouts of rdma-core 65's verbs.h, which the host's headers predate; a library without
		 * them prints nothing for the cases. */
		struct cc_caps {
			uint64_t max_value;
			uint32_t max_counters;
			uint32_t supported_qp_attach_ops;
		} caps = {0};
		struct cc_init {
			uint32_t comp_mask;
			uint32_t type;
			uint32_t flags;
		} init = {0};
		int (*query)(struct ibv_context *, struct cc_caps *, size_t) =
			(int (*)(struct ibv_context *, struct cc_caps *, size_t))dlsym(RTLD_DEFAULT, "_ibv_query_comp_cntr_caps");
		void *(*create)(struct ibv_context *, struct cc_init *) =
			(void *(*)(struct ibv_context *, struct cc_init *))dlsym(RTLD_DEFAULT, "ibv_create_comp_cntr");
		int (*destroy)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "ibv_destroy_comp_cntr");

		if (query)
			report("c:query_comp_cntr_caps", query(ctx, &caps, sizeof(caps)));
		if (create && destroy) {
			void *c;

			errno = 0;
			c = create(ctx, &init);
			report("c:create_comp_cntr", c ? 0 : errno);
			if (c)
				destroy(c);
		}
	}
	{
		struct ibv_mr *mr;

		errno = 0;
		mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
		report("reg_dmabuf_mr", mr ? 0 : errno);
		if (mr)
			ibv_dereg_mr(mr);
	}
	{
		struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
			.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
		struct ibv_qp *q = ibv_create_qp(pd, &a);
		struct ibv_qp_rate_limit_attr rl = {.rate_limit = 1000};
		struct ibv_ece ece = {.vendor_id = 0x15b3};

		if (!q) {
			fprintf(stderr, "refusepeer: QP: %s\n", strerror(errno));
			return 1;
		}
		report("modify_qp_rate_limit", ibv_modify_qp_rate_limit(q, &rl));
		report("set_ece", ibv_set_ece(q, &ece));
		report("query_ece", ibv_query_ece(q, &ece));
		ibv_destroy_qp(q);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

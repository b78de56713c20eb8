/*
 * Test-only LD_PRELOAD library: fakes a device behind libibverbs 65's
 * ibv_open_device so that the real ibv_devinfo (and ibstat) print a model the
 * Go test describes (devinfo_c_test.go builds this with cc against rdma-core
 * 65's headers; it is not part of any Go package). The model is read from
 * $FAKEVERBS_SPEC, one "key value..." per line: ex-device attributes by their
 * C field name, "port N field value", "gid PORT INDEX HEX32 TYPE", "ncv N",
 * "portspeed N VALUE" (ibv_query_port_speed's answer; without it the verb
 * fails with EOPNOTSUPP, as on most providers), "compcntr MAX OPS"
 * (ibv_query_comp_cntr_caps' answer; without it EOPNOTSUPP), and failures
 * "openfail", "queryfail ERRNO", "closefail", "portfail N ERRNO",
 * "gidfail PORT INDEX".
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MAXP 8
#define MAXG 64

struct gid { int port, index, type; unsigned char raw[16]; };

static struct {
	struct ibv_device_attr_ex dev;
	struct ibv_port_attr port[MAXP + 1];
	struct gid gids[MAXG];
	int ngids, ncv, openfail, queryfail, closefail;
	int portfail[MAXP + 1], gidfail_port, gidfail_index;
	int has_speed[MAXP + 1], has_cc;
	uint64_t speed[MAXP + 1];
	struct ibv_comp_cntr_caps cc;
	int loaded;
} S;

#define F(f) { #f, offsetof(struct ibv_device_attr_ex, f), sizeof(((struct ibv_device_attr_ex *)0)->f) }
#define O(f) { #f, offsetof(struct ibv_device_attr_ex, orig_attr.f), sizeof(((struct ibv_device_attr *)0)->f) }
#define P(f) { #f, offsetof(struct ibv_port_attr, f), sizeof(((struct ibv_port_attr *)0)->f) }
struct field { const char *name; size_t off, size; };

static const struct field devf[] = {
	O(node_guid), O(sys_image_guid), O(max_mr_size), O(page_size_cap), O(vendor_id), O(vendor_part_id),
	O(hw_ver), O(max_qp), O(max_qp_wr), O(device_cap_flags), O(max_sge), O(max_sge_rd), O(max_cq),
	O(max_cqe), O(max_mr), O(max_pd), O(max_qp_rd_atom), O(max_ee_rd_atom), O(max_res_rd_atom),
	O(max_qp_init_rd_atom), O(max_ee_init_rd_atom), O(atomic_cap), O(max_ee), O(max_rdd), O(max_mw),
	O(max_raw_ipv6_qp), O(max_raw_ethy_qp), O(max_mcast_grp), O(max_mcast_qp_attach),
	O(max_total_mcast_qp_attach), O(max_ah), O(max_fmr), O(max_map_per_fmr), O(max_srq), O(max_srq_wr),
	O(max_srq_sge), O(max_pkeys), O(local_ca_ack_delay), O(phys_port_cnt),
	F(odp_caps.general_caps), F(odp_caps.per_transport_caps.rc_odp_caps),
	F(odp_caps.per_transport_caps.uc_odp_caps), F(odp_caps.per_transport_caps.ud_odp_caps),
	F(xrc_odp_caps), F(completion_timestamp_mask), F(hca_core_clock), F(device_cap_flags_ex),
	F(tso_caps.max_tso), F(tso_caps.supported_qpts), F(rss_caps.supported_qpts),
	F(rss_caps.max_rwq_indirection_tables), F(rss_caps.max_rwq_indirection_table_size),
	F(rss_caps.rx_hash_fields_mask), F(rss_caps.rx_hash_function), F(max_wq_type_rq),
	F(packet_pacing_caps.qp_rate_limit_min), F(packet_pacing_caps.qp_rate_limit_max),
	F(packet_pacing_caps.supported_qpts), F(raw_packet_caps), F(tm_caps.max_rndv_hdr_size),
	F(tm_caps.max_num_tags), F(tm_caps.flags), F(tm_caps.max_ops), F(tm_caps.max_sge),
	F(cq_mod_caps.max_cq_count), F(cq_mod_caps.max_cq_period), F(max_dm_size), {0},
};
static const struct field portf[] = {
	P(state), P(max_mtu), P(active_mtu), P(gid_tbl_len), P(port_cap_flags), P(max_msg_sz),
	P(bad_pkey_cntr), P(qkey_viol_cntr), P(pkey_tbl_len), P(lid), P(sm_lid), P(lmc), P(max_vl_num),
	P(sm_sl), P(subnet_timeout), P(init_type_reply), P(active_width), P(active_speed), P(phys_state),
	P(link_layer), P(flags), P(port_cap_flags2), P(active_speed_ex), {0},
};

static int set(void *base, const struct field *t, const char *name, unsigned long long v)
{
	for (; t->name; t++) {
		if (strcmp(t->name, name))
			continue;
		switch (t->size) {
		case 1: *(unsigned char *)((char *)base + t->off) = v; break;
		case 2: *(unsigned short *)((char *)base + t->off) = v; break;
		case 4: *(unsigned int *)((char *)base + t->off) = v; break;
		case 8: *(unsigned long long *)((char *)base + t->off) = v; break;
		}
		return 0;
	}
	fprintf(stderr, "fakeverbs: unknown field %s\n", name);
	exit(99);
}

static void load(void)
{
	char line[512], k[128], hex[64];
	FILE *f;

	if (S.loaded++)
		return;
	f = fopen(getenv("FAKEVERBS_SPEC"), "r");
	if (!f) {
		perror("fakeverbs: FAKEVERBS_SPEC");
		exit(99);
	}
	S.gidfail_port = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		int p, i, t;

		if (sscanf(line, "port %d %127s %llu", &p, k, &v) == 3 && p <= MAXP)
			set(&S.port[p], portf, k, v);
		else if (sscanf(line, "gid %d %d %32s %d", &p, &i, hex, &t) == 4 && S.ngids < MAXG) {
			struct gid *g = &S.gids[S.ngids++];
			g->port = p; g->index = i; g->type = t;
			for (int j = 0; j < 16; j++)
				sscanf(hex + 2 * j, "%2hhx", &g->raw[j]);
		} else if (sscanf(line, "fw_ver %63s", S.dev.orig_attr.fw_ver) == 1)
			;
		else if (sscanf(line, "portspeed %d %llu", &p, &v) == 2 && p <= MAXP) {
			S.has_speed[p] = 1;
			S.speed[p] = v;
		} else if (sscanf(line, "compcntr %u %u", &S.cc.max_counters, &S.cc.supported_qp_attach_ops) == 2)
			S.has_cc = 1;
		else if (sscanf(line, "ncv %d", &S.ncv) == 1)
			;
		else if (!strncmp(line, "openfail", 8))
			S.openfail = 1;
		else if (!strncmp(line, "closefail", 9))
			S.closefail = 1;
		else if (sscanf(line, "queryfail %d", &S.queryfail) == 1)
			;
		else if (sscanf(line, "portfail %d %d", &p, &t) == 2 && p <= MAXP)
			S.portfail[p] = t;
		else if (sscanf(line, "gidfail %d %d", &S.gidfail_port, &S.gidfail_index) == 2)
			;
		else if (sscanf(line, "%127s %llu", k, &v) == 2) {
			if (!strcmp(k, "node_guid") || !strcmp(k, "sys_image_guid"))
				v = htobe64(v); /* __be64 in struct ibv_device_attr */
			set(&S.dev, devf, k, v);
		}
	}
	fclose(f);
}

static int query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			   struct ibv_device_attr_ex *attr, size_t size)
{
	if (S.queryfail)
		return S.queryfail;
	memcpy(attr, &S.dev, size < sizeof(S.dev) ? size : sizeof(S.dev));
	return 0;
}

static int query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t size)
{
	if (port > MAXP)
		return EINVAL;
	if (S.portfail[port])
		return S.portfail[port];
	memcpy(attr, &S.port[port], size < sizeof(*attr) ? size : sizeof(*attr));
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct verbs_context *v;

	load();
	if (S.openfail)
		return NULL;
	v = calloc(1, sizeof(*v));
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->context.device = dev;
	v->context.num_comp_vectors = S.ncv;
	v->query_device_ex = query_device_ex;
	v->query_port = query_port;
	return &v->context;
}

int ibv_close_device(struct ibv_context *c)
{
	free((char *)c - offsetof(struct verbs_context, context));
	return S.closefail ? -1 : 0;
}

static struct gid *find(int port, int index)
{
	for (int i = 0; i < S.ngids; i++)
		if (S.gids[i].port == port && S.gids[i].index == index)
			return &S.gids[i];
	return NULL;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	struct gid *g;

	if (port == S.gidfail_port && index == S.gidfail_index)
		return -1;
	g = find(port, index);
	memset(gid, 0, sizeof(*gid));
	if (g)
		memcpy(gid->raw, g->raw, 16);
	return 0;
}

int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index,
		       unsigned int *type /* enum ibv_gid_type_sysfs: 0 IB/RoCE v1, 1 RoCE v2 */)
{
	struct gid *g = find(port, index);

	if (g && g->type == 255)
		return -1;
	*type = g && g->type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
	return 0;
}

int ibv_query_port_speed(struct ibv_context *c, uint32_t port, uint64_t *speed)
{
	if (port > MAXP || !S.has_speed[port])
		return EOPNOTSUPP;
	*speed = S.speed[port];
	return 0;
}

int _ibv_query_comp_cntr_caps(struct ibv_context *c, struct ibv_comp_cntr_caps *caps, size_t size)
{
	memset(caps, 0, size);
	if (!S.has_cc)
		return EOPNOTSUPP;
	memcpy(caps, &S.cc, size < sizeof(S.cc) ? size : sizeof(S.cc));
	return 0;
}

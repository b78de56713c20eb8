// l2peer.c: libibverbs' ibv_resolve_eth_l2_from_gid for one destination GID, as the conformance test compares
// goverbs' Context.ResolveEthL2 with it. Usage: l2peer DEVICE PORT SGID_INDEX DGID (32 hex digits); prints
// "RET MAC VID" (RET: the function's return, a negative errno or 0; MAC and VID as it left them).
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_ah_attr attr;
	uint8_t mac[6] = {0};
	uint16_t vid = 0;
	int i, n, ret;

	if (argc != 5 || strlen(argv[4]) != 32) {
		fprintf(stderr, "usage: l2peer DEVICE PORT SGID_INDEX DGID\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "l2peer: cannot open %s\n", argv[1]);
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.is_global = 1;
	attr.port_num = atoi(argv[2]);
	attr.grh.sgid_index = atoi(argv[3]);
	for (i = 0; i < 16; i++) {
		unsigned int b;

		sscanf(argv[4] + 2 * i, "%2x", &b);
		attr.grh.dgid.raw[i] = b;
	}
	ret = ibv_resolve_eth_l2_from_gid(ctx, &attr, mac, &vid);
	printf("%d %02x:%02x:%02x:%02x:%02x:%02x %u\n", ret, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], vid);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}

// strpeer.c: prints libibverbs' texts for enum values, one "function value text" line each, for
// TestLabTextsMatchLibibverbs (cmd/goverbs/internal/interop), which runs it with sid's libibverbs and compares
// every line with goverbs' uverbs/ibvtext. Built against the host's headers (rdma-core 44), so the newer names
// (ibv_wr_opcode_str, IBV_EVENT_DEVICE_SPEED_CHANGE) are reached by number and by dlsym at run time.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>

static void line(const char *fn, int v, const char *s)
{
	printf("%s %d %s\n", fn, v, s ? s : "(null)");
}

int main(void)
{
	const char *(*wr_opcode_str)(int) = (const char *(*)(int))dlsym(RTLD_DEFAULT, "ibv_wr_opcode_str");
	int v;

	for (v = 0; v <= 30; v++) {
		line("ibv_wc_status_str", v, ibv_wc_status_str((enum ibv_wc_status)v));
		line("ibv_node_type_str", v, ibv_node_type_str((enum ibv_node_type)v));
		line("ibv_port_state_str", v, ibv_port_state_str((enum ibv_port_state)v));
		line("ibv_event_type_str", v, ibv_event_type_str((enum ibv_event_type)v));
		if (wr_opcode_str)
			line("ibv_wr_opcode_str", v, wr_opcode_str(v));
	}
	return 0;
}

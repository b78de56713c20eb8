// cmpriv is rdma-core's side of the ACCEPT private-data interop test (rdmacm TestLabAcceptPrivateDataCPeer): a
// librdmacm client in the shape of rdma-core's rdma_client example (rdma_getaddrinfo, rdma_create_ep,
// rdma_connect) that reads the private data of the server's ACCEPT from the ESTABLISHED event
// (rdma_cm_id->event, as rdma_connect(3) says), takes it as the description of a registered buffer — the
// standard pattern: {be64 address, be32 rkey, be32 length} —, RDMA READs that buffer and prints what it holds.
// It is a test-only harness, compiled in the lab by the test (test/labtest.BuildCPeer); nothing of it is in
// goverbs.
//
//   cmpriv SERVER PORT
//
// Prints "cmpriv: private data HEX" (the first 16 bytes) and "cmpriv: read TEXT"; exit status 0 when every
// step succeeded.
#include "cpeer.h"
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

struct remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
} __attribute__((packed));

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	struct remote_buf rb;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	const uint8_t *pd;
	char buf[256];
	uint32_t len;
	int i;

	prog = "cmpriv";
	if (argc != 3)
		die("usage: cmpriv SERVER PORT");
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res))
		die_errno("rdma_getaddrinfo");
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&id, res, NULL, &attr))
		die_errno("rdma_create_ep");
	rdma_freeaddrinfo(res);
	memset(&cp, 0, sizeof(cp));
	cp.initiator_depth = cp.responder_resources = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(id, &cp))
		die_errno("rdma_connect");
	if (!id->event || id->event->event != RDMA_CM_EVENT_ESTABLISHED)
		die("rdma_connect: no ESTABLISHED event on the id");
	pd = id->event->param.conn.private_data;
	if (!pd || id->event->param.conn.private_data_len < sizeof(rb))
		die("ESTABLISHED carries no private data");
	printf("cmpriv: private data ");
	for (i = 0; i < (int)sizeof(rb); i++)
		printf("%02x", pd[i]);
	printf("\n");
	memcpy(&rb, pd, sizeof(rb));
	len = be32toh(rb.len);
	if (len == 0 || len >= sizeof(buf))
		die("the private data names a buffer of an unexpected length");
	memset(buf, 0, sizeof(buf));
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	if (!mr)
		die_errno("rdma_reg_msgs");
	if (rdma_post_read(id, NULL, buf, len, mr, IBV_SEND_SIGNALED, be64toh(rb.addr), be32toh(rb.rkey)))
		die_errno("rdma_post_read");
	if (rdma_get_send_comp(id, &wc) <= 0)
		die_errno("rdma_get_send_comp");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "cmpriv: RDMA READ: %s\n", ibv_wc_status_str(wc.status));
		return 1;
	}
	printf("cmpriv: read %.*s\n", (int)len, buf);
	fflush(stdout);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	return 0;
}

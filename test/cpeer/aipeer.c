// aipeer.c: runs librdmacm's rdma_getaddrinfo for each input line and prints one line per call, for
// TestLabGetAddrInfoMatchesLibrdmacm (rdmacm/addrinfo_lab_test.go), which compares every line with goverbs'
// rdmacm.GetAddrInfo. A test-only harness, built in the lab by the test (test/labtest.BuildCPeer); nothing of
// it is in goverbs.
//
// Input, one call a line: "NODE SERVICE FLAGS FAMILY QPTYPE PORTSPACE", "-" for a NULL node or service,
// FLAGS "nil" for NULL hints (the other fields are then ignored), numbers in C's notation (strtol base 0).
// Output, one line each: "ok flags=F fam=A qp=Q ps=P src=ADDR dst=ADDR srccanon=S dstcanon=S route=N
// connect=N next=N" (ADDR: "1.2.3.4:7", "[::1]:7", "ib" for AF_IB, "-" for none; S "-" for none; next the
// count of further results) or "eai=N" (a nonzero getaddrinfo code) or "errno=N" (-1 and errno).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static void addr(char *out, size_t n, const struct sockaddr *sa, socklen_t len)
{
	char buf[INET6_ADDRSTRLEN];

	if (!sa || !len) {
		snprintf(out, n, "-");
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
		snprintf(out, n, "%s:%u", buf, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
		snprintf(out, n, "[%s]:%u", buf, ntohs(in6->sin6_port));
	} else {
		snprintf(out, n, sa->sa_family == 27 ? "ib" : "family%d", sa->sa_family);
	}
}

static const char *arg(const char *s)
{
	return strcmp(s, "-") ? s : NULL;
}

int main(void)
{
	char node[256], service[256], flags[32], fam[32], qp[32], ps[32], src[128], dst[128];
	struct rdma_addrinfo hints, *res, *r;
	int ret, n;

	while (scanf("%255s %255s %31s %31s %31s %31s", node, service, flags, fam, qp, ps) == 6) {
		memset(&hints, 0, sizeof(hints));
		hints.ai_flags = strtol(flags, NULL, 0);
		hints.ai_family = strtol(fam, NULL, 0);
		hints.ai_qp_type = strtol(qp, NULL, 0);
		hints.ai_port_space = strtol(ps, NULL, 0);
		errno = 0;
		ret = rdma_getaddrinfo(arg(node), arg(service), strcmp(flags, "nil") ? &hints : NULL, &res);
		if (ret == -1) {
			printf("errno=%d\n", errno);
		} else if (ret) {
			printf("eai=%d\n", ret);
		} else {
			for (n = 0, r = res->ai_next; r; r = r->ai_next)
				n++;
			addr(src, sizeof(src), res->ai_src_addr, res->ai_src_len);
			addr(dst, sizeof(dst), res->ai_dst_addr, res->ai_dst_len);
			printf("ok flags=%d fam=%d qp=%d ps=%d src=%s dst=%s srccanon=%s dstcanon=%s route=%zu connect=%zu next=%d\n",
			       res->ai_flags, res->ai_family, res->ai_qp_type, res->ai_port_space, src, dst,
			       res->ai_src_canonname ? res->ai_src_canonname : "-",
			       res->ai_dst_canonname ? res->ai_dst_canonname : "-", res->ai_route_len,
			       res->ai_connect_len, n);
			rdma_freeaddrinfo(res);
		}
		fflush(stdout);
	}
	return 0;
}

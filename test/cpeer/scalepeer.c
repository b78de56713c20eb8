// scalepeer.c: the C side of test/bench/cmd/scalebench's scale curves, measured on the guest clock (under the
// lab's instruction counting one nanosecond per executed instruction). The Go side (scalebench's "peer" mode)
// takes the same arguments and prints the same lines, "KEY VALUE", one per figure. Built by scalebench with the
// host's gcc against the installed libibverbs and librdmacm; nothing of it is in goverbs.
//
//   scalepeer objects DEVICE N      N CQs created then destroyed, N RC QPs on one CQ created then destroyed:
//                                   cq_create, cq_destroy, qp_create, qp_destroy (ns per object)
//   scalepeer cqload DEVICE N MSGS GIDX  n connected pairs of RC QPs on one CQ with a completion channel,
//                                   64-byte SENDs in rounds of one per pair until MSGS: cqload (ns per message)
//   scalepeer mr DEVICE BYTES REPS  REPS registrations then deregistrations of one populated BYTES buffer:
//                                   mr_reg, mr_dereg (ns per call)
//   scalepeer rsidle IP PORT N      N rsocket connections to a server process (this program's rsserve mode,
//                                   started by rsidle), a byte each way on each: connect (ns per connection
//                                   on the guest clock), connect_cpu (ns of CPU of both processes' threads per
//                                   connection), rss_base and rss (KiB of both processes before the
//                                   first and after the last connection), server_pid; then "idle", and the
//                                   connections stay open until stdin ends
#include "cpeer.h"
#include <dirent.h>
#include <rdma/rsocket.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

// machine_ns is the time the machine's CPUs ran tasks (kernel threads and softirq work included, idle not):
// the sum of rq_cpu_time, the 7th field of each cpuN line of /proc/schedstat.
static uint64_t machine_ns(void)
{
	char line[512];
	uint64_t sum = 0;
	FILE *f = fopen("/proc/schedstat", "r");

	if (!f)
		die_errno("/proc/schedstat");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[7];

		if (strncmp(line, "cpu", 3) ||
		    sscanf(line, "%*s %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6]) != 7)
			continue;
		sum += v[6];
	}
	fclose(f);
	return sum;
}

static void objects(const char *dev, int n)
{
	struct ibv_device **list;
	struct ibv_context *ctx = open_device(dev, &list);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq **cqs = calloc(n, sizeof(*cqs)), *cq;
	struct ibv_qp **qps = calloc(n, sizeof(*qps));
	struct ibv_qp_init_attr qa;
	uint64_t t0, t1, t2;
	int i;

	if (!pd || !cqs || !qps)
		die_errno("alloc pd");
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (!(cqs[i] = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
			die_errno("create cq");
	t1 = now_ns();
	for (i = 0; i < n; i++)
		if (ibv_destroy_cq(cqs[i]))
			die_errno("destroy cq");
	t2 = now_ns();
	printf("cq_create %.1f\ncq_destroy %.1f\n", (double)(t1 - t0) / n, (double)(t2 - t1) / n);

	if (!(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		die_errno("create cq");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (!(qps[i] = ibv_create_qp(pd, &qa)))
			die_errno("create qp");
	t1 = now_ns();
	for (i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i]))
			die_errno("destroy qp");
	t2 = now_ns();
	printf("qp_create %.1f\nqp_destroy %.1f\n", (double)(t1 - t0) / n, (double)(t2 - t1) / n);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

static void mr(const char *dev, size_t bytes, int reps)
{
	struct ibv_device **list;
	struct ibv_context *ctx = open_device(dev, &list);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr **mrs = calloc(reps, sizeof(*mrs));
	uint64_t t0, t1, t2;
	void *buf;
	int i;

	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!pd || !mrs || buf == MAP_FAILED)
		die_errno("alloc");
	t0 = now_ns();
	for (i = 0; i < reps; i++)
		if (!(mrs[i] = ibv_reg_mr(pd, buf, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ)))
			die_errno("reg mr");
	t1 = now_ns();
	for (i = 0; i < reps; i++)
		if (ibv_dereg_mr(mrs[i]))
			die_errno("dereg mr");
	t2 = now_ns();
	printf("mr_reg %.1f\nmr_dereg %.1f\n", (double)(t1 - t0) / reps, (double)(t2 - t1) / reps);
	munmap(buf, bytes);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

// cqload connects n pairs of RC QPs of this process to each other over port 1 (GID index gidx), every QP on
// one CQ with a completion channel, and runs rounds of one 64-byte SEND on each pair (its receive posted
// first) until msgs messages have gone: all 2n completions of a round are polled from the CQ, waiting for its
// event when it is empty. It prints cqload, ns per message.
static void cqload(const char *dev, int n, int msgs, int gidx)
{
	struct ibv_device **list;
	struct ibv_context *ctx = open_device(dev, &list);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp **qp = calloc(2 * n, sizeof(*qp));
	struct ibv_qp_init_attr qa;
	struct ibv_mr *mr;
	struct ibv_wc wc[16];
	struct record r[2];
	uint8_t *buf = calloc(2 * n, 64);
	int i, rounds = msgs / n > 0 ? msgs / n : 1, round, got, k;
	uint64_t t0, t1, m0, m1;
	void *ev_ctx;

	if (!pd || !ch || !qp || !buf)
		die_errno("alloc");
	if (!(cq = ibv_create_cq(ctx, 2 * n, NULL, ch, 0)))
		die_errno("create cq");
	if (!(mr = ibv_reg_mr(pd, buf, 2 * n * 64, IBV_ACCESS_LOCAL_WRITE)))
		die_errno("reg mr");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (i = 0; i < 2 * n; i++)
		if (!(qp[i] = ibv_create_qp(pd, &qa)))
			die_errno("create qp");
	memset(r, 0, sizeof(r));
	my_gid(ctx, gidx, &r[0]);
	r[1] = r[0];
	for (i = 0; i < n; i++) {
		r[0].qpn = qp[n + i]->qp_num; // a's peer is b
		r[0].psn = 0;
		r[1].qpn = qp[i]->qp_num;
		r[1].psn = 0;
		rc_connect(qp[i], gidx, 0, &r[0], 0, 14);
		rc_connect(qp[n + i], gidx, 0, &r[1], IBV_ACCESS_LOCAL_WRITE, 14);
	}
	if (ibv_req_notify_cq(cq, 0))
		die_errno("req notify");
	m0 = machine_ns();
	t0 = now_ns();
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < n; i++) {
			struct ibv_sge rs = {.addr = (uintptr_t)buf + (n + i) * 64, .length = 64, .lkey = mr->lkey};
			struct ibv_sge ss = {.addr = (uintptr_t)buf + i * 64, .length = 64, .lkey = mr->lkey};
			struct ibv_recv_wr rwr = {.wr_id = n + i, .sg_list = &rs, .num_sge = 1}, *rbad;
			struct ibv_send_wr swr = {.wr_id = i, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED}, *sbad;

			if (ibv_post_recv(qp[n + i], &rwr, &rbad) || ibv_post_send(qp[i], &swr, &sbad))
				die_errno("post");
		}
		for (got = 0; got < 2 * n; got += k) {
			if ((k = ibv_poll_cq(cq, 16, wc)) < 0)
				die("poll cq");
			for (i = 0; i < k; i++)
				check_wc(&wc[i], "cqload");
			if (k == 0) {
				if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
					die_errno("get cq event");
				ibv_ack_cq_events(ev_cq, 1);
				if (ibv_req_notify_cq(cq, 0))
					die_errno("req notify");
			}
		}
	}
	t1 = now_ns();
	m1 = machine_ns();
	printf("cqload %.1f\ncqload_machine %.1f\n", (double)(t1 - t0) / ((double)rounds * n),
	       (double)(m1 - m0) / ((double)rounds * n));
	for (i = 0; i < 2 * n; i++)
		ibv_destroy_qp(qp[i]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

// rss_kib is the resident memory of process pid (0: this one), from /proc/PID/statm.
static long rss_kib(int pid)
{
	char p[64];
	long size, res;
	FILE *f;

	snprintf(p, sizeof(p), pid ? "/proc/%d/statm" : "/proc/self/statm", pid);
	if (!(f = fopen(p, "r")) || fscanf(f, "%ld %ld", &size, &res) != 2)
		die_errno("statm");
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

// cpu_ns is the CPU time of all the threads of process pid (0: this one): the first field of each
// /proc/PID/task/T/schedstat.
static uint64_t cpu_ns(int pid)
{
	char dir[64];
	DIR *d;
	struct dirent *e;
	uint64_t sum = 0;

	snprintf(dir, sizeof(dir), pid ? "/proc/%d/task" : "/proc/self/task", pid);
	if (!(d = opendir(dir)))
		die_errno("task");
	while ((e = readdir(d))) {
		char p[400];
		unsigned long long v;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/schedstat", dir, e->d_name);
		if (!(f = fopen(p, "r")))
			continue;
		if (fscanf(f, "%llu", &v) == 1)
			sum += v;
		fclose(f);
	}
	closedir(d);
	return sum;
}

static struct sockaddr_in addr_of(const char *ip, int port)
{
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		die("bad address");
	return sa;
}

// rsserve is rsidle's server process: it listens, says "listening" on stdout, accepts n connections, reads a
// byte from each and sends it back, says "ready", and holds them until its stdin ends.
static void rsserve(const char *ip, int port, int n)
{
	struct sockaddr_in sa = addr_of(ip, port);
	int lfd, *fds = calloc(n, sizeof(int)), i, one = 1;
	char b;

	if (!fds)
		die("calloc");
	if ((lfd = rsocket(AF_INET, SOCK_STREAM, 0)) < 0)
		die_errno("rsocket");
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rbind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || rlisten(lfd, 1024))
		die_errno("rbind/rlisten");
	printf("listening\n");
	fflush(stdout);
	for (i = 0; i < n; i++)
		if ((fds[i] = raccept(lfd, NULL, NULL)) < 0)
			die_errno("raccept");
	for (i = 0; i < n; i++)
		if (rrecv(fds[i], &b, 1, 0) != 1 || rsend(fds[i], &b, 1, 0) != 1)
			die_errno("echo a byte");
	printf("ready\n");
	fflush(stdout);
	while (read(0, &b, 1) > 0)
		;
	for (i = 0; i < n; i++)
		rclose(fds[i]);
	rclose(lfd);
}

static void expect_line(FILE *f, const char *want)
{
	char line[64];

	if (!fgets(line, sizeof(line), f) || strncmp(line, want, strlen(want)))
		die("the server process did not start");
}

// rsidle runs rsserve as a child process (this program, re-executed), connects to it n times, prints its
// figures and the server's pid, says "idle" and holds the connections until its stdin ends (the caller
// counts both processes' CPU meanwhile).
static void rsidle(const char *self, const char *ip, int port, int n)
{
	struct sockaddr_in sa = addr_of(ip, port);
	int *cfds = calloc(n, sizeof(int)), i, to[2], from[2], pid;
	long base, rss;
	uint64_t t0, t1, c0, c1, m0, m1;
	char b = 'x', ports[16], ns[16];
	FILE *srv;

	if (!cfds || pipe(to) || pipe(from))
		die_errno("pipe");
	snprintf(ports, sizeof(ports), "%d", port);
	snprintf(ns, sizeof(ns), "%d", n);
	if ((pid = fork()) < 0)
		die_errno("fork");
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl(self, self, "rsserve", ip, ports, ns, (char *)NULL);
		die_errno("exec");
	}
	close(to[0]);
	close(from[1]);
	srv = fdopen(from[0], "r");
	expect_line(srv, "listening");
	base = rss_kib(0) + rss_kib(pid);
	c0 = cpu_ns(0) + cpu_ns(pid);
	m0 = machine_ns();
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if ((cfds[i] = rsocket(AF_INET, SOCK_STREAM, 0)) < 0)
			die_errno("rsocket");
		if (rconnect(cfds[i], (struct sockaddr *)&sa, sizeof(sa)))
			die_errno("rconnect");
	}
	for (i = 0; i < n; i++)
		if (rsend(cfds[i], &b, 1, 0) != 1)
			die_errno("send a byte");
	for (i = 0; i < n; i++)
		if (rrecv(cfds[i], &b, 1, 0) != 1)
			die_errno("receive the byte back");
	expect_line(srv, "ready");
	t1 = now_ns();
	m1 = machine_ns();
	c1 = cpu_ns(0) + cpu_ns(pid);
	rss = rss_kib(0) + rss_kib(pid);
	printf("connect %.1f\nconnect_cpu %.1f\nconnect_machine %.1f\nrss_base %ld\nrss %ld\nserver_pid %d\nidle\n", (double)(t1 - t0) / n, (double)(c1 - c0) / n,
	       (double)(m1 - m0) / n, base, rss, pid);
	fflush(stdout);
	while (read(0, &b, 1) > 0)
		;
	close(to[1]);
	for (i = 0; i < n; i++)
		rclose(cfds[i]);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	struct rlimit nofile;

	prog = "scalepeer";
	// Two descriptors per rsocket (its CM and completion channels): raise the soft limit to the hard one,
	// as Go's runtime does for every Go program.
	if (!getrlimit(RLIMIT_NOFILE, &nofile)) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (argc == 4 && !strcmp(argv[1], "objects"))
		objects(argv[2], atoi(argv[3]));
	else if (argc == 6 && !strcmp(argv[1], "cqload"))
		cqload(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	else if (argc == 5 && !strcmp(argv[1], "mr"))
		mr(argv[2], strtoull(argv[3], NULL, 0), atoi(argv[4]));
	else if (argc == 5 && !strcmp(argv[1], "rsidle"))
		rsidle(argv[0], argv[2], atoi(argv[3]), atoi(argv[4]));
	else if (argc == 5 && !strcmp(argv[1], "rsserve"))
		rsserve(argv[2], atoi(argv[3]), atoi(argv[4]));
	else {
		fprintf(stderr, "usage: scalepeer objects DEVICE N | mr DEVICE BYTES REPS | cqload DEVICE N MSGS GIDX | rsidle IP PORT N\n");
		return 2;
	}
	return 0;
}

// sockcopy.c: a plain BSD-sockets program — it knows nothing of RDMA — for TestLabPreload* (rsocket), which
// runs it under LD_PRELOAD=librspreload.so so that librdmacm's preload library turns its TCP sockets into
// rsockets, against goverbs' rsocket and against itself (the C-C control).
//
//   sockcopy -l ADDR -p PORT           serve one connection: read to EOF, answer "bytes N fnv X\n", close
//   sockcopy -c ADDR -p PORT -n BYTES  send BYTES of the pattern, shut down writing, read the answer, compare
//
// The pattern's byte i is (i * 131 + 7) mod 251; the checksum is 64-bit FNV-1a. The client prints the
// server's answer and exits 0 when it matches what it sent. The server prints "listening" once listen
// returned (the test waits for that line: under the preload the socket is an rsocket, in no /proc table).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static int die(const char *what)
{
	fprintf(stderr, "sockcopy: %s: %s\n", what, strerror(errno));
	return 2;
}

static int addr_of(const char *host, const char *port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

static int serve(const char *host, const char *port)
{
	static unsigned char buf[1 << 16];
	struct sockaddr_in sin;
	uint64_t h = FNV_OFFSET, total = 0;
	char line[64];
	int ls, s, one = 1;
	ssize_t n;

	if (addr_of(host, port, &sin))
		return die("address");
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		return die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)))
		return die("bind");
	if (listen(ls, 1))
		return die("listen");
	printf("listening\n");
	fflush(stdout);
	s = accept(ls, NULL, NULL);
	if (s < 0)
		return die("accept");
	while ((n = read(s, buf, sizeof(buf))) > 0) {
		h = fnv(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (n < 0)
		return die("read");
	n = snprintf(line, sizeof(line), "bytes %llu fnv %016llx\n", (unsigned long long)total, (unsigned long long)h);
	if (write(s, line, (size_t)n) != n)
		return die("write");
	close(s);
	close(ls);
	return 0;
}

static int copy(const char *host, const char *port, uint64_t bytes)
{
	static unsigned char buf[1 << 16];
	struct sockaddr_in sin;
	uint64_t h = FNV_OFFSET, sent = 0;
	char want[64], got[64];
	size_t have = 0;
	ssize_t n;
	int s;

	if (addr_of(host, port, &sin))
		return die("address");
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return die("socket");
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)))
		return die("connect");
	while (sent < bytes) {
		size_t chunk = sizeof(buf), off = 0;
		if (bytes - sent < chunk)
			chunk = (size_t)(bytes - sent);
		for (size_t i = 0; i < chunk; i++)
			buf[i] = (unsigned char)(((sent + i) * 131 + 7) % 251);
		h = fnv(h, buf, chunk);
		while (off < chunk) {
			n = write(s, buf + off, chunk - off);
			if (n <= 0)
				return die("write");
			off += (size_t)n;
		}
		sent += chunk;
	}
	if (shutdown(s, SHUT_WR))
		return die("shutdown");
	while (have < sizeof(got) - 1 && (n = read(s, got + have, sizeof(got) - 1 - have)) > 0)
		have += (size_t)n;
	if (n < 0)
		return die("read");
	got[have] = 0;
	close(s);
	snprintf(want, sizeof(want), "bytes %llu fnv %016llx\n", (unsigned long long)sent, (unsigned long long)h);
	printf("%s", got);
	if (strcmp(got, want)) {
		fprintf(stderr, "sockcopy: the server answered %s, the data sent was %s", got, want);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *listen_addr = NULL, *connect_addr = NULL, *port = "7471";
	uint64_t bytes = 0;
	int op;

	while ((op = getopt(argc, argv, "l:c:p:n:")) != -1) {
		switch (op) {
		case 'l':
			listen_addr = optarg;
			break;
		case 'c':
			connect_addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			bytes = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: sockcopy -l ADDR -p PORT | -c ADDR -p PORT -n BYTES\n");
			return 2;
		}
	}
	if (listen_addr)
		return serve(listen_addr, port);
	if (connect_addr)
		return copy(connect_addr, port, bytes);
	fprintf(stderr, "usage: sockcopy -l ADDR -p PORT | -c ADDR -p PORT -n BYTES\n");
	return 2;
}

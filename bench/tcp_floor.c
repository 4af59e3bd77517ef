/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tcp_floor.c: the CPU floor of one rail of the socket transport on this
 * machine, both ends in this process over loopback (issue 30):
 *   per connection  a listener (socket, bind, listen, getsockname), a bound
 *                   nonblocking connect, accept, an 8-byte token,
 *                   TCP_NODELAY on both ends, three closes
 *   per 64 KiB      moved over one connection in 16 KiB sends and recvs
 *   per exchange    a datagram rail's link (protocol 20 on: no FIN, the
 *                   receiver's exchange ends at its REPLY): a 1052-byte
 *                   HELLO (the pattern with it) and a 28-byte REPLY, each
 *                   polled for and received, on sockets that last (a
 *                   worker's rounds share a rail's sockets)
 *   per rail        those sockets, once per rail and node pair whatever
 *                   the rounds: the sender's UDP socket and the
 *                   receiver's (socket, bind, getsockname), the closes; no
 *                   probe listener since protocol 22 (the peers' probes
 *                   come to the receiver's UDP socket)
 * cc -O2 -o /tmp/tcp_floor bench/tcp_floor.c && /tmp/tcp_floor [N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static double cpu_ms(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

static int listener(struct sockaddr_in *at, int flags)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(*at);
	int l = socket(AF_INET, SOCK_STREAM | flags, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 32) ||
	    getsockname(l, (struct sockaddr *)at, &len)) {
		perror("listener");
		exit(1);
	}
	return l;
}

/*
 * A datagram rail's two UDP sockets, as a worker's rounds share them: *A
 * and *B bound to SRC's address, their addresses in UA and UB.  0, or -1
 * (what was opened closed).
 */
static int udp_pair(const struct sockaddr_in *src, int *a, int *b, struct sockaddr_in *ua,
		    struct sockaddr_in *ub)
{
	socklen_t la = sizeof(*ua), lb = sizeof(*ub);

	*a = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	*b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (*a >= 0 && *b >= 0 && !bind(*a, (const struct sockaddr *)src, sizeof(*src)) &&
	    !bind(*b, (const struct sockaddr *)src, sizeof(*src)) &&
	    !getsockname(*a, (struct sockaddr *)ua, &la) &&
	    !getsockname(*b, (struct sockaddr *)ub, &lb))
		return 0;
	if (*a >= 0)
		close(*a);
	if (*b >= 0)
		close(*b);
	return -1;
}

int main(int argc, char **argv)
{
	static char buf[64 << 10];
	int n = argc > 1 ? atoi(argv[1]) : 2000, one = 1, l, c, s;
	struct sockaddr_in at,
	    src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char tok[8] = "abcdefgh";
	double t0, t1;

	t0 = cpu_ms();
	for (int i = 0; i < n; i++) {
		struct pollfd p;

		l = listener(&at, SOCK_NONBLOCK);
		c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (c < 0 || bind(c, (struct sockaddr *)&src, sizeof(src)) ||
		    (connect(c, (struct sockaddr *)&at, sizeof(at)) && errno != EINPROGRESS))
			return 1;
		p = (struct pollfd){.fd = c, .events = POLLOUT};
		poll(&p, 1, 1000);
		if (send(c, tok, sizeof(tok), MSG_NOSIGNAL) != (ssize_t)sizeof(tok))
			return 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		p = (struct pollfd){.fd = l, .events = POLLIN};
		poll(&p, 1, 1000);
		s = accept4(l, NULL, NULL, SOCK_NONBLOCK);
		if (s < 0 || recv(s, tok, sizeof(tok), MSG_WAITALL) != (ssize_t)sizeof(tok))
			return 1;
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		close(c);
		close(s);
		close(l);
	}
	t1 = cpu_ms();
	printf("per connection (both ends): %.1f us CPU\n", (t1 - t0) * 1e3 / n);

	l = listener(&at, 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&at, sizeof(at)))
		return 1;
	s = accept(l, NULL, NULL);
	t0 = cpu_ms();
	for (int i = 0; i < n; i++)
		for (size_t off = 0; off < sizeof(buf); off += 16 << 10) {
			size_t got = 0;

			if (send(c, buf + off, 16 << 10, 0) != 16 << 10)
				return 1;
			while (got < 16 << 10) {
				ssize_t r = recv(s, buf + off + got, (16 << 10) - got, 0);

				if (r <= 0)
					return 1;
				got += (size_t)r;
			}
		}
	t1 = cpu_ms();
	printf("per 64 KiB moved (both ends): %.1f us CPU\n", (t1 - t0) * 1e3 / n);
	close(c);
	close(s);
	close(l);

	{
		struct sockaddr_in ua, ub, from;
		socklen_t la = sizeof(ua), lb = sizeof(ub), lf;
		int a, b;

		if (udp_pair(&src, &a, &b, &ua, &ub))
			return 1;
		t0 = cpu_ms();
		for (int i = 0; i < n; i++) {
			struct pollfd pb = {.fd = b, .events = POLLIN},
				      pa = {.fd = a, .events = POLLIN};

			lf = sizeof(from);
			if (sendto(a, buf, 1052, 0, (struct sockaddr *)&ub, lb) != 1052 ||
			    poll(&pb, 1, 1000) != 1 ||
			    recvfrom(b, buf, sizeof(buf), 0, (struct sockaddr *)&from, &lf) != 1052)
				return 1;
			lf = sizeof(from);
			if (sendto(b, buf, 28, 0, (struct sockaddr *)&ua, la) != 28 ||
			    poll(&pa, 1, 1000) != 1 ||
			    recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &lf) != 28)
				return 1;
		}
		t1 = cpu_ms();
		close(a);
		close(b);
		printf("per datagram exchange, HELLO and REPLY (both ends): %.1f us CPU\n",
		       (t1 - t0) * 1e3 / n);
	}

	t0 = cpu_ms();
	for (int i = 0; i < n; i++) {
		struct sockaddr_in ua, ub;
		int a, b;

		if (udp_pair(&src, &a, &b, &ua, &ub))
			return 1;
		close(a);
		close(b);
	}
	t1 = cpu_ms();
	printf("per rail's sockets, two UDP (both ends): %.1f us CPU\n", (t1 - t0) * 1e3 / n);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the cross-node test's acceptor (rdmatest_accept.c), the
 * only code that reads bytes from connections nobody has vouched for, run
 * for real on loopback: node f1 of a 3-node step (f0 127.0.0.1, f1
 * 127.0.0.2, f2 127.0.0.3) listens; the input is up to 8 connections, each
 * from f0's, f2's or a stranger's address (127.0.0.9), each either raw
 * bytes or a HELLO built as a node builds it (claiming any node, round,
 * rail and flags), whole, cut short, split in two writes, or with one byte
 * changed.  Credentials are off (--insecure: a HELLO authenticates by its
 * claims and its address), so the fuzzer reaches every state past them.
 *
 * Whatever comes, the acceptor must not crash, and:
 *   - an in-link's slot is handed a connection only from that link's peer's
 *     address, and only when a whole HELLO for that link came from it (one
 *     whose changed byte is in its nonce or echo still is one);
 *   - a slot holds at most one connection, its fd a socket from that address;
 *   - every dropped connection is counted once, outside or from a peer;
 *   - no descriptor is left open when the run is over.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/deadline.h"
#include "ibprep/hostlist.h"
#include "ibprep/oob.h"
#include "ibprep/policy.h"
#include "ibprep/rdmatest.h"
#include "../helpers/rdmatest/rdmatest_accept.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES  3
#define ME     1
#define CONNS  8
#define RUN_MS 6

static const char *const addr_of[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.9"};

static struct ibp_rdmatest_config cfg;
static struct ibp_policy pol;
static struct ibp_hostlist nodes;
static struct ibp_rdmatest_plan plan;
static struct ibp_rt_link links[2 * 2];
static struct ibp_rt_ctx x;
static bool ready;

static int setup(void)
{
	char err[128];

	cfg.job = 7;
	cfg.step = 3;
	cfg.uid = 1000;
	cfg.insecure = true;
	ibp_policy_init(&pol);
	if (ibp_hostlist_expand("f[0-2]", 0, &nodes, err, sizeof(err)) ||
	    ibp_rdmatest_plan(NODES, ME, &plan))
		return -1;
	x.cfg = &cfg;
	x.pol = &pol;
	x.nodes = &nodes;
	x.n = NODES;
	x.me = ME;
	x.plan = &plan;
	x.n_rails = 1;
	x.auth.insecure = true;
	snprintf(x.my_addr, sizeof(x.my_addr), "%s", addr_of[ME]);
	x.links = links;
	x.n_links = plan.n_rounds * 2;
	pthread_mutex_init(&x.mu, NULL);
	pthread_cond_init(&x.cv, NULL);
	return 0;
}

static void links_reset(void)
{
	memset(links, 0, sizeof(links));
	for (unsigned r = 1; r <= plan.n_rounds; r++) {
		for (int o = 0; o < 2; o++) {
			struct ibp_rt_link *l = ibp_rt_link_at(&x, 0, r, o);
			uint32_t peer = o ? plan.send_to[r - 1] : plan.recv_from[r - 1];

			l->out = o;
			l->peer = peer;
			l->fd = -1;
			l->r.round = (uint8_t)r;
			l->r.from = o ? ME : peer;
			l->r.to = o ? peer : ME;
			snprintf(l->peer_addr, sizeof(l->peer_addr), "%s", addr_of[peer]);
		}
	}
}

static int listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	inet_pton(AF_INET, addr_of[ME], &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_from(int src, uint16_t port)
{
	struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, addr_of[src], &me.sin_addr);
	inet_pton(AF_INET, addr_of[ME], &to.sin_addr);
	to.sin_port = htons(port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static size_t open_fds(void)
{
	size_t n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* A whole HELLO to this node for ROUND and RAIL, as node FROM builds it. */
static bool genuine(uint32_t from, uint8_t round, uint8_t rail, uint16_t flags)
{
	return round >= 1 && round <= plan.n_rounds && rail == 0 &&
	       !(flags & ~IBP_HELLO_INSECURE) && plan.recv_from[round - 1] == from;
}

/*
 * A HELLO with one byte changed is still a whole HELLO for its link when
 * the change is in its nonce or echo (the acceptor judges neither before
 * the keys): LEN bytes at BUF decode to M's HELLO but for those two.
 */
static bool same_claims(const uint8_t *buf, size_t len, const struct ibp_oob_hello *m)
{
	struct ibp_oob_msg d = {0};
	const struct ibp_oob_hello *h = &d.u.hello;

	if (ibp_oob_decode(buf, len, &d) < 0 || d.type != IBP_OOB_HELLO)
		return false;
	return h->job == m->job && h->step == m->step && h->uid == m->uid && h->from == m->from &&
	       h->to == m->to && h->nnodes == m->nnodes && h->round == m->round &&
	       h->rail == m->rail && h->n_rails == m->n_rails && h->flags == m->flags &&
	       h->cred_len == m->cred_len && !memcmp(h->cred, m->cred, m->cred_len);
}

struct sent {
	int src;          /* index in addr_of */
	bool whole_hello; /* a genuine HELLO (above), all of it, unchanged */
	uint8_t round;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_rt_acceptor a;
	struct sent sent[CONNS];
	int cfds[CONNS], lfd;
	size_t nc = 0, at = 0, before;
	uint16_t port;
	int64_t now;

	if (!ready) {
		if (setup())
			abort();
		ready = true;
	}
	before = open_fds();
	links_reset();
	lfd = listener(&port);
	if (lfd < 0)
		return 0; /* no loopback: nothing to fuzz */
	cfg.listen_fds = &lfd;
	cfg.listen_ports = &port;
	cfg.n_listen_fds = 1;
	now = ibp_now_ns();
	x.start = now;
	x.round_end[0] = now + RUN_MS / 2 * IBP_NS_PER_MS;
	x.round_end[1] = x.end = now + RUN_MS * IBP_NS_PER_MS;
	ibp_rt_acceptor_init(&a, &x);
	if (ibp_rt_listen(&a) < 0 || ibp_rt_peers_init(&a))
		abort();

	while (at < size && nc < CONNS) {
		/* from f0, f2, a stranger, or this node's own address */
		static const int srcs[] = {0, 2, 3, 1};
		uint8_t head = data[at++];
		int src = srcs[head & 3], kind = (head >> 2) & 3;
		uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_HELLO_MAX + 256];
		size_t len = 0, cut;
		int fd;

		sent[nc] = (struct sent){.src = src};
		if (kind == 0) { /* raw bytes */
			len = at < size ? data[at++] : 0;
			if (len > size - at)
				len = size - at;
			memcpy(buf, data + at, len);
			at += len;
		} else {
			struct ibp_rt_ctx sender = x;
			struct ibp_oob_msg m;
			uint8_t secret[IBP_AUTH_SECRET_LEN], f[4] = {0};
			char err[128];
			int n;

			for (int i = 0; i < 4 && at < size; i++)
				f[i] = data[at++];
			sender.me = f[0] % (NODES + 1);
			if (ibp_rt_hello_make(&sender, &m, ME, (uint8_t)(f[1] % 5), f[2] % 3, 0,
					      (uint16_t)(f[3] & 0x0f), secret, err, sizeof(err)))
				continue;
			n = ibp_oob_encode(&m, buf, sizeof(buf));
			if (n <= 0)
				continue;
			len = (size_t)n;
			sent[nc].round = m.u.hello.round;
			sent[nc].whole_hello =
			    src == (int)sender.me &&
			    genuine(sender.me, m.u.hello.round, m.u.hello.rail, m.u.hello.flags);
			if (kind == 2 && at + 1 < size) { /* one byte changed */
				buf[data[at] % len] ^= data[at + 1] | 1;
				at += 2;
				sent[nc].whole_hello =
				    sent[nc].whole_hello && same_claims(buf, len, &m.u.hello);
			} else if (kind == 3 && at < size) { /* cut short */
				len = data[at++] % len;
				sent[nc].whole_hello = false;
			}
		}
		fd = connect_from(src, port);
		if (fd < 0)
			continue;
		/* whole, or in two writes (a HELLO split across segments) */
		cut = len && at < size ? data[at++] % (len + 1) : len;
		if (cut && send(fd, buf, cut, MSG_NOSIGNAL) < 0)
			cut = len;
		if (len > cut)
			(void)send(fd, buf + cut, len - cut, MSG_NOSIGNAL);
		if (!len) /* nothing sent: deferred accept would hold it past the run */
			(void)send(fd, "", 1, MSG_NOSIGNAL);
		cfds[nc++] = fd;
	}

	ibp_rt_accept(&a);

	if (a.dropped != a.dropped_away + a.dropped_peer)
		abort();
	for (unsigned r = 1; r <= plan.n_rounds; r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(&x, 0, r, false);
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		char host[INET_ADDRSTRLEN] = "";
		bool vouched = false;

		if (l->slot == IBP_RT_SLOT_EMPTY) {
			if (l->fd >= 0)
				abort();
			continue;
		}
		if (l->slot != IBP_RT_SLOT_FILLED || l->fd < 0)
			abort();
		/* handed over: a socket from the peer's own address ... */
		if (getpeername(l->fd, (struct sockaddr *)&from, &fl) ||
		    !inet_ntop(AF_INET, &from.sin_addr, host, sizeof(host)) ||
		    strcmp(host, addr_of[l->peer]) != 0)
			abort();
		/* ... that sent a whole HELLO for this link */
		for (size_t i = 0; i < nc; i++)
			vouched |= sent[i].whole_hello && sent[i].round == r &&
				   sent[i].src == (int)l->peer;
		if (!vouched)
			abort();
		close(l->fd);
		l->fd = -1;
	}
	for (size_t i = 0; i < nc; i++)
		close(cfds[i]);
	close(lfd);
	if (open_fds() != before)
		abort(); /* the acceptor kept a descriptor */
	return 0;
}

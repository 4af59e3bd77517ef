/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_resolve.c: name lookups with a deadline, for the plugin's children
 * (the resolver runs here, never in slurmstepd: a lookup that outlives its
 * deadline dies with the child), and `ibprep env --resolve-child`, the
 * plugin's lookup child for NCCL_SOCKET_IFNAME (ib_step.c):
 *
 *   fd 0   "MS\nNAME\n..." (at most IBPREP_RESOLVE_MAX names), then EOF
 *   fd 1   one line per name, in order: its numeric address, or "!why"
 *          (timeout, noname, invalid, fail)
 *
 * The child runs as the job's user for good (ib_child.c); its answer is
 * checked by the plugin like any of that user's bytes.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/deadline.h"

/* A host name or a numeric address: nothing the resolver could take as anything else. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < IBPREP_RESOLVE_NAME_MAX && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") == n;
}

static int pick(const struct addrinfo *res, bool ipv4_first, char *addr, size_t len)
{
	const struct addrinfo *p = NULL;

	for (const struct addrinfo *a = res; a && ipv4_first && !p; a = a->ai_next)
		if (a->ai_family == AF_INET)
			p = a;
	for (const struct addrinfo *a = res; a && !p; a = a->ai_next)
		if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
			p = a;
	if (!p ||
	    getnameinfo(p->ai_addr, p->ai_addrlen, addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST))
		return -ENOENT;
	return 0;
}

void ibprep_resolve_names(const char *const *names, size_t n, int64_t deadline, bool ipv4_first,
			  char (*addrs)[IBPREP_ADDR_MAX], int *rcs)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	struct gaicb req[IBPREP_RESOLVE_MAX];
	struct gaicb *list[IBPREP_RESOLVE_MAX];
	size_t k = 0;

	if (n > IBPREP_RESOLVE_MAX)
		n = IBPREP_RESOLVE_MAX;
	memset(req, 0, sizeof(req));
	for (size_t i = 0; i < n; i++) {
		addrs[i][0] = '\0';
		rcs[i] = -EINVAL;
		if (!names[i] || !name_ok(names[i]))
			continue;
		req[i].ar_name = names[i];
		req[i].ar_request = &hints;
		list[k++] = &req[i];
		rcs[i] = -EINPROGRESS;
	}
	if (k && getaddrinfo_a(GAI_NOWAIT, list, (int)k, NULL)) {
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == -EINPROGRESS)
				rcs[i] = -EAGAIN;
		return;
	}
	for (;;) {
		bool busy = false;
		int64_t now = ibp_now_ns();
		struct timespec ts;

		for (size_t i = 0; i < k; i++)
			busy |= gai_error(list[i]) == EAI_INPROGRESS;
		if (!busy || now >= deadline)
			break;
		ts.tv_sec = (time_t)((deadline - now) / IBP_NS_PER_S);
		ts.tv_nsec = (long)((deadline - now) % IBP_NS_PER_S);
		(void)gai_suspend((const struct gaicb *const *)list, (int)k, &ts);
	}
	for (size_t i = 0; i < n; i++) {
		int e;

		if (rcs[i] != -EINPROGRESS)
			continue;
		e = gai_error(&req[i]);
		if (e == EAI_INPROGRESS) {
			/* its thread dies with this process: never slurmstepd's */
			gai_cancel(&req[i]);
			rcs[i] = -ETIMEDOUT;
			continue;
		}
		if (e) {
			rcs[i] = e == EAI_NONAME ? -ENOENT : -EHOSTUNREACH;
			continue;
		}
		rcs[i] = pick(req[i].ar_result, ipv4_first, addrs[i], IBPREP_ADDR_MAX);
		freeaddrinfo(req[i].ar_result);
	}
}

static const char *why_word(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return "timeout";
	case -ENOENT:
		return "noname";
	case -EINVAL:
		return "invalid";
	default:
		return "fail";
	}
}

int ibprep_resolve_child(void)
{
	char buf[IBPREP_RESOLVE_MAX * (IBPREP_RESOLVE_NAME_MAX + 1) + 32];
	const char *names[IBPREP_RESOLVE_MAX];
	char addrs[IBPREP_RESOLVE_MAX][IBPREP_ADDR_MAX];
	int rcs[IBPREP_RESOLVE_MAX];
	size_t got = 0, n = 0;
	char *save = NULL, *line, *end;
	long ms;

	for (;;) {
		ssize_t r = read(0, buf + got, sizeof(buf) - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 2;
		if (r == 0)
			break;
		got += (size_t)r;
		if (got == sizeof(buf) - 1)
			return 2; /* more than a request: not the plugin's */
	}
	buf[got] = '\0';
	line = strtok_r(buf, "\n", &save);
	if (!line)
		return 2;
	errno = 0;
	ms = strtol(line, &end, 10);
	if (errno || *end || ms < 1 || ms > 60000)
		return 2;
	while ((line = strtok_r(NULL, "\n", &save)) && n < IBPREP_RESOLVE_MAX)
		names[n++] = line;
	ibprep_resolve_names(names, n, ibp_deadline_after_ms(ibp_now_ns(), ms), true, addrs, rcs);
	for (size_t i = 0; i < n; i++) {
		if (rcs[i])
			printf("!%s\n", why_word(rcs[i]));
		else
			printf("%s\n", addrs[i]);
	}
	return fflush(stdout) ? 2 : 0;
}

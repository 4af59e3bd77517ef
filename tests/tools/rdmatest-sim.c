/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest-sim: runs N simulated nodes of the cross-node test on one
 * machine, each a process on its own loopback address (127.100.x.y), with
 * the socket transport and optional injected faults, and prints one line
 * per node:
 *
 *   node INDEX NAME pass|fail ELAPSED_S suspects=NAME,NAME codes=CODE@NODE,...
 *        dropped=N port=P links=LINKS_S (when its own link tests ended)
 *        hellos=N cred_checks=N (credentials munged checked for its acceptor)
 *
 * then "wall SECONDS" for the whole run.  --hostile I floods node I (see
 * run_hostile); with --hostile-minted its complete hellos carry fresh
 * credentials of --munge-socket's munged, the local user's own.  Faults (--fault INDEX:KIND):
 *   refuse   the node does not run: its ports refuse connections
 *   silent   the node holds its test ports open but never answers
 *   slow     every data-path step of the node stalls past the deadline
 *   corrupt  the node sends a damaged pattern
 *   badcred  the node signs with another munged (a different key)
 *   die      the node exits in the middle of its first link test
 *   squat    another program holds the node's first test port (accepting
 *            and closing connections): the node must use a fallback port
 *   relay    a relay holds the node's first test port and forwards each
 *            connection to the node's fallback port, from the sender's own
 *            address, flipping one byte of the first frame after the
 *            sender's HELLO (issue 9, test b): the links into the node
 *            must fail closed as an authentication failure, blaming nobody
 *   version[=V]  the node is another spank-ib build: it speaks protocol V
 *            (default this build's + 1) with this build's code, through
 *            the link-time seam ibp_oob_wire_version() (oob.h) defined
 *            below, which the library's own oob_version.c yields to
 *   late     the node starts 300 ms after the others (with --hostile on
 *            the node after it: the flood is under way when its genuine
 *            HELLO comes)
 *
 * --leaves K gives the nodes a topology of K leaves of contiguous nodes
 * under one spine: the topology-aware plan (rdmatest_plan.c).
 *
 * --rails R: every node has R rails, as a rail-optimized node's R HCA
 * ports, each on its own network: rail k of node I on 127.(100 + k).x.y,
 * the address of node I's rail-k netdev (rail 0 is the node's address),
 * devices sim0..sim(R-1).  The test runs in the --mode given (default the
 * library's).
 *
 * --prebind: each node binds its listener before the start barrier and
 * hands it to the test, as the plugin does (spank/ib_test.c binds it as
 * root before it starts the test's child): a peer's first connection then
 * waits in the backlog instead of being refused while the node starts.
 * Without it the test binds its own, as `ibprep rdmatest` does.
 *
 * A test tool, not part of the library: it may exit and print.  Every child
 * is waited for under a deadline and killed by its recorded PID after it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <munge.h>

#include "ibprep/auth.h"
#include "ibprep/oob.h"
#include "ibprep/policy.h"
#include "ibprep/fingerprint.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_ports.h"
#include "ibprep/topology_conf.h"

#include "sim-fingerprint.h"

#define MAX_NODES 4096

enum fault {
	F_NONE,
	F_REFUSE,
	F_SILENT,
	F_SLOW,
	F_CORRUPT,
	F_BADCRED,
	F_DIE,
	F_SQUAT,
	F_RELAY,
	F_VERSION,
	F_LATE
};

static const char *const fault_names[] = {"none",    "refuse",  "silent", "slow",
					  "corrupt", "badcred", "die",    "squat",
					  "relay",   "version", "late"};

/*
 * --fault I:version[=V]: the protocol version node I speaks.  The library
 * asks ibp_oob_wire_version() for it on every frame it encodes or checks;
 * this definition, linked in front of libibprep.a, is the only one in this
 * program, so the library's (oob_version.c, IBP_OOB_VERSION) stays out.
 * Only a test program can do this: the plugin and ibprep link the library's.
 */
static unsigned my_version;

unsigned ibp_oob_wire_version(void)
{
	return my_version ? my_version : IBP_OOB_VERSION;
}

/* Per-process fault state for the wrapped transport (the child is one node). */
static enum fault my_fault;
static double my_timeout;
static int start_fd = -1; /* read end of the start barrier */
/* --hostile-minted: the flood's complete hellos carry fresh credentials of this munged */
static const char *hostile_mint;

static int f_open(const struct ibp_tx_port *p, const struct ibp_tx_opts *o, struct ibp_tx **t)
{
	return ibp_transport_socket.open(p, o, t);
}

static int f_endpoint(struct ibp_tx *t, struct ibp_endpoint *e)
{
	return ibp_transport_socket.endpoint(t, e);
}

static int f_connect(struct ibp_tx *t, const struct ibp_endpoint *e, enum ibp_tx_role r, int64_t d)
{
	if (my_fault == F_SLOW)
		poll(NULL, 0, (int)(my_timeout * 1000));
	return ibp_transport_socket.connect(t, e, r, d);
}

static int f_send_pattern(struct ibp_tx *t, uint64_t seed, size_t len, int64_t d)
{
	if (my_fault == F_DIE)
		_exit(3);
	return ibp_transport_socket.send_pattern(t, my_fault == F_CORRUPT ? seed ^ 1 : seed, len,
						 d);
}

static int f_recv_pattern(struct ibp_tx *t, uint64_t seed, size_t len, int64_t d, size_t *bad)
{
	return ibp_transport_socket.recv_pattern(t, seed, len, d, bad);
}

static int f_bw_send(struct ibp_tx *t, uint64_t b, int64_t d, uint64_t *ns)
{
	return ibp_transport_socket.bw_send(t, b, d, ns);
}

static int f_bw_recv(struct ibp_tx *t, uint64_t b, int64_t d)
{
	return ibp_transport_socket.bw_recv(t, b, d);
}

static int f_lat_ping(struct ibp_tx *t, unsigned n, int64_t d, uint64_t *ns)
{
	return ibp_transport_socket.lat_ping(t, n, d, ns);
}

static int f_lat_pong(struct ibp_tx *t, unsigned n, int64_t d)
{
	return ibp_transport_socket.lat_pong(t, n, d);
}

static void f_close(struct ibp_tx *t)
{
	ibp_transport_socket.close(t);
}

static int f_probe(const struct ibp_tx_port *from, const struct ibp_endpoint *to, unsigned rail,
		   struct ibp_tx_probe *pr)
{
	return ibp_transport_socket.probe(from, to, rail, pr);
}

static int f_probe_check(struct ibp_tx_probe *pr, int64_t now)
{
	return ibp_transport_socket.probe_check(pr, now);
}

static int f_probe_along(struct ibp_tx *t, const struct ibp_endpoint *to, unsigned rail)
{
	return ibp_transport_socket.probe_along(t, to, rail);
}

static int f_probe_along_result(struct ibp_tx *t)
{
	return ibp_transport_socket.probe_along_result(t);
}

static int f_idle_fd(const struct ibp_tx *t)
{
	return ibp_transport_socket.idle_fd(t);
}

static void f_idle(struct ibp_tx *t)
{
	ibp_transport_socket.idle(t);
}

static void f_cache_free(struct ibp_tx_cache *c)
{
	ibp_transport_socket.cache_free(c);
}

/* Every rail's step at once (the socket transport's poll loop), with the same faults. */
static void f_steps(struct ibp_tx_step *v, size_t n)
{
	bool connect = false, send_pattern = false;

	for (size_t i = 0; i < n; i++) {
		connect |= v[i].kind == IBP_TX_STEP_CONNECT;
		if (v[i].kind == IBP_TX_STEP_PATTERN && v[i].role == IBP_TX_SENDER) {
			send_pattern = true;
			if (my_fault == F_CORRUPT)
				v[i].seed ^= 1;
		}
	}
	if (connect && my_fault == F_SLOW)
		poll(NULL, 0, (int)(my_timeout * 1000));
	if (send_pattern && my_fault == F_DIE)
		_exit(3);
	ibp_transport_socket.steps(v, n);
}

static const struct ibp_transport_ops faulty = {
    .name = "socket",
    .kind = IBP_TX_SOCKET,
    .open = f_open,
    .endpoint = f_endpoint,
    .connect = f_connect,
    .send_pattern = f_send_pattern,
    .recv_pattern = f_recv_pattern,
    .bw_send = f_bw_send,
    .bw_recv = f_bw_recv,
    .lat_ping = f_lat_ping,
    .lat_pong = f_lat_pong,
    .close = f_close,
    .probe = f_probe,
    .probe_check = f_probe_check,
    .probe_along = f_probe_along,
    .probe_along_result = f_probe_along_result,
    .steps = f_steps,
    .idle_fd = f_idle_fd,
    .idle = f_idle,
    .cache_free = f_cache_free,
};

/*
 * --auth-check: the credential checks against a real munged: a fresh
 * credential passes once, its replay is refused, and so is any change of
 * a bound field or of the expected uid.  Prints one line per check.
 */
static int auth_check(const char *munge)
{
	struct ibp_auth a = {.socket = munge};
	struct ibp_auth_claims c = {.job = 77,
				    .step = 3,
				    .uid = (uint32_t)getuid(),
				    .from = 1,
				    .to = 2,
				    .nnodes = 4,
				    .round = 1,
				    .nonce = 0x1234};
	struct ibp_auth_claims other;
	char cred[IBP_OOB_CRED_MAX], err[256];
	int bad = 0, rc;

#define CHECK(what, cond)                                                                          \
	do {                                                                                       \
		bool ok_ = (cond);                                                                 \
		printf("%s %s%s%s\n", ok_ ? "ok" : "FAIL", what, err[0] ? ": " : "", err);         \
		bad += !ok_;                                                                       \
		err[0] = '\0';                                                                     \
	} while (0)
	err[0] = '\0';
	rc = ibp_auth_sign(&a, &c, cred, sizeof(cred), err, sizeof(err));
	CHECK("sign", rc > 0);
	CHECK("fresh credential accepted",
	      ibp_auth_verify(&a, cred, &c, NULL, err, sizeof(err)) == 0);
	CHECK("replayed credential refused",
	      ibp_auth_verify(&a, cred, &c, NULL, err, sizeof(err)) == -EACCES);
	other = c;
	other.job = 78;
	ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0);
	CHECK("credential for another job refused",
	      ibp_auth_verify(&a, cred, &other, NULL, err, sizeof(err)) == -EACCES);
	other = c;
	other.to = 3;
	ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0);
	CHECK("credential for another node refused",
	      ibp_auth_verify(&a, cred, &other, NULL, err, sizeof(err)) == -EACCES);
	other = c;
	other.uid = c.uid + 1;
	ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0);
	CHECK("credential from another uid refused",
	      ibp_auth_verify(&a, cred, &other, NULL, err, sizeof(err)) == -EACCES);
	ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0);
	cred[20] = cred[20] == 'A' ? 'B' : 'A';
	CHECK("tampered credential refused",
	      ibp_auth_verify(&a, cred, &c, NULL, err, sizeof(err)) == -EACCES);
	/* The secret inside goes to the job's uid only: another user cannot decode it. */
	{
		uint8_t secret[IBP_AUTH_SECRET_LEN], got[IBP_AUTH_SECRET_LEN];
		int st = -1;
		pid_t pid;

		for (size_t i = 0; i < sizeof(secret); i++)
			secret[i] = (uint8_t)(i * 13 + 1);
		memcpy(c.secret, secret, sizeof(secret));
		c.nonce++;
		ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0);
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			/* nobody: not the job's uid, not root */
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(3);
			_exit(ibp_auth_verify(&a, cred, &c, got, NULL, 0) == -EACCES ? 0 : 1);
		}
		if (pid > 0)
			waitpid(pid, &st, 0);
		CHECK("credential decoded by another uid refused (uid restriction)",
		      WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK("secret handed to the job's uid intact",
		      ibp_auth_verify(&a, cred, &c, got, err, sizeof(err)) == 0 &&
			  memcmp(got, secret, sizeof(got)) == 0);
	}
#undef CHECK
	return bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rdmatest-sim --nodes N [--timeout S] [--munge-socket P] "
		"[--bad-munge-socket P]\n"
		"       [--insecure] [--fingerprint [--fp-odd FIRST:COUNT]] [--fault I:KIND]... "
		"[--job J] [--step S] "
		"[--ports A-B]\n"
		"       [--buf BYTES] [--burst BYTES] [--policy KEY=VALUE]... [--hostile I] "
		"[--leaves K] [--prebind]\n"
		"       [--rails R] [--mode quick|full]\n"
		"       --outdir DIR\n");
	exit(2);
}

/* Holds the node's candidate ports open and never answers. */
static void run_silent(const char *addr, uint32_t job, uint32_t step, const struct ibp_policy *p)
{
	uint16_t ports[IBP_RDMATEST_PORT_CANDIDATES];
	int n = ibp_oob_ports(job, step, p->test_port_lo, p->test_port_hi, ports,
			      IBP_RDMATEST_PORT_CANDIDATES);

	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(ports[i])};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		inet_pton(AF_INET, addr, &a.sin_addr);
		if (fd >= 0) /* as the node's own listener: a run just before may leave TIME_WAIT */
			(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64))
			perror("rdmatest-sim: silent node listener");
	}
	poll(NULL, 0, (int)(my_timeout * 3000));
	_exit(0);
}

/* Connects to ADDR:PORT, from SRC when not NULL (a step node's address). */
static int dial_from(const char *src, const char *addr, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in s = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, addr, &a.sin_addr);
	if (fd >= 0 && src) {
		inet_pton(AF_INET, src, &s.sin_addr);
		if (bind(fd, (struct sockaddr *)&s, sizeof(s))) {
			close(fd);
			return -1;
		}
	}
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void hostile_from(const char *src, const char *addr, uint32_t job, uint32_t step,
			 uint32_t target, uint32_t n, const struct ibp_policy *p, int64_t end);

/*
 * A hostile local process against ADDR's test port for SECONDS: garbage,
 * truncated and wrong-version frames, forged and replayed hellos, a
 * slowloris and a flood of idle connections, over and over; every kind
 * both from an address outside the step (127.0.0.1) and from PEER_ADDR,
 * the address of the step node ADDR receives from first (what a user
 * logged in on that node can do).
 */
static void run_hostile(const char *addr, const char *peer_addr, uint32_t job, uint32_t step,
			uint32_t target, uint32_t n, const struct ibp_policy *p, double seconds)
{
	int64_t end = ibp_deadline_after_s(ibp_now_ns(), seconds);
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the parent, killed by PID */
	/* the child attacks from the step node's address, the parent from outside */
	hostile_from(pid == 0 ? peer_addr : NULL, addr, job, step, target, n, p, end);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	_exit(0);
}

static void hostile_from(const char *src, const char *addr, uint32_t job, uint32_t step,
			 uint32_t target, uint32_t n, const struct ibp_policy *p, int64_t end)
{
	uint16_t ports[IBP_RDMATEST_PORT_CANDIDATES];
	struct ibp_oob_msg m = {.type = IBP_OOB_HELLO};
	uint8_t frame[IBP_OOB_SMALL_FRAME], junk[300];
	int slow[4] = {-1, -1, -1, -1}, flood[48], nflood = 0, fl;
	uint64_t nonce = 1000;

	ibp_oob_ports(job, step, p->test_port_lo, p->test_port_hi, ports, 1);
	m.u.hello.job = job;
	m.u.hello.step = step;
	m.u.hello.uid = (uint32_t)getuid();
	m.u.hello.from = (target + n - 1) % n; /* the peer it receives from first */
	m.u.hello.to = target;
	m.u.hello.nnodes = n;
	m.u.hello.round = 1;
	m.u.hello.n_rails = 1; /* well-formed: it reaches the credential check */
	m.u.hello.nonce = 77;
	m.u.hello.cred_len = 4;
	memcpy(m.u.hello.cred, "AAAA", 4); /* a forged credential */
	fl = ibp_oob_encode(&m, frame, sizeof(frame));
	if (fl <= 0) {
		fprintf(stderr, "rdmatest-sim: cannot encode the forged hello: %s\n",
			strerror(-fl));
		return;
	}
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	while (ibp_now_ns() < end) {
		int fd;

		/* garbage */
		if ((fd = dial_from(src, addr, ports[0])) >= 0) {
			send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
			close(fd);
		}
		/* a truncated hello */
		if ((fd = dial_from(src, addr, ports[0])) >= 0) {
			send(fd, frame, (size_t)fl / 2, MSG_NOSIGNAL);
			close(fd);
		}
		/* another protocol version */
		if ((fd = dial_from(src, addr, ports[0])) >= 0) {
			uint8_t v[IBP_OOB_SMALL_FRAME];

			memcpy(v, frame, (size_t)fl);
			v[5] = 99;
			send(fd, v, (size_t)fl, MSG_NOSIGNAL);
			close(fd);
		}
		/* a forged hello, twice (a replay) */
		for (int r = 0; r < 2; r++)
			if ((fd = dial_from(src, addr, ports[0])) >= 0) {
				send(fd, frame, (size_t)fl, MSG_NOSIGNAL);
				poll(NULL, 0, 5);
				close(fd);
			}
		/* complete hellos with fresh nonces, the forged credential kept (issue 26 item 7) */
		for (int r = 0; r < 6; r++)
			if ((fd = dial_from(src, addr, ports[0])) >= 0) {
				uint8_t f2[IBP_OOB_SMALL_FRAME];
				struct ibp_oob_msg m2 = m;
				int l2;

				m2.u.hello.nonce = ++nonce;
				if (hostile_mint) { /* a real credential, the local user's own */
					munge_ctx_t ctx = munge_ctx_create();
					char *cred = NULL;

					if (ctx &&
					    !munge_ctx_set(ctx, MUNGE_OPT_SOCKET, hostile_mint) &&
					    munge_encode(&cred, ctx, "x", 1) == EMUNGE_SUCCESS &&
					    strlen(cred) < sizeof(m2.u.hello.cred)) {
						memset(m2.u.hello.cred, 0, sizeof(m2.u.hello.cred));
						memcpy(m2.u.hello.cred, cred, strlen(cred));
						m2.u.hello.cred_len = (uint16_t)strlen(cred);
					}
					free(cred);
					if (ctx)
						munge_ctx_destroy(ctx);
				}
				l2 = ibp_oob_encode(&m2, f2, sizeof(f2));
				if (l2 > 0)
					send(fd, f2, (size_t)l2, MSG_NOSIGNAL);
				close(fd);
			}
		/* slowloris: one byte at a time */
		for (int k = 0; k < 4; k++) {
			if (slow[k] < 0)
				slow[k] = dial_from(src, addr, ports[0]);
			else if (send(slow[k], frame, 1, MSG_NOSIGNAL) != 1) {
				close(slow[k]);
				slow[k] = -1;
			}
		}
		/* a flood of idle connections, renewed */
		while (nflood < 48 && (fd = dial_from(src, addr, ports[0])) >= 0)
			flood[nflood++] = fd;
		if (nflood == 48) {
			for (int k = 0; k < nflood; k++)
				close(flood[k]);
			nflood = 0;
		}
		poll(NULL, 0, 20);
	}
}

/* A foreign program on the node's first candidate port; returns its PID. */
static pid_t squat(const char *addr, uint32_t job, uint32_t step, const struct ibp_policy *p)
{
	uint16_t port;
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	ibp_oob_ports(job, step, p->test_port_lo, p->test_port_hi, &port, 1);
	a.sin_port = htons(port);
	inet_pton(AF_INET, addr, &a.sin_addr);
	/*
	 * as most servers do: the connections of a run just before on the same
	 * port may still be in TIME_WAIT there
	 */
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		perror("rdmatest-sim: squatter");
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	close(fd);
	return pid;
}

/*
 * Copies what is readable on FROM to TO; FLIP: byte offset in this stream
 * to flip, or -1; HEAD (or NULL) keeps the stream's first header.
 */
static int pump(int from, int to, long *seen, long flip, uint8_t *head)
{
	uint8_t buf[4096];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0)
		return n == 0 || (errno != EAGAIN && errno != EINTR) ? -1 : 0;
	if (flip >= *seen && flip < *seen + n)
		buf[flip - *seen] ^= 0x01;
	for (long i = *seen; head && i < IBP_OOB_HDR_LEN && i < *seen + n; i++)
		head[i] = buf[i - *seen];
	*seen += n;
	return send(to, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

/* One relayed connection: client C (from SRC) to the node's fallback port. */
static void relay_one(int c, const char *src, const char *addr, uint16_t port)
{
	long up = 0, down = 0, flip = -1;
	uint8_t head[IBP_OOB_HDR_LEN];
	int s = -1;

	for (int t = 0; t < 100 && s < 0; t++) {
		s = dial_from(src, addr, port);
		if (s < 0)
			poll(NULL, 0, 10);
	}
	if (s < 0)
		_exit(0);
	/*
	 * Both directions until the node's side ends: when the sender's side
	 * fails first (the node reset it after the altered frame), what the
	 * node still sends (its ABORT) is forwarded before the relay goes, as
	 * a relay that only flips one byte would; cutting it short would make
	 * the sender see a vanished peer instead of the node's reason.
	 */
	for (bool up_open = true;;) {
		struct pollfd p[2] = {{.fd = up_open ? c : -1, .events = POLLIN},
				      {.fd = s, .events = POLLIN}};

		if (poll(p, 2, 10000) <= 0)
			break;
		if (p[1].revents && pump(s, c, &down, -1, NULL))
			break;
		/*
		 * upstream: one bit of the sender's first sealed frame flipped,
		 * after its HELLO (as long as its header says: the sender waits
		 * for the answer before it sends more)
		 */
		if (up_open && p[0].revents && pump(c, s, &up, flip, head)) {
			shutdown(s, SHUT_WR);
			up_open = false;
		}
		if (flip < 0 && up >= IBP_OOB_HDR_LEN)
			flip = IBP_OOB_HDR_LEN +
			       ((long)head[8] << 24 | (long)head[9] << 16 | (long)head[10] << 8 |
				head[11]) +
			       IBP_OOB_HDR_LEN + 8;
	}
	_exit(0);
}

/* A relay on the node's first candidate port; returns its PID. */
static pid_t relay(const char *addr, uint32_t job, uint32_t step, const struct ibp_policy *p)
{
	uint16_t ports[2];
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	if (ibp_oob_ports(job, step, p->test_port_lo, p->test_port_hi, ports, 2) != 2)
		return -1;
	a.sin_port = htons(ports[0]);
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		perror("rdmatest-sim: relay");
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid > 0)
		setpgid(pid, pid); /* its own group: killed with its children */
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGCHLD, SIG_IGN); /* the per-connection children reap themselves */
		for (;;) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			char src[INET_ADDRSTRLEN];
			int c = accept(fd, (struct sockaddr *)&from, &fl);

			if (c < 0)
				continue;
			inet_ntop(AF_INET, &from.sin_addr, src, sizeof(src));
			if (fork() == 0) {
				close(fd);
				relay_one(c, src, addr, ports[1]);
			}
			close(c);
		}
	}
	close(fd);
	return pid;
}

/* This process's CPU time so far (every thread), microseconds. */
static long long cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static bool with_fp; /* --fingerprint: every node sends and compares a fingerprint */
/* --leaves K: a topology of K leaves of contiguous nodes: the topology-aware plan */
static struct ibp_topology sim_topo;
static bool with_topo;
static bool prebind;      /* --prebind: listeners bound before the start barrier */
static size_t n_rails;    /* --rails R: R rails per node, each on its own addresses */
static int run_mode = -1; /* --mode quick|full: the config's mode; -1 the default */
/* --fp-odd FIRST:COUNT: those nodes have other firmware on mlx5_3:1 */
static size_t odd_first = SIZE_MAX, odd_count;

static int child(size_t i, struct ibp_hostlist *hl, const char *const *addrs,
		 const struct ibp_policy *pol, const char *munge, const char *bad_munge,
		 bool insecure, uint32_t job, uint32_t step, size_t buf, uint64_t burst,
		 const char *outdir)
{
	static struct ibp_fp node_fp;
	int listen_fds[IBP_RDMATEST_MAX_LISTEN];
	uint16_t listen_ports[IBP_RDMATEST_MAX_LISTEN];
	struct ibp_rdmatest_config cfg = {0};
	struct ibp_rdmatest_result res;
	struct ibp_findings out;
	char path[4096];
	pid_t squatter = 0;
	long long run_cpu;
	unsigned landing = 0;
	FILE *fp;
	int rc;

	/*
	 * Built before the start barrier: the plugin collects the fingerprint
	 * as root before it starts the test's child and hands it over in the
	 * child's plan (spank/ib_test.c), so it is not part of the test's time.
	 */
	if (with_fp)
		sim_fingerprint(&node_fp, i >= odd_first && i - odd_first < odd_count
					      ? "28.41.1000"
					      : "28.39.1002");
	if (prebind) { /* as the plugin binds it, as root, before it starts the test */
		int k =
		    ibp_rdmatest_listen(job, step, pol->test_port_lo, pol->test_port_hi, addrs[i],
					listen_fds, listen_ports, IBP_RDMATEST_MAX_LISTEN);

		if (k < 0) {
			fprintf(stderr, "rdmatest-sim: node %zu: cannot bind its listener: %s\n", i,
				strerror(-k));
			return 2;
		}
		cfg.listen_fds = listen_fds;
		cfg.listen_ports = listen_ports;
		cfg.n_listen_fds = (size_t)k;
	}
	/* Start together, as srun starts the nodes of a step: no fork skew. */
	{
		char c;

		while (read(start_fd, &c, 1) < 0 && errno == EINTR)
			;
	}
	if (my_fault == F_SILENT)
		run_silent(addrs[i], job, step, pol);
	if (my_fault == F_LATE)
		poll(NULL, 0, 300);
	ibp_findings_init(&out);
	cfg.nodes = hl;
	cfg.index = i;
	cfg.job = job;
	cfg.step = step;
	cfg.uid = (uint32_t)getuid();
	cfg.policy = pol;
	cfg.transport = &faulty;
	cfg.munge_socket = my_fault == F_BADCRED ? bad_munge : munge;
	cfg.insecure = insecure;
	cfg.addrs = addrs;
	cfg.topology = with_topo ? &sim_topo : NULL;
	cfg.buf_len = buf;
	cfg.burst_bytes = burst;
	if (with_fp)
		cfg.fingerprint = &node_fp;
	if (run_mode >= 0)
		cfg.mode = (enum ibp_rdmatest_mode)run_mode;
	if (n_rails) {
		static struct ibp_tx_port rails[IBP_RDMATEST_MAX_RAILS];

		for (size_t k = 0; k < n_rails; k++) {
			memset(&rails[k], 0, sizeof(rails[k]));
			snprintf(rails[k].device, sizeof(rails[k].device), "sim%zu", k);
			rails[k].port = 1;
			rails[k].gid_index = -1;
			rails[k].rail = (unsigned)k;
			snprintf(rails[k].addr, sizeof(rails[k].addr), "127.%zu.%zu.%zu", 100 + k,
				 i / 200, i % 200 + 1);
			/* every rail's netdev is lo here: the rails reach each other */
			snprintf(rails[k].ifname, sizeof(rails[k].ifname), "lo");
		}
		cfg.ports = rails;
		cfg.n_ports = n_rails;
	}
	if (my_fault == F_SQUAT)
		squatter = squat(addrs[i], job, step, pol);
	if (my_fault == F_RELAY)
		squatter = relay(addrs[i], job, step, pol);
	run_cpu = cpu_us();
	rc = ibp_rdmatest_run(&cfg, &out, &res);
	run_cpu = cpu_us() - run_cpu;
	if (squatter > 0) {
		kill(my_fault == F_RELAY ? -squatter : squatter, SIGKILL);
		kill(squatter, SIGKILL);
		waitpid(squatter, NULL, 0);
	}
	snprintf(path, sizeof(path), "%s/node%05zu", outdir, i);
	fp = fopen(path, "we");
	if (!fp)
		return 2;
	fprintf(fp, "node %zu %s %s %.6f suspects=", i, hl->names[i],
		rc         ? "error"
		: res.pass ? "pass"
			   : "fail",
		res.elapsed_s);
	for (size_t k = 0; k < res.n_suspects; k++)
		fprintf(fp, "%s%s", k ? "," : "", hl->names[res.suspects[k]]);
	fprintf(fp, " codes=");
	for (size_t k = 0; k < out.n; k++)
		fprintf(fp, "%s%s@%s", k ? "," : "", out.v[k].code,
			out.v[k].node[0] ? out.v[k].node : hl->names[i]);
	for (size_t k = 0; k < res.n_probes; k++)
		landing += res.probes[k].kind == IBP_RDMATEST_PROBE_LANDING;
	fprintf(fp,
		" dropped=%u port=%u links=%.6f hellos=%u cred_checks=%u cpu_us=%lld probes=%zu "
		"landing=%u\n",
		res.dropped, res.oob_port, res.links_s, res.hellos, res.cred_checks, run_cpu,
		res.n_probes, landing);
	for (size_t k = 0; k < out.n; k++) {
		char line[1024];

		ibp_finding_format(&out.v[k], hl->names[i], line, sizeof(line));
		fprintf(fp, "#   %s: %s\n", ibp_severity_name(out.v[k].severity), line);
	}
	fclose(fp);
	ibp_findings_release(&out);
	return rc ? 2 : res.pass ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"nodes", required_argument, NULL, 'n'},
	    {"timeout", required_argument, NULL, 't'},
	    {"munge-socket", required_argument, NULL, 'm'},
	    {"bad-munge-socket", required_argument, NULL, 'b'},
	    {"insecure", no_argument, NULL, 'i'},
	    {"fault", required_argument, NULL, 'f'},
	    {"job", required_argument, NULL, 'j'},
	    {"step", required_argument, NULL, 's'},
	    {"ports", required_argument, NULL, 'p'},
	    {"buf", required_argument, NULL, 'B'},
	    {"burst", required_argument, NULL, 'U'},
	    {"outdir", required_argument, NULL, 'o'},
	    {"policy", required_argument, NULL, 'P'},
	    {"hostile", required_argument, NULL, 'H'},
	    {"hostile-minted", no_argument, NULL, 'Y'},
	    {"auth-check", no_argument, NULL, 'A'},
	    {"fingerprint", no_argument, NULL, 'F'},
	    {"leaves", required_argument, NULL, 'L'},
	    {"fp-odd", required_argument, NULL, 'O'},
	    {"prebind", no_argument, NULL, 'R'},
	    {"rails", required_argument, NULL, 'r'},
	    {"mode", required_argument, NULL, 'M'},
	    {NULL, 0, NULL, 0},
	};
	static enum fault faults[MAX_NODES];
	static unsigned versions[MAX_NODES];
	static char addrbuf[MAX_NODES][32];
	static const char *addrs[MAX_NODES];
	static pid_t pids[MAX_NODES];
	struct ibp_policy pol;
	struct ibp_hostlist hl = {0};
	const char *munge = NULL, *bad_munge = NULL, *outdir = NULL;
	bool insecure = false;
	long hostile = -1;
	pid_t hostile_pid = 0;
	size_t n = 0, buf = 64 << 10, n_leaves = 0;
	uint64_t burst = 256 << 10;
	uint32_t job = 4242, step = 0;
	char err[256], spec[64];
	int64_t t0 = 0, deadline;
	int barrier[2];
	int c;

	ibp_policy_init(&pol);
	ibp_policy_set(&pol, "test_transport", "socket", err, sizeof(err));
	ibp_policy_set(&pol, "test_timeout", "4", err, sizeof(err));
	/* Hundreds of nodes on two cores: scheduling, not the network, sets the latency. */
	ibp_policy_set(&pol, "test_max_lat_us", "500000", err, sizeof(err));
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'L':
			n_leaves = strtoul(optarg, NULL, 10);
			break;
		case 't':
			if (ibp_policy_set(&pol, "test_timeout", optarg, err, sizeof(err)))
				goto bad_policy;
			break;
		case 'p':
			if (ibp_policy_set(&pol, "test_ports", optarg, err, sizeof(err)))
				goto bad_policy;
			break;
		case 'P':
			if (ibp_policy_set_pair(&pol, optarg, err, sizeof(err)))
				goto bad_policy;
			break;
		case 'm':
			munge = optarg;
			break;
		case 'b':
			bad_munge = optarg;
			break;
		case 'i':
			insecure = true;
			break;
		case 'j':
			job = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			step = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'B':
			buf = strtoul(optarg, NULL, 10);
			break;
		case 'U':
			burst = strtoull(optarg, NULL, 10);
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'A':
			return auth_check(munge);
		case 'F':
			with_fp = true;
			break;
		case 'R':
			prebind = true;
			break;
		case 'r':
			n_rails = strtoul(optarg, NULL, 10);
			if (n_rails < 1 || n_rails > IBP_RDMATEST_MAX_RAILS)
				usage();
			break;
		case 'M':
			if (!strcmp(optarg, "quick"))
				run_mode = IBP_RDMATEST_QUICK;
			else if (!strcmp(optarg, "full"))
				run_mode = IBP_RDMATEST_FULL;
			else
				usage();
			break;
		case 'O':
			if (sscanf(optarg, "%zu:%zu", &odd_first, &odd_count) != 2)
				usage();
			break;
		case 'H':
			hostile = (long)strtoul(optarg, NULL, 10);
			break;
		case 'Y':
			hostile_mint = "";
			break;
		case 'f': {
			char *colon;
			size_t idx = strtoul(optarg, &colon, 10);
			size_t k;

			if (*colon != ':' || idx >= MAX_NODES)
				usage();
			if (!strncmp(colon + 1, "version", 7) &&
			    (colon[8] == '\0' || colon[8] == '=')) {
				unsigned long v =
				    colon[8] ? strtoul(colon + 9, NULL, 10) : IBP_OOB_VERSION + 1;

				if (v == 0 || v > 0xffff)
					usage();
				versions[idx] = (unsigned)v;
				faults[idx] = F_VERSION;
				break;
			}
			for (k = 1; k < sizeof(fault_names) / sizeof(fault_names[0]); k++)
				if (!strcmp(colon + 1, fault_names[k]))
					break;
			if (k == sizeof(fault_names) / sizeof(fault_names[0]))
				usage();
			faults[idx] = (enum fault)k;
			break;
		}
		default:
			usage();
		}
	}
	if (n < 1 || n > MAX_NODES || !outdir)
		usage();
	for (size_t k = 0; k < n && prebind; k++)
		if (faults[k] == F_SQUAT || faults[k] == F_RELAY) /* hold the node's first port */
			usage();
	my_timeout = pol.test_timeout_s;
	/* without --fingerprint the step is one with consistency= all off: no fingerprint, no sum */
	for (int k = 0; k < IBP_CK_N && !with_fp; k++)
		pol.consistency[k] = IBP_CONSISTENCY_OFF;
	snprintf(spec, sizeof(spec), "sim[%04u-%04zu]", 0u, n - 1);
	if (ibp_hostlist_expand(spec, 0, &hl, err, sizeof(err))) {
		fprintf(stderr, "rdmatest-sim: %s\n", err);
		return 2;
	}
	if (n_leaves >= 1 && n_leaves <= n) {
		/* K leaves of contiguous nodes under one spine, as topology/tree places them */
		static char text[64 * 1024];
		size_t off = 0, per = (n + n_leaves - 1) / n_leaves;

		ibp_topology_init(&sim_topo);
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"SwitchName=spine Switches=leaf[0-%zu]\n", n_leaves - 1);
		for (size_t k = 0; k < n_leaves && k * per < n; k++)
			off += (size_t)snprintf(text + off, sizeof(text) - off,
						"SwitchName=leaf%zu Nodes=sim[%04zu-%04zu]\n", k,
						k * per,
						(k + 1) * per < n ? (k + 1) * per - 1 : n - 1);
		if (off >= sizeof(text) ||
		    ibp_topology_parse_conf(&sim_topo, text, off, "leaves", err, sizeof(err))) {
			fprintf(stderr, "rdmatest-sim: --leaves: %s\n", err);
			return 2;
		}
		with_topo = true;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(addrbuf[i], sizeof(addrbuf[i]), "127.100.%zu.%zu", i / 200, i % 200 + 1);
		addrs[i] = addrbuf[i];
	}
	fflush(NULL);
	if (pipe2(barrier, O_CLOEXEC)) {
		perror("rdmatest-sim: pipe");
		return 2;
	}
	start_fd = barrier[0];
	if (hostile_mint)
		hostile_mint = munge ? munge : "";
	if (hostile >= 0 && (size_t)hostile < n) {
		hostile_pid = fork();
		if (hostile_pid == 0) {
			close(barrier[1]);
			run_hostile(addrs[hostile], addrs[((size_t)hostile + n - 1) % n], job, step,
				    (uint32_t)hostile, (uint32_t)n, &pol, pol.test_timeout_s);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (faults[i] == F_REFUSE) {
			pids[i] = 0;
			continue;
		}
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("rdmatest-sim: fork");
			pids[i] = 0;
			continue;
		}
		if (pids[i] == 0) {
			close(barrier[1]);
			my_fault = faults[i];
			my_version = versions[i];
			_exit(child(i, &hl, addrs, &pol, munge, bad_munge, insecure, job, step, buf,
				    burst, outdir));
		}
	}
	close(barrier[1]); /* go */
	t0 = ibp_now_ns();
	/* Every node must be done well within its own bound; then kill by PID. */
	deadline = ibp_deadline_after_s(t0, pol.test_timeout_s * 2 + 5);
	for (size_t left = n;;) {
		left = 0;
		for (size_t i = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], NULL, WNOHANG) == pids[i])
				pids[i] = 0;
			else
				left++;
		}
		if (!left)
			break;
		/* Silent nodes never finish on their own: stop them once the rest is done. */
		bool only_silent = true;

		for (size_t i = 0; i < n; i++)
			if (pids[i] > 0 && faults[i] != F_SILENT)
				only_silent = false;
		if (only_silent) {
			for (size_t i = 0; i < n; i++)
				if (pids[i] > 0) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					pids[i] = 0;
				}
			break;
		}
		if (ibp_now_ns() > deadline) {
			for (size_t i = 0; i < n; i++)
				if (pids[i] > 0 && faults[i] != F_SILENT)
					printf("hung %zu %s\n", i, hl.names[i]);
			for (size_t i = 0; i < n; i++)
				if (pids[i] > 0) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
				}
			break;
		}
		poll(NULL, 0, 10);
	}
	printf("wall %.3f\n", (double)(ibp_now_ns() - t0) / 1e9);
	{
		struct rusage ru;

		if (!getrusage(RUSAGE_CHILDREN, &ru))
			printf("cpu_per_node_ms %.2f\n",
			       ((double)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
				(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6) *
				   1000.0 / (double)n);
	}
	if (hostile_pid > 0) {
		kill(hostile_pid, SIGKILL);
		waitpid(hostile_pid, NULL, 0);
	}
	for (size_t i = 0; i < n; i++) {
		char path[4096], line[2048];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/node%05zu", outdir, i);
		fp = fopen(path, "re");
		if (!fp) {
			printf("node %zu %s absent fault=%s\n", i, hl.names[i],
			       fault_names[faults[i]]);
			continue;
		}
		while (fgets(line, sizeof(line), fp))
			fputs(line, stdout);
		fclose(fp);
	}
	ibp_hostlist_release(&hl);
	return 0;
bad_policy:
	fprintf(stderr, "rdmatest-sim: %s\n", err);
	return 2;
}

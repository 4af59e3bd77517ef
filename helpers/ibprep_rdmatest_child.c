/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep rdmatest --child: the plugin's test child (internal; not for
 * people).  spank_ib.so binds the test's listener as root, then forks and
 * execs this as the test's system user for good (test_user=: setgroups,
 * setresgid, setresuid, not dumpable, PR_SET_NO_NEW_PRIVS, a clean
 * environment), so the code that reads other hosts' bytes, libmunge, the
 * resolver and libibverbs never run in a process that can become root
 * again, nor in one the job's owner can ptrace, signal or take the
 * listener from.  Its munge credentials are that user's: peers accept only
 * credentials encoded by the uid they run as themselves (the test's user
 * has the same uid on every node), and only that uid may decode them.
 *
 *   fd 0   the plan (rdmatest_pipe.h), then EOF
 *   fd 1   the result frame, written once at the end
 *   fd 2   /dev/null
 *   fd 3.. the listening sockets the plugin bound (plan: listen_bound)
 *
 * The parent kills this process past test_timeout plus a margin, whatever
 * it is waiting for (munged, the resolver, a peer): no wait here needs its
 * own bound beyond the test's, but name lookups get one anyway so a slow
 * resolver becomes a finding rather than a killed test.
 * Exit status: 0 a result was written, 2 none could be.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "ibprep_cmd.h"
#include "ibprep/deadline.h"
#include "ibprep/oob.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_pipe.h"
#include "ibprep/text.h"
#include "ibprep/rootpath.h"
#include "ibprep/topology_conf.h"

struct child_resolve {
	int64_t deadline; /* every lookup ends by then */
};

/* One name, bounded by the child's DEADLINE (ibprep_resolve.c). */
static int resolve_timed(void *arg, size_t index, const char *name, char *addr, size_t len)
{
	const struct child_resolve *cr = arg;
	char out[1][IBPREP_ADDR_MAX];
	int rc;

	(void)index;
	ibprep_resolve_names(&name, 1, cr->deadline, false, out, &rc);
	if (!rc && snprintf(addr, len, "%s", out[0]) >= (int)len)
		rc = -ENOSPC;
	return rc == -EINVAL ? -ENOENT : rc;
}

/* No effective, permitted or bounding capability left (root jobs too). */
static int no_capabilities(char *err, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data)) {
		snprintf(err, len, "capget: %s", strerror(errno));
		return -errno;
	}
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted) {
			snprintf(err, len,
				 "the test child runs with capabilities (effective %#x, permitted "
				 "%#x): refusing",
				 data[i].effective, data[i].permitted);
			return -EPERM;
		}
	return 0;
}

static int read_plan(struct ibp_pipe_plan *plan, char *err, size_t len)
{
	static uint8_t buf[IBP_PIPE_FRAME_MAX + 1];
	size_t got = 0;
	int rc;

	for (;;) {
		ssize_t n = read(0, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, len, "reading the plan: %s", strerror(errno));
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf)) {
			snprintf(err, len, "the plan is larger than %d bytes", IBP_PIPE_FRAME_MAX);
			return -EFBIG;
		}
	}
	rc = ibp_pipe_plan_decode(buf, got, plan);
	if (rc)
		snprintf(err, len, "the plan (%zu bytes) does not decode: %s", got, strerror(-rc));
	return rc;
}

/* fd FD must be a listening TCP socket on PORT. */
static int check_listener(int fd, uint16_t port, char *err, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss), ol;
	int acc = 0, type = 0;
	unsigned got = 0;

	memset(&ss, 0, sizeof(ss));
	ol = sizeof(acc);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &ol) || !acc ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){sizeof(type)}) ||
	    type != SOCK_STREAM || getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		snprintf(err, len, "fd %d is not a listening TCP socket", fd);
		return -EBADF;
	}
	if (ss.ss_family == AF_INET)
		got = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else if (ss.ss_family == AF_INET6)
		got = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (got != port) {
		snprintf(err, len, "fd %d listens on port %u, the plan says %u", fd, got, port);
		return -EBADF;
	}
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_result(const struct ibp_rdmatest_result *res, const struct ibp_findings *f)
{
	static uint8_t buf[IBP_PIPE_FRAME_MAX];
	int n = ibp_pipe_result_encode(res, f, buf, sizeof(buf));

	if (n < 0)
		return n;
	return write_all(1, buf, (size_t)n);
}

/* The child's own trouble, as a node-setup finding the parent shows. */
static int send_setup_failure(const char *why)
{
	struct ibp_rdmatest_result res;
	struct ibp_findings f;
	int rc;

	memset(&res, 0, sizeof(res));
	res.setup_err = -EINVAL;
	ibp_findings_init(&f);
	ibp_findings_addf(&f, "rdmatest_child_setup", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, NULL,
			  "check that spank_ib.so and ibprep come from the same build", "%s", why);
	rc = send_result(&res, &f);
	ibp_findings_release(&f);
	return rc;
}

/*
 * topology_conf= for the blame: read only when root owns the file and every
 * directory on its way and nobody else may write them (rootpath.h; this
 * child runs as the test's user, whose own files are not trusted either);
 * otherwise a warning, and the blame goes on without leaves.
 */
static int load_topology(const char *path, struct ibp_topology *t, struct ibp_findings *f)
{
	char err[512] = "", why[480] = "";
	int fd, rc;

	fd = ibp_rootpath_open(path, O_RDONLY, IBP_ROOTPATH_ROOT, why, sizeof(why));
	if (fd == -EPERM) {
		rc = fd;
		ibp_format_cut(err, sizeof(err), "not root's or writable by others: ignored (%s)",
			       why);
	} else if (fd < 0) {
		rc = fd;
		ibp_format_cut(err, sizeof(err), "%s", why);
	} else {
		rc = ibp_topology_load_fd(t, fd, path, err, sizeof(err));
		close(fd);
	}
	if (rc)
		ibp_findings_addf(f, "rdmatest_topology_ignored", IBP_SEV_WARN, IBP_CLASS_NODE,
				  NULL, 0, "a topology file root owns",
				  "fix topology_conf= in plugstack.conf", "topology_conf=%s", err);
	return rc;
}

/*
 * This node's leaf switch from SLURM_TOPOLOGY_ADDR (the last switch of its
 * path), or NULL: no switch in it (no topology/tree), or an address that
 * is not this node's or does not parse (a warning says so).
 */
static const char *addr_leaf(const struct ibp_pipe_plan *p, char *leaf, size_t len,
			     struct ibp_findings *f)
{
	char sw[IBP_TOPOLOGY_MAX_DEPTH][IBP_NODE_MAX], node[IBP_NODE_MAX], err[256] = "";
	struct ibp_hostlist hl = {0};
	size_t n_sw = 0;
	bool mine;

	if (ibp_topology_parse_addr(p->topology_addr, p->topology_pattern, sw,
				    IBP_TOPOLOGY_MAX_DEPTH, &n_sw, node, sizeof(node), err,
				    sizeof(err))) {
		ibp_findings_addf(f, "rdmatest_topology_addr_ignored", IBP_SEV_WARN, IBP_CLASS_JOB,
				  NULL, 0, "a SLURM_TOPOLOGY_ADDR that matches its pattern",
				  "set topology_conf= in plugstack.conf",
				  "SLURM_TOPOLOGY_ADDR=%s: %s: the blame knows no leaves",
				  p->topology_addr, err);
		return NULL;
	}
	if (n_sw == 0)
		return NULL; /* "node": no switches configured */
	if (ibp_hostlist_expand(p->nodelist, 0, &hl, err, sizeof(err)))
		return NULL; /* the run says what is wrong with the list */
	mine = p->index < hl.n && !strcmp(hl.names[p->index], node);
	if (!mine)
		ibp_findings_addf(
		    f, "rdmatest_topology_addr_ignored", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
		    "this node's own path", "set topology_conf= in plugstack.conf",
		    "SLURM_TOPOLOGY_ADDR=%s names %s, this node is %s: the blame knows "
		    "no leaves",
		    p->topology_addr, node,
		    p->index < hl.n ? hl.names[p->index] : "not in the node list");
	ibp_hostlist_release(&hl);
	if (!mine)
		return NULL;
	snprintf(leaf, len, "%s", sw[n_sw - 1]);
	return leaf;
}

int ibprep_rdmatest_child(void)
{
	struct ibp_topology topo;
	static struct ibp_pipe_plan plan;
	static struct ibp_rdmatest_result res;
	struct ibp_rdmatest_config cfg = {0};
	struct child_resolve cr;
	struct ibp_findings f;
	int fds[IBP_PIPE_MAX_LISTEN];
	char err[256];
	int next_fd = IBP_PIPE_LISTEN_FD0, rc;
	char leaf[IBP_NODE_MAX];

	if (no_capabilities(err, sizeof(err)) || read_plan(&plan, err, sizeof(err)))
		return send_setup_failure(err) ? 2 : 0;
	/* The test's own user: never root, never the job's owner, and not dumpable. */
	if (getuid() != geteuid() || getuid() == 0 || plan.uid == (uint32_t)getuid() ||
	    prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) {
		snprintf(err, sizeof(err),
			 "the test child runs as uid %u (effective %u, dumpable %d) for the job's "
			 "uid %u: it must run as the test's system user (test_user=)",
			 (unsigned)getuid(), (unsigned)geteuid(),
			 prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), plan.uid);
		return send_setup_failure(err) ? 2 : 0;
	}
	for (size_t i = 0; i < plan.n_listen; i++) {
		fds[i] = -1;
		if (!plan.listen_bound[i])
			continue;
		if (check_listener(next_fd, plan.listen_ports[i], err, sizeof(err)))
			return send_setup_failure(err) ? 2 : 0;
		fds[i] = next_fd++;
	}
	cfg.nodelist = plan.nodelist;
	cfg.index = plan.index;
	cfg.job = plan.job;
	cfg.step = plan.step;
	cfg.uid = plan.uid;
	cfg.test_uid = (uint32_t)getuid();
	cfg.ports = plan.n_ports ? plan.ports : NULL;
	cfg.n_ports = plan.n_ports;
	cfg.policy = &plan.policy;
	cfg.mode = plan.mode;
	cfg.munge_socket = plan.munge_socket[0] ? plan.munge_socket : NULL;
	cfg.fingerprint = plan.has_fp ? &plan.fp : NULL;
	cfg.start_ns = ibp_now_ns();
	/* Lookups end with round 1 at the latest: a peer named later is unreachable in time anyway. */
	cr.deadline = ibp_deadline_split(
	    cfg.start_ns, ibp_deadline_after_s(cfg.start_ns, plan.policy.test_timeout_s), 0.4);
	cfg.resolve = resolve_timed;
	cfg.resolve_arg = &cr;
	if (plan.n_listen) {
		cfg.listen_fds = fds;
		cfg.listen_ports = plan.listen_ports;
		cfg.n_listen_fds = plan.n_listen;
	}
	ibp_findings_init(&f);
	ibp_topology_init(&topo);
	if (plan.topology_conf[0] && !load_topology(plan.topology_conf, &topo, &f))
		cfg.topology = &topo;
	else if (!plan.topology_conf[0] && plan.topology_addr[0])
		cfg.own_leaf = addr_leaf(&plan, leaf, sizeof(leaf), &f);
	rc = ibp_rdmatest_run(&cfg, &f, &res);
	ibp_topology_release(&topo);
	if (rc && !f.n)
		ibp_findings_addf(&f, "rdmatest_child_setup", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
				  NULL, NULL, "the cross-node test could not run: %s",
				  strerror(-rc));
	rc = send_result(&res, &f);
	ibp_findings_release(&f);
	return rc ? 2 : 0;
}

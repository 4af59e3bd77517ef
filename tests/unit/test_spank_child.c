/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_child.c: the plugin's helper processes (ib_child.c), the
 * cross-node test's child above all, for real: this binary is also the
 * helper it execs ("rdmatest --child"), which behaves as the plan's job
 * number says: 1 reports what it is (uid, groups, capabilities,
 * no_new_privs, dumpable at its first instruction, parent-death signal,
 * blocked and ignored signals, fds, environment), 2 stalls, 3 writes garbage, 4 writes too much, 5
 * exits without a result, 6 writes a good result and exits 1.  The test's
 * user is 65534 here, the job's 4242.  It is also the
 * plugin's name lookup child ("env --resolve-child", ib_step.c), answering
 * as its first name says: "n2" 127.0.0.2, "stall" never, "garbage" with
 * what is not an address.  The drop needs root: without it the cases are
 * skipped, saying so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/deadline.h"
#include "ibprep/rdmatest_pipe.h"
#include "../../spank/spank_ib.h"
#include "fork_probe.h"
#include "support/fixture.h"

extern char **environ;

static char self_path[PATH_MAX];

/* ---- the helper side ---- */

static void status_field(const char *name, char *out, size_t len)
{
	char buf[4096], *p;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	snprintf(out, len, "?");
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = strstr(buf, name);
	if (!p)
		return;
	p += strlen(name);
	while (*p == ' ' || *p == '\t')
		p++;
	snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

static void probe(char *out, size_t len, int dumpable)
{
	char nnp[32], capeff[32], capprm[32], capbnd[32], blk[32], ign[32], fds[128] = "";
	gid_t groups[16];
	int ng = getgroups(16, groups), env = 0, pdeath = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t o = 0;

	status_field("NoNewPrivs:", nnp, sizeof(nnp));
	status_field("CapEff:", capeff, sizeof(capeff));
	status_field("CapPrm:", capprm, sizeof(capprm));
	status_field("CapBnd:", capbnd, sizeof(capbnd));
	status_field("SigBlk:", blk, sizeof(blk));
	status_field("SigIgn:", ign, sizeof(ign));
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		o += (size_t)snprintf(fds + o, sizeof(fds) - o, "%s%s", o ? "," : "", e->d_name);
		if (o >= sizeof(fds))
			break;
	}
	if (d)
		closedir(d);
	for (char **p = environ; *p; p++)
		env++;
	(void)prctl(PR_GET_PDEATHSIG, &pdeath, 0, 0, 0);
	int w = snprintf(out, len,
			 "uid=%u euid=%u gid=%u ng=%d g0=%u nnp=%s eff=%s prm=%s bnd=%s dump=%d "
			 "pdeath=%d blk=%s ign=%s fds=%s env=%d",
			 (unsigned)getuid(), (unsigned)geteuid(), (unsigned)getgid(), ng,
			 ng > 0 ? (unsigned)groups[0] : 99999u, nnp, capeff, capprm, capbnd,
			 dumpable, pdeath, blk, ign, fds, env);
	if (w < 0 || (size_t)w >= len)
		snprintf(out, len, "probe too long");
}

static int helper_main(int dumpable)
{
	static uint8_t buf[IBP_PIPE_FRAME_MAX + 1];
	static struct ibp_pipe_plan plan;
	static struct ibp_rdmatest_result res;
	struct ibp_findings f;
	size_t got = 0;
	ssize_t n;
	int len;

	while ((n = read(0, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	if (ibp_pipe_plan_decode(buf, got, &plan))
		_exit(9);
	switch (plan.job) {
	case 1: {
		char what[IBP_TEXT_MAX];

		probe(what, sizeof(what), dumpable);
		ibp_findings_init(&f);
		ibp_findings_addf(&f, "probe", IBP_SEV_OK, IBP_CLASS_NODE, NULL, 0, NULL, NULL,
				  "%s", what);
		memset(&res, 0, sizeof(res));
		res.pass = true;
		len = ibp_pipe_result_encode(&res, &f, buf, sizeof(buf));
		if (len > 0 && write(1, buf, (size_t)len) != len)
			_exit(8);
		_exit(0);
	}
	case 2:
		for (;;)
			pause();
	case 3: {
		/* this version (IBP_PIPE_VERSION), then a frame the decoder refuses */
		char frame[16] = "IBPC\0\0\0\2garbage";

		frame[5] = IBP_PIPE_VERSION;
		if (write(1, frame, 15) != 15)
			_exit(8);
		_exit(0);
	}
	case 4:
		memset(buf, 'x', sizeof(buf));
		for (int i = 0; i < 4; i++)
			if (write(1, buf, sizeof(buf)) < 0)
				_exit(8);
		_exit(0);
	case 6:
		/* a result that decodes, from a child that then fails: not the node's word */
		ibp_findings_init(&f);
		memset(&res, 0, sizeof(res));
		res.pass = true;
		len = ibp_pipe_result_encode(&res, &f, buf, sizeof(buf));
		if (len > 0 && write(1, buf, (size_t)len) != len)
			_exit(8);
		_exit(1);
	default:
		_exit(3);
	}
}

/* The lookup child: "MS\nNAME...\n" in, one line per name out. */
static int resolver_main(void)
{
	char buf[1024], *save = NULL, *line;
	size_t got = 0;
	ssize_t n;

	while ((n = read(0, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	if (!strtok_r(buf, "\n", &save))
		_exit(9);
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (!strcmp(line, "stall"))
			for (;;)
				pause();
		printf("%s\n", !strcmp(line, "n2")        ? "127.0.0.2"
			       : !strcmp(line, "garbage") ? "rm -rf /"
							  : "!noname");
	}
	return 0;
}

/* ---- the parent side ---- */

static int need_root(void)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "# not root: the privilege drop cannot be exercised\n");
	return -1;
}

#define JOB_UID  4242u
#define TEST_UID 65534u

static int run_helper(const char *helper, uint32_t mode, uint32_t uid, double budget, int lfd,
		      uint16_t lport, struct ibp_rdmatest_result *res, struct ibp_findings *f,
		      char *err, size_t len)
{
	static struct ibp_pipe_plan plan;
	struct spank_ib_child_spec spec = {
	    .helper = helper, .uid = uid, .gid = uid, .budget_s = budget};

	ibp_pipe_plan_init(&plan);
	plan.job = mode;
	plan.uid = JOB_UID;
	snprintf(plan.nodelist, sizeof(plan.nodelist), "n1");
	if (lfd >= 0) {
		plan.n_listen = 2;
		plan.listen_ports[0] = 230;
		plan.listen_ports[1] = lport;
		plan.listen_bound[1] = true;
		spec.listen_fds = &lfd;
		spec.n_listen_fds = 1;
	}
	err[0] = '\0';
	return spank_ib_child_run(&spec, &plan, res, f, err, len);
}

static int run(uint32_t mode, uint32_t uid, double budget, int lfd, uint16_t lport,
	       struct ibp_rdmatest_result *res, struct ibp_findings *f, char *err, size_t len)
{
	return run_helper(self_path, mode, uid, budget, lfd, lport, res, f, err, len);
}

static int listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void test_child_user_dropped_for_good(void **state)
{
	static struct ibp_rdmatest_result res;
	struct ibp_findings f;
	char err[512];
	uint16_t port;
	int lfd, stray;

	(void)state;
	if (need_root())
		skip();
	lfd = listener(&port);
	/* An fd the parent has open without CLOEXEC must not reach the child. */
	stray = open("/dev/null", O_RDONLY);
	assert_true(stray > 3);
	ibp_findings_init(&f);
	assert_int_equal(run(1, TEST_UID, 20, lfd, port, &res, &f, err, sizeof(err)), 0);
	assert_true(res.pass);
	assert_int_equal(f.n, 1);
	print_message("# child: %s\n", f.v[0].observed);
	/* the test's user, no supplementary group at all (not even slurmstepd's or the job's) */
	assert_non_null(strstr(f.v[0].observed, "uid=65534 euid=65534 gid=65534 ng=0 "));
	assert_non_null(strstr(f.v[0].observed, "nnp=1 "));
	assert_non_null(strstr(f.v[0].observed, "eff=0000000000000000 prm=0000000000000000"));
	/* killed with slurmstepd */
	assert_non_null(strstr(f.v[0].observed, " pdeath=9 "));
	/* stdin, stdout, stderr, the one listener: nothing else; PATH and LC_ALL only. */
	assert_non_null(strstr(f.v[0].observed, "fds=0,1,2,3 env=2"));
	close(stray);
	close(lfd);
	ibp_findings_release(&f);
}

/*
 * The helper's child is forked with every signal blocked (spank_ib_child_fork):
 * a signal that reaches it before its set-up never runs slurmstepd's handler
 * (fork_probe.h), and the helper starts with no signal blocked or ignored
 * although this process blocks one and ignores another.
 */
static void test_child_no_handler_of_slurmstepd_before_set_up(void **state)
{
	static struct ibp_rdmatest_result res;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	sigset_t usr2, old_mask;
	struct ibp_findings f;
	char err[512];
	unsigned long long blocked, ignored;
	int forks = -1, runs, rc;
	const char *blk;

	(void)state;
	if (need_root())
		skip();
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	assert_int_equal(sigprocmask(SIG_BLOCK, &usr2, &old_mask), 0);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	assert_int_equal(fork_probe_arm(SIGWINCH), 0);
	ibp_findings_init(&f);
	rc = run(1, TEST_UID, 20, -1, 0, &res, &f, err, sizeof(err));
	runs = fork_probe_disarm(&forks);
	assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
	assert_int_equal(forks, 1);
	assert_int_equal(runs, 0);
	if (rc)
		fail_msg("rc %d: %s", rc, err);
	assert_int_equal(f.n, 1);
	print_message("# child: %s\n", f.v[0].observed);
	blk = strstr(f.v[0].observed, " blk=");
	assert_non_null(blk);
	assert_int_equal(sscanf(blk, " blk=%llx ign=%llx ", &blocked, &ignored), 2);
	/* glibc's own signals (32 up to SIGRTMIN) cannot be set: the runner's stay */
	for (int sig = 32; sig < SIGRTMIN; sig++)
		ignored &= ~(1ULL << (sig - 1));
	assert_int_equal(blocked, 0);
	assert_int_equal(ignored, 0);
	ibp_findings_release(&f);
}

/*
 * What exec does to dumpability: a helper its user can read starts dumpable
 * (why ibprep's first instruction says PR_SET_DUMPABLE 0 again); one it may
 * only execute (mode 0711) starts not dumpable.
 */
static void test_child_dumpable_after_exec_unless_unreadable(void **state)
{
	static struct ibp_rdmatest_result res;
	char *dir = ibp_fixture_tmpdir(), copy[PATH_MAX + 16], err[512], cmd[3 * PATH_MAX + 64];
	struct ibp_findings f;

	(void)state;
	if (need_root())
		skip();
	assert_non_null(dir);
	ibp_findings_init(&f);
	assert_int_equal(run(1, TEST_UID, 20, -1, 0, &res, &f, err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.v[0].observed, " dump=1 "));
	ibp_findings_release(&f);
	assert_int_equal(chmod(dir, 0711), 0);
	snprintf(copy, sizeof(copy), "%s/helper", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0711 '%s'", self_path, copy, copy);
	assert_int_equal(system(cmd), 0);
	ibp_findings_init(&f);
	assert_int_equal(run_helper(copy, 1, TEST_UID, 20, -1, 0, &res, &f, err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);
	print_message("# execute-only helper: %s\n", f.v[0].observed);
	assert_null(strstr(f.v[0].observed, " dump=1 "));
	ibp_findings_release(&f);
	ibp_fixture_destroy(dir);
}

/* The test's child is never root: refused before anything is forked. */
static void test_child_never_root(void **state)
{
	static struct ibp_rdmatest_result res;
	struct ibp_findings f;
	char err[512];

	(void)state;
	ibp_findings_init(&f);
	assert_int_equal(run(1, 0, 20, -1, 0, &res, &f, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "must not run as root"));
	assert_int_equal(f.n, 0);
	ibp_findings_release(&f);
}

/* test_user=: looked up, and refused where it would be root or the job's owner. */
static void test_test_user_lookup(void **state)
{
	uint32_t uid = 1, gid = 1;
	char err[512];

	(void)state;
	assert_int_equal(spank_ib_test_user("root", JOB_UID, &uid, &gid, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "must not run as root"));
	assert_int_equal(
	    spank_ib_test_user("ibp-no-such-user", JOB_UID, &uid, &gid, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "test user 'ibp-no-such-user' does not exist on this node"));
	if (spank_ib_test_user("nobody", JOB_UID, &uid, &gid, err, sizeof(err))) {
		print_message("# no user 'nobody' here: %s\n", err);
		return;
	}
	assert_int_equal(uid, 65534);
	assert_int_equal(spank_ib_test_user("nobody", 65534, &uid, &gid, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "is the job's own user"));
	assert_string_equal(spank_ib_test_user_default(), "_spank-ib");
}

/*
 * The plugin's other helpers (a name lookup, the report) work for the job's
 * user: a root job's keeps uid 0 but has no capability at all, none to
 * regain.
 */
static void test_helper_root_job_has_no_capabilities(void **state)
{
	static struct ibp_pipe_plan plan;
	static struct ibp_rdmatest_result res;
	static uint8_t buf[IBP_PIPE_FRAME_MAX + 1];
	struct spank_ib_child_spec spec = {.helper = self_path, .uid = 0, .gid = 0, .budget_s = 20};
	char *argv[] = {self_path, (char *)"rdmatest", (char *)"--child", NULL};
	struct ibp_findings f;
	char err[512];
	size_t got = 0;
	int n;

	(void)state;
	if (need_root())
		skip();
	ibp_pipe_plan_init(&plan);
	plan.job = 1;
	snprintf(plan.nodelist, sizeof(plan.nodelist), "n1");
	n = ibp_pipe_plan_encode(&plan, buf, IBP_PIPE_FRAME_MAX);
	assert_true(n > 0);
	assert_int_equal(spank_ib_helper_run(&spec, argv, buf, (size_t)n, buf, sizeof(buf), &got,
					     err, sizeof(err)),
			 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_pipe_result_decode(buf, got, &res, &f), 0);
	assert_int_equal(f.n, 1);
	print_message("# child: %s\n", f.v[0].observed);
	assert_non_null(strstr(f.v[0].observed, "uid=0 "));
	assert_non_null(strstr(f.v[0].observed,
			       "eff=0000000000000000 prm=0000000000000000 bnd=0000000000000000"));
	assert_non_null(strstr(f.v[0].observed, "nnp=1 "));
	assert_non_null(strstr(f.v[0].observed, "fds=0,1,2 env=2"));
	ibp_findings_release(&f);
}

static void test_child_stalled_killed_at_deadline(void **state)
{
	static struct ibp_rdmatest_result res;
	struct ibp_findings f;
	char err[512];
	const char *p;
	int pid;

	(void)state;
	if (need_root())
		skip();
	ibp_findings_init(&f);
	assert_int_equal(run(2, 65534, 0.3, -1, 0, &res, &f, err, sizeof(err)), -ETIMEDOUT);
	assert_non_null(strstr(err, "did not finish in 0.3 s"));
	p = strstr(err, "child ");
	assert_non_null(p);
	pid = atoi(p + 6);
	assert_true(pid > 0);
	/* Killed and reaped: no such process any more, not even a zombie. */
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(f.n, 0);
	ibp_findings_release(&f);
}

static void test_child_bad_results_refused(void **state)
{
	static struct ibp_rdmatest_result res;
	struct ibp_findings f;
	char err[512];

	(void)state;
	if (need_root())
		skip();
	ibp_findings_init(&f);
	assert_int_equal(run(3, 65534, 20, -1, 0, &res, &f, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "result (15 bytes) is refused"));
	assert_int_equal(run(4, 65534, 20, -1, 0, &res, &f, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "more than"));
	assert_int_equal(run(5, 65534, 20, -1, 0, &res, &f, err, sizeof(err)), -ECHILD);
	assert_non_null(strstr(err, "exited with status 3 without a result"));
	assert_int_equal(run(6, 65534, 20, -1, 0, &res, &f, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "exited with status 1 after writing"));
	assert_false(res.pass);
	assert_int_equal(f.n, 0);
	ibp_findings_release(&f);
}

static void test_child_exec_failure_said(void **state)
{
	static struct ibp_rdmatest_result res;
	static struct ibp_pipe_plan plan;
	struct spank_ib_child_spec spec = {
	    .helper = "/nonexistent/ibprep", .uid = 65534, .gid = 65534, .budget_s = 20};
	struct ibp_findings f;
	char err[512];

	(void)state;
	if (need_root())
		skip();
	ibp_pipe_plan_init(&plan);
	ibp_findings_init(&f);
	assert_int_equal(spank_ib_child_run(&spec, &plan, &res, &f, err, sizeof(err)), -ECHILD);
	assert_non_null(strstr(err, "could not execute the helper"));
	ibp_findings_release(&f);
}

static void test_helper_check_ownership(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX + 16], err[512];

	(void)state;
	assert_int_equal(spank_ib_helper_check("test helper", "ibprep", err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    spank_ib_helper_check("test helper", "/nonexistent/ibprep", err, sizeof(err)), -ENOENT);
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/helper", dir);
	assert_int_equal(ibp_fixture_write(dir, "helper", "#!/bin/sh\n"), 0);
	assert_int_equal(chmod(path, 0757), 0);
	assert_int_equal(spank_ib_helper_check("test helper", path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "with mode 0757"));
	assert_non_null(strstr(err, "not writable by group or others"));
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(spank_ib_helper_check("test helper", path, err, sizeof(err)), -EACCES);
	if (geteuid() == 0) {
		assert_int_equal(chmod(path, 0755), 0);
		assert_int_equal(chmod(dir, 0777), 0);
		assert_int_equal(spank_ib_helper_check("test helper", path, err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "the directory"));
		assert_non_null(strstr(err, "with mode 0777"));
		assert_int_equal(chmod(dir, 0755), 0);
		/* root's only: not the caller's (a job user's) own helper */
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(spank_ib_helper_check("test helper", path, err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "(uid 65534) with mode 0755"));
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(chmod(dir, 0755), 0);
		assert_int_equal(spank_ib_helper_check("test helper", path, err, sizeof(err)), 0);
	}
	ibp_fixture_destroy(dir);
}

/*
 * NCCL_SOCKET_IFNAME's lookups run in the helper, as the job's user: the
 * peer's answer routes through lo; a lookup that never ends is killed at
 * the deadline (the step goes on, nothing left behind); an answer that is
 * not an address is refused.
 */
static void test_resolve_in_child(void **state)
{
	struct spank_ib_child_spec spec = {.helper = self_path, .uid = 65534, .gid = 65534};
	char ifname[64], how[512], addrs[2][SPANK_IB_ADDR_MAX], why[512];
	const char *names[2] = {"garbage", "n2"};
	const char *p;
	int rcs[2], pid;

	(void)state;
	if (need_root())
		skip();
	assert_int_equal(spank_ib_bootstrap_ifname("n[1-2]", 0, "n1", NULL, 2000,
						   spank_ib_resolve_child, &spec, ifname,
						   sizeof(ifname), how, sizeof(how)),
			 0);
	assert_string_equal(ifname, "lo");
	assert_string_equal(how, "route to n2 (127.0.0.2)");
	/* the launch node's name goes to the same child, after the peer */
	assert_int_equal(spank_ib_bootstrap_ifname("n[1-2]", 1, "n2", "n2", 2000,
						   spank_ib_resolve_child, &spec, ifname,
						   sizeof(ifname), how, sizeof(how)),
			 1);
	assert_string_equal(ifname, "lo");
	assert_string_equal(how, "route to the launch node n2 (peer n1 does not resolve)");
	/* one answer that is not an address: refused, the other kept */
	why[0] = '\0';
	assert_int_equal(
	    spank_ib_resolve_child(&spec, names, 2, 2000, addrs, rcs, why, sizeof(why)), 0);
	assert_int_equal(rcs[0], -EBADMSG);
	assert_int_equal(rcs[1], 0);
	assert_string_equal(addrs[1], "127.0.0.2");
	/* a resolver that never answers: killed at the deadline, the caller goes on */
	assert_int_equal(spank_ib_bootstrap_ifname("n[1-2],stall", 1, "n2", NULL, 600,
						   spank_ib_resolve_child, &spec, ifname,
						   sizeof(ifname), how, sizeof(how)),
			 -ENOENT);
	assert_string_equal(ifname, "");
	print_message("# %s\n", how);
	assert_non_null(strstr(how, "peer stall not resolved: the name lookup did not finish in "
				    "0.6 s: child "));
	p = strstr(how, "child ");
	pid = atoi(p + 6);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, 0), -1); /* killed and reaped */
	assert_int_equal(errno, ESRCH);
	/* a helper that root does not own is not run at all */
	spec.helper = "/nonexistent/ibprep";
	assert_int_equal(spank_ib_bootstrap_ifname("n[1-2]", 0, "n1", NULL, 2000,
						   spank_ib_resolve_child, &spec, ifname,
						   sizeof(ifname), how, sizeof(how)),
			 -ENOENT);
	assert_non_null(strstr(how, "peer n2 not resolved: test helper /nonexistent/ibprep"));
}

/*
 * The caller's pidfd: the reap is woken on it, leaves it open (the watch
 * closes it in spank_ib_watch_free), and a child already reaped (by a
 * first call, or slurmstepd's own wait) is "no longer ours" at once.
 */
static void test_reap_until_caller_pidfd_kept(void **state)
{
	int status = -1, pidfd;
	int64_t t0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	pidfd = spank_ib_pidfd_open(pid);
	if (pidfd < 0) {
		kill(pid, SIGKILL);
		assert_int_equal(
		    spank_ib_reap_until(pid, -1, ibp_now_ns() + 5 * IBP_NS_PER_S, &status), 1);
		skip(); /* no pidfd_open (Linux before 5.3) */
	}
	assert_int_equal(spank_ib_reap_until(pid, pidfd, ibp_now_ns() + IBP_NS_PER_S / 10, &status),
			 0);
	kill(pid, SIGKILL);
	assert_int_equal(spank_ib_reap_until(pid, pidfd, ibp_now_ns() + 5 * IBP_NS_PER_S, &status),
			 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(fcntl(pidfd, F_GETFD) >= 0); /* still the caller's */
	t0 = ibp_now_ns();
	assert_int_equal(spank_ib_reap_until(pid, pidfd, t0 + 5 * IBP_NS_PER_S, &status), 1);
	assert_true(ibp_now_ns() - t0 < IBP_NS_PER_S);
	assert_true(fcntl(pidfd, F_GETFD) >= 0);
	close(pidfd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_child_user_dropped_for_good),
	    cmocka_unit_test(test_child_no_handler_of_slurmstepd_before_set_up),
	    cmocka_unit_test(test_child_dumpable_after_exec_unless_unreadable),
	    cmocka_unit_test(test_child_never_root),
	    cmocka_unit_test(test_test_user_lookup),
	    cmocka_unit_test(test_helper_root_job_has_no_capabilities),
	    cmocka_unit_test(test_child_stalled_killed_at_deadline),
	    cmocka_unit_test(test_child_bad_results_refused),
	    cmocka_unit_test(test_child_exec_failure_said),
	    cmocka_unit_test(test_helper_check_ownership),
	    cmocka_unit_test(test_resolve_in_child),
	    cmocka_unit_test(test_reap_until_caller_pidfd_kept),
	};

	if (argc == 3 && !strcmp(argv[1], "rdmatest") && !strcmp(argv[2], "--child"))
		return helper_main(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)); /* before anything else */
	if (argc == 3 && !strcmp(argv[1], "env") && !strcmp(argv[2], "--resolve-child"))
		return resolver_main();
	if (!realpath("/proc/self/exe", self_path))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}

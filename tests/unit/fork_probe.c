/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fork_probe.c: see fork_probe.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "fork_probe.h"

pid_t __wrap_fork(void);
pid_t __real_fork(void);

static volatile sig_atomic_t armed;
static int probe_sig, forks, pipe_rd = -1, pipe_wr = -1;
static pid_t test_pid;
static struct sigaction old_sa;

static void on_signal(int sig)
{
	char c = 1;
	int e = errno;

	(void)sig;
	if (getpid() != test_pid)
		(void)!write(pipe_wr, &c, 1);
	errno = e;
}

pid_t __wrap_fork(void)
{
	pid_t pid = __real_fork();

	if (pid == 0 && armed)
		(void)raise(probe_sig);
	else if (pid > 0 && armed)
		forks++;
	return pid;
}

int fork_probe_arm(int sig)
{
	struct sigaction sa;
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old_sa)) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	pipe_rd = p[0];
	pipe_wr = p[1];
	probe_sig = sig;
	test_pid = getpid();
	forks = 0;
	armed = 1;
	return 0;
}

int fork_probe_disarm(int *forks_out)
{
	char buf[64];
	ssize_t n;
	int runs = 0;

	armed = 0;
	(void)sigaction(probe_sig, &old_sa, NULL);
	close(pipe_wr);
	while ((n = read(pipe_rd, buf, sizeof(buf))) > 0)
		runs += (int)n;
	close(pipe_rd);
	pipe_rd = pipe_wr = -1;
	*forks_out = forks;
	return n < 0 && errno != EAGAIN ? -errno : runs;
}

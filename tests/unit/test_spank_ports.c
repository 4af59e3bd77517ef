/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_ports.c: a job's share of the node's test ports (ib_ports.c):
 * at most CAP slots per job at once, other jobs unaffected, a slot let go
 * is free again and its file gone, and a holder that dies without letting
 * go (killed, crashed) frees its slot all the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../spank/spank_ib.h"
#include "support/fixture.h"

static size_t files_in(int dfd)
{
	int d = dup(dfd);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	struct dirent *e;
	size_t n = 0;

	assert_non_null(dir);
	rewinddir(dir);
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

static void test_port_slots_capped_per_job(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	struct spank_ib_port_slot a, b, c, other;
	int dfd;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(spank_ib_port_slot_take(&a, dfd, 42, 2), 0);
	assert_string_equal(a.name, "testport.42.0");
	assert_int_equal(spank_ib_port_slot_take(&b, dfd, 42, 2), 0);
	assert_string_equal(b.name, "testport.42.1");
	/* the job's third step at once: refused */
	assert_int_equal(spank_ib_port_slot_take(&c, dfd, 42, 2), -EBUSY);
	assert_int_equal(c.fd, -1);
	spank_ib_port_slot_release(&c); /* never taken: nothing happens */
	/* another job is not counted against it */
	assert_int_equal(spank_ib_port_slot_take(&other, dfd, 43, 2), 0);
	/* one let go: free again, its file gone until taken */
	spank_ib_port_slot_release(&a);
	spank_ib_port_slot_release(&a); /* twice: nothing happens */
	assert_int_equal(faccessat(dfd, "testport.42.0", F_OK, 0), -1);
	assert_int_equal(spank_ib_port_slot_take(&c, dfd, 42, 2), 0);
	assert_string_equal(c.name, "testport.42.0");
	spank_ib_port_slot_release(&b);
	spank_ib_port_slot_release(&c);
	spank_ib_port_slot_release(&other);
	assert_int_equal(files_in(dfd), 0);
	/* no directory: no slot */
	assert_int_equal(spank_ib_port_slot_take(&a, -1, 42, 2), -EBADF);
	close(dfd);
	ibp_fixture_destroy(dir);
}

/* A holder killed while it holds its slot: the kernel lets go for it. */
static void test_port_slot_freed_by_a_dead_holder(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	struct spank_ib_port_slot s;
	int dfd, ready[2], status;
	pid_t pid;
	char c;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct spank_ib_port_slot mine;

		close(ready[0]);
		if (spank_ib_port_slot_take(&mine, dfd, 7, 1))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	/* held by the child: the job's one slot is taken */
	assert_int_equal(spank_ib_port_slot_take(&s, dfd, 7, 1), -EBUSY);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* its file is still there (nobody removed it), and free */
	assert_int_equal(faccessat(dfd, "testport.7.0", F_OK, 0), 0);
	assert_int_equal(spank_ib_port_slot_take(&s, dfd, 7, 1), 0);
	spank_ib_port_slot_release(&s);
	assert_int_equal(files_in(dfd), 0);
	close(dfd);
	ibp_fixture_destroy(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_port_slots_capped_per_job),
	    cmocka_unit_test(test_port_slot_freed_by_a_dead_holder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

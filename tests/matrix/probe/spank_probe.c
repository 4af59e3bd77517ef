/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_probe.so: a SPANK plugin that fails on purpose, so the release
 * matrix can check tests/matrix/expectations.sh against the Slurm that is
 * actually running instead of trusting it.  plugstack.conf arguments:
 *
 *   fail=init|user_init|task_init   the callback that returns -1 (init: in
 *                              slurmstepd only)
 *   node=NAME                  only on this node (its host name)
 *
 * Compiled inside each release's chroot against that release's spank.h.
 */
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(spank_probe, 1);

static int probe_should_fail(spank_t sp, const char *hook, int ac, char **av)
{
	const char *fail = NULL, *node = NULL;
	char host[256];

	if (spank_remote(sp) != 1)
		return 0;
	for (int i = 0; i < ac; i++) {
		if (!strncmp(av[i], "fail=", 5))
			fail = av[i] + 5;
		else if (!strncmp(av[i], "node=", 5))
			node = av[i] + 5;
	}
	if (!fail || strcmp(fail, hook) != 0 || !node)
		return 0;
	if (gethostname(host, sizeof(host)) != 0)
		return 0;
	host[sizeof(host) - 1] = '\0';
	return strcmp(node, host) == 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (!probe_should_fail(sp, "init", ac, av))
		return 0;
	slurm_error("spank_probe: init fails on purpose");
	return -1;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (!probe_should_fail(sp, "user_init", ac, av))
		return 0;
	slurm_error("spank_probe: user_init fails on purpose");
	return -1;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (!probe_should_fail(sp, "task_init", ac, av))
		return 0;
	slurm_error("spank_probe: task_init fails on purpose");
	return -1;
}

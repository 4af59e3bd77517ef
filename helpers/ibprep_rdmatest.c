/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placeholder until its issue lands: says so and exits 2 (could not run). */
#include <stdio.h>

#include "ibprep_cmd.h"

int ibprep_cmd_rdmatest(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibprep rdmatest: not built yet\n");
	return 2;
}


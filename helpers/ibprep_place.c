/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placeholder until its issue lands: says so and exits 2 (could not run). */
#include <stdio.h>

#include "ibprep_cmd.h"

int ibprep_cmd_place(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibprep place: not built yet\n");
	return 2;
}

int ibprep_cmd_env(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibprep env: not built yet\n");
	return 2;
}

int ibprep_cmd_exec(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ibprep exec: not built yet\n");
	return 2;
}


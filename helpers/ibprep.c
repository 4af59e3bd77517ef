/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep: the job-prep helper command.  main() only dispatches; each
 * subcommand parses its own flags, calls the core library, prints, and
 * returns an exit status (hwloc-bind's parse -> load -> compute -> report).
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "ibprep_cmd.h"
#include "ibprep/version.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"check", ibprep_cmd_check, "check the node's HCAs and ports against a policy"},
    {"place", ibprep_cmd_place, "explain each task's GPU, HCA port, CPUs and memory node"},
    {"env", ibprep_cmd_env, "print the NCCL/UCX/MPI environment for a task"},
    {"exec", ibprep_cmd_exec, "bind a task to its placement and exec a program"},
    {"rdmatest", ibprep_cmd_rdmatest, "run the cross-node RDMA sanity test"},
    {"snapshot", ibprep_cmd_snapshot, "copy the node's RDMA sysfs files for a bug report"},
    {"fabric", ibprep_cmd_fabric, "rank the fabric's parts by suspicion from results logs"},
    {"watch", ibprep_cmd_watch, "print each change of the node's links as it happens"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: ibprep COMMAND [OPTIONS] [KEY=VALUE ...]\n"
		     "       ibprep --version\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'ibprep COMMAND --help' shows the options of a command\n");
}

int main(int argc, char **argv)
{
	/*
	 * The plugin's test child (ib_child.c): exec made it dumpable again
	 * (its binary is readable), so before anything else it is not: no
	 * process of the test's user may ptrace it or take its descriptors.
	 */
	if (argc == 3 && !strcmp(argv[1], "rdmatest") && !strcmp(argv[2], "--child"))
		(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("ibprep %s\n", IBPREP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ibprep: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_cmd.h: the ibprep subcommands.  Each takes the argv that follows
 * the subcommand name (argv[0] is the subcommand) and returns the process
 * exit status: 0 healthy / done, 1 unhealthy, 2 could not run (usage,
 * unreadable root ...).  Only these functions and main() print.
 */
#ifndef IBPREP_CMD_H
#define IBPREP_CMD_H

int ibprep_cmd_check(int argc, char **argv);    /* ibprep_check.c */
int ibprep_cmd_snapshot(int argc, char **argv); /* ibprep_snapshot.c */
int ibprep_cmd_place(int argc, char **argv);    /* ibprep_place.c */
int ibprep_cmd_env(int argc, char **argv);      /* ibprep_place.c */
int ibprep_cmd_exec(int argc, char **argv);     /* ibprep_place.c */
int ibprep_cmd_rdmatest(int argc, char **argv); /* ibprep_rdmatest.c */

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_cmd.h: the ibprep subcommands.  Each takes the argv that follows
 * the subcommand name (argv[0] is the subcommand) and returns the process
 * exit status: 0 healthy / done, 1 unhealthy, 2 could not run (usage,
 * unreadable root ...).  Only these functions and main() print.
 *
 * Every subcommand declares its options once, in a table of struct
 * ibprep_opt; ibprep_args_next() parses argv with getopt_long from that
 * table (so "--sysfs-root=DIR" and "--sysfs-root DIR" both work, as do
 * unambiguous prefixes) and ibprep_usage() prints the help from the same
 * table.  Adding an option is one table line and one case in the
 * subcommand's switch.
 */
#ifndef IBPREP_CMD_H
#define IBPREP_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

int ibprep_cmd_check(int argc, char **argv);    /* ibprep_check.c */
int ibprep_cmd_snapshot(int argc, char **argv); /* ibprep_snapshot.c */
int ibprep_cmd_place(int argc, char **argv);    /* ibprep_place.c */
int ibprep_cmd_env(int argc, char **argv);      /* ibprep_place.c */
int ibprep_cmd_exec(int argc, char **argv);     /* ibprep_place.c */
int ibprep_cmd_rdmatest(int argc, char **argv); /* ibprep_rdmatest.c */
int ibprep_cmd_fabric(int argc, char **argv);   /* ibprep_fabric.c */
int ibprep_cmd_watch(int argc, char **argv);    /* ibprep_watch.c */
int ibprep_rdmatest_child(void);                /* ibprep_rdmatest_child.c: --child */
int ibprep_resolve_child(void);                 /* ibprep_resolve.c: env --resolve-child */

/*
 * Name lookups bounded by DEADLINE (ibprep_resolve.c), for processes that
 * die with whatever lookup is still running (the plugin's children):
 * NAMES[0..N) (at most IBPREP_RESOLVE_MAX, each a host name or numeric
 * address) at once with getaddrinfo_a; each gets its numeric address in
 * ADDRS (IPv4 first when IPV4_FIRST) and RCS 0, or -ETIMEDOUT, -ENOENT,
 * -EINVAL (not a name), -EHOSTUNREACH, -EAGAIN.
 */
#define IBPREP_RESOLVE_MAX      8
#define IBPREP_RESOLVE_NAME_MAX 254
#define IBPREP_ADDR_MAX         64
void ibprep_resolve_names(const char *const *names, size_t n, int64_t deadline, bool ipv4_first,
			  char (*addrs)[IBPREP_ADDR_MAX], int *rcs);

/* One option of a subcommand.  A table ends with an entry whose name is NULL. */
struct ibprep_opt {
	const char *name; /* long name without "--" */
	int id;           /* > 0: what ibprep_args_next() returns for it */
	char letter;      /* short option (-r), or 0 for none */
	const char *arg;  /* the value's name in the help ("DIR"), or NULL for a flag */
	const char *help; /* one paragraph; wrapped to the terminal's 80 columns */
};

/* A subcommand: its name, options and help text. */
struct ibprep_cmd_spec {
	const char *name;     /* "check" */
	const char *synopsis; /* what follows "usage: ibprep NAME " */
	const char *about;    /* paragraph after the usage line, or NULL */
	const struct ibprep_opt *opts;
	const char *operand;         /* operand in the help ("KEY=VALUE"), or NULL */
	const char *operand_help;    /* what it is, wrapped like an option's help */
	const char *epilog;          /* last lines (exit status), preformatted, or NULL */
	bool command_after_dashdash; /* "--" ends the options; what follows is a command */
};

#define IBPREP_ARGS_MAX_OPTS 48

enum {
	IBPREP_ARGS_END = 0,      /* no more arguments */
	IBPREP_ARGS_OPERAND = -1, /* args->value is an operand (KEY=VALUE, OUTDIR ...) */
	IBPREP_ARGS_HELP = -2,    /* --help: the help went to stdout; exit 0 */
	IBPREP_ARGS_ERROR = -3,   /* unknown option or missing value: said on stderr; exit 2 */
};

/* The parser's state.  Uses getopt_long's globals: one parse at a time. */
struct ibprep_args {
	const struct ibprep_cmd_spec *spec;
	int argc;
	char **argv;
	char *value;        /* the option's value (NULL for a flag) or the operand */
	const char *option; /* how the last option was spelled ("--sysfs-root") */
	char **command;     /* command_after_dashdash: what follows "--" (NULL if no "--") */
	bool operands_only; /* after "--" in a command without one */
	struct option longopts[IBPREP_ARGS_MAX_OPTS + 2];
	char shortopts[2 * IBPREP_ARGS_MAX_OPTS + 8];
	char optname[64];
};

/* Prepares a parse of argv[1..argc-1] (argv[0] is the subcommand's name). */
void ibprep_args_init(struct ibprep_args *a, const struct ibprep_cmd_spec *spec, int argc,
		      char **argv);
/* The next option's id (> 0, value in a->value), IBPREP_ARGS_OPERAND, or one of
 * END, HELP, ERROR (both already printed). */
int ibprep_args_next(struct ibprep_args *a);
/* The subcommand's help, from its table. */
void ibprep_usage(const struct ibprep_cmd_spec *spec, FILE *out);

/*
 * The value of --sysfs-root: 0 when ROOT holds sys/ (or is not a directory:
 * the sysfs opener says so), else 2 with a message naming what ROOT looks
 * like instead (a sys directory, a class/infiniband directory, neither) and
 * the root to give.  A root one level off would otherwise read as a node
 * without RDMA devices.
 */
int ibprep_sysfs_root_check(const char *cmd, const char *root);

/*
 * The node's short host name for messages: the root's
 * proc/sys/kernel/hostname when FROM_ROOT (a captured or generated tree),
 * else gethostname(); printable characters only.
 */
struct ibp_sysfs;
void ibprep_node_name(const struct ibp_sysfs *fs, bool from_root, char *buf, size_t len);

extern const struct ibprep_cmd_spec ibprep_check_spec, ibprep_place_spec, ibprep_env_spec,
    ibprep_exec_spec, ibprep_rdmatest_spec, ibprep_snapshot_spec, ibprep_fabric_spec,
    ibprep_watch_spec;

#endif

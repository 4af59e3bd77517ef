/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_args.c: one option parser for every subcommand.  The table of
 * struct ibprep_opt drives getopt_long (long options take "--name=VALUE"
 * and "--name VALUE" alike) and the help text, so the two cannot drift.
 *
 * Options and operands may be interleaved ("KEY=VALUE --json" and
 * "--json KEY=VALUE" are the same); "--" ends the options: for exec what
 * follows is the command, elsewhere it is operands.
 */
#include <dirent.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/sysfs.h"

#define LONG_BASE 256 /* getopt's val for table entry i: LONG_BASE + i */
#define HELP_ID   'h'
#define WIDTH     79

void ibprep_args_init(struct ibprep_args *a, const struct ibprep_cmd_spec *spec, int argc,
		      char **argv)
{
	size_t n = 0, s = 0;

	memset(a, 0, sizeof(*a));
	a->spec = spec;
	a->argc = argc;
	a->argv = argv;
	a->shortopts[s++] = '+'; /* stop at operands: we take them one by one */
	a->shortopts[s++] = ':'; /* a missing value returns ':' */
	a->shortopts[s++] = 'h';
	for (const struct ibprep_opt *o = spec->opts; o && o->name; o++) {
		if (n >= IBPREP_ARGS_MAX_OPTS)
			break; /* the unit test keeps every table below the limit */
		a->longopts[n] = (struct option){o->name, o->arg ? required_argument : no_argument,
						 NULL, LONG_BASE + (int)n};
		n++;
		if (o->letter) {
			a->shortopts[s++] = o->letter;
			if (o->arg)
				a->shortopts[s++] = ':';
		}
	}
	a->longopts[n++] = (struct option){"help", no_argument, NULL, HELP_ID};
	a->longopts[n] = (struct option){NULL, 0, NULL, 0};
	a->shortopts[s] = '\0';
	optind = 0; /* glibc: start over, whatever parsed before */
	opterr = 0;
}

static const struct ibprep_opt *by_letter(const struct ibprep_cmd_spec *spec, int c)
{
	for (const struct ibprep_opt *o = spec->opts; o && o->name; o++)
		if (o->letter && o->letter == c)
			return o;
	return NULL;
}

/* The spelling of the argument getopt just looked at, for messages. */
static const char *spelled(struct ibprep_args *a, int before)
{
	if (optopt > 0 && optopt < LONG_BASE && optopt != HELP_ID) {
		snprintf(a->optname, sizeof(a->optname), "-%c", optopt);
		return a->optname;
	}
	if (before < a->argc && a->argv[before][0] == '-') {
		snprintf(a->optname, sizeof(a->optname), "%s", a->argv[before]);
		char *eq = strchr(a->optname, '=');
		if (eq && optopt >= LONG_BASE)
			*eq = '\0';
		return a->optname;
	}
	return "?";
}

static int fail(struct ibprep_args *a, const char *before, const char *opt, const char *after)
{
	fprintf(stderr, "ibprep %s: %s'%s'%s\n", a->spec->name, before, opt, after);
	ibprep_usage(a->spec, stderr);
	return IBPREP_ARGS_ERROR;
}

int ibprep_args_next(struct ibprep_args *a)
{
	const struct ibprep_cmd_spec *spec = a->spec;
	int before = optind ? optind : 1;
	int c;

	a->value = NULL;
	if (a->operands_only) {
		if (optind >= a->argc)
			return IBPREP_ARGS_END;
		a->value = a->argv[optind++];
		return IBPREP_ARGS_OPERAND;
	}
	optopt = 0;
	c = getopt_long(a->argc, a->argv, a->shortopts, a->longopts, NULL);
	if (c == -1) {
		if (optind == before + 1 && !strcmp(a->argv[before], "--")) {
			if (spec->command_after_dashdash) {
				a->command = a->argv + optind;
				optind = a->argc;
				return IBPREP_ARGS_END;
			}
			a->operands_only = true;
			return ibprep_args_next(a);
		}
		if (optind >= a->argc)
			return IBPREP_ARGS_END;
		a->value = a->argv[optind++];
		return IBPREP_ARGS_OPERAND;
	}
	if (c == HELP_ID) {
		ibprep_usage(spec, stdout);
		return IBPREP_ARGS_HELP;
	}
	if (c == ':')
		return fail(a, "option ", spelled(a, before), " needs a value");
	if (c == '?') {
		if (optopt >= LONG_BASE || (optopt > 0 && by_letter(spec, optopt)))
			return fail(a, "option ", spelled(a, before), " takes no value");
		return fail(a, "unknown option ", spelled(a, before), "");
	}
	const struct ibprep_opt *o =
	    c >= LONG_BASE ? &spec->opts[c - LONG_BASE] : by_letter(spec, c);
	if (!o)
		return fail(a, "unknown option ", spelled(a, before), "");
	a->value = o->arg ? optarg : NULL;
	snprintf(a->optname, sizeof(a->optname), "--%s", o->name);
	a->option = a->optname;
	return o->id;
}

/* TEXT from column COL, wrapped at WIDTH; the first line starts at column AT. */
static void wrap(FILE *out, const char *text, int at, int col)
{
	const char *p = text;

	if (at > col - 1) { /* the option is wider than the column: help on the next line */
		fprintf(out, "\n%*s", col, "");
		at = col;
	} else {
		fprintf(out, "%*s", col - at, "");
		at = col;
	}
	while (*p) {
		size_t word = strcspn(p, " \n");
		if (at > col && at + 1 + (int)word > WIDTH) {
			fprintf(out, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', out);
			at++;
		}
		fprintf(out, "%.*s", (int)word, p);
		at += (int)word;
		p += word;
		if (*p == '\n') {
			fprintf(out, "\n%*s", col, "");
			at = col;
		}
		while (*p == ' ' || *p == '\n')
			p++;
	}
	fputc('\n', out);
}

static int option_label(const struct ibprep_opt *o, char *buf, size_t len)
{
	if (o->letter)
		return snprintf(buf, len, "-%c, --%s%s%s", o->letter, o->name, o->arg ? " " : "",
				o->arg ? o->arg : "");
	return snprintf(buf, len, "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void ibprep_usage(const struct ibprep_cmd_spec *spec, FILE *out)
{
	char label[96];
	int col = 0;

	fprintf(out, "usage: ibprep %s %s\n", spec->name, spec->synopsis ? spec->synopsis : "");
	if (spec->about)
		fprintf(out, "\n%s", spec->about);
	fputc('\n', out);
	for (const struct ibprep_opt *o = spec->opts; o && o->name; o++) {
		int n = option_label(o, label, sizeof(label));
		if (n > col && n <= 24)
			col = n;
	}
	if (spec->operand && (int)strlen(spec->operand) + 4 > col && strlen(spec->operand) <= 20)
		col = (int)strlen(spec->operand) + 4;
	col += 4;
	for (const struct ibprep_opt *o = spec->opts; o && o->name; o++) {
		int n = option_label(o, label, sizeof(label));
		fprintf(out, "  %s", label);
		wrap(out, o->help ? o->help : "", n + 2, col);
	}
	fprintf(out, "  -h, --help");
	wrap(out, "this help", 12, col);
	if (spec->operand) {
		fprintf(out, "  %s", spec->operand);
		wrap(out, spec->operand_help ? spec->operand_help : "",
		     2 + (int)strlen(spec->operand), col);
	}
	if (spec->epilog)
		fprintf(out, "\n%s", spec->epilog);
}

/* ---- the value of --sysfs-root ------------------------------------------ */

static bool is_dir(const char *dir, const char *sub)
{
	char path[PATH_MAX];
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, sub);

	return n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether DIR holds an entry with a ports/ directory, as an RDMA device has. */
static bool holds_rdma_device(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char sub[NAME_MAX + 8];

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/ports", e->d_name);
		found = is_dir(dir, sub);
	}
	closedir(d);
	return found;
}

/* ROOT without its last LEVELS components (and trailing slashes), or "". */
static void up(const char *root, int levels, char *buf, size_t len)
{
	size_t l;

	snprintf(buf, len, "%s", root);
	for (int i = 0; i < levels; i++) {
		l = strlen(buf);
		while (l > 1 && buf[l - 1] == '/')
			buf[--l] = '\0';
		while (l && buf[l - 1] != '/')
			buf[--l] = '\0';
		while (l > 1 && buf[l - 1] == '/')
			buf[--l] = '\0';
	}
	if (!buf[0])
		snprintf(buf, len, ".");
}

int ibprep_sysfs_root_check(const char *cmd, const char *root)
{
	char parent[PATH_MAX];
	struct stat st;

	if (!root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode) || is_dir(root, "sys"))
		return 0; /* a tree, or not a directory: the opener says why not */
	if (is_dir(root, "class/infiniband") || is_dir(root, "bus/pci")) {
		up(root, 1, parent, sizeof(parent));
		fprintf(stderr,
			"ibprep %s: --sysfs-root %s is a sys directory itself, not the directory "
			"that holds sys/: give its parent (--sysfs-root %s)\n",
			cmd, root, parent);
	} else if (holds_rdma_device(root)) {
		up(root, 3, parent, sizeof(parent));
		fprintf(stderr,
			"ibprep %s: --sysfs-root %s holds RDMA devices itself: it is a "
			"class/infiniband directory, not the directory that holds "
			"sys/class/infiniband%s%s%s\n",
			cmd, root, is_dir(parent, "sys/class/infiniband") ? " (--sysfs-root " : "",
			is_dir(parent, "sys/class/infiniband") ? parent : "",
			is_dir(parent, "sys/class/infiniband") ? ")" : "");
	} else {
		fprintf(stderr,
			"ibprep %s: --sysfs-root %s has no sys/ directory: give the directory that "
			"holds sys/class/infiniband, as 'ibprep snapshot DIR' writes it\n",
			cmd, root);
	}
	return 2;
}

/* (shared by the subcommands that name the node: check, watch) */
void ibprep_node_name(const struct ibp_sysfs *fs, bool from_root, char *buf, size_t len)
{
	buf[0] = '\0';
	if (from_root && ibp_sysfs_read(fs, "proc/sys/kernel/hostname", buf, len) <= 0)
		buf[0] = '\0';
	if (!buf[0] && gethostname(buf, len) != 0)
		snprintf(buf, len, "localhost");
	buf[len - 1] = '\0';
	char *dot = strchr(buf, '.');
	if (dot && dot != buf)
		*dot = '\0';
	for (char *c = buf; *c; c++) /* printable only: it ends up in messages */
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			*c = '?';
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_args.c: spank-ib-watch's arguments (watch_args.h).  The plugin
 * builds them from its own state and root's configuration; they are
 * checked here anyway, each value for its kind (a number in its range, an
 * absolute printable path, yes or no), and --reason (the drain's, made of
 * sysfs text) through ibp_drain_reason_clean.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch_args.h"

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

static bool printable_n(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_seconds(const char *v, double lo, double hi, double *out)
{
	char *end;
	double d;

	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || !(d >= lo && d <= hi))
		return -EINVAL;
	*out = d;
	return 0;
}

static int copy(char *dst, size_t len, const char *v, bool path)
{
	if (strlen(v) >= len || !printable(v) || (path && *v && *v != '/'))
		return -EINVAL;
	strcpy(dst, v);
	return 0;
}

static int yes_no(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "no")) {
		*out = v[0] == 'y';
		return 0;
	}
	return -EINVAL;
}

/*
 * A Slurm NodeName: [A-Za-z0-9._-] ("" allowed: unknown).  slurm_update_node
 * reads its node_names as a host list: "n[1-4]" or "n1,n2" would drain more
 * than this node.
 */
static int copy_name(char *dst, size_t len, const char *v)
{
	for (const char *p = v; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return -EINVAL;
	return copy(dst, len, v, false);
}

/* One --KEY=VALUE into C.  0, -EINVAL (bad value), -ENOENT (unknown key). */
static int parse_arg(struct spank_ib_watch_cfg *c, const char *key, const char *v)
{
	uint64_t u = 0;
	int rc = 0;

	if (!strcmp(key, "--job") || !strcmp(key, "--step")) {
		rc = parse_u64(v, UINT32_MAX, &u);
		if (key[2] == 'j')
			c->job = (uint32_t)u;
		else
			c->step = (uint32_t)u;
	} else if (!strcmp(key, "--host")) {
		rc = *v ? copy(c->host, sizeof(c->host), v, false) : -EINVAL;
	} else if (!strcmp(key, "--node")) {
		rc = copy_name(c->node, sizeof(c->node), v);
	} else if (!strcmp(key, "--root")) {
		rc = *v ? copy(c->root, sizeof(c->root), v, true) : -EINVAL;
	} else if (!strcmp(key, "--ports")) {
		rc = ibp_lw_port_ids_parse(v, c->ports, IBP_LW_MAX_PORTS, &c->n_ports);
	} else if (!strcmp(key, "--baseline")) {
		c->have_base = *v != '\0'; /* "": none, the watcher reads its own */
		rc = c->have_base ? ibp_linkwatch_from_text(v, &c->base) : 0;
	} else if (!strcmp(key, "--interval")) {
		rc = parse_seconds(v, 0.05, 3600, &c->interval_s);
	} else if (!strcmp(key, "--flap")) {
		rc = parse_seconds(v, 0, 600, &c->flap_s);
	} else if (!strcmp(key, "--action")) {
		c->end = !strcmp(v, "end");
		rc = c->end || !strcmp(v, "report") ? 0 : -EINVAL;
	} else if (!strcmp(key, "--signal")) {
		rc = parse_u64(v, 64, &u);
		c->sig = (int)u;
		if (!rc && !u)
			rc = -EINVAL;
	} else if (!strcmp(key, "--signal-name")) {
		rc = copy(c->sig_name, sizeof(c->sig_name), v, false);
	} else if (!strcmp(key, "--drain")) {
		rc = yes_no(v, &c->drain);
	} else if (!strcmp(key, "--requeue")) {
		rc = yes_no(v, &c->requeue);
	} else if (!strcmp(key, "--requeue-max")) {
		rc = parse_u64(v, 100, &u);
		c->requeue_max = (unsigned)u;
	} else if (!strcmp(key, "--requeue-begin")) {
		if (strcmp(v, "-1") != 0) {
			rc = parse_u64(v, 3600, &u);
			c->requeue_begin_s = (int)u;
		}
	} else if (!strcmp(key, "--results-log")) {
		rc = copy(c->results_log, sizeof(c->results_log), v, true);
	} else if (!strcmp(key, "--results-log-max")) {
		rc = parse_u64(v, UINT64_MAX, &c->results_log_max);
	} else if (!strcmp(key, "--slurm-library")) {
		rc = copy(c->slurm_library, sizeof(c->slurm_library), v, true);
	} else if (!strcmp(key, "--slurm-conf")) {
		rc = *v == '/' ? copy(c->slurm_conf, sizeof(c->slurm_conf), v, true) : -EINVAL;
	} else if (!strcmp(key, "--requeue-now")) {
		rc = yes_no(v, &c->requeue_now);
	} else if (!strcmp(key, "--drain-now")) {
		rc = yes_no(v, &c->drain_now);
	} else if (!strcmp(key, "--reason")) {
		rc = ibp_drain_reason_clean(v, c->reason, sizeof(c->reason));
	} else if (!strcmp(key, "--first-read")) {
		/* when its first read is due (CLOCK_MONOTONIC ns): the plugin's step start + interval */
		rc = parse_u64(v, INT64_MAX, &u);
		c->first_read_ns = (int64_t)u;
	} else if (!strcmp(key, "--parent")) {
		rc = parse_u64(v, 1u << 30, &u);
		c->parent = (pid_t)u;
		if (!rc && u < 2)
			rc = -EINVAL;
	} else {
		rc = -ENOENT;
	}
	return rc;
}

int spank_ib_watch_parse_args(int argc, char **argv, struct spank_ib_watch_cfg *c, char *err,
			      size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->interval_s = 1;
	c->sig = SIGTERM;
	c->requeue_begin_s = -1;
	for (int i = 1; i < argc; i++) {
		char key[32];
		const char *eq = strchr(argv[i], '=');
		size_t klen = eq ? (size_t)(eq - argv[i]) : 0;
		int rc = -ENOENT;

		if (eq && klen < sizeof(key)) {
			memcpy(key, argv[i], klen);
			key[klen] = '\0';
			rc = parse_arg(c, key, eq + 1);
		}
		if (rc) {
			/* the key alone when the value is not printable (a reason's bytes) */
			if (printable(argv[i]))
				snprintf(err, errlen, "%s: %s",
					 rc == -ENOENT ? "unknown argument" : "bad value", argv[i]);
			else
				snprintf(err, errlen, "%s: %.*s (not printable)",
					 rc == -ENOENT ? "unknown argument" : "bad value",
					 eq && printable_n(argv[i], klen) ? (int)klen : 0, argv[i]);
			return rc;
		}
	}
	if (c->requeue_now + c->drain_now > 1) {
		snprintf(err, errlen, "--requeue-now and --drain-now are two runs, not one");
		return -EINVAL;
	}
	if (c->requeue_now && (!c->host[0] || !c->job || !c->parent)) {
		snprintf(err, errlen, "--requeue-now needs --job, --host and --parent");
		return -EINVAL;
	}
	if (c->drain_now && (!c->host[0] || !c->reason[0] || !c->parent)) {
		snprintf(err, errlen, "--drain-now needs --host, --reason and --parent");
		return -EINVAL;
	}
	if (!c->requeue_now && !c->drain_now &&
	    (!c->host[0] || !c->root[0] || !c->n_ports || !c->parent)) {
		snprintf(err, errlen, "--host, --root, --ports and --parent are needed");
		return -EINVAL;
	}
	if (!c->sig_name[0])
		snprintf(c->sig_name, sizeof(c->sig_name), "signal %d", c->sig);
	return 0;
}

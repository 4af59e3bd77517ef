/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf.c: spank_ib.conf(5), the plugin's keys and its files (conf.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/conf.h"
#include "ibprep/rootpath.h"
#include "ibprep/text.h"

enum conf_key {
	C_SYSFS_ROOT,
	C_TOPOLOGY,
	C_CONFIG,
	C_ENFORCE,
	C_BIND,
	C_DRAIN,
	C_PROLOG_CHECK,
	C_CACHE_TTL,
	C_CACHE_DIR,
	C_MUNGE_SOCKET,
	C_TEST_HELPER,
	C_TEST_USER,
	C_TOPOLOGY_CONF,
	C_RESULTS_LOG,
	C_RESULTS_LOG_MAX,
	C_WATCH_ACTION,
	C_WATCH_SIGNAL,
	C_WATCH_HELPER,
	C_REQUEUE,
	C_REQUEUE_MAX,
	C_REQUEUE_BEGIN,
	C_NODE_WARNINGS,
	C_TEST_PORTS_PER_JOB,
};

/* The plugin's keys (spank_ib.conf(5) PLUGIN KEYS; tests/integration/test_docs.sh reads this). */
static const struct {
	const char *key;
	enum conf_key id;
} conf_keys[] = {
    {"sysfs_root", C_SYSFS_ROOT},
    {"topology", C_TOPOLOGY},
    {"config", C_CONFIG},
    {"enforce", C_ENFORCE},
    {"bind", C_BIND},
    {"drain", C_DRAIN},
    {"prolog_check", C_PROLOG_CHECK},
    {"cache_ttl", C_CACHE_TTL},
    {"cache_dir", C_CACHE_DIR},
    {"munge_socket", C_MUNGE_SOCKET},
    {"test_helper", C_TEST_HELPER},
    {"test_user", C_TEST_USER},
    {"topology_conf", C_TOPOLOGY_CONF},
    {"results_log", C_RESULTS_LOG},
    {"results_log_max", C_RESULTS_LOG_MAX},
    {"watch_action", C_WATCH_ACTION},
    {"watch_signal", C_WATCH_SIGNAL},
    {"watch_helper", C_WATCH_HELPER},
    {"requeue", C_REQUEUE},
    {"requeue_max", C_REQUEUE_MAX},
    {"requeue_begin", C_REQUEUE_BEGIN},
    {"node_warnings", C_NODE_WARNINGS},
    {"test_ports_per_job", C_TEST_PORTS_PER_JOB},
};

void ibp_conf_init(struct ibp_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->sysfs_root, "/");
	strcpy(c->cache_dir, "/run/spank-ib");
	c->bind = true;
	c->cache_ttl = 60;
	c->watch_action = IBP_WATCH_ACTION_REPORT;
	c->watch_signal = SIGTERM;
	c->requeue = IBP_REQUEUE_USER;
	c->requeue_max = 1;
	c->requeue_begin_s = -1;
	c->test_ports_per_job = IBP_CONF_PORTS_PER_JOB_DEFAULT;
	c->results_log_max = IBP_CONF_RESULTS_LOG_MAX_DEFAULT;
	ibp_policy_init(&c->policy);
}

static int find_key(const char *key)
{
	for (size_t i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++)
		if (!strcmp(conf_keys[i].key, key))
			return (int)i;
	return -1;
}

bool ibp_conf_has_key(const char *key)
{
	return key && find_key(key) >= 0;
}

int ibp_conf_expand(const char *tmpl, const char *host, const char *jobid, char *out, size_t len)
{
	size_t o = 0;

	if (!len)
		return -ENAMETOOLONG;
	for (const char *p = tmpl; *p; p++) {
		const char *add;
		char one[2] = {0, 0};
		size_t n;

		if (*p != '%') {
			one[0] = *p;
			add = one;
		} else if (p[1] == 'n') {
			add = host;
			p++;
		} else if (p[1] == 'j' && jobid) {
			add = jobid;
			p++;
		} else if (p[1] == '%') {
			add = "%";
			p++;
		} else {
			return -EINVAL;
		}
		n = strlen(add);
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

int ibp_conf_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*s == 'K' || *s == 'k')
		shift = 10;
	else if (*s == 'M' || *s == 'm')
		shift = 20;
	else if (*s == 'G' || *s == 'g')
		shift = 30;
	else if (*s)
		return -EINVAL;
	if (shift && s[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

/* A value quoted in a message: printable, bounded (the key's and value's bytes are the admin's). */
static const char *q(const char *v, char *buf, size_t len)
{
	ibp_text_escape(v, buf, len);
	return buf;
}

static int set_path(char *dst, size_t dstlen, const char *key, const char *v, bool may_be_empty,
		    char *err, size_t errlen)
{
	char probe[PATH_MAX], qv[160];

	if ((!*v && !may_be_empty) || (*v && v[0] != '/'))
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key '%s': expected an absolute path",
				q(v, qv, sizeof(qv)), key);
	if (strlen(v) >= dstlen)
		return ibp_errf(-EINVAL, err, errlen,
				"bad value for key '%s': path longer than %zu bytes", key,
				dstlen - 1);
	/* Catch a bad '%' sequence now, not on every node at run time. */
	if (ibp_conf_expand(v, "x", NULL, probe, sizeof(probe)) == -EINVAL)
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key '%s': only %%n (host name) and %%%% may "
				"follow '%%'",
				q(v, qv, sizeof(qv)), key);
	strcpy(dst, v);
	return 0;
}

/* A user name as useradd and adduser take it: [A-Za-z0-9_.-], not starting with '-'. */
static int set_user(char *dst, size_t dstlen, const char *key, const char *v, char *err,
		    size_t errlen)
{
	size_t n = strlen(v);
	char qv[160];

	if (!n || n >= dstlen || v[0] == '-' ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key '%s': expected a user name (letters, "
				"digits, '_', '.', '-'; at most %zu characters)",
				q(v, qv, sizeof(qv)), key, dstlen - 1);
	memcpy(dst, v, n + 1);
	return 0;
}

static int set_enforce(unsigned *out, const char *v, char *err, size_t errlen)
{
	char buf[256], qv[160];
	char *save = NULL;
	unsigned bits = 0;

	if (strlen(v) >= sizeof(buf))
		return ibp_errf(-EINVAL, err, errlen, "bad value for key 'enforce': too long");
	strcpy(buf, v);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "check"))
			bits |= IBP_ENFORCE_CHECK;
		else if (!strcmp(w, "affinity"))
			bits |= IBP_ENFORCE_AFFINITY;
		else if (!strcmp(w, "env"))
			bits |= IBP_ENFORCE_ENV;
		else if (!strcmp(w, "test"))
			bits |= IBP_ENFORCE_TEST;
		else if (!strcmp(w, "none"))
			bits = 0;
		else
			return ibp_errf(
			    -EINVAL, err, errlen,
			    "bad value '%s' for key 'enforce': expected a comma-separated "
			    "list of check, affinity, env, test, or none",
			    q(w, qv, sizeof(qv)));
	}
	*out = bits;
	return 0;
}

static int set_bool(bool *dst, const char *key, const char *v, char *err, size_t errlen)
{
	char qv[160];

	if (ibp_policy_parse_bool(v, dst))
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key '%s': expected yes or no",
				q(v, qv, sizeof(qv)), key);
	return 0;
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
    {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"INT", SIGINT},
    {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"CONT", SIGCONT},
};

int ibp_conf_parse_signal(const char *v, int *out)
{
	unsigned n = 0;
	const char *s;

	if (!strncmp(v, "SIG", 3))
		v += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (!strcmp(v, signals[i].name)) {
			*out = signals[i].sig;
			return 0;
		}
	for (s = v; *s >= '0' && *s <= '9' && n <= 64; s++)
		n = n * 10 + (unsigned)(*s - '0');
	if (*v < '1' || *v > '9' || *s || n > 64)
		return -EINVAL;
	*out = (int)n;
	return 0;
}

const char *ibp_conf_signal_name(int sig, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (signals[i].sig == sig) {
			snprintf(buf, len, "SIG%s", signals[i].name);
			return buf;
		}
	snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* An unsigned decimal within [LO, HI]. */
static int set_uint(unsigned *out, const char *key, const char *v, unsigned lo, unsigned hi,
		    const char *expect, char *err, size_t errlen)
{
	uint64_t n = 0;
	const char *s = v;
	char qv[160];

	for (; *s >= '0' && *s <= '9' && n <= hi; s++)
		n = n * 10 + (uint64_t)(*s - '0');
	if (!*v || *s || n < lo || n > hi)
		return ibp_errf(-EINVAL, err, errlen, "bad value '%s' for key '%s': expected %s",
				q(v, qv, sizeof(qv)), key, expect);
	*out = (unsigned)n;
	return 0;
}

/* One plugin key (not config=). */
static int set_plugin_key(struct ibp_conf *c, enum conf_key id, const char *key, const char *v,
			  char *err, size_t errlen)
{
	char qv[160];

	switch (id) {
	case C_SYSFS_ROOT:
		return set_path(c->sysfs_root, sizeof(c->sysfs_root), key, v, false, err, errlen);
	case C_TOPOLOGY:
		return set_path(c->topology, sizeof(c->topology), key, v, true, err, errlen);
	case C_CACHE_DIR:
		return set_path(c->cache_dir, sizeof(c->cache_dir), key, v, false, err, errlen);
	case C_MUNGE_SOCKET:
		return set_path(c->munge_socket, sizeof(c->munge_socket), key, v, true, err,
				errlen);
	case C_TOPOLOGY_CONF:
		return set_path(c->topology_conf, sizeof(c->topology_conf), key, v, true, err,
				errlen);
	case C_RESULTS_LOG:
		return set_path(c->results_log, sizeof(c->results_log), key, v, true, err, errlen);
	/* Checked (root-owned, nobody else may write it) where it is exec'ed. */
	case C_TEST_HELPER:
		return set_path(c->test_helper, sizeof(c->test_helper), key, v, true, err, errlen);
	/* Looked up (and refused if root or the job's owner) in init_post_opt. */
	case C_TEST_USER:
		return set_user(c->test_user, sizeof(c->test_user), key, v, err, errlen);
	case C_RESULTS_LOG_MAX:
		if (ibp_conf_parse_size(v, &c->results_log_max))
			return ibp_errf(-EINVAL, err, errlen,
					"bad value '%s' for key 'results_log_max': expected bytes "
					"with an optional K, M or G (0: never rotate)",
					q(v, qv, sizeof(qv)));
		return 0;
	case C_ENFORCE:
		return set_enforce(&c->enforce, v, err, errlen);
	case C_BIND:
		return set_bool(&c->bind, key, v, err, errlen);
	case C_DRAIN:
		return set_bool(&c->drain, key, v, err, errlen);
	case C_PROLOG_CHECK:
		return set_bool(&c->prolog_check, key, v, err, errlen);
	case C_CACHE_TTL:
		return set_uint(&c->cache_ttl, key, v, 0, 86400, "seconds, 0 to 86400", err,
				errlen);
	case C_WATCH_ACTION:
		if (!strcmp(v, "report") || !strcmp(v, "end")) {
			c->watch_action =
			    v[0] == 'e' ? IBP_WATCH_ACTION_END : IBP_WATCH_ACTION_REPORT;
			return 0;
		}
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key 'watch_action': expected report or end",
				q(v, qv, sizeof(qv)));
	case C_WATCH_SIGNAL:
		if (ibp_conf_parse_signal(v, &c->watch_signal))
			return ibp_errf(
			    -EINVAL, err, errlen,
			    "bad value '%s' for key 'watch_signal': expected TERM, USR1, "
			    "USR2, INT, HUP, QUIT, KILL, CONT or a number from 1 to 64",
			    q(v, qv, sizeof(qv)));
		return 0;
	/* Checked (root-owned, nobody else may write it) where it is exec'ed. */
	case C_WATCH_HELPER:
		return set_path(c->watch_helper, sizeof(c->watch_helper), key, v, true, err,
				errlen);
	case C_REQUEUE:
		if (!strcmp(v, "no"))
			c->requeue = IBP_REQUEUE_NO;
		else if (!strcmp(v, "user"))
			c->requeue = IBP_REQUEUE_USER;
		else if (!strcmp(v, "yes"))
			c->requeue = IBP_REQUEUE_YES;
		else
			return ibp_errf(
			    -EINVAL, err, errlen,
			    "bad value '%s' for key 'requeue': expected no, user or yes",
			    q(v, qv, sizeof(qv)));
		return 0;
	case C_REQUEUE_MAX:
		return set_uint(&c->requeue_max, key, v, 0, 100, "a count from 0 to 100", err,
				errlen);
	case C_REQUEUE_BEGIN: {
		unsigned n = 0;

		if (!strcmp(v, "auto")) {
			c->requeue_begin_s = -1;
			return 0;
		}
		if (set_uint(&n, key, v, 1, 3600, "auto or seconds from 1 to 3600", err, errlen))
			return -EINVAL;
		c->requeue_begin_s = (int)n;
		return 0;
	}
	case C_NODE_WARNINGS:
		if (!strcmp(v, "log") || !strcmp(v, "user")) {
			c->node_warnings_user = v[0] == 'u';
			return 0;
		}
		return ibp_errf(-EINVAL, err, errlen,
				"bad value '%s' for key 'node_warnings': expected log or user",
				q(v, qv, sizeof(qv)));
	case C_TEST_PORTS_PER_JOB:
		return set_uint(&c->test_ports_per_job, key, v, 1, 1024, "1 to 1024", err, errlen);
	case C_CONFIG:
		break;
	}
	return ibp_errf(-EINVAL, err, errlen,
			"config= does not nest: it names a file on the plugin's line in "
			"plugstack.conf only");
}

int ibp_conf_set(struct ibp_conf *c, const char *key, const char *value, char *err, size_t errlen)
{
	char qk[160];
	int k;

	if (!key || !value)
		return ibp_errf(-EINVAL, err, errlen, "expected KEY=VALUE");
	if (ibp_policy_has_key(key))
		return ibp_policy_set(&c->policy, key, value, err, errlen);
	k = find_key(key);
	if (k < 0)
		return ibp_errf(-ENOENT, err, errlen, "unknown key '%s'", q(key, qk, sizeof(qk)));
	return set_plugin_key(c, conf_keys[k].id, key, value, err, errlen);
}

/* The tokenizer's hook for every key that is not a policy key. */
static int other_key(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
	return ibp_conf_set(arg, key, value, err, errlen);
}

int ibp_conf_parse_text(struct ibp_conf *c, const char *text, size_t len, const char *name,
			char *err, size_t errlen)
{
	return ibp_policy_parse_text(&c->policy, text, len, name, other_key, c, err, errlen);
}

int ibp_conf_load_file(struct ibp_conf *c, const char *path, unsigned flags, char *err,
		       size_t errlen)
{
	char why[PATH_MAX + 512];
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, rc;

	if (flags & IBP_CONF_ROOT_ONLY) {
		/* It steers a root process: only root may be able to change it. */
		fd = ibp_rootpath_open(path, O_RDONLY, 0, why, sizeof(why));
		if (fd < 0)
			return ibp_errf(fd, err, errlen, "config: %s", why);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			rc = -errno;
			return ibp_errf(rc, err, errlen, "config: cannot open %s: %s", path,
					strerror(-rc));
		}
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ibp_errf(-EINVAL, err, errlen, "config: %s is not a regular file", path);
	}
	if (st.st_size > IBP_CONF_MAX_BYTES) {
		close(fd);
		return ibp_errf(-EFBIG, err, errlen, "config: %s is larger than %d bytes", path,
				IBP_CONF_MAX_BYTES);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return ibp_errf(-ENOMEM, err, errlen, "config: %s: out of memory", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			close(fd);
			free(buf);
			return ibp_errf(rc, err, errlen, "config: cannot read %s: %s", path,
					strerror(-rc));
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = ibp_conf_parse_text(c, buf, got, path, err, errlen);
	free(buf);
	if (!rc)
		snprintf(c->config, sizeof(c->config), "%s", path);
	return rc;
}

int ibp_conf_parse_args(struct ibp_conf *c, int ac, char **av, const char *host, char *err,
			size_t errlen)
{
	for (int i = 0; i < ac; i++) {
		const char *pair = av[i], *eq;
		char key[64], path[PATH_MAX], qv[160];
		int rc;

		if (!pair || !*pair)
			continue;
		eq = strchr(pair, '=');
		if (!eq || eq == pair || (size_t)(eq - pair) >= sizeof(key))
			return ibp_errf(-EINVAL, err, errlen,
					"bad argument '%s': expected KEY=VALUE",
					q(pair, qv, sizeof(qv)));
		memcpy(key, pair, (size_t)(eq - pair));
		key[eq - pair] = '\0';
		if (strcmp(key, "config") != 0) {
			rc = ibp_conf_set(c, key, eq + 1, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		rc = set_path(path, sizeof(path), key, eq + 1, false, err, errlen);
		if (rc)
			return rc;
		if (ibp_conf_expand(eq + 1, host && *host ? host : "localhost", NULL, path,
				    sizeof(path)))
			return ibp_errf(-EINVAL, err, errlen,
					"bad value '%s' for key 'config': path too long",
					q(eq + 1, qv, sizeof(qv)));
		if (c->no_config_files)
			continue; /* srun, sbatch: nothing in it is theirs to use */
		rc = ibp_conf_load_file(c, path, IBP_CONF_ROOT_ONLY, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

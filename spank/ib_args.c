/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_args.c: the admin's arguments, from plugstack.conf and config=FILE.
 *
 *   required spank_ib.so sysfs_root=/ topology=/etc/ibprep/%n.xml drain=yes ...
 *
 * Only the admin can set these: the plugin never takes a path, a policy
 * or a switch from the job's environment.  The plugin's own keys are
 * handled here; every other key goes to the policy module, which rejects
 * unknown keys and bad values by name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/results_log.h"
#include "ibprep/rootpath.h"

#include "spank_ib.h"

#define CONFIG_MAX_BYTES (256 * 1024)
#define CONFIG_MAX_DEPTH 2

void spank_ib_conf_init(struct spank_ib_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->sysfs_root, "/");
	strcpy(c->cache_dir, "/run/spank-ib");
	c->bind = true;
	c->cache_ttl = 60;
	c->results_log_max = IBP_RESULTS_LOG_DEFAULT_MAX;
	ibp_policy_init(&c->policy);
}

int spank_ib_parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "on")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "no") || !strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "off")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

int spank_ib_expand(const char *tmpl, const char *host, const char *jobid, char *out, size_t len)
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

int spank_ib_short_hostname(char *buf, size_t len)
{
	char h[256];
	char *dot;

	if (gethostname(h, sizeof(h)) < 0)
		return -errno;
	h[sizeof(h) - 1] = '\0';
	dot = strchr(h, '.');
	if (dot)
		*dot = '\0';
	if (!h[0])
		return -ENOENT;
	if (strlen(h) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, h);
	return 0;
}

static int set_path(char *dst, size_t dstlen, const char *key, const char *v, bool may_be_empty,
		    char *err, size_t errlen)
{
	char probe[PATH_MAX];

	if (!*v && !may_be_empty) {
		snprintf(err, errlen, "bad value '' for key '%s': expected an absolute path", key);
		return -EINVAL;
	}
	if (*v && v[0] != '/') {
		snprintf(err, errlen, "bad value '%s' for key '%s': expected an absolute path", v,
			 key);
		return -EINVAL;
	}
	if (strlen(v) >= dstlen) {
		snprintf(err, errlen, "bad value for key '%s': path longer than %zu bytes", key,
			 dstlen - 1);
		return -EINVAL;
	}
	/* Catch a bad '%' sequence now, not on every node at run time. */
	if (spank_ib_expand(v, "x", NULL, probe, sizeof(probe)) == -EINVAL) {
		snprintf(
		    err, errlen,
		    "bad value '%s' for key '%s': only %%n (host name) and %%%% may follow '%%'", v,
		    key);
		return -EINVAL;
	}
	strcpy(dst, v);
	return 0;
}

static int set_enforce(struct spank_ib_conf *c, const char *v, char *err, size_t errlen)
{
	char buf[256];
	char *save = NULL;
	unsigned bits = 0;

	if (strlen(v) >= sizeof(buf)) {
		snprintf(err, errlen, "bad value for key 'enforce': too long");
		return -EINVAL;
	}
	strcpy(buf, v);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "check"))
			bits |= SPANK_IB_ENFORCE_CHECK;
		else if (!strcmp(w, "affinity"))
			bits |= SPANK_IB_ENFORCE_AFFINITY;
		else if (!strcmp(w, "env"))
			bits |= SPANK_IB_ENFORCE_ENV;
		else if (!strcmp(w, "test"))
			bits |= SPANK_IB_ENFORCE_TEST;
		else if (!strcmp(w, "none"))
			bits = 0;
		else {
			snprintf(err, errlen,
				 "bad value '%s' for key 'enforce': expected a comma-separated "
				 "list of check, affinity, env, test, or none",
				 w);
			return -EINVAL;
		}
	}
	c->enforce = bits;
	return 0;
}

static int set_bool(bool *dst, const char *key, const char *v, char *err, size_t errlen)
{
	if (spank_ib_parse_bool(v, dst)) {
		snprintf(err, errlen, "bad value '%s' for key '%s': expected yes or no", v, key);
		return -EINVAL;
	}
	return 0;
}

static int read_config(struct spank_ib_conf *c, const char *path, int depth, char *err,
		       size_t errlen);

static int conf_set(struct spank_ib_conf *c, const char *pair, int depth, char *err, size_t errlen)
{
	const char *eq = strchr(pair, '=');
	char key[64];
	const char *v;
	size_t klen;

	if (!eq) {
		snprintf(err, errlen, "bad argument '%s': expected KEY=VALUE", pair);
		return -EINVAL;
	}
	klen = (size_t)(eq - pair);
	if (!klen || klen >= sizeof(key)) {
		snprintf(err, errlen, "bad argument '%s': expected KEY=VALUE", pair);
		return -EINVAL;
	}
	memcpy(key, pair, klen);
	key[klen] = '\0';
	v = eq + 1;

	if (!strcmp(key, "sysfs_root"))
		return set_path(c->sysfs_root, sizeof(c->sysfs_root), key, v, false, err, errlen);
	if (!strcmp(key, "topology"))
		return set_path(c->topology, sizeof(c->topology), key, v, true, err, errlen);
	if (!strcmp(key, "cache_dir"))
		return set_path(c->cache_dir, sizeof(c->cache_dir), key, v, false, err, errlen);
	if (!strcmp(key, "munge_socket"))
		return set_path(c->munge_socket, sizeof(c->munge_socket), key, v, true, err,
				errlen);
	if (!strcmp(key, "topology_conf"))
		return set_path(c->topology_conf, sizeof(c->topology_conf), key, v, true, err,
				errlen);
	if (!strcmp(key, "results_log"))
		return set_path(c->results_log, sizeof(c->results_log), key, v, true, err, errlen);
	if (!strcmp(key, "results_log_max")) {
		if (ibp_results_log_parse_size(v, &c->results_log_max)) {
			snprintf(err, errlen,
				 "bad value '%s' for key 'results_log_max': expected bytes with an "
				 "optional K, M or G (0: never rotate)",
				 v);
			return -EINVAL;
		}
		return 0;
	}
	/* Checked (root-owned, nobody else may write it) where it is exec'ed. */
	if (!strcmp(key, "test_helper"))
		return set_path(c->test_helper, sizeof(c->test_helper), key, v, true, err, errlen);
	if (!strcmp(key, "config")) {
		char path[PATH_MAX];
		char host[256];

		if (set_path(path, sizeof(path), key, v, false, err, errlen))
			return -EINVAL;
		if (spank_ib_short_hostname(host, sizeof(host)))
			strcpy(host, "localhost");
		if (spank_ib_expand(v, host, NULL, path, sizeof(path))) {
			snprintf(err, errlen, "bad value '%s' for key 'config': path too long", v);
			return -EINVAL;
		}
		if (c->no_config_files)
			return 0; /* srun, sbatch: nothing in it is theirs to use */
		return read_config(c, path, depth + 1, err, errlen);
	}
	if (!strcmp(key, "enforce"))
		return set_enforce(c, v, err, errlen);
	if (!strcmp(key, "bind"))
		return set_bool(&c->bind, key, v, err, errlen);
	if (!strcmp(key, "drain"))
		return set_bool(&c->drain, key, v, err, errlen);
	if (!strcmp(key, "prolog_check"))
		return set_bool(&c->prolog_check, key, v, err, errlen);
	if (!strcmp(key, "cache_ttl")) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(v, &end, 10);
		if (!*v || *end || errno || n > 86400 || v[0] == '-' || v[0] == '+') {
			snprintf(err, errlen,
				 "bad value '%s' for key 'cache_ttl': expected seconds, 0 to 86400",
				 v);
			return -EINVAL;
		}
		c->cache_ttl = (unsigned)n;
		return 0;
	}
	if (!ibp_policy_has_key(key)) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -EINVAL;
	}
	if (ibp_policy_set(&c->policy, key, v, err, errlen))
		return -EINVAL;
	if (c->n_policy < SPANK_IB_MAX_POLICY && strlen(pair) < SPANK_IB_PAIR_MAX)
		strcpy(c->policy_pairs[c->n_policy++], pair);
	return 0;
}

int spank_ib_conf_set(struct spank_ib_conf *c, const char *pair, char *err, size_t errlen)
{
	return conf_set(c, pair, 0, err, errlen);
}

/* Strips leading and trailing blanks in place. */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/*
 * A config file: one KEY=VALUE per line, '#' comments, blank lines.  It must
 * be a regular file only root can change (rootpath.h): owned by root, not
 * writable by group or others, in directories that are the same.
 */
static int read_config(struct spank_ib_conf *c, const char *path, int depth, char *err,
		       size_t errlen)
{
	struct stat st;
	char *buf = NULL, *line, *next, bad[PATH_MAX + 512];
	ssize_t n;
	size_t got = 0;
	int fd, rc = 0, lineno = 0;

	if (depth > CONFIG_MAX_DEPTH) {
		snprintf(err, errlen, "config %s: config= nested more than %d deep", path,
			 CONFIG_MAX_DEPTH);
		return -EINVAL;
	}
	/* It steers a root process: only root may be able to change it. */
	fd = ibp_rootpath_open(path, O_RDONLY, 0, bad, sizeof(bad));
	if (fd < 0) {
		snprintf(err, errlen, "config: %s", bad);
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "config %s: %s", path, strerror(errno));
		close(fd);
		return -EINVAL;
	}
	if (st.st_size > CONFIG_MAX_BYTES) {
		snprintf(err, errlen, "config %s: larger than %d bytes", path, CONFIG_MAX_BYTES);
		close(fd);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "config %s: out of memory", path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	if (strlen(buf) != got) {
		snprintf(err, errlen, "config %s: contains a NUL byte", path);
		free(buf);
		return -EINVAL;
	}
	for (line = buf; line; line = next) {
		char why[512];
		char *hash, *t;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		t = trim(line);
		if (!*t)
			continue;
		if (conf_set(c, t, depth, why, sizeof(why))) {
			snprintf(err, errlen, "config %s line %d: %s", path, lineno, why);
			rc = -EINVAL;
			break;
		}
	}
	free(buf);
	return rc;
}

int spank_ib_conf_parse(struct spank_ib_conf *c, int ac, char **av, char *err, size_t errlen)
{
	for (int i = 0; i < ac; i++) {
		if (!av[i] || !*av[i])
			continue;
		if (conf_set(c, av[i], 0, err, errlen))
			return -EINVAL;
	}
	return 0;
}

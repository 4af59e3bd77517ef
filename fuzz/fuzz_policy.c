/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the policy parsers and spank_ib.conf(5)'s (conf.h).
 * The input is a config text (and its first line a KEY=VALUE pair);
 * whatever it holds, parsing must not crash, must leave a policy that is
 * still sane, and any error message must be a printable, NUL-terminated
 * line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/conf.h"
#include "ibprep/policy.h"

static int other(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
	(void)arg;
	(void)value;
	if (!strcmp(key, "drain"))
		return 0;
	snprintf(err, errlen, "unknown key");
	return -2;
}

static void check_message(const char *err, size_t len)
{
	size_t n = strnlen(err, len);
	if (n == len)
		abort(); /* not terminated */
	for (size_t i = 0; i < n; i++)
		if (err[i] == '\n')
			abort(); /* one line only */
}

static void check_policy(const struct ibp_policy *p)
{
	if (p->n_hcas > IBP_POLICY_MAX_NAMES || p->n_ignore_hcas > IBP_POLICY_MAX_NAMES ||
	    p->n_counter_limits > IBP_POLICY_MAX_COUNTERS ||
	    p->counter_window_ms > IBP_POLICY_WINDOW_MAX_MS || p->test_port_lo > p->test_port_hi ||
	    !(p->test_timeout_s > 0) || p->min_rate < 0)
		abort();
	for (size_t i = 0; i < p->n_hcas; i++)
		if (strnlen(p->hcas[i], sizeof(p->hcas[i])) == sizeof(p->hcas[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_policy p;
	char err[256];

	ibp_policy_init(&p);
	err[0] = '\0';
	ibp_policy_parse_text(&p, (const char *)data, size, "fuzz", other, NULL, err, sizeof(err));
	check_message(err, sizeof(err));
	check_policy(&p);

	/* the same text as a config= file: the plugin's keys too */
	struct ibp_conf *c = malloc(sizeof(*c));
	if (!c)
		return 0;
	ibp_conf_init(c);
	err[0] = '\0';
	ibp_conf_parse_text(c, (const char *)data, size, "fuzz", err, sizeof(err));
	check_message(err, sizeof(err));
	check_policy(&c->policy);
	if (c->cache_ttl > 86400 || (c->sysfs_root[0] != '/') ||
	    strnlen(c->topology, sizeof(c->topology)) == sizeof(c->topology))
		abort();
	free(c);

	/* the first line as one pair (a C string: stops at a NUL) */
	char pair[512];
	size_t n = 0;
	while (n < size && n < sizeof(pair) - 1 && data[n] != '\n')
		n++;
	memcpy(pair, data, n);
	pair[n] = '\0';
	ibp_policy_init(&p);
	err[0] = '\0';
	ibp_policy_set_pair(&p, pair, err, sizeof(err));
	check_message(err, sizeof(err));
	check_policy(&p);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* policy.c: the key=value policy of policy.h, its defaults and its parser. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ibprep/policy.h"
#include "ibprep/text.h"

/*
 * Warn thresholds of infiniband-diags' error_thresholds file (rdma-core
 * infiniband-diags/etc/error_thresholds, used by ibqueryerrors), under the
 * kernel's sysfs counter names.  port_xmit_wait is a congestion measure, not
 * an error: it is not judged unless the admin names it.
 */
static const struct {
	const char *name;
	uint64_t warn;
} default_limits[] = {
    {"symbol_error", 10},
    {"link_error_recovery", 10},
    {"link_downed", 10},
    {"port_rcv_errors", 10},
    {"port_rcv_remote_physical_errors", 100},
    {"port_rcv_switch_relay_errors", 100},
    {"port_xmit_discards", 100},
    {"port_xmit_constraint_errors", 100},
    {"port_rcv_constraint_errors", 100},
    {"local_link_integrity_errors", 10},
    {"excessive_buffer_overrun_errors", 10},
    {"VL15_dropped", 100},
};

static const char *const consistency_names[IBP_CK_N] = {
    [IBP_CK_HCA_SET] = "hca_set", [IBP_CK_LINK_LAYER] = "link_layer",
    [IBP_CK_GID] = "gid",         [IBP_CK_NCCL_ENV] = "nccl_env",
    [IBP_CK_MODEL] = "model",     [IBP_CK_FIRMWARE] = "firmware",
    [IBP_CK_MTU] = "mtu",         [IBP_CK_RATE] = "rate",
    [IBP_CK_KERNEL] = "kernel",   [IBP_CK_RDMA_CORE] = "rdma_core",
    [IBP_CK_DRIVER] = "driver",   [IBP_CK_GDR] = "gdr",
};

bool ibp_policy_consistency_wanted(const struct ibp_policy *p)
{
	for (int k = 0; k < IBP_CK_N; k++)
		if (p->consistency[k] != IBP_CONSISTENCY_OFF)
			return true;
	return false;
}

const char *ibp_consistency_key_name(enum ibp_consistency_key k)
{
	return (unsigned)k < IBP_CK_N ? consistency_names[k] : NULL;
}

static const char *const speed_names[] = {"SDR", "DDR", "QDR", "FDR10", "FDR",
					  "EDR", "HDR", "NDR", "XDR"};

int ibp_link_speed_rank(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(speed_names) / sizeof(speed_names[0]); i++)
		if (!strcasecmp(name, speed_names[i]))
			return (int)i + 1;
	return 0;
}

void ibp_policy_init(struct ibp_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->link_layer = IBP_POLICY_LL_ANY;
	p->expect_hcas = -1;
	p->expect_ports = -1;
	p->check_pcie = true;
	p->check_netdev = true;
	p->check_gdr = true;
	p->check_counters = true;
	p->min_memlock_kb = UINT64_MAX;
	for (size_t i = 0; i < sizeof(default_limits) / sizeof(default_limits[0]); i++) {
		struct ibp_counter_limit *l = &p->counter_limits[p->n_counter_limits++];
		snprintf(l->name, sizeof(l->name), "%s", default_limits[i].name);
		l->warn = default_limits[i].warn;
		l->fail = IBP_COUNTER_OFF;
	}
	p->test_timeout_s = 5;
	p->test_min_bw = 0.1;
	p->test_max_lat_us = 1000;
	p->test_port_lo = IBP_TEST_PORTS_DEFAULT_LO;
	p->test_port_hi = IBP_TEST_PORTS_DEFAULT_HI;
	snprintf(p->test_transport, sizeof(p->test_transport), "verbs");
	p->link_watch = true;
	p->xmit_wait_tick_ns = 4;
	p->watch_interval_s = 1;
	p->watch_flap_s = 0;
	/* what hangs or breaks NCCL fails; what only slows it warns */
	for (int k = 0; k < IBP_CK_N; k++)
		p->consistency[k] = k <= IBP_CK_NCCL_ENV ? IBP_SEV_FAIL : IBP_SEV_WARN;
}

/* A value quoted safely in a message: printable ASCII only, at most 64 bytes. */
static void quote(char *dst, size_t size, const char *v)
{
	size_t n = strnlen(v, 65), o = 0;

	for (size_t i = 0; i < n && i < 64 && o + 4 < size; i++) {
		unsigned char c = (unsigned char)v[i];
		dst[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (n > 64 && o + 4 < size) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
}

static int bad(char *err, size_t errlen, const char *key, const char *value, const char *expect)
{
	char k[80], v[80];

	quote(k, sizeof(k), key);
	quote(v, sizeof(v), value);
	if (err && errlen)
		snprintf(err, errlen, "bad value '%s' for key '%s': expected %s", v, k, expect);
	return -EINVAL;
}

/* Decimal digits only, no sign, no spaces, fits in uint64_t. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_uint_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A plain decimal number ("0.5", "400", "1e2" refused: no exponents needed). */
static int parse_double_range(const char *s, double lo, double hi, double *out)
{
	char *end;
	const char *c;
	int dots = 0, digits = 0;

	for (c = s; *c; c++) {
		if (*c == '.')
			dots++;
		else if (*c >= '0' && *c <= '9')
			digits++;
		else
			return -EINVAL;
	}
	if (!digits || dots > 1)
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int ibp_policy_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Kernel device and interface names: letters, digits, '_', '-', '.', ':'. */
static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.' || c == ':'))
			return false;
	}
	return true;
}

static int set_names(char names[][64], size_t *n, const char *v)
{
	char buf[IBP_POLICY_MAX_NAMES * 64 + 1];
	char *save = NULL;
	size_t cnt = 0;
	char tmp[IBP_POLICY_MAX_NAMES][64];

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", v);
	if (!*v) { /* "hcas=" clears the list */
		*n = 0;
		return 0;
	}
	if (v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,"))
		return -EINVAL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (cnt == IBP_POLICY_MAX_NAMES || !name_ok(t, 64))
			return -EINVAL;
		snprintf(tmp[cnt++], 64, "%s", t);
	}
	memcpy(names, tmp, sizeof(tmp[0]) * cnt);
	*n = cnt;
	return 0;
}

/* "hca_set:fail,firmware:off" or "all:warn": every item valid, else nothing changes. */
static int set_consistency(struct ibp_policy *p, const char *v)
{
	int tmp[IBP_CK_N];
	char buf[512], *save = NULL;

	if (!*v || strlen(v) >= sizeof(buf) || v[0] == ',' || v[strlen(v) - 1] == ',' ||
	    strstr(v, ",,"))
		return -EINVAL;
	memcpy(tmp, p->consistency, sizeof(tmp));
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(t, ':');
		int level, k;

		if (!colon)
			return -EINVAL;
		*colon = '\0';
		if (!strcmp(colon + 1, "fail"))
			level = IBP_SEV_FAIL;
		else if (!strcmp(colon + 1, "warn"))
			level = IBP_SEV_WARN;
		else if (!strcmp(colon + 1, "off"))
			level = IBP_CONSISTENCY_OFF;
		else
			return -EINVAL;
		if (!strcmp(t, "all")) {
			for (k = 0; k < IBP_CK_N; k++)
				tmp[k] = level;
			continue;
		}
		for (k = 0; k < IBP_CK_N && strcmp(t, consistency_names[k]) != 0; k++)
			;
		if (k == IBP_CK_N)
			return -EINVAL;
		tmp[k] = level;
	}
	memcpy(p->consistency, tmp, sizeof(tmp));
	return 0;
}

/* "NAME=N" or "NAME=off" for counter_warn= / counter_fail=. */
static int set_counter(struct ibp_policy *p, const char *v, bool fail)
{
	const char *eq = strchr(v, '=');
	char name[48];
	uint64_t limit;

	if (!eq || eq == v || (size_t)(eq - v) >= sizeof(name))
		return -EINVAL;
	memcpy(name, v, (size_t)(eq - v));
	name[eq - v] = '\0';
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			return -EINVAL;
	if (!strcasecmp(eq + 1, "off"))
		limit = IBP_COUNTER_OFF;
	else if (parse_u64(eq + 1, &limit) || limit == IBP_COUNTER_OFF)
		return -EINVAL;
	struct ibp_counter_limit *l = NULL;
	for (size_t i = 0; i < p->n_counter_limits; i++)
		if (!strcmp(p->counter_limits[i].name, name))
			l = &p->counter_limits[i];
	if (!l) {
		if (p->n_counter_limits == IBP_POLICY_MAX_COUNTERS)
			return -ENOSPC;
		l = &p->counter_limits[p->n_counter_limits++];
		snprintf(l->name, sizeof(l->name), "%s", name);
		l->warn = l->fail = IBP_COUNTER_OFF;
	}
	if (fail)
		l->fail = limit;
	else
		l->warn = limit;
	return 0;
}

/* KiB, with an optional binary suffix K M G T, or unlimited/infinity. */
static int parse_memlock(const char *v, uint64_t *out)
{
	char num[32];
	size_t n = strlen(v);
	uint64_t mult = 1, x;

	if (!strcasecmp(v, "unlimited") || !strcasecmp(v, "infinity")) {
		*out = UINT64_MAX;
		return 0;
	}
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, n + 1);
	switch (num[n - 1]) {
	case 'K':
	case 'k':
		mult = 1;
		num[--n] = '\0';
		break;
	case 'M':
	case 'm':
		mult = 1024;
		num[--n] = '\0';
		break;
	case 'G':
	case 'g':
		mult = 1024 * 1024;
		num[--n] = '\0';
		break;
	case 'T':
	case 't':
		mult = 1024ULL * 1024 * 1024;
		num[--n] = '\0';
		break;
	}
	if (parse_u64(num, &x) || x > (UINT64_MAX - 1) / mult)
		return -EINVAL;
	*out = x * mult;
	return 0;
}

enum key_id {
	K_LINK_LAYER,
	K_MIN_RATE,
	K_MIN_WIDTH,
	K_MIN_SPEED,
	K_EXPECT_HCAS,
	K_EXPECT_PORTS,
	K_HCAS,
	K_IGNORE_HCAS,
	K_COUNTER_WINDOW,
	K_COUNTER_WARN,
	K_COUNTER_FAIL,
	K_CHECK_COUNTERS,
	K_CHECK_PCIE,
	K_CHECK_NETDEV,
	K_MIN_MTU,
	K_MIN_MEMLOCK,
	K_CHECK_GDR,
	K_NCCL_HCA,
	K_GID_INDEX,
	K_GDR_LEVEL,
	K_OMPI_PML,
	K_SOCKET_IFNAME,
	K_TEST_TIMEOUT,
	K_TEST_MIN_BW,
	K_TEST_MAX_LAT,
	K_TEST_PORTS,
	K_TEST_PAIRING,
	K_TEST_TRANSPORT,
	K_LINK_WATCH,
	K_XMIT_WAIT_TICK,
	K_WATCH_INTERVAL,
	K_WATCH_FLAP,
	K_CONSISTENCY,
};

static const struct {
	const char *key;
	enum key_id id;
	const char *expect; /* for the error message */
} keys[] = {
    {"link_layer", K_LINK_LAYER, "ib, eth or any"},
    {"min_rate", K_MIN_RATE, "Gb/s per port, 0 to 100000 (0 = off)"},
    {"min_width", K_MIN_WIDTH, "lanes: 0 (from the node's peers), 1, 2, 4, 8 or 12"},
    {"min_speed", K_MIN_SPEED, "SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR or empty"},
    {"expect_hcas", K_EXPECT_HCAS, "a count from 0 to 1024"},
    {"expect_ports", K_EXPECT_PORTS, "a count from 0 to 4096"},
    {"hcas", K_HCAS, "comma-separated device names (at most 32)"},
    {"ignore_hcas", K_IGNORE_HCAS, "comma-separated device names (at most 32)"},
    {"counter_window", K_COUNTER_WINDOW, "milliseconds from 0 to 10000 (0 = off)"},
    {"counter_warn", K_COUNTER_WARN, "COUNTER=N or COUNTER=off (at most 32 counters)"},
    {"counter_fail", K_COUNTER_FAIL, "COUNTER=N or COUNTER=off (at most 32 counters)"},
    {"check_counters", K_CHECK_COUNTERS, "yes or no"},
    {"check_pcie", K_CHECK_PCIE, "yes or no"},
    {"check_netdev", K_CHECK_NETDEV, "yes or no"},
    {"min_mtu", K_MIN_MTU, "bytes from 0 to 65536 (0 = off)"},
    {"min_memlock", K_MIN_MEMLOCK, "KiB (suffix K, M, G or T allowed) or unlimited"},
    {"check_gdr", K_CHECK_GDR, "yes or no"},
    {"nccl_hca", K_NCCL_HCA, "node or task"},
    {"gid_index", K_GID_INDEX, "yes or no"},
    {"gdr_level", K_GDR_LEVEL, "yes or no"},
    {"ompi_pml", K_OMPI_PML, "ucx or none"},
    {"socket_ifname", K_SOCKET_IFNAME, "an interface name (at most 63 characters) or empty"},
    {"test_timeout", K_TEST_TIMEOUT, "seconds, more than 0 and at most 600"},
    {"test_min_bw", K_TEST_MIN_BW, "a fraction from 0 to 1"},
    {"test_max_lat_us", K_TEST_MAX_LAT, "microseconds from 1 to 10000000"},
    {"test_ports", K_TEST_PORTS, "A-B, TCP ports with 1 <= A <= B <= 65535"},
    {"test_pairing", K_TEST_PAIRING, "rail or any"},
    {"test_transport", K_TEST_TRANSPORT, "verbs or socket"},
    {"link_watch", K_LINK_WATCH, "yes or no"},
    {"xmit_wait_tick_ns", K_XMIT_WAIT_TICK, "nanoseconds, more than 0 and at most 100000"},
    {"watch_interval", K_WATCH_INTERVAL, "seconds, 0 (off) or 0.05 to 3600"},
    {"watch_flap", K_WATCH_FLAP, "seconds from 0 to 600"},
    {"consistency", K_CONSISTENCY,
     "KEY:fail|warn|off,... with KEY one of hca_set, link_layer, gid, nccl_env, model, "
     "firmware, mtu, rate, kernel, rdma_core, driver, gdr, or all"},
};

static int find_key(const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].key, key))
			return (int)i;
	return -1;
}

bool ibp_policy_has_key(const char *key)
{
	return key && find_key(key) >= 0;
}

/* Applies one pair to P; -EINVAL (or -ENOSPC) on a bad value. */
static int apply(struct ibp_policy *p, enum key_id id, const char *v)
{
	uint64_t u;
	double d;
	bool b;

	switch (id) {
	case K_LINK_LAYER:
		if (!strcasecmp(v, "any"))
			p->link_layer = IBP_POLICY_LL_ANY;
		else if (!strcasecmp(v, "ib") || !strcasecmp(v, "infiniband"))
			p->link_layer = IBP_POLICY_LL_IB;
		else if (!strcasecmp(v, "eth") || !strcasecmp(v, "ethernet") ||
			 !strcasecmp(v, "roce"))
			p->link_layer = IBP_POLICY_LL_ETH;
		else
			return -EINVAL;
		return 0;
	case K_MIN_RATE:
		if (parse_double_range(v, 0, 100000, &d))
			return -EINVAL;
		p->min_rate = d;
		return 0;
	case K_MIN_WIDTH:
		if (parse_u64(v, &u) || (u != 0 && u != 1 && u != 2 && u != 4 && u != 8 && u != 12))
			return -EINVAL;
		p->min_width = (unsigned)u;
		return 0;
	case K_MIN_SPEED: {
		int r = ibp_link_speed_rank(v);
		if (!*v) {
			p->min_speed[0] = '\0';
			return 0;
		}
		if (!r)
			return -EINVAL;
		snprintf(p->min_speed, sizeof(p->min_speed), "%s", speed_names[r - 1]);
		return 0;
	}
	case K_EXPECT_HCAS:
		if (parse_uint_range(v, 0, 1024, &u))
			return -EINVAL;
		p->expect_hcas = (int)u;
		return 0;
	case K_EXPECT_PORTS:
		if (parse_uint_range(v, 0, 4096, &u))
			return -EINVAL;
		p->expect_ports = (int)u;
		return 0;
	case K_HCAS:
		return set_names(p->hcas, &p->n_hcas, v);
	case K_IGNORE_HCAS:
		return set_names(p->ignore_hcas, &p->n_ignore_hcas, v);
	case K_COUNTER_WINDOW:
		if (parse_uint_range(v, 0, IBP_POLICY_WINDOW_MAX_MS, &u))
			return -EINVAL;
		p->counter_window_ms = (unsigned)u;
		return 0;
	case K_COUNTER_WARN:
	case K_COUNTER_FAIL:
		return set_counter(p, v, id == K_COUNTER_FAIL);
	case K_CHECK_COUNTERS:
	case K_CHECK_PCIE:
	case K_CHECK_NETDEV:
	case K_CHECK_GDR:
	case K_GID_INDEX:
	case K_GDR_LEVEL:
		if (ibp_policy_parse_bool(v, &b))
			return -EINVAL;
		if (id == K_CHECK_COUNTERS)
			p->check_counters = b;
		else if (id == K_CHECK_PCIE)
			p->check_pcie = b;
		else if (id == K_CHECK_NETDEV)
			p->check_netdev = b;
		else if (id == K_CHECK_GDR)
			p->check_gdr = b;
		else if (id == K_GID_INDEX)
			p->set_gid_index = b;
		else
			p->set_gdr_level = b;
		return 0;
	case K_MIN_MTU:
		if (parse_uint_range(v, 0, 65536, &u))
			return -EINVAL;
		p->min_mtu = (int64_t)u;
		return 0;
	case K_MIN_MEMLOCK:
		return parse_memlock(v, &p->min_memlock_kb);
	case K_NCCL_HCA:
		if (!strcmp(v, "node"))
			p->nccl_hca_per_task = false;
		else if (!strcmp(v, "task"))
			p->nccl_hca_per_task = true;
		else
			return -EINVAL;
		return 0;
	case K_OMPI_PML:
		if (!strcmp(v, "ucx"))
			p->ompi_ucx = true;
		else if (!strcmp(v, "none"))
			p->ompi_ucx = false;
		else
			return -EINVAL;
		return 0;
	case K_SOCKET_IFNAME:
		if (*v && !name_ok(v, sizeof(p->socket_ifname)))
			return -EINVAL;
		snprintf(p->socket_ifname, sizeof(p->socket_ifname), "%s", v);
		return 0;
	case K_TEST_TIMEOUT:
		if (parse_double_range(v, 0, 600, &d) || d <= 0)
			return -EINVAL;
		p->test_timeout_s = d;
		return 0;
	case K_TEST_MIN_BW:
		if (parse_double_range(v, 0, 1, &d))
			return -EINVAL;
		p->test_min_bw = d;
		return 0;
	case K_TEST_MAX_LAT:
		if (parse_uint_range(v, 1, 10000000, &u))
			return -EINVAL;
		p->test_max_lat_us = (unsigned)u;
		return 0;
	case K_TEST_PORTS: {
		const char *dash = strchr(v, '-');
		char a[8];
		uint64_t lo, hi;
		if (!dash || dash == v || (size_t)(dash - v) >= sizeof(a))
			return -EINVAL;
		memcpy(a, v, (size_t)(dash - v));
		a[dash - v] = '\0';
		if (parse_uint_range(a, 1, 65535, &lo) ||
		    parse_uint_range(dash + 1, 1, 65535, &hi) || lo > hi)
			return -EINVAL;
		p->test_port_lo = (unsigned)lo;
		p->test_port_hi = (unsigned)hi;
		return 0;
	}
	case K_TEST_PAIRING:
		if (!strcmp(v, "rail"))
			p->test_pairing_any = false;
		else if (!strcmp(v, "any"))
			p->test_pairing_any = true;
		else
			return -EINVAL;
		return 0;
	case K_TEST_TRANSPORT:
		if (strcmp(v, "verbs") != 0 && strcmp(v, "socket") != 0)
			return -EINVAL;
		snprintf(p->test_transport, sizeof(p->test_transport), "%s", v);
		return 0;
	case K_LINK_WATCH:
		return ibp_policy_parse_bool(v, &p->link_watch) ? -EINVAL : 0;
	case K_XMIT_WAIT_TICK:
		if (parse_double_range(v, 0, 100000, &d) || d <= 0)
			return -EINVAL;
		p->xmit_wait_tick_ns = d;
		return 0;
	case K_WATCH_INTERVAL:
		if (parse_double_range(v, 0, 3600, &d) || (d > 0 && d < 0.05))
			return -EINVAL;
		p->watch_interval_s = d;
		return 0;
	case K_WATCH_FLAP:
		if (parse_double_range(v, 0, 600, &d))
			return -EINVAL;
		p->watch_flap_s = d;
		return 0;
	case K_CONSISTENCY:
		return set_consistency(p, v);
	}
	return -EINVAL;
}

int ibp_policy_set(struct ibp_policy *p, const char *key, const char *value, char *err,
		   size_t errlen)
{
	if (!key || !value)
		return bad(err, errlen, key ? key : "", value ? value : "", "a key and a value");
	int k = find_key(key);
	if (k < 0) {
		char q[80];
		quote(q, sizeof(q), key);
		if (err && errlen)
			snprintf(err, errlen, "unknown key '%s'", q);
		return -ENOENT;
	}
	/* work on a copy so a bad value leaves P untouched */
	struct ibp_policy tmp = *p;
	int rc = apply(&tmp, keys[k].id, value);
	if (rc == -ENOSPC)
		return bad(err, errlen, key, value,
			   "at most 32 counters in counter_warn/counter_fail");
	if (rc)
		return bad(err, errlen, key, value, keys[k].expect);
	*p = tmp;
	return 0;
}

int ibp_policy_set_pair(struct ibp_policy *p, const char *pair, char *err, size_t errlen)
{
	char key[64];
	const char *eq = pair ? strchr(pair, '=') : NULL;

	if (!eq || eq == pair) {
		char q[80];
		quote(q, sizeof(q), pair ? pair : "");
		if (err && errlen)
			snprintf(err, errlen, "bad setting '%s': expected KEY=VALUE", q);
		return -EINVAL;
	}
	if ((size_t)(eq - pair) >= sizeof(key)) {
		char q[80];
		quote(q, sizeof(q), pair);
		if (err && errlen)
			snprintf(err, errlen, "unknown key '%s'", q);
		return -ENOENT;
	}
	memcpy(key, pair, (size_t)(eq - pair));
	key[eq - pair] = '\0';
	return ibp_policy_set(p, key, eq + 1, err, errlen);
}

const struct ibp_counter_limit *ibp_policy_counter_limit(const struct ibp_policy *p,
							 const char *name)
{
	for (size_t i = 0; i < p->n_counter_limits; i++)
		if (!strcmp(p->counter_limits[i].name, name))
			return &p->counter_limits[i];
	return NULL;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

int ibp_policy_parse_text(struct ibp_policy *p, const char *text, size_t len, const char *name,
			  ibp_policy_other_fn other, void *arg, char *err, size_t errlen)
{
	char *line, msg[512];
	size_t pos = 0;
	unsigned lineno = 0;
	const char *src = name ? name : "config";
	int rc = 0;

	line = malloc(IBP_POLICY_LINE_MAX);
	if (!line)
		return ibp_errf(-ENOMEM, err, errlen, "%s: out of memory", src);
	while (pos < len && !rc) {
		size_t end = pos;
		while (end < len && text[end] != '\n')
			end++;
		lineno++;
		size_t n = end - pos;
		if (n >= IBP_POLICY_LINE_MAX) {
			rc = ibp_errf(-E2BIG, err, errlen, "%s:%u: line longer than %d bytes", src,
				      lineno, IBP_POLICY_LINE_MAX - 1);
			break;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		if (memchr(line, '\0', n)) {
			rc = ibp_errf(-EINVAL, err, errlen, "%s:%u: NUL byte in line", src, lineno);
			break;
		}
		/* a comment starts at '#' at the line's start or after whitespace */
		for (char *h = line; (h = strchr(h, '#')); h++)
			if (h == line || h[-1] == ' ' || h[-1] == '\t') {
				*h = '\0';
				break;
			}
		char *s = trim(line);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			char q[80];
			quote(q, sizeof(q), s);
			rc = ibp_errf(-EINVAL, err, errlen,
				      "%s:%u: bad line '%s': expected KEY=VALUE", src, lineno, q);
			break;
		}
		*eq = '\0';
		char *key = trim(s), *value = trim(eq + 1);
		msg[0] = '\0';
		if (ibp_policy_has_key(key) || !other)
			rc = ibp_policy_set(p, key, value, msg, sizeof(msg));
		else
			rc = other(arg, key, value, msg, sizeof(msg));
		if (rc)
			ibp_errf(rc, err, errlen, "%s:%u: %s", src, lineno, msg);
	}
	free(line);
	return rc;
}

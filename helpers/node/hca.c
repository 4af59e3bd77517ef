/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hca.c: the node's RDMA devices and ports, read from sysfs under a root.
 *
 * Where devices are found: every entry of sys/class/infiniband (a live
 * kernel has links there, a capture may have plain directories).  When that
 * directory does not exist at all, sys/bus/pci/devices/<addr>/infiniband/<dev>
 * is scanned instead: a tree gathered from the PCI side (as
 * hwloc-gather-topology does) has no class directory.  An existing but empty
 * class directory means "no RDMA device".
 *
 * What is a finding: a file that is missing leaves its field unknown; a file
 * that exists but cannot be read (a directory in its place, a FIFO, EACCES,
 * a value longer than any sane one) is "sysfs_unreadable"; one whose text
 * does not parse is "sysfs_malformed".  Counter files are the exception the
 * kernel makes necessary: some drivers fail reads of counters they cannot
 * fetch (EIO/EINVAL/EOPNOTSUPP on VL15_dropped), so those errors are kept in
 * the counter's read_errno for the health checks and are not findings here.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/devid.h"
#include "ibprep/hca.h"

#define FIX_UNREADABLE                                                                             \
	"check that the driver is loaded and sysfs is readable; the value is treated as unknown"
#define FIX_MALFORMED                                                                              \
	"report it with an 'ibprep snapshot' of the node; the value is treated as unknown"

/* The device's own directory and its PCI function's, opened once (loader_sub). */
enum { SUB_DEVICE, SUB_PCI, N_SUBS };

struct loader {
	const struct ibp_sysfs *fs;
	struct ibp_findings *findings;
	unsigned flags; /* enum ibp_inventory_flags */
	int err;        /* first -ENOMEM while recording findings */
	struct ibp_sysfs sub[N_SUBS];
	char sub_dir[N_SUBS][PATH_MAX]; /* what sub[i] is opened on, "" none */
};

/*
 * Every file of a device is read through a reader opened on the device's
 * directory or its PCI function's (ibp_sysfs_open_dir: confined there as
 * the root's reads are to the root), so that each read resolves only its
 * path below it instead of the whole path through the class directory's
 * link: about half of a read's cost.  Paths stay root-relative for the
 * findings.  A path the directory's reader does not find (it would have
 * left the directory through ".." or a link) is read again from the root.
 */
static void loader_sub(struct loader *L, int i, const char *dir)
{
	ibp_sysfs_close(&L->sub[i]);
	L->sub_dir[i][0] = '\0';
	if (strlen(dir) < sizeof(L->sub_dir[i]) && !ibp_sysfs_open_dir(&L->sub[i], L->fs, dir))
		strcpy(L->sub_dir[i], dir);
}

static void loader_subs_close(struct loader *L)
{
	for (int i = 0; i < N_SUBS; i++) {
		ibp_sysfs_close(&L->sub[i]);
		L->sub_dir[i][0] = '\0';
	}
}

/* The reader for root-relative PATH, and PATH relative to it (*REL). */
static const struct ibp_sysfs *reader_for(const struct loader *L, const char *path,
					  const char **rel)
{
	for (int i = 0; i < N_SUBS; i++) {
		size_t n = strlen(L->sub_dir[i]);
		if (n && !strncmp(path, L->sub_dir[i], n) && path[n] == '/' && path[n + 1]) {
			*rel = path + n + 1;
			return &L->sub[i];
		}
	}
	*rel = path;
	return L->fs;
}

/* Leaving the directory: ENOENT (".." stopped there), ELOOP, EXDEV. */
static bool try_root(int r)
{
	return r == -ENOENT || r == -ELOOP || r == -EXDEV;
}

static int lread(const struct loader *L, const char *path, char *buf, size_t len)
{
	const char *rel;
	const struct ibp_sysfs *fs = reader_for(L, path, &rel);
	int r = ibp_sysfs_read(fs, rel, buf, len);
	if (fs != L->fs && try_root(r))
		r = ibp_sysfs_read(L->fs, path, buf, len);
	return r;
}

static int llist(const struct loader *L, const char *path, char ***names)
{
	const char *rel;
	const struct ibp_sysfs *fs = reader_for(L, path, &rel);
	int r = ibp_sysfs_list(fs, rel, names);
	if (fs != L->fs && try_root(r))
		r = ibp_sysfs_list(L->fs, path, names);
	return r;
}

/* Only what a placement on a known verdict reads (IBP_INVENTORY_PLACEMENT). */
static bool placement_only(const struct loader *L)
{
	return L->flags & IBP_INVENTORY_PLACEMENT;
}

/* What the consistency fingerprint compares: always, unless a placement-only read without it. */
static bool want_fingerprint(const struct loader *L)
{
	return !placement_only(L) || (L->flags & IBP_INVENTORY_FINGERPRINT);
}

/* ---------------------------------------------------------------------- */
/* Parsers                                                                  */

/* S without one trailing newline equals WANT. */
static bool text_is(const char *s, const char *want)
{
	size_t n = strlen(want);
	return !strncmp(s, want, n) && (s[n] == '\0' || (s[n] == '\n' && s[n + 1] == '\0'));
}

/*
 * "N: NAME" as the kernel prints states: a decimal N (at most 3 digits),
 * ": ", then NAME.  Writes N and points *NAME at the name.
 */
static int parse_num_name(const char *s, unsigned *num, const char **name)
{
	unsigned v = 0;
	const char *p = s;
	if (!s)
		return -EINVAL;
	while (*p >= '0' && *p <= '9' && p - s < 3)
		v = v * 10 + (unsigned)(*p++ - '0');
	if (p == s || p[0] != ':' || p[1] != ' ' || p[2] == '\0' || p[2] == '\n')
		return -EINVAL;
	*num = v;
	*name = p + 2;
	return 0;
}

static const char *const port_state_names[] = {"NOP",   "DOWN",   "INIT",
					       "ARMED", "ACTIVE", "ACTIVE_DEFER"};
static const char *const phys_state_names[] = {"NOP",
					       "Sleep",
					       "Polling",
					       "Disabled",
					       "PortConfigurationTraining",
					       "LinkUp",
					       "LinkErrorRecovery",
					       "Phy Test"};
#define N_PORT_STATES (sizeof(port_state_names) / sizeof(port_state_names[0]))
#define N_PHYS_STATES (sizeof(phys_state_names) / sizeof(phys_state_names[0]))

int ibp_parse_port_state(const char *s, enum ibp_port_state *out)
{
	unsigned n;
	const char *name;
	int r = parse_num_name(s, &n, &name);
	if (r < 0)
		return r;
	/* The number decides; the kernel prints "UNKNOWN" past its table. */
	if (n >= N_PORT_STATES)
		return text_is(name, "UNKNOWN") ? -ERANGE : -EINVAL;
	if (!text_is(name, port_state_names[n]))
		return -EINVAL;
	*out = (enum ibp_port_state)n;
	return 0;
}

int ibp_parse_phys_state(const char *s, enum ibp_phys_state *out)
{
	unsigned n;
	const char *name;
	/* kernels before 5.x printed a state past their table as a bare "<unknown>" */
	if (s && text_is(s, "<unknown>"))
		return -ERANGE;
	int r = parse_num_name(s, &n, &name);
	if (r < 0)
		return r;
	if (n >= N_PHYS_STATES)
		return text_is(name, "<unknown>") ? -ERANGE : -EINVAL;
	/* 0 reads "0: <unknown>" on current kernels, "0: NOP" in old ones. */
	if (!text_is(name, phys_state_names[n]) && !(n == 0 && text_is(name, "<unknown>")))
		return -EINVAL;
	*out = (enum ibp_phys_state)n;
	return 0;
}

/* Per-lane rate in tenths of Gb/s, exactly as the kernel's rate_show(). */
static const struct {
	const char *name;
	unsigned tenths;
} lane_speeds[] = {
    {"SDR", 25},  {"DDR", 50},  {"QDR", 100},  {"FDR10", 100}, {"FDR", 140},
    {"EDR", 250}, {"HDR", 500}, {"NDR", 1000}, {"XDR", 2000},
};

/*
 * A decimal with an optional fraction ("400", "2.5", "32.0"): at most 6
 * integer and 4 fraction digits.  The value in units of 1/10000; *END after.
 */
static int parse_decimal(const char *s, uint64_t *tenk, const char **end)
{
	uint64_t ip = 0, fp = 0;
	const char *p = s;
	while (*p >= '0' && *p <= '9' && p - s < 6)
		ip = ip * 10 + (uint64_t)(*p++ - '0');
	if (p == s || (*p >= '0' && *p <= '9'))
		return -EINVAL;
	unsigned scale = 1000;
	if (*p == '.') {
		const char *f = ++p;
		while (*p >= '0' && *p <= '9' && p - f < 4) {
			fp += (uint64_t)(*p++ - '0') * scale;
			scale /= 10;
		}
		if (p == f || (*p >= '0' && *p <= '9'))
			return -EINVAL;
	}
	*tenk = ip * 10000 + fp;
	*end = p;
	return 0;
}

int ibp_parse_rate(const char *s, struct ibp_rate *out)
{
	uint64_t tenk;
	const char *p;
	struct ibp_rate r = {0};

	if (!s || !out)
		return -EINVAL;
	if (parse_decimal(s, &tenk, &p) < 0)
		return -EINVAL;
	if (strncmp(p, " Gb/sec (", 9) != 0)
		return -EINVAL;
	p += 9;
	unsigned w = 0;
	const char *w0 = p;
	while (*p >= '0' && *p <= '9' && p - w0 < 2)
		w = w * 10 + (unsigned)(*p++ - '0');
	if (p == w0 || *p++ != 'X')
		return -EINVAL;
	if (w != 1 && w != 2 && w != 4 && w != 8 && w != 12)
		return -ERANGE;
	unsigned lane = 0;
	if (*p == ')') {
		/* Kernels before 4.x printed SDR as "(4X)". */
		lane = 25;
		strcpy(r.speed, "SDR");
	} else if (*p++ == ' ') {
		for (size_t i = 0; i < sizeof(lane_speeds) / sizeof(lane_speeds[0]); i++) {
			size_t n = strlen(lane_speeds[i].name);
			if (!strncmp(p, lane_speeds[i].name, n) && p[n] == ')') {
				lane = lane_speeds[i].tenths;
				strcpy(r.speed, lane_speeds[i].name);
				p += n;
				break;
			}
		}
		if (!lane)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (!text_is(p, ")"))
		return -EINVAL;
	/* The kernel derives the Gb/s from lanes x speed: a mismatch is not its output. */
	uint64_t tenths = (uint64_t)lane * w;
	uint64_t want = (tenths / 10) * 10000 + (tenths % 10 ? 5000 : 0);
	if (tenk != want)
		return -EINVAL;
	r.known = true;
	r.gbps = (double)tenk / 10000.0;
	r.width = w;
	*out = r;
	return 0;
}

int ibp_parse_link_layer(const char *s, enum ibp_link_layer *out)
{
	if (!s || !out)
		return -EINVAL;
	if (text_is(s, "InfiniBand"))
		*out = IBP_LL_IB;
	else if (text_is(s, "Ethernet"))
		*out = IBP_LL_ETH;
	else if (text_is(s, "Unknown"))
		*out = IBP_LL_UNKNOWN;
	else
		return -EINVAL;
	return 0;
}

int ibp_parse_gid_type(const char *s, enum ibp_gid_type *out)
{
	if (!s || !out)
		return -EINVAL;
	if (text_is(s, "IB/RoCE v1"))
		*out = IBP_GID_TYPE_IB_ROCE_V1;
	else if (text_is(s, "RoCE v2"))
		*out = IBP_GID_TYPE_ROCE_V2;
	else
		return -EINVAL;
	return 0;
}

int ibp_parse_link_speed(const char *s, double *gts)
{
	uint64_t tenk;
	const char *p;
	if (!s || !gts)
		return -EINVAL;
	/* pci_speed_string(): "Unknown" (old kernels: "Unknown speed"). */
	if (text_is(s, "Unknown") || text_is(s, "Unknown speed")) {
		*gts = 0;
		return 0;
	}
	if (parse_decimal(s, &tenk, &p) < 0)
		return -EINVAL;
	if (strncmp(p, " GT/s", 5) != 0)
		return -EINVAL;
	p += 5;
	if (!text_is(p, "") && !text_is(p, " PCIe"))
		return -EINVAL;
	if (tenk == 0 || tenk > 1024 * 10000)
		return -ERANGE;
	*gts = (double)tenk / 10000.0;
	return 0;
}

const char *ibp_port_state_name(enum ibp_port_state s)
{
	if ((int)s >= 0 && (size_t)s < N_PORT_STATES)
		return port_state_names[s];
	return "unknown";
}

const char *ibp_phys_state_name(enum ibp_phys_state s)
{
	if ((int)s >= 0 && (size_t)s < N_PHYS_STATES)
		return phys_state_names[s];
	return "unknown";
}

const char *ibp_link_layer_name(enum ibp_link_layer l)
{
	switch (l) {
	case IBP_LL_IB:
		return "InfiniBand";
	case IBP_LL_ETH:
		return "Ethernet";
	default:
		return "unknown";
	}
}

const char *ibp_pcie_gen_name(double gts)
{
	static const struct {
		double gts;
		const char *name;
	} gens[] = {{2.5, "Gen1"}, {5, "Gen2"},  {8, "Gen3"},  {16, "Gen4"},
		    {32, "Gen5"},  {64, "Gen6"}, {128, "Gen7"}};
	for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++)
		if (gts > gens[i].gts - 0.05 && gts < gens[i].gts + 0.05)
			return gens[i].name;
	return "unknown";
}

/* "fe80:0000:...": eight groups of four hex digits; 0, or -EINVAL. */
static int parse_gid(const char *s, uint16_t g[8])
{
	const char *p = s;
	for (int i = 0; i < 8; i++) {
		unsigned v = 0;
		for (int k = 0; k < 4; k++, p++) {
			unsigned d;
			if (*p >= '0' && *p <= '9')
				d = (unsigned)(*p - '0');
			else if (*p >= 'a' && *p <= 'f')
				d = (unsigned)(*p - 'a' + 10);
			else if (*p >= 'A' && *p <= 'F')
				d = (unsigned)(*p - 'A' + 10);
			else
				return -EINVAL;
			v = v * 16 + d;
		}
		g[i] = (uint16_t)v;
		if (i < 7 && *p++ != ':')
			return -EINVAL;
	}
	return text_is(p, "") ? 0 : -EINVAL;
}

/* "0000:17:00.0" (domain may be longer: VMD uses 10000:). */
static bool is_pci_addr(const char *s)
{
	size_t n = strlen(s), i = 0;
	if (n < 12 || n > 15)
		return false;
	for (; i < n - 8; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return false;
	const char *t = s + i; /* ":BB:DD.F" */
	return t[0] == ':' && strchr("0123456789abcdef", t[1]) &&
	       strchr("0123456789abcdef", t[2]) && t[3] == ':' &&
	       strchr("0123456789abcdef", t[4]) && strchr("0123456789abcdef", t[5]) &&
	       t[6] == '.' && t[7] >= '0' && t[7] <= '7' && t[1] && t[2] && t[4] && t[5];
}

/* printf into a path buffer; a path that does not fit is -ENAMETOOLONG ("" in BUF). */
__attribute__((format(printf, 3, 4))) static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Copies SRC into the field DST, or leaves "" when it does not fit. */
static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);
	if (n >= len)
		n = 0;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Reading with findings                                                    */

/* Printable copy of a value for a message: control bytes become '?'. */
static void printable(const char *s, char *out, size_t len)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[i] = '\0';
	if (s[i] && len > 4)
		strcpy(out + len - 4, "...");
}

__attribute__((format(printf, 7, 8))) static void add_finding(struct loader *L, const char *code,
							      const char *dev, unsigned port,
							      const char *expected, const char *fix,
							      const char *fmt, ...)
{
	char obs[IBP_TEXT_MAX + 4];
	va_list ap;
	if (!L->findings)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(obs, sizeof(obs), fmt, ap);
	va_end(ap);
	if (n < 0)
		obs[0] = '\0';
	int r = ibp_findings_addf(L->findings, code, IBP_SEV_WARN, IBP_CLASS_NODE, dev, (int)port,
				  expected, fix, "%s", obs);
	if (r < 0 && !L->err)
		L->err = r;
}

static void unreadable(struct loader *L, const char *dev, unsigned port, const char *path, int err)
{
	char e[64];
	if (err == -EFBIG)
		snprintf(e, sizeof(e), "value too long");
	else
		snprintf(e, sizeof(e), "%s",
			 strerrordesc_np(-err) ? strerrordesc_np(-err) : "error");
	for (char *c = e; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	add_finding(L, "sysfs_unreadable", dev, port, "a readable file", FIX_UNREADABLE,
		    "cannot read %s: %s", path, e);
}

static void malformed(struct loader *L, const char *dev, unsigned port, const char *path,
		      const char *value, const char *expected)
{
	char v[64];
	printable(value, v, sizeof(v));
	add_finding(L, "sysfs_malformed", dev, port, expected, FIX_MALFORMED, "%s reads '%s'", path,
		    v);
}

/*
 * Reads DIR/NAME.  Length >= 0; -ENOENT when missing (unknown, silently);
 * any other error is reported as sysfs_unreadable and returned.
 */
static int rd(struct loader *L, const char *dev, unsigned port, const char *dir, const char *name,
	      char *buf, size_t len, char *path, size_t plen)
{
	int n = snprintf(path, plen, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= plen) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	int r = lread(L, path, buf, len);
	if (r < 0 && r != -ENOENT && r != -ENOTDIR)
		unreadable(L, dev, port, path, r);
	return r;
}

/* A string attribute into a fixed field ("" unknown). */
static void rd_str(struct loader *L, const char *dev, const char *dir, const char *name,
		   char *field, size_t len)
{
	char path[PATH_MAX];
	if (rd(L, dev, 0, dir, name, field, len, path, sizeof(path)) < 0)
		field[0] = '\0';
}

/*
 * A descriptive string (board_id, hca_type, node_desc, fw_ver): nothing
 * judges its length, so a long one is kept up to the field and cut quietly
 * (*CUT set), never a finding.  sysfs values are at most a page.
 */
static void rd_desc(struct loader *L, const char *dev, const char *dir, const char *name,
		    char *field, size_t len, bool *cut)
{
	char path[PATH_MAX], big[4097];
	int r = rd(L, dev, 0, dir, name, big, sizeof(big), path, sizeof(path));
	field[0] = '\0';
	if (r < 0)
		return;
	if (strlen(big) >= len)
		*cut = true;
	snprintf(field, len, "%.*s", (int)(len - 1), big);
}

/* A number attribute: 0 ok; <0 unknown (missing, unreadable or malformed). */
static int rd_s64(struct loader *L, const char *dev, unsigned port, const char *dir,
		  const char *name, int64_t lo, int64_t hi, int64_t *out, const char *expected)
{
	char path[PATH_MAX], buf[64];
	int r = rd(L, dev, port, dir, name, buf, sizeof(buf), path, sizeof(path));
	if (r < 0)
		return r;
	r = ibp_parse_s64(buf, out);
	if (r == 0 && (*out < lo || *out > hi))
		r = -ERANGE;
	if (r < 0)
		malformed(L, dev, port, path, buf, expected);
	return r;
}

/* ---------------------------------------------------------------------- */
/* Inventory                                                                */

void ibp_inventory_init(struct ibp_inventory *inv)
{
	memset(inv, 0, sizeof(*inv));
}

static void port_release(struct ibp_port *p)
{
	free(p->gids);
	p->gids = NULL;
	p->n_gids = 0;
	free(p->counters);
	p->counters = NULL;
	p->n_counters = 0;
}

static void hca_release(struct ibp_hca *h)
{
	for (size_t i = 0; i < h->n_ports; i++)
		port_release(&h->ports[i]);
	free(h->ports);
	h->ports = NULL;
	h->n_ports = 0;
	free(h->netdevs);
	h->netdevs = NULL;
	h->n_netdevs = 0;
}

void ibp_inventory_release(struct ibp_inventory *inv)
{
	if (!inv)
		return;
	for (size_t i = 0; i < inv->n_hcas; i++)
		hca_release(&inv->hcas[i]);
	free(inv->hcas);
	inv->hcas = NULL;
	inv->n_hcas = 0;
}

/*
 * IB spec PortCounters widths (IBTA vol. 1, 16.1.3.5).  Data and packet
 * counters are 32 bits there; the kernel shows the 64-bit PortCountersExt
 * values instead when the HCA has them, which it signals by exposing the
 * unicast/multicast counters.
 */
static const struct {
	const char *name;
	unsigned bits;
} counter_widths[] = {
    {"symbol_error", 16},
    {"link_error_recovery", 8},
    {"link_downed", 8},
    {"port_rcv_errors", 16},
    {"port_rcv_remote_physical_errors", 16},
    {"port_rcv_switch_relay_errors", 16},
    {"port_xmit_discards", 16},
    {"port_xmit_constraint_errors", 8},
    {"port_rcv_constraint_errors", 8},
    {"local_link_integrity_errors", 4},
    {"excessive_buffer_overrun_errors", 4},
    {"VL15_dropped", 16},
    {"port_xmit_wait", 32},
    {"port_xmit_data", 0},
    {"port_rcv_data", 0},
    {"port_xmit_packets", 0},
    {"port_rcv_packets", 0},
    {"unicast_xmit_packets", 64},
    {"unicast_rcv_packets", 64},
    {"multicast_xmit_packets", 64},
    {"multicast_rcv_packets", 64},
};

static unsigned counter_bits(const char *name, bool extended)
{
	for (size_t i = 0; i < sizeof(counter_widths) / sizeof(counter_widths[0]); i++)
		if (!strcmp(name, counter_widths[i].name))
			return counter_widths[i].bits ? counter_widths[i].bits
						      : (extended ? 64 : 32);
	return 0;
}

/* Errors a driver returns for a counter it cannot fetch: data, not findings. */
static bool driver_read_error(int err)
{
	return err == -EIO || err == -EINVAL || err == -EOPNOTSUPP || err == -ENODATA ||
	       err == -ENOSYS || err == -EAGAIN;
}

/*
 * Reads DIR/NAME into the next entry of P's counters (room for it is the
 * caller's): BITS wide (0: no saturation), HW from hw_counters/; a missing
 * file is a finding unless MISSING_OK.  The read's result: >= 0, or the
 * -errno of the read or the parse (kept in read_errno).
 */
static int read_counter(struct loader *L, const char *dev, struct ibp_port *p, const char *dir,
			const char *name, bool hw, unsigned bits, bool missing_ok)
{
	char path[PATH_MAX], buf[64];
	struct ibp_counter *c = &p->counters[p->n_counters];
	memset(c, 0, sizeof(*c));
	copy_str(c->name, sizeof(c->name), name);
	c->hw = hw;
	c->bits = bits;
	pathf(path, sizeof(path), "%s/%s", dir, name);
	int r = lread(L, path, buf, sizeof(buf));
	int got = r;
	if (r >= 0 && text_is(buf, "N/A (no PMA)")) {
		/* the kernel's word for a device without a Performance
		 * Management Agent (iWARP, some VFs): no counter, not an error */
		r = -ENODATA;
		p->counters_na = true;
	} else if (r >= 0) {
		r = ibp_parse_u64(buf, &c->value);
		if (r < 0)
			malformed(L, dev, p->num, path, buf, "a decimal number");
	} else if (!(missing_ok && r == -ENOENT) && !driver_read_error(r)) {
		unreadable(L, dev, p->num, path, r);
	}
	if (r < 0) {
		c->read_errno = r;
		c->value = 0;
	} else if (c->bits && c->bits < 64) {
		c->saturated = c->value == (UINT64_C(1) << c->bits) - 1;
	} else if (c->bits == 64) {
		c->saturated = c->value == UINT64_MAX;
	}
	p->n_counters++;
	return got < 0 ? got : r;
}

static int load_counters(struct loader *L, const char *dev, struct ibp_port *p, const char *pdir,
			 const char *sub, bool hw)
{
	char dir[PATH_MAX];
	char **names = NULL;
	pathf(dir, sizeof(dir), "%s/%s", pdir, sub);
	int n = llist(L, dir, &names);
	if (n == -ENOENT || n == -ENOTDIR)
		return 0;
	if (n < 0) {
		if (n == -ENOMEM)
			return n;
		unreadable(L, dev, p->num, dir, n);
		return 0;
	}
	bool extended = false;
	for (int i = 0; i < n && !hw; i++)
		if (!strcmp(names[i], "unicast_xmit_packets"))
			extended = true;

	struct ibp_counter *v = realloc(p->counters, (p->n_counters + (size_t)n + 1) * sizeof(*v));
	if (!v) {
		ibp_sysfs_names_free(names);
		return -ENOMEM;
	}
	p->counters = v;
	for (int i = 0; i < n; i++) {
		if (strlen(names[i]) >= sizeof(p->counters[0].name))
			continue; /* not a counter anyone knows */
		read_counter(L, dev, p, dir, names[i], hw,
			     hw ? 0 : counter_bits(names[i], extended), false);
	}
	ibp_sysfs_names_free(names);
	return 0;
}

static const char *const link_counters[IBP_N_LINK_COUNTERS] = {
    "link_downed",     "link_error_recovery", "symbol_error",
    "port_rcv_errors", "port_xmit_discards",  "port_xmit_wait",
};

const char *ibp_link_counter_name(unsigned i)
{
	return i < IBP_N_LINK_COUNTERS ? link_counters[i] : "?";
}

/*
 * The link counters a step's link watch compares (linkwatch.h), by name: a
 * missing one is left out, as ibp_linkwatch_read() leaves it unknown.
 */
static int load_link_counters(struct loader *L, const char *dev, struct ibp_port *p,
			      const char *pdir)
{
	char dir[PATH_MAX];
	struct ibp_counter *v =
	    realloc(p->counters, (p->n_counters + IBP_N_LINK_COUNTERS) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->counters = v;
	pathf(dir, sizeof(dir), "%s/counters", pdir);
	for (unsigned c = 0; c < IBP_N_LINK_COUNTERS; c++) {
		const char *name = link_counters[c];
		if (read_counter(L, dev, p, dir, name, false, counter_bits(name, false), true) ==
		    -ENOENT)
			p->n_counters--; /* not there: unknown */
	}
	return 0;
}

static int load_gids(struct loader *L, const char *dev, struct ibp_port *p, const char *pdir)
{
	char dir[PATH_MAX], path[PATH_MAX], buf[64];
	char **names = NULL;
	pathf(dir, sizeof(dir), "%s/gids", pdir);
	int n = llist(L, dir, &names);
	if (n == -ENOENT || n == -ENOTDIR)
		return 0;
	if (n < 0) {
		if (n == -ENOMEM)
			return n;
		unreadable(L, dev, p->num, dir, n);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		uint64_t idx;
		uint16_t g[8];
		if (ibp_parse_u64(names[i], &idx) < 0 || idx > 65535)
			continue; /* not a GID entry */
		int r = rd(L, dev, p->num, dir, names[i], buf, sizeof(buf), path, sizeof(path));
		if (r < 0)
			continue;
		if (parse_gid(buf, g) < 0) {
			malformed(L, dev, p->num, path, buf,
				  "eight groups of four hex digits (fe80:0000:...)");
			continue;
		}
		/* All zeros is an empty slot; so is a prefix with a zero interface ID
		 * (mlx4 shows unused IB slots as "fe80:0000:...:0000"). */
		if (!g[4] && !g[5] && !g[6] && !g[7])
			continue;

		struct ibp_gid *v = realloc(p->gids, (p->n_gids + 1) * sizeof(*v));
		if (!v) {
			ibp_sysfs_names_free(names);
			return -ENOMEM;
		}
		p->gids = v;
		struct ibp_gid *gid = &p->gids[p->n_gids++];
		memset(gid, 0, sizeof(*gid));
		gid->index = (unsigned)idx;
		copy_str(gid->addr, sizeof(gid->addr), buf);
		gid->ipv4_mapped = !g[0] && !g[1] && !g[2] && !g[3] && !g[4] && g[5] == 0xffff;

		/* Empty entries read EINVAL (ENODATA on newer kernels): unknown. */
		pathf(path, sizeof(path), "%s/gid_attrs/types/%s", pdir, names[i]);
		r = lread(L, path, buf, sizeof(buf));
		if (r >= 0) {
			if (ibp_parse_gid_type(buf, &gid->type) < 0)
				malformed(L, dev, p->num, path, buf, "'IB/RoCE v1' or 'RoCE v2'");
		} else if (r != -ENOENT && r != -EINVAL && r != -ENODATA) {
			unreadable(L, dev, p->num, path, r);
		}
		pathf(path, sizeof(path), "%s/gid_attrs/ndevs/%s", pdir, names[i]);
		r = lread(L, path, gid->ndev, sizeof(gid->ndev));
		if (r < 0) {
			gid->ndev[0] = '\0';
			if (r != -ENOENT && r != -EINVAL && r != -ENODATA)
				unreadable(L, dev, p->num, path, r);
		} else if (strchr(gid->ndev, '/') || strchr(gid->ndev, ' ')) {
			malformed(L, dev, p->num, path, gid->ndev, "a network interface name");
			gid->ndev[0] = '\0';
		}
	}
	ibp_sysfs_names_free(names);
	return 0;
}

static int load_port(struct loader *L, struct ibp_hca *h, struct ibp_port *p, const char *base)
{
	char pdir[PATH_MAX], path[PATH_MAX], buf[128];
	const char *dev = h->name;
	pathf(pdir, sizeof(pdir), "%s/ports/%u", base, p->num);

	p->state = IBP_PORT_STATE_UNKNOWN;
	p->phys_state = IBP_PHYS_UNKNOWN;
	p->lid = p->sm_lid = p->lid_mask_count = -1;

	/*
	 * Counters before the state, as ibp_linkwatch_read(): a link that goes
	 * down between the reads shows DOWN with the old link_downed, never
	 * ACTIVE with a new one (a step's first link read may be this one).
	 */
	int e = 0;
	if (!(L->flags & (IBP_INVENTORY_NO_COUNTERS | IBP_INVENTORY_PLACEMENT))) {
		e = load_counters(L, dev, p, pdir, "counters", false);
		if (!e)
			e = load_counters(L, dev, p, pdir, "hw_counters", true);
	} else if (L->flags & IBP_INVENTORY_LINK_COUNTERS) {
		e = load_link_counters(L, dev, p, pdir);
	}
	if (e)
		return e;

	/* A state past the kernel's table ("7: UNKNOWN", OPA's "9: <unknown>" for
	 * Offline, a bare "<unknown>") is the kernel saying unknown: no finding. */
	int ps;
	if (rd(L, dev, p->num, pdir, "state", buf, sizeof(buf), path, sizeof(path)) >= 0 &&
	    (ps = ibp_parse_port_state(buf, &p->state)) < 0) {
		p->state = IBP_PORT_STATE_UNKNOWN;
		if (ps != -ERANGE)
			malformed(L, dev, p->num, path, buf,
				  "'N: NAME' with the kernel's name for N");
	}
	if (rd(L, dev, p->num, pdir, "phys_state", buf, sizeof(buf), path, sizeof(path)) >= 0 &&
	    (ps = ibp_parse_phys_state(buf, &p->phys_state)) < 0) {
		p->phys_state = IBP_PHYS_UNKNOWN;
		if (ps != -ERANGE)
			malformed(L, dev, p->num, path, buf,
				  "'N: NAME' with the kernel's name for N");
	}
	/* rate reads EINVAL while the width is invalid (a port going down): unknown. */
	pathf(path, sizeof(path), "%s/rate", pdir);
	int r = lread(L, path, buf, sizeof(buf));
	if (r >= 0) {
		if (ibp_parse_rate(buf, &p->rate) < 0) {
			memset(&p->rate, 0, sizeof(p->rate));
			malformed(L, dev, p->num, path, buf, "'400 Gb/sec (4X NDR)' style rate");
		}
	} else if (r != -ENOENT && r != -EINVAL) {
		unreadable(L, dev, p->num, path, r);
	}
	if (rd(L, dev, p->num, pdir, "link_layer", buf, sizeof(buf), path, sizeof(path)) >= 0 &&
	    ibp_parse_link_layer(buf, &p->link_layer) < 0) {
		p->link_layer = IBP_LL_UNKNOWN;
		malformed(L, dev, p->num, path, buf, "'InfiniBand' or 'Ethernet'");
	}
	if (rd_s64(L, dev, p->num, pdir, "lid", 0, 0xffff, &p->lid, "a 16-bit hex LID (0x1a)") < 0)
		p->lid = -1;
	if (placement_only(L)) {
		/* GIDs give a RoCE port its GID index and netdev; an IB port uses neither */
		return p->link_layer == IBP_LL_IB ? 0 : load_gids(L, dev, p, pdir);
	}
	if (rd_s64(L, dev, p->num, pdir, "sm_lid", 0, 0xffff, &p->sm_lid,
		   "a 16-bit hex LID (0x1)") < 0)
		p->sm_lid = -1;
	if (rd_s64(L, dev, p->num, pdir, "lid_mask_count", 0, 7, &p->lid_mask_count,
		   "a number from 0 to 7") < 0)
		p->lid_mask_count = -1;
	return load_gids(L, dev, p, pdir);
}

/* Reads the link files of a PCI function at DIR ("" fields stay 0). */
static void load_pcie_link(struct loader *L, const char *dev, const char *dir,
			   struct ibp_pcie_link *l)
{
	static const char *const files[] = {"current_link_speed", "max_link_speed"};
	char path[PATH_MAX], buf[64];
	double *gts[] = {&l->cur_gts, &l->max_gts};
	for (int i = 0; i < (placement_only(L) ? 1 : 2); i++) {
		if (rd(L, dev, 0, dir, files[i], buf, sizeof(buf), path, sizeof(path)) >= 0 &&
		    ibp_parse_link_speed(buf, gts[i]) < 0) {
			*gts[i] = 0;
			malformed(L, dev, 0, path, buf, "'32.0 GT/s PCIe' or 'Unknown'");
		}
	}
	int64_t w;
	if (rd_s64(L, dev, 0, dir, "current_link_width", 0, 32, &w, "a lane count (0 to 32)") == 0)
		l->cur_width = (unsigned)w;
	if (placement_only(L))
		return;
	if (rd_s64(L, dev, 0, dir, "max_link_width", 0, 32, &w, "a lane count (0 to 32)") == 0)
		l->max_width = (unsigned)w;
}

static int add_netdev(struct loader *L, struct ibp_hca *h, const char *dir, const char *name)
{
	if (strlen(name) >= IF_NAMESIZE)
		return 0;
	struct ibp_netdev *v = realloc(h->netdevs, (h->n_netdevs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	h->netdevs = v;
	struct ibp_netdev *nd = &h->netdevs[h->n_netdevs++];
	memset(nd, 0, sizeof(*nd));
	strcpy(nd->name, name);
	nd->mtu = -1;
	nd->dev_port = -1;
	char ndir[PATH_MAX];
	pathf(ndir, sizeof(ndir), "%s/%s", dir, name);
	if (!placement_only(L))
		rd_str(L, h->name, ndir, "operstate", nd->operstate, sizeof(nd->operstate));
	int64_t v64;
	if (want_fingerprint(L) &&
	    rd_s64(L, h->name, 0, ndir, "mtu", 0, INT32_MAX, &v64, "an MTU in bytes") == 0)
		nd->mtu = v64;
	if (rd_s64(L, h->name, 0, ndir, "dev_port", 0, 255, &v64, "a port index (0-based)") == 0)
		nd->dev_port = (int)v64;
	return 0;
}

static const struct ibp_netdev *find_netdev(const struct ibp_hca *h, const char *name)
{
	for (size_t i = 0; i < h->n_netdevs; i++)
		if (!strcmp(h->netdevs[i].name, name))
			return &h->netdevs[i];
	return NULL;
}

/* Gives each port its netdev: RoCE by the GIDs' netdev, IPoIB by dev_port. */
static int map_port_netdevs(struct loader *L, struct ibp_hca *h)
{
	for (size_t i = 0; i < h->n_ports; i++) {
		struct ibp_port *p = &h->ports[i];
		const char *ndev = NULL;
		for (size_t k = 0; k < p->n_gids && !ndev; k++)
			if (p->gids[k].ndev[0])
				ndev = p->gids[k].ndev;
		if (ndev) {
			/* A bond's netdev is not under the PCI function: read it from class/net. */
			if (!find_netdev(h, ndev)) {
				char dir[PATH_MAX];
				pathf(dir, sizeof(dir), "sys/class/net/%s", ndev);
				char probe[8];
				int r = ibp_sysfs_readf(L->fs, probe, sizeof(probe), "%s/operstate",
							dir);
				if (r >= 0 || (r != -ENOENT && r != -ENOTDIR)) {
					r = add_netdev(L, h, "sys/class/net", ndev);
					if (r < 0)
						return r;
				}
			}
			copy_str(p->netdev, sizeof(p->netdev), ndev);
			continue;
		}
		for (size_t k = 0; k < h->n_netdevs; k++)
			if (h->netdevs[k].dev_port >= 0 &&
			    (unsigned)h->netdevs[k].dev_port + 1 == p->num) {
				copy_str(p->netdev, sizeof(p->netdev), h->netdevs[k].name);
				break;
			}
	}
	return 0;
}

/* The last component of PATH, and PATH without it (in place). */
static char *split_last(char *path)
{
	char *s = strrchr(path, '/');
	if (!s)
		return NULL;
	*s = '\0';
	return s + 1;
}

/* Vendor, device and bound driver of the PCI function: what devid.h identifies by. */
static void load_pci_ids(struct loader *L, struct ibp_hca *h, const char *pci_dir)
{
	char buf[PATH_MAX];
	uint64_t v;
	if (!placement_only(L) && ibp_sysfs_readf(L->fs, buf, 16, "%s/vendor", pci_dir) >= 0 &&
	    !ibp_parse_u64(buf, &v) && v <= 0xffff)
		h->vendor = (unsigned)v;
	if (!placement_only(L) && ibp_sysfs_readf(L->fs, buf, 16, "%s/device", pci_dir) >= 0 &&
	    !ibp_parse_u64(buf, &v) && v <= 0xffff)
		h->device = (unsigned)v;
	char link[PATH_MAX];
	pathf(link, sizeof(link), "%s/driver", pci_dir);
	if (ibp_sysfs_realpath(L->fs, link, buf, sizeof(buf)) >= 0) {
		const char *d = strrchr(buf, '/');
		copy_str(h->driver, sizeof(h->driver), d ? d + 1 : buf);
	}
}

static int load_hca_files(struct loader *L, struct ibp_hca *h, const char *base)
{
	char pci_dir[PATH_MAX], buf[PATH_MAX];
	const char *dev = h->name;
	h->numa = -1;

	if (!placement_only(L))
		rd_str(L, dev, base, "node_guid", h->node_guid, sizeof(h->node_guid));
	if (want_fingerprint(L))
		rd_desc(L, dev, base, "fw_ver", h->fw_ver, sizeof(h->fw_ver), &h->desc_cut);
	if (!placement_only(L))
		rd_desc(L, dev, base, "hca_type", h->hca_type, sizeof(h->hca_type), &h->desc_cut);
	if (want_fingerprint(L))
		rd_desc(L, dev, base, "board_id", h->board_id, sizeof(h->board_id), &h->desc_cut);
	if (!placement_only(L))
		rd_desc(L, dev, base, "node_desc", h->node_desc, sizeof(h->node_desc),
			&h->desc_cut);
	h->node_type = -1;
	{
		char nt[64], ntpath[PATH_MAX];
		if (rd(L, dev, 0, base, "node_type", nt, sizeof(nt), ntpath, sizeof(ntpath)) >= 0 &&
		    ibp_parse_node_type(nt, &h->node_type) < 0) {
			h->node_type = -1;
			malformed(L, dev, 0, ntpath, nt, "'N: NAME' (1: CA, 4: RNIC)");
		}
	}

	/*
	 * The PCI function: where the "device" link leads, or, in a tree
	 * without that link, the directory holding infiniband/<dev>.
	 */
	pci_dir[0] = '\0';
	pathf(buf, sizeof(buf), "%s/device", base);
	int r = ibp_sysfs_realpath(L->fs, buf, pci_dir, sizeof(pci_dir));
	if (r < 0) {
		pci_dir[0] = '\0';
		if (ibp_sysfs_realpath(L->fs, base, buf, sizeof(buf)) >= 0) {
			char *leaf = split_last(buf);
			char *ibdir = leaf ? split_last(buf) : NULL;
			if (ibdir && !strcmp(ibdir, "infiniband"))
				copy_str(pci_dir, sizeof(pci_dir), buf);
		}
	}
	if (pci_dir[0]) {
		copy_str(buf, sizeof(buf), pci_dir);
		const char *last = strrchr(buf, '/');
		last = last ? last + 1 : buf;
		if (is_pci_addr(last))
			copy_str(h->pci, sizeof(h->pci), last);
	}
	if (h->pci[0])
		loader_sub(L, SUB_PCI, pci_dir);
	if (h->pci[0]) {
		int64_t numa;
		if (!placement_only(L) && rd_s64(L, dev, 0, pci_dir, "numa_node", -1, 65535, &numa,
						 "a NUMA node or -1") == 0)
			h->numa = (int)numa;
		if (!placement_only(L))
			rd_str(L, dev, pci_dir, "local_cpulist", h->local_cpus,
			       sizeof(h->local_cpus));
		load_pcie_link(L, dev, pci_dir, &h->pcie);
		load_pci_ids(L, h, pci_dir);

		/* The bridge port above: the parent directory, when it is a PCI function. */
		copy_str(buf, sizeof(buf), pci_dir);
		if (!placement_only(L) && split_last(buf)) {
			const char *up = strrchr(buf, '/');
			up = up ? up + 1 : buf;
			if (is_pci_addr(up)) {
				copy_str(h->upstream_pci, sizeof(h->upstream_pci), up);
				load_pcie_link(L, dev, buf, &h->pcie_upstream);
			}
		}

		/* Netdevs of the function: device/net/<name>. */
		char **names = NULL;
		char ndir[PATH_MAX];
		pathf(ndir, sizeof(ndir), "%s/net", pci_dir);
		int n = llist(L, ndir, &names);
		if (n == -ENOMEM)
			return n;
		if (n < 0 && n != -ENOENT && n != -ENOTDIR)
			unreadable(L, dev, 0, ndir, n);
		for (int i = 0; i < n; i++) {
			r = add_netdev(L, h, ndir, names[i]);
			if (r < 0) {
				ibp_sysfs_names_free(names);
				return r;
			}
		}
		ibp_sysfs_names_free(names);
	}

	/* Ports: ports/<N>, N from 1. */
	char **names = NULL;
	pathf(buf, sizeof(buf), "%s/ports", base);
	int n = llist(L, buf, &names);
	if (n == -ENOMEM)
		return n;
	if (n < 0 && n != -ENOENT && n != -ENOTDIR)
		unreadable(L, dev, 0, buf, n);
	if (n > 0) {
		h->ports = calloc((size_t)n, sizeof(*h->ports));
		if (!h->ports) {
			ibp_sysfs_names_free(names);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < n; i++) {
		uint64_t num;
		if (ibp_parse_u64(names[i], &num) < 0 || num < 1 || num > 255)
			continue;
		struct ibp_port *p = &h->ports[h->n_ports++];
		p->num = (unsigned)num;
		r = load_port(L, h, p, base);
		if (r < 0) {
			ibp_sysfs_names_free(names);
			return r;
		}
	}
	ibp_sysfs_names_free(names);
	return map_port_netdevs(L, h);
}

static int load_hca(struct loader *L, struct ibp_hca *h, const char *base)
{
	loader_sub(L, SUB_DEVICE, base);
	int r = load_hca_files(L, h, base);
	loader_subs_close(L);
	return r;
}

static int add_hca(struct loader *L, struct ibp_inventory *inv, size_t *cap, const char *name,
		   const char *base)
{
	if (strlen(name) >= sizeof(inv->hcas[0].name)) {
		add_finding(L, "sysfs_malformed", NULL, 0, "a device name under 64 bytes",
			    FIX_MALFORMED, "%s: device name too long", base);
		return 0;
	}
	if (ibp_inventory_find(inv, name))
		return 0;
	if (inv->n_hcas == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct ibp_hca *v = realloc(inv->hcas, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		inv->hcas = v;
		*cap = ncap;
	}
	struct ibp_hca *h = &inv->hcas[inv->n_hcas++];
	memset(h, 0, sizeof(*h));
	strcpy(h->name, name);
	return load_hca(L, h, base);
}

/* No class directory: the devices under sys/bus/pci/devices/<addr>/infiniband. */
static int load_from_pci(struct loader *L, struct ibp_inventory *inv, size_t *cap)
{
	char **fns = NULL;
	int n = ibp_sysfs_list(L->fs, "sys/bus/pci/devices", &fns);
	if (n == -ENOMEM)
		return n;
	for (int i = 0; i < n; i++) {
		char dir[PATH_MAX], base[PATH_MAX];
		char **devs = NULL;
		pathf(dir, sizeof(dir), "sys/bus/pci/devices/%s/infiniband", fns[i]);
		int m = ibp_sysfs_list(L->fs, dir, &devs);
		if (m == -ENOMEM) {
			ibp_sysfs_names_free(fns);
			return m;
		}
		for (int k = 0; k < m; k++) {
			pathf(base, sizeof(base), "%s/%s", dir, devs[k]);
			int r = add_hca(L, inv, cap, devs[k], base);
			if (r < 0) {
				ibp_sysfs_names_free(devs);
				ibp_sysfs_names_free(fns);
				return r;
			}
		}
		ibp_sysfs_names_free(devs);
	}
	ibp_sysfs_names_free(fns);
	return 0;
}

static int hca_cmp(const void *a, const void *b)
{
	return ibp_natural_cmp(((const struct ibp_hca *)a)->name,
			       ((const struct ibp_hca *)b)->name);
}

int ibp_inventory_load(struct ibp_inventory *inv, const struct ibp_sysfs *fs,
		       struct ibp_findings *findings)
{
	return ibp_inventory_load_opts(inv, fs, 0, findings);
}

int ibp_inventory_load_opts(struct ibp_inventory *inv, const struct ibp_sysfs *fs, unsigned flags,
			    struct ibp_findings *findings)
{
	struct loader L = {.fs = fs, .findings = findings, .flags = flags, .err = 0};
	for (int i = 0; i < N_SUBS; i++)
		L.sub[i].root_fd = -1;
	size_t cap = 0;
	char **names = NULL;
	int r = 0;

	if (!inv || !fs)
		return -EINVAL;
	ibp_inventory_init(inv);
	if (fs->root_fd < 0)
		return -EBADF;

	int n = ibp_sysfs_list(fs, "sys/class/infiniband", &names);
	if (n == -ENOENT) {
		inv->from_pci = true;
		r = load_from_pci(&L, inv, &cap);
	} else if (n < 0) {
		if (n == -ENOMEM || n == -EBADF)
			return n;
		unreadable(&L, NULL, 0, "sys/class/infiniband", n);
	}
	for (int i = 0; i < n && r == 0; i++) {
		char base[PATH_MAX];
		pathf(base, sizeof(base), "sys/class/infiniband/%s", names[i]);
		r = add_hca(&L, inv, &cap, names[i], base);
	}
	ibp_sysfs_names_free(names);
	if (!r)
		r = L.err;
	if (r < 0) {
		ibp_inventory_release(inv);
		return r;
	}
	if (inv->n_hcas > 1)
		qsort(inv->hcas, inv->n_hcas, sizeof(*inv->hcas), hca_cmp);
	return 0;
}

const struct ibp_hca *ibp_inventory_find(const struct ibp_inventory *inv, const char *name)
{
	if (!inv || !name)
		return NULL;
	for (size_t i = 0; i < inv->n_hcas; i++)
		if (!strcmp(inv->hcas[i].name, name))
			return &inv->hcas[i];
	return NULL;
}

const struct ibp_counter *ibp_port_counter(const struct ibp_port *p, const char *name)
{
	if (!p || !name)
		return NULL;
	/* counters/ first: hw_counters/ may reuse a name with another meaning. */
	for (int hw = 0; hw < 2; hw++)
		for (size_t i = 0; i < p->n_counters; i++)
			if (p->counters[i].hw == hw && !strcmp(p->counters[i].name, name))
				return &p->counters[i];
	return NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * health.c: the checks of health.h.  Each check reads the inventory and the
 * policy and appends findings worded as DESIGN.md shows: observed, expected,
 * one-line fix.  Ports of ignored HCAs are not judged.  Link checks (rate,
 * width, speed, LID, GID, netdev) only judge ports that are ACTIVE: a down
 * port already has its finding, and its rate file means nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ibprep/devid.h"
#include "ibprep/health.h"

void ibp_health_input_init(struct ibp_health_input *in)
{
	memset(in, 0, sizeof(*in));
	in->gpus_nvidia = -1;
	in->gpus_amd = -1;
	in->memlock_source = IBP_MEMLOCK_UNKNOWN;
	in->memlock_kb = UINT64_MAX;
}

void ibp_health_input_release(struct ibp_health_input *in)
{
	ibp_inventory_release(&in->inv);
	ibp_inventory_release(&in->inv_after);
	in->have_after = false;
}

bool ibp_health_ignored(const struct ibp_policy *p, const char *dev)
{
	for (size_t i = 0; i < p->n_ignore_hcas; i++)
		if (!strcmp(p->ignore_hcas[i], dev))
			return true;
	return false;
}

/* Appends with the input's node name filled in. */
struct ctx {
	const struct ibp_health_input *in;
	const struct ibp_policy *p;
	struct ibp_findings *out;
	int err;
};

__attribute__((format(printf, 9, 10))) static void
add(struct ctx *c, const char *code, enum ibp_severity sev, enum ibp_fault_class fclass,
    const char *dev, unsigned port, const char *expected, const char *fix, const char *fmt, ...)
{
	char obs[IBP_TEXT_MAX + 8];
	va_list ap;

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): a cross-file false positive */
	vsnprintf(obs, sizeof(obs), fmt, ap);
	va_end(ap);
	size_t before = c->out->n;
	int rc =
	    ibp_findings_addf(c->out, code, sev, fclass, dev, (int)port, expected, fix, "%s", obs);
	if (rc) {
		c->err = rc;
		return;
	}
	if (c->out->n > before)
		snprintf(c->out->v[before].node, sizeof(c->out->v[before].node), "%s", c->in->node);
}

/* ---- device lists in hostlist notation ---------------------------------- */

/* Splits NAME into a prefix and a trailing decimal number without leading zeros. */
static bool split_num(const char *name, size_t *plen, unsigned long *num)
{
	size_t n = strlen(name), i = n;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == n || n - i > 9 || (name[i] == '0' && n - i > 1))
		return false;
	*plen = i;
	*num = strtoul(name + i, NULL, 10);
	return true;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return (x > y) - (x < y);
}

/* Appends to OUT (OUTLEN bytes) at *O; past the end it only counts. */
__attribute__((format(printf, 4, 5))) static void append(char *out, size_t outlen, size_t *o,
							 const char *fmt, ...)
{
	va_list ap;
	char dummy[1];

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): a cross-file false positive */
	int n =
	    *o < outlen ? vsnprintf(out + *o, outlen - *o, fmt, ap) : vsnprintf(dummy, 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*o += (size_t)n;
}

/* Compresses NAMES (N of them, duplicates allowed) into OUT. */
static void hostlist(const char *const *names, size_t n, char *out, size_t outlen)
{
	bool *done = calloc(n ? n : 1, sizeof(*done));
	unsigned long *nums = calloc(n ? n : 1, sizeof(*nums));
	size_t o = 0;

	out[0] = '\0';
	if (!done || !nums) {
		free(done);
		free(nums);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t plen, k = 0;
		unsigned long num;
		if (done[i])
			continue;
		if (!split_num(names[i], &plen, &num)) {
			for (size_t j = i; j < n; j++)
				if (!strcmp(names[j], names[i]))
					done[j] = true;
			append(out, outlen, &o, "%s%s", o ? "," : "", names[i]);
			continue;
		}
		for (size_t j = i; j < n; j++) {
			size_t pl;
			unsigned long nu;
			if (!done[j] && split_num(names[j], &pl, &nu) && pl == plen &&
			    !strncmp(names[j], names[i], plen)) {
				done[j] = true;
				nums[k++] = nu;
			}
		}
		qsort(nums, k, sizeof(*nums), cmp_ulong);
		size_t u = 0; /* drop duplicates */
		for (size_t j = 0; j < k; j++)
			if (!u || nums[u - 1] != nums[j])
				nums[u++] = nums[j];
		if (u == 1) {
			append(out, outlen, &o, "%s%s", o ? "," : "", names[i]);
			continue;
		}
		append(out, outlen, &o, "%s%.*s[", o ? "," : "", (int)plen, names[i]);
		for (size_t j = 0; j < u;) {
			size_t e = j;
			while (e + 1 < u && nums[e + 1] == nums[e] + 1)
				e++;
			if (e > j)
				append(out, outlen, &o, "%s%lu-%lu", j ? "," : "", nums[j],
				       nums[e]);
			else
				append(out, outlen, &o, "%s%lu", j ? "," : "", nums[j]);
			j = e + 1;
		}
		append(out, outlen, &o, "]");
	}
	free(done);
	free(nums);
}

/* Does DEV match one token (TOK, LEN bytes) of a hostlist? */
static bool token_matches(const char *tok, size_t len, const char *dev)
{
	const char *lb = memchr(tok, '[', len);

	if (!lb)
		return strlen(dev) == len && !strncmp(tok, dev, len);
	const char *rb = memchr(lb, ']', len - (size_t)(lb - tok));
	size_t plen = (size_t)(lb - tok);
	if (!rb || (size_t)(rb - tok) != len - 1 || strncmp(dev, tok, plen) != 0)
		return false;
	const char *d = dev + plen;
	size_t dl = strlen(d);
	if (dl == 0 || dl > 9 || (d[0] == '0' && dl > 1))
		return false;
	for (size_t i = 0; i < dl; i++)
		if (d[i] < '0' || d[i] > '9')
			return false;
	unsigned long v = strtoul(d, NULL, 10);
	const char *s = lb + 1;
	while (s < rb) {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s)
			return false;
		if (*end == '-') {
			const char *t = end + 1;
			b = strtoul(t, &end, 10);
			if (end == t)
				return false;
		}
		if (v >= a && v <= b)
			return true;
		if (*end != ',' && end != rb)
			return false;
		s = end + 1;
	}
	return false;
}

bool ibp_health_device_matches(const char *list, const char *dev)
{
	const char *s = list;

	if (!list || !dev || !*dev)
		return false;
	while (*s) {
		const char *e = s;
		int depth = 0;
		while (*e && (depth || *e != ',')) {
			if (*e == '[')
				depth++;
			else if (*e == ']' && depth)
				depth--;
			e++;
		}
		if (token_matches(s, (size_t)(e - s), dev))
			return true;
		s = *e ? e + 1 : e;
	}
	return false;
}

enum ibp_severity ibp_health_port_severity(const struct ibp_findings *f, const char *dev,
					   unsigned port)
{
	enum ibp_severity w = IBP_SEV_OK;

	for (size_t i = 0; i < f->n; i++) {
		const struct ibp_finding *x = &f->v[i];
		if (x->severity <= w || !x->device[0])
			continue;
		if (x->port != 0 && (unsigned)x->port != port)
			continue;
		if (!strcmp(x->device, dev) || ibp_health_device_matches(x->device, dev))
			w = x->severity;
	}
	return w;
}

/* ---- node-wide checks ------------------------------------------------------ */

static void check_presence(struct ctx *c)
{
	const struct ibp_inventory *inv = &c->in->inv;
	const struct ibp_policy *p = c->p;
	size_t counted = 0, active = 0;
	char exp[64];

	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct ibp_hca *h = &inv->hcas[i];
		if (ibp_health_ignored(p, h->name))
			continue;
		counted++;
		for (size_t j = 0; j < h->n_ports; j++)
			if (h->ports[j].state == IBP_PORT_ACTIVE)
				active++;
	}
	if (inv->n_hcas == 0) {
		if (p->expect_hcas != 0) {
			if (p->expect_hcas > 0)
				snprintf(exp, sizeof(exp), "%d (expect_hcas)", p->expect_hcas);
			else
				snprintf(exp, sizeof(exp), "at least one");
			add(c, "no_rdma_device", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, exp,
			    "load the HCA driver (modprobe mlx5_ib) and check the card with lspci; "
			    "on nodes without HCAs set expect_hcas=0",
			    "no RDMA device in /sys/class/infiniband");
		}
	} else if (p->expect_hcas > 0 && counted < (size_t)p->expect_hcas) {
		snprintf(exp, sizeof(exp), "%d (expect_hcas)", p->expect_hcas);
		add(c, "hca_count_low", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, exp,
		    "check which HCA is missing (lspci, dmesg for mlx5_core) and reseat or replace "
		    "it",
		    "%zu RDMA device%s", counted, counted == 1 ? "" : "s");
	}
	for (size_t k = 0; k < p->n_hcas; k++) {
		bool found = false;
		for (size_t i = 0; i < inv->n_hcas && !found; i++)
			found = !strcmp(inv->hcas[i].name, p->hcas[k]);
		if (!found)
			add(c, "hca_missing", IBP_SEV_FAIL, IBP_CLASS_NODE, p->hcas[k], 0,
			    "present (hcas)",
			    "check the card and its driver (lspci, dmesg), or fix hcas= in the "
			    "policy",
			    "device not present");
	}
	if (p->expect_ports > 0 && active < (size_t)p->expect_ports && inv->n_hcas > 0) {
		snprintf(exp, sizeof(exp), "%d (expect_ports)", p->expect_ports);
		add(c, "active_ports_low", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, exp,
		    "bring the down ports up (see the port findings) or fix expect_ports=",
		    "%zu active port%s", active, active == 1 ? "" : "s");
	}
}

static void check_memlock(struct ctx *c)
{
	const struct ibp_health_input *in = c->in;
	const char *fix;
	enum ibp_fault_class cls = IBP_CLASS_NODE;
	char exp[48];

	if (in->memlock_source == IBP_MEMLOCK_UNKNOWN || in->memlock_kb >= c->p->min_memlock_kb)
		return;
	switch (in->memlock_source) {
	case IBP_MEMLOCK_USER:
		cls = IBP_CLASS_JOB;
		fix = "your shell's limit is propagated to the job: run 'ulimit -l unlimited' "
		      "before srun, or ask the admin for PropagateResourceLimitsExcept=MEMLOCK";
		break;
	case IBP_MEMLOCK_SLURMD:
		fix = "set LimitMEMLOCK=infinity for slurmd (systemd drop-in) and restart it; "
		      "keep PropagateResourceLimitsExcept=MEMLOCK in slurm.conf";
		break;
	default:
		fix = "raise it (limits.conf: '* - memlock unlimited'); under Slurm: slurmd "
		      "LimitMEMLOCK=infinity and PropagateResourceLimitsExcept=MEMLOCK";
		break;
	}
	if (c->p->min_memlock_kb == UINT64_MAX)
		snprintf(exp, sizeof(exp), "unlimited");
	else
		snprintf(exp, sizeof(exp), "at least %" PRIu64 " KiB", c->p->min_memlock_kb);
	add(c, "memlock_low", IBP_SEV_FAIL, cls, NULL, 0, exp, fix,
	    "locked-memory limit %" PRIu64 " KiB%s", in->memlock_kb,
	    in->memlock_source == IBP_MEMLOCK_USER     ? " (the user's, propagated by Slurm)"
	    : in->memlock_source == IBP_MEMLOCK_SLURMD ? " (slurmd's, which jobs inherit)"
						       : "");
}

static void check_gdr(struct ctx *c)
{
	const struct ibp_health_input *in = c->in;

	if (!c->p->check_gdr || in->gpus_nvidia <= 0 || !in->gdr_known || in->gdr_loaded ||
	    in->inv.n_hcas == 0)
		return;
	add(c, "gdr_missing", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
	    "nvidia_peermem loaded (GPUDirect RDMA)",
	    "modprobe nvidia_peermem and list it in /etc/modules-load.d; without it NCCL stages "
	    "GPU buffers through host memory unless it can use DMA-BUF",
	    "%d NVIDIA GPU%s but neither nvidia_peermem nor memory_peers is loaded",
	    in->gpus_nvidia, in->gpus_nvidia == 1 ? "" : "s");
}

/* ---- per-port link checks -------------------------------------------------- */

/* Widest width and fastest speed among the active peers of H's port PT. */
static void peers(const struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt,
		  unsigned *width, int *speed, size_t *count)
{
	const struct ibp_inventory *inv = &c->in->inv;

	*width = 0;
	*speed = 0;
	*count = 0;
	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct ibp_hca *o = &inv->hcas[i];
		if (ibp_health_ignored(c->p, o->name) || strcmp(o->hca_type, h->hca_type) != 0)
			continue;
		for (size_t j = 0; j < o->n_ports; j++) {
			const struct ibp_port *q = &o->ports[j];
			if (q == pt || q->state != IBP_PORT_ACTIVE || !q->rate.known ||
			    q->link_layer != pt->link_layer)
				continue;
			(*count)++;
			if (q->rate.width > *width)
				*width = q->rate.width;
			int r = ibp_link_speed_rank(q->rate.speed);
			if (r > *speed)
				*speed = r;
		}
	}
}

static void check_state(struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt)
{
	const char *fix;

	if (pt->state != IBP_PORT_ACTIVE && pt->state != IBP_PORT_STATE_UNKNOWN) {
		switch (pt->phys_state) {
		case IBP_PHYS_POLLING:
			fix =
			    "no link partner: check the cable, the transceiver and the switch port";
			break;
		case IBP_PHYS_DISABLED:
			fix = "the port is disabled: enable it (switch side or ibportstate ... "
			      "enable) "
			      "or check the cable";
			break;
		case IBP_PHYS_LINKUP:
			fix = pt->link_layer == IBP_LL_ETH
				  ? "the link trained but the port is not up: check the netdev "
				    "and the RoCE configuration"
				  : "the link trained but no subnet manager configured the port: "
				    "check opensm/UFM on the fabric";
			break;
		default:
			fix = "check the cable, the transceiver and the switch port";
			break;
		}
		add(c, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, "ACTIVE",
		    fix, "port state %s (physical state %s)", ibp_port_state_name(pt->state),
		    ibp_phys_state_name(pt->phys_state));
		return;
	}
	if (pt->state == IBP_PORT_ACTIVE && pt->phys_state != IBP_PHYS_LINKUP &&
	    pt->phys_state != IBP_PHYS_UNKNOWN)
		add(c, "phys_state_not_linkup", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num,
		    "LinkUp", "the link is unstable: reseat or replace the cable and transceiver",
		    "physical state %s", ibp_phys_state_name(pt->phys_state));
}

static void check_link(struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt)
{
	const struct ibp_policy *p = c->p;
	char exp[IBP_TEXT_MAX];

	if (p->link_layer != IBP_POLICY_LL_ANY && pt->link_layer != IBP_LL_UNKNOWN) {
		enum ibp_link_layer want =
		    p->link_layer == IBP_POLICY_LL_IB ? IBP_LL_IB : IBP_LL_ETH;
		if (pt->link_layer != want)
			add(c, "link_layer_mismatch", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name,
			    pt->num, ibp_link_layer_name(want),
			    "set the port's link type (mlxconfig LINK_TYPE_P1=1 IB / 2 ETH) "
			    "or list the device in ignore_hcas=",
			    "link layer %s", ibp_link_layer_name(pt->link_layer));
	}
	if (pt->state != IBP_PORT_ACTIVE || !pt->rate.known)
		return;
	if (p->min_rate > 0 && pt->rate.gbps + 1e-9 < p->min_rate) {
		snprintf(exp, sizeof(exp), "at least %g Gb/sec (min_rate)", p->min_rate);
		add(c, "rate_below_min", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, exp,
		    "check the cable and transceiver rating and the switch port speed",
		    "rate %g Gb/sec (%uX %s)", pt->rate.gbps, pt->rate.width, pt->rate.speed);
	}

	unsigned pw;
	int ps;
	size_t np;
	peers(c, h, pt, &pw, &ps, &np);
	unsigned want_w = p->min_width ? p->min_width : (np ? pw : 0);
	if (pt->rate.width && want_w && pt->rate.width < want_w) {
		snprintf(exp, sizeof(exp), "%uX%s (rate %g Gb/sec, expected %g Gb/sec)", want_w,
			 p->min_width ? " (min_width)" : "", pt->rate.gbps,
			 pt->rate.gbps * want_w / pt->rate.width);
		add(c, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, exp,
		    "reseat or replace the cable", "link width %uX", pt->rate.width);
	}
	int want_s = p->min_speed[0] ? ibp_link_speed_rank(p->min_speed) : (np ? ps : 0);
	int have_s = ibp_link_speed_rank(pt->rate.speed);
	if (have_s && want_s && have_s < want_s) {
		static const char *const sn[] = {"",    "SDR", "DDR", "QDR", "FDR10",
						 "FDR", "EDR", "HDR", "NDR", "XDR"};
		snprintf(exp, sizeof(exp), "%s%s", sn[want_s],
			 p->min_speed[0] ? " (min_speed)" : " (as the other ports of this model)");
		add(c, "speed_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, exp,
		    "check that cable, transceiver and switch port are rated for the speed; "
		    "reseat or replace the cable",
		    "link speed %s (rate %g Gb/sec)", pt->rate.speed, pt->rate.gbps);
	}
}

/* devid.h's transport of an inventory device. */
static enum ibp_transport hca_transport(const struct ibp_hca *h)
{
	return ibp_devid_rdma(h->driver, h->name, h->vendor, h->device, h->node_type)->transport;
}

static void check_ib_addr(struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt)
{
	enum ibp_transport t;

	if (pt->state != IBP_PORT_ACTIVE || pt->link_layer != IBP_LL_IB)
		return;
	/* old kernels print link_layer "InfiniBand" for iWARP devices, which
	 * have no LID and no subnet manager */
	t = hca_transport(h);
	if (t == IBP_TR_IWARP || t == IBP_TR_SOFT_IWARP || t == IBP_TR_EFA)
		return;
	if (pt->sm_lid == 0)
		add(c, "no_subnet_manager", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num,
		    "the LID of a subnet manager",
		    "start or fix the subnet manager (opensm or UFM) on this fabric",
		    "SM LID 0 (no subnet manager)");
	else if (pt->lid == 0)
		add(c, "lid_zero", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num,
		    "a LID assigned by the subnet manager",
		    "check the subnet manager's log for this port (GUID) and re-sweep the fabric",
		    "LID 0");
}

/* "0000:...:ffff:0a00:000b" -> "::ffff:10.0.0.11"; the kernel's text otherwise. */
static void gid_text(const struct ibp_gid *g, char *buf, size_t len)
{
	unsigned v[8];
	const char *s = g->addr;

	for (int i = 0; i < 8; i++) {
		char *end;
		unsigned long x = strtoul(s, &end, 16);
		if (end != s + 4 || x > 0xffff || (i < 7 ? *end != ':' : *end != '\0')) {
			snprintf(buf, len, "%s", g->addr);
			return;
		}
		v[i] = (unsigned)x;
		s = end + 1;
	}
	if (g->ipv4_mapped && !v[0] && !v[1] && !v[2] && !v[3] && !v[4] && v[5] == 0xffff)
		snprintf(buf, len, "::ffff:%u.%u.%u.%u", v[6] >> 8, v[6] & 0xff, v[7] >> 8,
			 v[7] & 0xff);
	else
		snprintf(buf, len, "%s", g->addr);
}

static bool gid_link_local(const char *addr)
{
	return !strncasecmp(addr, "fe80", 4);
}

static void check_roce(struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt)
{
	const struct ibp_gid *best = NULL, *ll = NULL;
	bool any_v2 = false;

	if (pt->state != IBP_PORT_ACTIVE || pt->link_layer != IBP_LL_ETH || pt->n_gids == 0)
		return; /* no GIDs read at all: unknown */
	switch (hca_transport(h)) {
	case IBP_TR_IWARP: /* iWARP addresses by IP through rdma_cm: no RoCE GIDs */
	case IBP_TR_SOFT_IWARP:
	case IBP_TR_EFA:
	case IBP_TR_USNIC:
		return;
	default:
		break;
	}
	for (size_t i = 0; i < pt->n_gids; i++) {
		const struct ibp_gid *g = &pt->gids[i];
		if (g->type != IBP_GID_TYPE_ROCE_V2)
			continue;
		any_v2 = true;
		if (gid_link_local(g->addr)) {
			if (!ll)
				ll = g;
			continue;
		}
		/* NCCL prefers IPv4-mapped GIDs (NCCL_IB_ADDR_FAMILY=AF_INET by default) */
		if (!best || (g->ipv4_mapped && !best->ipv4_mapped))
			best = g;
	}
	if (best) {
		char fix[IBP_TEXT_MAX], addr[48];
		snprintf(fix, sizeof(fix), "NCCL_IB_GID_INDEX=%u UCX_IB_GID_INDEX=%u", best->index,
			 best->index);
		gid_text(best, addr, sizeof(addr));
		add(c, "roce_gid_index", IBP_SEV_OK, IBP_CLASS_NODE, h->name, pt->num, NULL, fix,
		    "RoCE v2 GID index %u (%s%s%s)", best->index, addr, best->ndev[0] ? " on " : "",
		    best->ndev);
		return;
	}
	const char *nd = pt->netdev[0] ? pt->netdev : "the port's netdev";
	if (any_v2) {
		char fix[IBP_TEXT_MAX];
		snprintf(fix, sizeof(fix),
			 "assign an IP address to %s: RoCE v2 GIDs follow its addresses", nd);
		add(c, "roce_v2_link_local_only", IBP_SEV_WARN, IBP_CLASS_NODE, h->name, pt->num,
		    "a RoCE v2 GID with a routable address", fix,
		    "only link-local RoCE v2 GIDs (index %u): not routable across subnets",
		    ll ? ll->index : 0);
		return;
	}
	char fix[IBP_TEXT_MAX];
	snprintf(
	    fix, sizeof(fix),
	    "enable RoCE v2 (cma_roce_mode / the driver's RoCE mode) and give %s an IP address",
	    nd);
	add(c, "roce_no_v2_gid", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, "a RoCE v2 GID",
	    fix, "no RoCE v2 GID among %zu GIDs", pt->n_gids);
}

static const struct ibp_netdev *port_netdev(const struct ibp_hca *h, const struct ibp_port *pt)
{
	if (pt->netdev[0])
		for (size_t i = 0; i < h->n_netdevs; i++)
			if (!strcmp(h->netdevs[i].name, pt->netdev))
				return &h->netdevs[i];
	for (size_t i = 0; i < h->n_netdevs; i++)
		if (h->netdevs[i].dev_port >= 0 && (unsigned)h->netdevs[i].dev_port + 1 == pt->num)
			return &h->netdevs[i];
	if (h->n_netdevs == 1 && h->n_ports == 1)
		return &h->netdevs[0];
	return NULL;
}

static void check_netdev(struct ctx *c, const struct ibp_hca *h, const struct ibp_port *pt)
{
	const struct ibp_netdev *nd;
	char exp[64], fix[IBP_TEXT_MAX];

	if (!c->p->check_netdev || pt->state != IBP_PORT_ACTIVE || !(nd = port_netdev(h, pt)))
		return;
	if (nd->operstate[0] && strcmp(nd->operstate, "up") != 0 &&
	    strcmp(nd->operstate, "unknown") != 0) {
		bool roce = pt->link_layer == IBP_LL_ETH;
		bool bootstrap = c->p->socket_ifname[0] && !strcmp(c->p->socket_ifname, nd->name);
		if (roce)
			snprintf(fix, sizeof(fix),
				 "ip link set %s up and check its configuration: RoCE traffic and "
				 "its GIDs need it",
				 nd->name);
		else
			snprintf(
			    fix, sizeof(fix),
			    "ip link set %s up and check its configuration; jobs that bootstrap "
			    "over %s (NCCL_SOCKET_IFNAME) fail",
			    nd->name, nd->name);
		add(c, "netdev_down", (roce || bootstrap) ? IBP_SEV_FAIL : IBP_SEV_WARN,
		    IBP_CLASS_NODE, h->name, pt->num, "up", fix,
		    "%s interface %s operstate %s while the port is ACTIVE",
		    roce ? "RoCE" : "IPoIB", nd->name, nd->operstate);
	}
	if (c->p->min_mtu > 0 && nd->mtu >= 0 && nd->mtu < c->p->min_mtu) {
		snprintf(exp, sizeof(exp), "at least %" PRId64 " (min_mtu)", c->p->min_mtu);
		snprintf(fix, sizeof(fix), "ip link set %s mtu %" PRId64 " (and in its config)",
			 nd->name, c->p->min_mtu);
		add(c, "netdev_mtu_low", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, pt->num, exp, fix,
		    "%s MTU %" PRId64, nd->name, nd->mtu);
	}
}

static void check_pcie(struct ctx *c, const struct ibp_hca *h)
{
	const struct ibp_pcie_link *l = &h->pcie, *u = &h->pcie_upstream;
	char exp[IBP_TEXT_MAX];

	if (!c->p->check_pcie || l->cur_gts <= 0 || l->max_gts <= 0 || !l->cur_width ||
	    !l->max_width)
		return;
	double cap_gts = l->max_gts;
	unsigned cap_w = l->max_width;
	if (u->max_gts > 0 && u->max_gts < cap_gts)
		cap_gts = u->max_gts;
	if (u->max_width && u->max_width < cap_w)
		cap_w = u->max_width;
	if (l->cur_gts + 0.05 < cap_gts || l->cur_width < cap_w) {
		snprintf(exp, sizeof(exp), "%g GT/s x%u (%s)%s", cap_gts, cap_w,
			 ibp_pcie_gen_name(cap_gts),
			 (cap_gts < l->max_gts || cap_w < l->max_width) ? ", what the slot allows"
									: "");
		add(c, "pcie_downtrained", IBP_SEV_FAIL, IBP_CLASS_NODE, h->name, 0, exp,
		    "reseat the HCA and check its riser/slot: the link trained below what both "
		    "ends support",
		    "PCIe link %g GT/s x%u (%s)", l->cur_gts, l->cur_width,
		    ibp_pcie_gen_name(l->cur_gts));
	} else if (l->cur_gts + 0.05 < l->max_gts || l->cur_width < l->max_width) {
		snprintf(exp, sizeof(exp), "%g GT/s x%u (%s), what the HCA supports", l->max_gts,
			 l->max_width, ibp_pcie_gen_name(l->max_gts));
		add(c, "pcie_slot_limited", IBP_SEV_WARN, IBP_CLASS_NODE, h->name, 0, exp,
		    "move the HCA to a slot of its own PCIe generation and width (or set "
		    "check_pcie=no to accept it)",
		    "PCIe link %g GT/s x%u (%s), limited by the slot %s", l->cur_gts, l->cur_width,
		    ibp_pcie_gen_name(l->cur_gts),
		    h->upstream_pci[0] ? h->upstream_pci : "above it");
	}
}

/* ---- counters, aggregated ---------------------------------------------------- */

struct cgroup {
	const char *code, *name;
	enum ibp_severity sev;
	uint64_t lo, hi, limit; /* values (or growth) seen, and the limit crossed */
	bool saturated;
	unsigned bits;
	const char **devs;
	unsigned *ports;
	size_t n, cap;
};

struct cagg {
	struct cgroup *g;
	size_t n, cap;
};

static int cagg_add(struct cagg *a, const char *code, enum ibp_severity sev, const char *name,
		    const char *dev, unsigned port, uint64_t v, uint64_t limit, bool sat,
		    unsigned bits)
{
	struct cgroup *g = NULL;

	for (size_t i = 0; i < a->n && !g; i++)
		if (a->g[i].code == code && !strcmp(a->g[i].name, name))
			g = &a->g[i];
	if (!g) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 8;
			struct cgroup *ng = reallocarray(a->g, cap, sizeof(*ng));
			if (!ng)
				return -ENOMEM;
			a->g = ng;
			a->cap = cap;
		}
		g = &a->g[a->n++];
		memset(g, 0, sizeof(*g));
		g->code = code;
		g->name = name;
		g->sev = sev;
		g->lo = g->hi = v;
		g->limit = limit;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		const char **nd = reallocarray(g->devs, cap, sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		g->devs = nd;
		unsigned *np = reallocarray(g->ports, cap, sizeof(*np));
		if (!np)
			return -ENOMEM;
		g->ports = np;
		g->cap = cap;
	}
	g->devs[g->n] = dev;
	g->ports[g->n++] = port;
	if (v < g->lo)
		g->lo = v;
	if (v > g->hi)
		g->hi = v;
	if (sat) {
		g->saturated = true;
		g->bits = bits;
	}
	return 0;
}

static void cagg_release(struct cagg *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->g[i].devs);
		free(a->g[i].ports);
	}
	free(a->g);
}

static const struct ibp_counter *find_counter(const struct ibp_port *pt, const char *name, bool hw)
{
	for (size_t i = 0; i < pt->n_counters; i++)
		if (pt->counters[i].hw == hw && !strcmp(pt->counters[i].name, name))
			return &pt->counters[i];
	return NULL;
}

static const struct ibp_port *find_port(const struct ibp_inventory *inv, const char *dev,
					unsigned num)
{
	for (size_t i = 0; i < inv->n_hcas; i++) {
		if (strcmp(inv->hcas[i].name, dev) != 0)
			continue;
		for (size_t j = 0; j < inv->hcas[i].n_ports; j++)
			if (inv->hcas[i].ports[j].num == num)
				return &inv->hcas[i].ports[j];
	}
	return NULL;
}

static void emit_group(struct ctx *c, const struct cgroup *g, unsigned window_ms)
{
	char devs[IBP_DEV_MAX * 4], exp[IBP_TEXT_MAX], val[96], where[48] = "";
	const char *fix;
	unsigned port = g->ports[0];

	for (size_t i = 1; i < g->n; i++)
		if (g->ports[i] != port)
			port = 0;
	hostlist(g->devs, g->n, devs, sizeof(devs));
	if (g->n > 1)
		snprintf(where, sizeof(where), " on %zu ports", g->n);
	if (g->lo == g->hi)
		snprintf(val, sizeof(val), "%s%" PRIu64, g->saturated ? "at least " : "", g->hi);
	else
		snprintf(val, sizeof(val), "%" PRIu64 " to %s%" PRIu64, g->lo,
			 g->saturated ? "at least " : "", g->hi);
	if (!strcmp(g->code, "counter_growing")) {
		fix = "errors are occurring now: reseat or replace the cable and transceiver, "
		      "then clear the counters (perfquery -x -R)";
		add(c, g->code, g->sev, IBP_CLASS_NODE, devs, port, "no growth", fix,
		    "%s grew by %s in %u ms%s", g->name, val, window_ms, where);
		return;
	}
	bool fatal = !strcmp(g->code, "counter_fatal");
	snprintf(exp, sizeof(exp), "at most %" PRIu64 " (%s)", g->limit,
		 fatal ? "counter_fail" : "counter_warn");
	fix = fatal ? "fix the link (cable, transceiver, switch port), then clear the counters "
		      "(perfquery -x -R)"
		    : "counts since the last reset: clear them (perfquery -x -R) and recheck with "
		      "counter_window=; if they grow, check the cable";
	if (g->saturated && g->bits)
		add(c, g->code, g->sev, IBP_CLASS_NODE, devs, port, exp, fix,
		    "%s %s (%u-bit counter saturated)%s", g->name, val, g->bits, where);
	else
		add(c, g->code, g->sev, IBP_CLASS_NODE, devs, port, exp, fix, "%s %s%s", g->name,
		    val, where);
}

static void check_counters(struct ctx *c)
{
	const struct ibp_health_input *in = c->in;
	const struct ibp_policy *p = c->p;
	struct cagg a = {0};
	int rc = 0;

	if (!p->check_counters)
		return;
	for (size_t i = 0; i < in->inv.n_hcas && !rc; i++) {
		const struct ibp_hca *h = &in->inv.hcas[i];
		if (ibp_health_ignored(p, h->name))
			continue;
		/* a device without a PMA: one note, not a finding per counter */
		for (size_t j = 0; j < h->n_ports; j++)
			if (h->ports[j].counters_na) {
				add(c, "counters_unavailable", IBP_SEV_OK, IBP_CLASS_NODE, h->name,
				    0, NULL, "nothing to do; watch errors with the NIC's own tools",
				    "no error counters: they read 'N/A (no PMA)' (no Performance "
				    "Management Agent), counters not checked");
				break;
			}
		for (size_t j = 0; j < h->n_ports && !rc; j++) {
			const struct ibp_port *pt = &h->ports[j];
			const struct ibp_port *after =
			    in->have_after ? find_port(&in->inv_after, h->name, pt->num) : NULL;
			for (size_t k = 0; k < pt->n_counters && !rc; k++) {
				const struct ibp_counter *ct = &pt->counters[k];
				const struct ibp_counter_limit *l =
				    ibp_policy_counter_limit(p, ct->name);
				if (!l || ct->read_errno)
					continue;
				if (l->fail != IBP_COUNTER_OFF && ct->value > l->fail)
					rc = cagg_add(&a, "counter_fatal", IBP_SEV_FAIL, ct->name,
						      h->name, pt->num, ct->value, l->fail,
						      ct->saturated, ct->bits);
				else if (l->warn != IBP_COUNTER_OFF && ct->value > l->warn)
					rc = cagg_add(&a, "counter_high", IBP_SEV_WARN, ct->name,
						      h->name, pt->num, ct->value, l->warn,
						      ct->saturated, ct->bits);
				const struct ibp_counter *ac =
				    after ? find_counter(after, ct->name, ct->hw) : NULL;
				if (!rc && ac && !ac->read_errno && ac->value > ct->value)
					rc = cagg_add(&a, "counter_growing", IBP_SEV_FAIL, ct->name,
						      h->name, pt->num, ac->value - ct->value, 0,
						      false, 0);
			}
		}
	}
	if (rc)
		c->err = rc;
	/* fatal first, then growing, then high: the worst news first */
	static const char *const order[] = {"counter_fatal", "counter_growing", "counter_high"};
	for (size_t o = 0; o < 3 && !c->err; o++)
		for (size_t i = 0; i < a.n; i++)
			if (!strcmp(a.g[i].code, order[o]))
				emit_group(c, &a.g[i], in->window_ms);
	cagg_release(&a);
}

int ibp_health_check_job(const struct ibp_health_input *in, const struct ibp_policy *p,
			 struct ibp_findings *out)
{
	struct ctx c = {.in = in, .p = p, .out = out, .err = 0};

	if (in->memlock_source == IBP_MEMLOCK_USER)
		check_memlock(&c);
	return c.err;
}

int ibp_health_check(const struct ibp_health_input *in, const struct ibp_policy *p,
		     struct ibp_findings *out)
{
	struct ctx c = {.in = in, .p = p, .out = out, .err = 0};

	check_presence(&c);
	check_memlock(&c);
	check_gdr(&c);
	for (size_t i = 0; i < in->inv.n_hcas && !c.err; i++) {
		const struct ibp_hca *h = &in->inv.hcas[i];
		if (ibp_health_ignored(p, h->name))
			continue;
		check_pcie(&c, h);
		for (size_t j = 0; j < h->n_ports; j++) {
			const struct ibp_port *pt = &h->ports[j];
			check_state(&c, h, pt);
			check_link(&c, h, pt);
			check_ib_addr(&c, h, pt);
			check_roce(&c, h, pt);
			check_netdev(&c, h, pt);
		}
	}
	if (!c.err)
		check_counters(&c);
	return c.err;
}

/* ---- gathering the input from sysfs ------------------------------------------ */

/* Counts NVIDIA and AMD display-class PCI functions (class 0x03xxxx). */
static void count_gpus(struct ibp_health_input *in, const struct ibp_sysfs *fs)
{
	char **names = NULL, buf[32];
	int n = ibp_sysfs_list(fs, "sys/bus/pci/devices", &names);

	if (n < 0)
		return; /* unknown */
	in->gpus_nvidia = 0;
	in->gpus_amd = 0;
	for (int i = 0; i < n; i++) {
		uint64_t cls;
		if (ibp_sysfs_readf(fs, buf, sizeof(buf), "sys/bus/pci/devices/%s/class",
				    names[i]) < 0 ||
		    ibp_parse_u64(buf, &cls) || (cls >> 16) != 0x03)
			continue;
		if (ibp_sysfs_readf(fs, buf, sizeof(buf), "sys/bus/pci/devices/%s/vendor",
				    names[i]) < 0)
			continue;
		if (!strcmp(buf, "0x10de"))
			in->gpus_nvidia++;
		else if (!strcmp(buf, "0x1002"))
			in->gpus_amd++;
	}
	ibp_sysfs_names_free(names);
}

/* True when the directory PATH exists under the root. */
static bool dir_exists(const struct ibp_sysfs *fs, const char *path)
{
	char **names = NULL;
	int n = ibp_sysfs_list(fs, path, &names);

	if (n < 0)
		return false;
	ibp_sysfs_names_free(names);
	return true;
}

static void probe_gdr(struct ibp_health_input *in, const struct ibp_sysfs *fs)
{
	static const char *const mods[] = {"sys/module/nvidia_peermem", "sys/module/nv_peer_mem",
					   "sys/kernel/mm/memory_peers"};

	in->gdr_known = dir_exists(fs, "sys/module/nvidia");
	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
		if (dir_exists(fs, mods[i])) {
			in->gdr_loaded = true;
			snprintf(in->gdr_module, sizeof(in->gdr_module), "%s",
				 strrchr(mods[i], '/') + 1);
			break;
		}
}

/* Sleeps MS milliseconds (already capped), resuming after signals. */
static void sleep_ms(unsigned ms)
{
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

int ibp_health_gather(struct ibp_health_input *in, const struct ibp_sysfs *fs,
		      const struct ibp_policy *p, struct ibp_findings *findings)
{
	int rc = ibp_inventory_load(&in->inv, fs, findings);

	if (rc)
		return rc;
	if (in->inv.n_hcas && p->check_gdr) {
		count_gpus(in, fs);
		if (in->gpus_nvidia > 0)
			probe_gdr(in, fs);
	}
	if (p->counter_window_ms && in->inv.n_hcas && p->check_counters) {
		struct ibp_findings scratch; /* the first read already reported read problems */
		unsigned ms = p->counter_window_ms > IBP_POLICY_WINDOW_MAX_MS
				  ? IBP_POLICY_WINDOW_MAX_MS
				  : p->counter_window_ms;
		sleep_ms(ms);
		ibp_findings_init(&scratch);
		rc = ibp_inventory_load(&in->inv_after, fs, &scratch);
		ibp_findings_release(&scratch);
		if (rc)
			return rc;
		in->have_after = true;
		in->window_ms = ms;
	}
	return 0;
}

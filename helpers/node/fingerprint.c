/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fingerprint.c: a node's fingerprint, its wire form, the majority across the step (fingerprint.h). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "ibprep/fingerprint.h"
#include "ibprep/text.h"
#include "fp_wire.h"

static const struct {
	const char *label;
	enum ibp_consistency_key key;
	const char *fix;
} fields[IBP_FP_N_FIELDS] = {
    [IBP_FP_HCA_SET] = {"HCA set", IBP_CK_HCA_SET,
			"give every node the same healthy rails (NCCL hangs when ranks use "
			"different HCA sets), or exclude the odd node"},
    [IBP_FP_LINK_LAYER] = {"link layer", IBP_CK_LINK_LAYER,
			   "run the step on nodes of one fabric (InfiniBand or RoCE)"},
    [IBP_FP_GID] = {"GID", IBP_CK_GID,
		    "make every node use the same RoCE GID index and type (NCCL_IB_GID_INDEX); "
		    "check the netdev's addresses"},
    [IBP_FP_MODEL] = {"model", IBP_CK_MODEL, "run the step on nodes with the same HCA model"},
    [IBP_FP_FIRMWARE] = {"firmware", IBP_CK_FIRMWARE,
			 "update the HCA firmware to the cluster's version"},
    [IBP_FP_MTU] = {"MTU", IBP_CK_MTU, "set the same MTU on every node's rail netdev"},
    [IBP_FP_RATE] = {"rate", IBP_CK_RATE, "check the cable and the switch port of the slower link"},
    [IBP_FP_KERNEL] = {"kernel", IBP_CK_KERNEL, "boot every node into the same kernel"},
    [IBP_FP_RDMA_CORE] = {"rdma-core", IBP_CK_RDMA_CORE,
			  "install the same rdma-core (libibverbs) on every node"},
    [IBP_FP_DRIVER] = {"HCA driver", IBP_CK_DRIVER,
		       "install the same HCA driver (MOFED/DOCA or in-tree) on every node"},
    [IBP_FP_GDR] = {"GPUDirect module", IBP_CK_GDR,
		    "load the same GPUDirect RDMA module (nvidia_peermem) on every node"},
    [IBP_FP_NCCL_IB_HCA] = {"NCCL_IB_HCA", IBP_CK_NCCL_ENV,
			    "set NCCL_IB_HCA the same way on every node, or let spank-ib set it"},
    [IBP_FP_NCCL_IB_GID_INDEX] = {"NCCL_IB_GID_INDEX", IBP_CK_NCCL_ENV,
				  "set NCCL_IB_GID_INDEX the same way on every node"},
    [IBP_FP_NCCL_SOCKET_IFNAME] = {"NCCL_SOCKET_IFNAME", IBP_CK_NCCL_ENV,
				   "set NCCL_SOCKET_IFNAME the same way on every node"},
    [IBP_FP_NCCL_IB_DISABLE] = {"NCCL_IB_DISABLE", IBP_CK_NCCL_ENV,
				"set NCCL_IB_DISABLE the same way on every node"},
    [IBP_FP_NCCL_NET] = {"NCCL_NET", IBP_CK_NCCL_ENV, "set NCCL_NET the same way on every node"},
    [IBP_FP_UCX_NET_DEVICES] = {"UCX_NET_DEVICES", IBP_CK_NCCL_ENV,
				"set UCX_NET_DEVICES the same way on every node"},
};

const char *ibp_fp_field_label(enum ibp_fp_field f)
{
	return (unsigned)f < IBP_FP_N_FIELDS ? fields[f].label : "?";
}

enum ibp_consistency_key ibp_fp_field_key(enum ibp_fp_field f)
{
	return (unsigned)f < IBP_FP_N_FIELDS ? fields[f].key : IBP_CK_N;
}

const char *ibp_fp_field_fix(enum ibp_fp_field f)
{
	return (unsigned)f < IBP_FP_N_FIELDS ? fields[f].fix : "";
}

void ibp_fp_init(struct ibp_fp *fp)
{
	memset(fp, 0, sizeof(*fp));
}

/* FNV-1a, 64 bits: equal values, equal hashes on every node. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void shown(char *dst, size_t size, const char *v)
{
	size_t i, n = strlen(v);

	for (i = 0; i < n && i < size - 1; i++)
		dst[i] = (unsigned char)v[i] >= 0x20 && (unsigned char)v[i] < 0x7f ? v[i] : '?';
	dst[i] = '\0';
	if (n >= size)
		memcpy(dst + size - 4, "...", 4);
}

int ibp_fp_set(struct ibp_fp *fp, enum ibp_fp_field field, const char *rail, const char *value)
{
	struct ibp_fp_entry *e = NULL;

	if ((unsigned)field >= IBP_FP_N_FIELDS || (rail && strlen(rail) >= IBP_FP_RAIL_MAX))
		return -EINVAL;
	if (!rail)
		rail = "";
	if (!value)
		value = "(unset)";
	for (size_t i = 0; i < fp->n && !e; i++)
		if (fp->e[i].field == field && !strcmp(fp->e[i].rail, rail))
			e = &fp->e[i];
	if (!e) {
		if (fp->n == IBP_FP_MAX_ENTRIES) {
			fp->truncated = true;
			return -ENOSPC;
		}
		e = &fp->e[fp->n++];
	}
	memset(e, 0, sizeof(*e));
	e->field = (uint8_t)field;
	snprintf(e->rail, sizeof(e->rail), "%s", rail);
	e->hash = fnv1a(value);
	shown(e->value, sizeof(e->value), value);
	return 0;
}

void ibp_fp_rdma_core_version(char *buf, size_t len)
{
	Dl_info info;
	char real[PATH_MAX];
	const char *base, *v;
	int dots = 0;

	buf[0] = '\0';
	/* libibverbs.so.1.14.44.0 is rdma-core 44.0: the last two numbers */
	if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, real))
		return;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (strncmp(base, "libibverbs.so.", 14) != 0)
		return;
	for (v = base + strlen(base); v > base; v--)
		if (v[-1] == '.' && ++dots == 2)
			break;
	if (dots == 2)
		snprintf(buf, len, "%s", v);
}

static const struct ibp_hca *find_hca(const struct ibp_inventory *inv, const char *name)
{
	for (size_t i = 0; inv && i < inv->n_hcas; i++)
		if (!strcmp(inv->hcas[i].name, name))
			return &inv->hcas[i];
	return NULL;
}

static void rail_fields(struct ibp_fp *fp, const struct ibp_fp_source *src,
			const struct ibp_fp_rail *r, const char *rail, int *rc)
{
	const struct ibp_hca *h = find_hca(src->inv, r->device);
	const struct ibp_port *p = NULL;
	char buf[96];
	int e = 0;

	if (h)
		for (size_t i = 0; i < h->n_ports && !p; i++)
			if (h->ports[i].num == r->port)
				p = &h->ports[i];
	e |= ibp_fp_set(fp, IBP_FP_MODEL, rail, h && h->board_id[0] ? h->board_id : NULL);
	e |= ibp_fp_set(fp, IBP_FP_FIRMWARE, rail, h && h->fw_ver[0] ? h->fw_ver : NULL);
	e |= ibp_fp_set(fp, IBP_FP_LINK_LAYER, rail, p ? ibp_link_layer_name(p->link_layer) : NULL);
	if (p && p->rate.known)
		snprintf(buf, sizeof(buf), "%g Gb/sec (%uX %s)", p->rate.gbps, p->rate.width,
			 p->rate.speed);
	e |= ibp_fp_set(fp, IBP_FP_RATE, rail, p && p->rate.known ? buf : NULL);
	buf[0] = '\0';
	for (size_t i = 0; h && p && i < h->n_netdevs && !buf[0]; i++)
		if (!strcmp(h->netdevs[i].name, p->netdev) && h->netdevs[i].mtu > 0)
			snprintf(buf, sizeof(buf), "%lld", (long long)h->netdevs[i].mtu);
	e |= ibp_fp_set(fp, IBP_FP_MTU, rail, buf[0] ? buf : NULL);
	if (p && p->link_layer == IBP_LL_ETH && r->gid_index >= 0) {
		const char *type = "type unknown";

		for (size_t i = 0; i < p->n_gids; i++)
			if ((int)p->gids[i].index == r->gid_index)
				type = p->gids[i].type == IBP_GID_TYPE_ROCE_V2 ? "RoCE v2"
				       : p->gids[i].type == IBP_GID_TYPE_IB_ROCE_V1
					   ? "RoCE v1"
					   : "type unknown";
		snprintf(buf, sizeof(buf), "index %d %s", r->gid_index, type);
		e |= ibp_fp_set(fp, IBP_FP_GID, rail, buf);
	} else {
		e |= ibp_fp_set(fp, IBP_FP_GID, rail,
				p && p->link_layer == IBP_LL_ETH ? "no RoCE GID" : "LID (no GID)");
	}
	if (e)
		*rc = -ENOSPC;
}

/*
 * "mlx5_[0,3-6,9-11]:1": rails that share a name prefix and a port in
 * Slurm's bracket form, so that a whole DGX fits the shown value; other
 * names as they are, comma-separated.
 */
static void rail_list(const struct ibp_fp_rail *r, size_t n, char *buf, size_t len)
{
	size_t o = 0;
	bool *done = calloc(n ? n : 1, sizeof(*done));

	buf[0] = '\0';
	if (!done)
		return;
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		size_t pl = strlen(r[i].device), k, nums = 0;
		unsigned long v[IBP_FP_MAX_ENTRIES];

		if (done[i])
			continue;
		while (pl && r[i].device[pl - 1] >= '0' && r[i].device[pl - 1] <= '9')
			pl--;
		if (pl == strlen(r[i].device) || (r[i].device[pl] == '0' && r[i].device[pl + 1])) {
			(void)ibp_appendf(buf, len, &o, "%s%s:%u", o ? "," : "", r[i].device,
					  r[i].port);
			done[i] = true;
			continue;
		}
		/* every rail with the same prefix, a number without a leading zero, the same port */
		for (k = i; k < n && nums < IBP_FP_MAX_ENTRIES; k++) {
			const char *d = r[k].device;

			if (done[k] || r[k].port != r[i].port || strncmp(d, r[i].device, pl) != 0 ||
			    !d[pl] || strspn(d + pl, "0123456789") != strlen(d + pl) ||
			    (d[pl] == '0' && d[pl + 1]))
				continue;
			v[nums++] = strtoul(d + pl, NULL, 10);
			done[k] = true;
		}
		for (size_t a = 1; a < nums; a++) /* sort */
			for (size_t b = a; b > 0 && v[b] < v[b - 1]; b--) {
				unsigned long t = v[b];

				v[b] = v[b - 1];
				v[b - 1] = t;
			}
		/* cut: every later append is refused, the loop ends */
		(void)ibp_appendf(buf, len, &o, "%s%.*s%s", o ? "," : "", (int)pl, r[i].device,
				  nums > 1 ? "[" : "");
		for (size_t a = 0; a < nums; a++) {
			size_t b = a;

			while (b + 1 < nums && v[b + 1] == v[b] + 1)
				b++;
			(void)(b > a ? ibp_appendf(buf, len, &o, "%s%lu-%lu", a ? "," : "", v[a],
						   v[b])
				     : ibp_appendf(buf, len, &o, "%s%lu", a ? "," : "", v[a]));
			a = b;
		}
		(void)ibp_appendf(buf, len, &o, "%s:%u", nums > 1 ? "]" : "", r[i].port);
	}
	free(done);
}

int ibp_fp_collect(struct ibp_fp *fp, const struct ibp_fp_source *src)
{
	static const struct {
		enum ibp_fp_field f;
		const char *var;
	} vars[] = {
	    {IBP_FP_NCCL_IB_HCA, "NCCL_IB_HCA"},
	    {IBP_FP_NCCL_IB_GID_INDEX, "NCCL_IB_GID_INDEX"},
	    {IBP_FP_NCCL_SOCKET_IFNAME, "NCCL_SOCKET_IFNAME"},
	    {IBP_FP_NCCL_IB_DISABLE, "NCCL_IB_DISABLE"},
	    {IBP_FP_NCCL_NET, "NCCL_NET"},
	    {IBP_FP_UCX_NET_DEVICES, "UCX_NET_DEVICES"},
	};
	char set[1024] = "", buf[256], rail[IBP_FP_RAIL_MAX];
	int rc = 0;

	rail_list(src->rails, src->n_rails, set, sizeof(set));
	/* the count first, so a cut display still shows it; the hash covers the whole list */
	{
		char whole[sizeof(set) + 32];

		if (snprintf(whole, sizeof(whole), "%zu rail%s: %s", src->n_rails,
			     src->n_rails == 1 ? "" : "s",
			     set[0] ? set : "none") >= (int)sizeof(whole))
			whole[sizeof(whole) - 1] = '\0';
		rc |= ibp_fp_set(fp, IBP_FP_HCA_SET, NULL, whole);
	}
	for (size_t i = 0; i < src->n_rails; i++) {
		if (snprintf(rail, sizeof(rail), "%s:%u", src->rails[i].device,
			     src->rails[i].port) >= (int)sizeof(rail))
			continue;
		rail_fields(fp, src, &src->rails[i], rail, &rc);
	}
	if (src->fs) {
		if (ibp_sysfs_read(src->fs, "proc/sys/kernel/osrelease", buf, sizeof(buf)) <= 0)
			snprintf(buf, sizeof(buf), "(unknown)");
		rc |= ibp_fp_set(fp, IBP_FP_KERNEL, NULL, buf);
		/* the driver of the first rail's PCI function, and its version when it has one */
		buf[0] = '\0';
		if (src->n_rails) {
			char path[160], drv[64] = "", ver[64] = "";

			snprintf(path, sizeof(path), "sys/class/infiniband/%s/device/driver",
				 src->rails[0].device);
			if (ibp_sysfs_link_name(src->fs, path, drv, sizeof(drv)) > 0) {
				if (ibp_sysfs_readf(src->fs, ver, sizeof(ver),
						    "sys/module/%s/version", drv) <= 0)
					snprintf(ver, sizeof(ver), "in-tree");
				snprintf(buf, sizeof(buf), "%s %s", drv, ver);
			}
		}
		rc |= ibp_fp_set(fp, IBP_FP_DRIVER, NULL, buf[0] ? buf : NULL);
		{
			static const char *const mods[] = {"nvidia_peermem", "nv_peer_mem"};
			const char *gdr = NULL;
			char dummy[8];

			for (size_t i = 0; i < 2 && !gdr; i++)
				if (ibp_sysfs_readf(src->fs, dummy, sizeof(dummy), "sys/module/%s",
						    mods[i]) == -EISDIR)
					gdr = mods[i];
			if (!gdr && ibp_sysfs_read(src->fs, "sys/kernel/mm/memory_peers", dummy,
						   sizeof(dummy)) == -EISDIR)
				gdr = "memory_peers";
			rc |= ibp_fp_set(fp, IBP_FP_GDR, NULL, gdr ? gdr : "none");
		}
	}
	if (src->rdma_core) {
		rc |= ibp_fp_set(fp, IBP_FP_RDMA_CORE, NULL, src->rdma_core);
	} else {
		ibp_fp_rdma_core_version(buf, sizeof(buf));
		rc |= ibp_fp_set(fp, IBP_FP_RDMA_CORE, NULL, buf[0] ? buf : NULL);
	}
	for (size_t i = 0; src->getenv && i < sizeof(vars) / sizeof(vars[0]); i++)
		rc |= ibp_fp_set(fp, vars[i].f, NULL, src->getenv(src->getenv_ctx, vars[i].var));
	return rc ? -ENOSPC : 0;
}

/* ---- wire form (fingerprint.h; the codec's reader and writer: fp_wire.h) ---- */

_Static_assert(IBP_FP_MAX_ENTRIES <= 255, "the entry count is one byte");
_Static_assert(IBP_FP_RAIL_MAX <= 256 && IBP_FP_VALUE_MAX <= 256, "string lengths are one byte");

/* No (field, rail) twice in E[0..N): entries are chained per field, only those compared. */
static bool keys_unique(const struct ibp_fp_entry *e, size_t n)
{
	int16_t by_field[IBP_FP_N_FIELDS], next[IBP_FP_MAX_ENTRIES] = {0};

	for (size_t f = 0; f < IBP_FP_N_FIELDS; f++)
		by_field[f] = -1;
	for (size_t i = 0; i < n; i++) {
		for (int k = by_field[e[i].field]; k >= 0; k = next[k])
			if (!strcmp(e[k].rail, e[i].rail))
				return false;
		next[i] = by_field[e[i].field];
		by_field[e[i].field] = (int16_t)i;
	}
	return true;
}

int ibp_fp_check(const struct ibp_fp *fp)
{
	if (fp->n > IBP_FP_MAX_ENTRIES)
		return -EINVAL;
	for (size_t i = 0; i < fp->n; i++) {
		const struct ibp_fp_entry *e = &fp->e[i];

		if (e->field >= IBP_FP_N_FIELDS || !fpw_str_ok(e->rail, sizeof(e->rail)) ||
		    !fpw_str_ok(e->value, sizeof(e->value)))
			return -EINVAL;
	}
	return keys_unique(fp->e, fp->n) ? 0 : -EINVAL; /* one value per (field, rail) */
}

int ibp_fp_encode(const struct ibp_fp *fp, uint8_t *buf, size_t len)
{
	struct fpw_out w = {buf, len, 0, 0};

	if (ibp_fp_check(fp))
		return -EINVAL;
	fpw_put8(&w, (uint8_t)fp->n);
	for (size_t i = 0; i < fp->n; i++) {
		const struct ibp_fp_entry *e = &fp->e[i];

		fpw_put8(&w, e->field);
		fpw_put_str(&w, e->rail);
		fpw_put64(&w, e->hash);
		fpw_put_str(&w, e->value);
	}
	return w.err ? w.err : (int)w.off;
}

int ibp_fp_decode(const uint8_t *buf, size_t len, struct ibp_fp *fp)
{
	struct fpw_in r = {buf, len, 0, 0};
	size_t n;

	ibp_fp_init(fp);
	n = fpw_get8(&r);
	if (n > IBP_FP_MAX_ENTRIES)
		r.err = -EINVAL;
	for (size_t i = 0; i < n && !r.err; i++) {
		struct ibp_fp_entry *e = &fp->e[i];

		e->field = fpw_get8(&r);
		fpw_get_str(&r, e->rail, sizeof(e->rail));
		e->hash = fpw_get64(&r);
		fpw_get_str(&r, e->value, sizeof(e->value));
		if (e->field >= IBP_FP_N_FIELDS)
			r.err = -EINVAL;
	}
	/* short, bad, bytes left over, or a (field, rail) twice */
	if (r.err || r.off != len || !keys_unique(fp->e, n)) {
		ibp_fp_init(fp);
		return -EINVAL;
	}
	fp->n = n;
	return 0;
}

/* ---- the majority ---- */

struct group {
	uint64_t hash;
	const char *value;
	size_t count;
	long first; /* lowest node index in the group */
};

static const struct ibp_fp_entry *entry_of(const struct ibp_fp *fp, uint8_t field, const char *rail)
{
	for (size_t i = 0; fp && i < fp->n; i++)
		if (fp->e[i].field == field && !strcmp(fp->e[i].rail, rail))
			return &fp->e[i];
	return NULL;
}

/* "n3", "n3,n7", "n3,n7,... (12 nodes)": the nodes of group G, within LEN. */
static void group_nodes(const struct ibp_fp *const *fps, const char *const *names, size_t n,
			const struct ibp_fp_entry *const *val, const struct group *g, char *buf,
			size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w;

		if (!fps[i] || !val[i] || val[i]->hash != g->hash)
			continue;
		w = snprintf(buf + o, len - o, "%s%s", o ? "," : "", names[i]);
		if (w < 0 || (size_t)w + 16 >= len - o) {
			snprintf(buf + o, len - o, ",... (%zu nodes)", g->count);
			return;
		}
		o += (size_t)w;
	}
}

/*
 * MINE: a window of neighbours (ibp_fp_compare_window): SELF says what its
 * own value is part of; else what SELF is the first node of.
 */
static int judge_groups(const struct ibp_fp *const *fps, const char *const *names, size_t n,
			const struct ibp_policy *p, long self, bool mine, uint8_t field,
			const char *rail, const struct ibp_fp_entry **val, struct group *g,
			struct ibp_findings *out)
{
	size_t ng = 0, present = 0, best = 0, top = 0;
	int level = p->consistency[fields[field].key];
	char code[IBP_CODE_MAX], dev[IBP_DEV_MAX] = "";
	int port = 0, rc;

	for (size_t i = 0; i < n; i++) {
		val[i] = fps[i] ? entry_of(fps[i], field, rail) : NULL;
		if (!val[i])
			continue;
		present++;
		size_t k;
		for (k = 0; k < ng && g[k].hash != val[i]->hash; k++)
			;
		if (k == ng)
			g[ng++] = (struct group){val[i]->hash, val[i]->value, 0, (long)i};
		g[k].count++;
	}
	if (ng < 2)
		return 0;
	for (size_t k = 0; k < ng; k++)
		if (g[k].count > best) {
			best = g[k].count;
			top = k;
		}
	size_t ties = 0;
	for (size_t k = 0; k < ng; k++)
		ties += g[k].count == best;
	snprintf(code, sizeof(code), "consistency_%s", ibp_consistency_key_name(fields[field].key));
	if (rail[0]) {
		const char *colon = strrchr(rail, ':');

		snprintf(dev, sizeof(dev), "%.*s", (int)(colon ? colon - rail : (long)strlen(rail)),
			 rail);
		uint64_t num;

		port = colon && !ibp_parse_u64(colon + 1, &num) && num <= 255 ? (int)num : 0;
	}
	if (ties > 1) {
		/* no majority: one finding naming every group, said by the first node */
		char obs[IBP_TEXT_MAX + 4] = "", nodes[96];
		size_t o = 0;
		long first = -1;

		for (size_t i = 0; i < n && first < 0; i++)
			if (val[i])
				first = (long)i;
		if (self >= 0 && (mine ? !val[self] : self != first))
			return 0;
		o = (size_t)snprintf(obs, sizeof(obs),
				     "no majority for %s across %zu nodes:", fields[field].label,
				     present);
		for (size_t k = 0; k < ng; k++) {
			group_nodes(fps, names, n, val, &g[k], nodes, sizeof(nodes));
			if (ibp_appendf(obs, sizeof(obs), &o, "%s %s %s", k ? ";" : "", nodes,
					g[k].value))
				break; /* cut */
		}
		struct ibp_finding x;

		memset(&x, 0, sizeof(x));
		snprintf(x.code, sizeof(x.code), "%s", code);
		x.severity = (enum ibp_severity)level;
		x.fclass = IBP_CLASS_JOB;
		snprintf(x.node, sizeof(x.node), "%s", first >= 0 ? names[first] : "");
		snprintf(x.device, sizeof(x.device), "%s", dev);
		x.port = port;
		ibp_format_cut(x.observed, sizeof(x.observed), "%s", obs);
		snprintf(x.fix, sizeof(x.fix), "%s", fields[field].fix);
		return ibp_findings_add(out, &x);
	}
	for (size_t k = 0; k < ng; k++) {
		struct ibp_finding x;
		char nodes[IBP_NODE_MAX];

		/* said by the group's first node only: once, not once per member */
		if (k == top || (self >= 0 && (mine ? !val[self] || val[self]->hash != g[k].hash
						    : g[k].first != self)))
			continue;
		group_nodes(fps, names, n, val, &g[k], nodes, sizeof(nodes));
		memset(&x, 0, sizeof(x));
		snprintf(x.code, sizeof(x.code), "%s", code);
		x.severity = (enum ibp_severity)level;
		x.fclass = IBP_CLASS_JOB;
		snprintf(x.node, sizeof(x.node), "%s", nodes);
		snprintf(x.device, sizeof(x.device), "%s", dev);
		x.port = port;
		if (best == present - g[k].count)
			snprintf(x.observed, sizeof(x.observed), "%s %s, the other %zu node%s %s",
				 fields[field].label, g[k].value, best, best == 1 ? "" : "s",
				 g[top].value);
		else
			snprintf(x.observed, sizeof(x.observed),
				 "%s %s, %zu of the other %zu nodes %s", fields[field].label,
				 g[k].value, best, present - g[k].count, g[top].value);
		snprintf(x.expected, sizeof(x.expected), "%s", g[top].value);
		snprintf(x.fix, sizeof(x.fix), "%s", fields[field].fix);
		rc = ibp_findings_add(out, &x);
		if (rc)
			return rc;
	}
	return 0;
}

static int judge_one(const struct ibp_fp *const *fps, const char *const *names, size_t n,
		     const struct ibp_policy *p, long self, bool mine, uint8_t field,
		     const char *rail, struct ibp_findings *out)
{
	const struct ibp_fp_entry **val;
	struct group *g;
	int rc;

	if (p->consistency[fields[field].key] == IBP_CONSISTENCY_OFF || n < 2)
		return 0;
	val = calloc(n, sizeof(*val));
	g = calloc(n, sizeof(*g));
	if (!val || !g) {
		free(val);
		free(g);
		return -ENOMEM;
	}
	rc = judge_groups(fps, names, n, p, self, mine, field, rail, val, g, out);
	free(val);
	free(g);
	return rc;
}

/*
 * Whether the fingerprints there are hold the same entries in the same
 * order (a step that agrees, the usual one): then every (field, rail) has
 * one value, and there is nothing to say.  O(entries); no allocation.
 */
static bool all_alike(const struct ibp_fp *const *fps, size_t n)
{
	const struct ibp_fp *a = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct ibp_fp *b = fps[i];

		if (!b)
			continue;
		if (!a) {
			a = b;
			continue;
		}
		if (b->n != a->n)
			return false;
		for (size_t j = 0; j < a->n; j++)
			if (b->e[j].field != a->e[j].field || b->e[j].hash != a->e[j].hash ||
			    strcmp(b->e[j].rail, a->e[j].rail) != 0)
				return false;
	}
	return true;
}

static int compare(const struct ibp_fp *const *fps, const char *const *names, size_t n,
		   const struct ibp_policy *p, long self, bool mine, struct ibp_findings *out)
{
	const struct ibp_fp_entry **keys = NULL;
	size_t nk = 0, cap = 0;
	int rc = 0;

	if (all_alike(fps, n))
		return 0;

	/* every (field, rail) any node has, in first-seen order, each judged once */
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; fps[i] && j < fps[i]->n; j++) {
			const struct ibp_fp_entry *e = &fps[i]->e[j];
			size_t k;

			for (k = 0; k < nk; k++)
				if (keys[k]->field == e->field && !strcmp(keys[k]->rail, e->rail))
					break;
			if (k < nk)
				continue;
			if (nk == cap) {
				const struct ibp_fp_entry **nv;

				cap = cap ? cap * 2 : 64;
				nv = reallocarray(keys, cap, sizeof(*keys));
				if (!nv) {
					free(keys);
					return -ENOMEM;
				}
				keys = nv;
			}
			keys[nk++] = e;
		}
	}
	for (size_t k = 0; k < nk && !rc; k++)
		rc = judge_one(fps, names, n, p, self, mine, keys[k]->field, keys[k]->rail, out);
	free(keys);
	return rc;
}

int ibp_fp_compare(const struct ibp_fp *const *fps, const char *const *names, size_t n,
		   const struct ibp_policy *p, long self, struct ibp_findings *out)
{
	return compare(fps, names, n, p, self, false, out);
}

int ibp_fp_compare_window(const struct ibp_fp *const *fps, const char *const *names, size_t n,
			  const struct ibp_policy *p, long self, struct ibp_findings *out)
{
	return compare(fps, names, n, p, self, true, out);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* env.c: NCCL/UCX/MPI/IBPREP_* variables for a placement, and lint; see env.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/cpulist.h"
#include "ibprep/env.h"
#include "ibprep/text.h"

#define VAL_MAX 4096 /* the longest value we build (a 64-GPU map fits) */

void ibp_env_init(struct ibp_env *env)
{
	memset(env, 0, sizeof(*env));
}

void ibp_env_release(struct ibp_env *env)
{
	for (size_t i = 0; env->v && i < env->n; i++) {
		free(env->v[i].value);
		free(env->v[i].user);
	}
	free(env->v);
	ibp_env_init(env);
}

const struct ibp_env_var *ibp_env_find(const struct ibp_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (!strcmp(env->v[i].name, name))
			return &env->v[i];
	return NULL;
}

int ibp_env_envp_get(void *ctx, const char *name, char *buf, size_t len)
{
	char **envp = ctx;
	size_t nl = strlen(name);

	for (size_t i = 0; envp && envp[i]; i++) {
		if (strncmp(envp[i], name, nl) != 0 || envp[i][nl] != '=')
			continue;
		const char *v = envp[i] + nl + 1;
		size_t vl = strlen(v);

		if (vl >= len)
			return -ENOSPC;
		memcpy(buf, v, vl + 1);
		return (int)vl;
	}
	return -ENOENT;
}

const char *ibp_env_gdr_level(enum ibp_dist d)
{
	switch (d) {
	case IBP_DIST_PIX:
		return "PIX";
	case IBP_DIST_PXB:
		return "PXB";
	case IBP_DIST_PHB:
	case IBP_DIST_NODE: /* NCCL's PHB is "through the CPU": nvidia-smi's PHB and NODE */
		return "PHB";
	case IBP_DIST_SYS:
	case IBP_DIST_UNKNOWN:
		break;
	}
	/* across sockets GDR is slower than staging through host memory: stop at PHB */
	return "PHB";
}

int ibp_shell_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	bool bare = *s != '\0';

	for (const char *p = s; *p && bare; p++)
		bare =
		    strchr(
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_,.:=/+-@%^",
			*p) != NULL;
	if (bare) {
		if (strlen(s) >= len)
			return -ENOSPC;
		memcpy(buf, s, strlen(s) + 1);
		return (int)strlen(s);
	}
	if (len < 3)
		return -ENOSPC;
	buf[o++] = '\'';
	for (const char *p = s; *p; p++) {
		const char *piece = *p == '\'' ? "'\\''" : NULL;
		size_t pl = piece ? 4 : 1;

		if (o + pl + 2 > len)
			return -ENOSPC;
		if (piece)
			memcpy(buf + o, piece, pl);
		else
			buf[o] = *p;
		o += pl;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return (int)o;
}

int ibp_env_route_ifname(const char *peer, char *ifname, size_t len)
{
	struct sockaddr_storage ss, me;
	socklen_t sl = sizeof(me);
	struct ifaddrs *ifa = NULL;
	int fd, rc = -ENOENT;

	memset(&ss, 0, sizeof(ss));
	memset(&me, 0, sizeof(me));
	if (!peer || !len)
		return -EINVAL;
	if (inet_pton(AF_INET, peer, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(9);
	} else if (inet_pton(AF_INET6, peer, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(9);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* connect() on UDP only picks the route and source address: nothing is sent */
	if (connect(fd, (struct sockaddr *)&ss,
		    ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
					    : sizeof(struct sockaddr_in6)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &sl) < 0) {
		rc = errno == ENETUNREACH ? -ENETUNREACH : -errno;
		close(fd);
		return rc;
	}
	close(fd);
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != me.ss_family)
			continue;
		if ((me.ss_family == AF_INET &&
		     ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
			 ((struct sockaddr_in *)&me)->sin_addr.s_addr) ||
		    (me.ss_family == AF_INET6 &&
		     !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			     &((struct sockaddr_in6 *)&me)->sin6_addr, sizeof(struct in6_addr)))) {
			int n = snprintf(ifname, len, "%s", i->ifa_name);

			rc = n < 0 || (size_t)n >= len ? -ENOSPC : 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

static const struct ibp_topo_port *port_of(const struct ibp_topo_hca *h, unsigned num)
{
	for (unsigned p = 0; p < h->n_ports; p++)
		if (h->ports[p].num == num)
			return &h->ports[p];
	return NULL;
}

/* A device name the user wrote: the topology's HCA, or NULL. */
static const struct ibp_topo_hca *hca_named(const struct ibp_topo *topo, const char *name,
					    size_t nl)
{
	for (size_t i = 0; i < topo->n_hcas; i++)
		if (topo->hcas[i].kind == IBP_NIC_RDMA && strlen(topo->hcas[i].name) == nl &&
		    !strncmp(topo->hcas[i].name, name, nl))
			return &topo->hcas[i];
	return NULL;
}

/* Whether the comma-separated LIST holds ITEM. */
static bool listed(const char *list, const char *item)
{
	size_t il = strlen(item);

	for (const char *p = list; *p;) {
		size_t el = strcspn(p, ",");

		if (el == il && !strncmp(p, item, il))
			return true;
		p += el;
		if (*p == ',')
			p++;
	}
	return false;
}

/*
 * The exact-match form of an NCCL_IB_HCA list (VALUE after its '^'), naming
 * only devices of this node: an entry that is a device stays; one that is
 * only a prefix becomes the devices it matches (with its ":port"); one that
 * matches nothing is left out.  "" when nothing is left or it does not fit.
 */
static void exact_list(const char *value, const struct ibp_topo *topo, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (const char *p = value; *p;) {
		size_t el = strcspn(p, ","), nl = strcspn(p, ":,");
		const char *port = p + nl < p + el ? p + nl : "";
		int portl = (int)(el - nl);

		for (size_t i = 0; el && i < topo->n_hcas; i++) {
			const char *o = topo->hcas[i].name;
			bool starts = strncmp(o, p, nl) == 0, same = starts && strlen(o) == nl;
			char item[96];

			if (topo->hcas[i].kind != IBP_NIC_RDMA || !starts ||
			    (!same && hca_named(topo, p, nl)))
				continue; /* not it, or the entry is a device: only that one */
			snprintf(item, sizeof(item), "%s%.*s", o, portl, port);
			if (listed(buf, item))
				continue;
			if (ibp_appendf(buf, len, &off, "%s%s", off ? "," : "", item)) {
				buf[0] = '\0';
				return;
			}
		}
		p += el;
		if (*p == ',')
			p++;
	}
}

/* One list entry "name[:port]": checks it names a present, healthy port.
 * EXACT: the list in exact form for the prefix finding's fix, or "". */
static int lint_entry(const char *var, const char *e, size_t el, const struct ibp_topo *topo,
		      bool prefix_mode, bool only_prefix, const char *exact, struct ibp_findings *f)
{
	const char *colon = memchr(e, ':', el);
	size_t nl = colon ? (size_t)(colon - e) : el;
	const struct ibp_topo_hca *h = hca_named(topo, e, nl);
	unsigned long port = 0;
	char name[64];
	int rc = 0;

	snprintf(name, sizeof(name), "%.*s", (int)(nl < 63 ? nl : 63), e);
	if (colon) {
		char *end;
		char pbuf[16];

		snprintf(pbuf, sizeof(pbuf), "%.*s", (int)(el - nl - 1 < 15 ? el - nl - 1 : 15),
			 colon + 1);
		port = strtoul(pbuf, &end, 10);
		if (!pbuf[0] || *end || port == 0 || port > 255)
			return ibp_findings_addf(
			    f, "env_bad_port", IBP_SEV_WARN, IBP_CLASS_JOB, name, 0,
			    "a port number from 1", "write the entry as DEVICE:PORT, e.g. mlx5_0:1",
			    "%s entry '%.*s' has a malformed port", var, (int)el, e);
	}
	if (prefix_mode) {
		char also[160] = "";
		size_t n_also = 0;

		for (size_t i = 0; i < topo->n_hcas; i++) {
			const char *o = topo->hcas[i].name;

			if (strlen(o) > nl && !strncmp(o, e, nl) &&
			    topo->hcas[i].kind == IBP_NIC_RDMA) {
				size_t al = strlen(also);

				if (al + strlen(o) + 3 < sizeof(also))
					snprintf(also + al, sizeof(also) - al, "%s%s",
						 n_also ? ", " : "", o);
				n_also++;
			}
		}
		if (n_also) {
			char fix[IBP_TEXT_MAX];
			int n = exact && exact[0]
				    ? snprintf(fix, sizeof(fix),
					       "start the list with '=' so names match exactly: "
					       "NCCL_IB_HCA='%s'",
					       exact)
				    : -1;

			if (n < 0 || (size_t)n >= sizeof(fix))
				snprintf(fix, sizeof(fix),
					 "start the list with '=' and name each device exactly");
			rc = ibp_findings_addf(
			    f, "nccl_ib_hca_prefix", IBP_SEV_WARN, IBP_CLASS_JOB, name, 0,
			    "exact device names", fix,
			    "NCCL_IB_HCA entry '%s' is a prefix: it also matches %s", name, also);
		}
		if (rc || only_prefix || (!h && n_also))
			return rc;
	}
	if (!h)
		return ibp_findings_addf(
		    f, "env_hca_absent", IBP_SEV_WARN, IBP_CLASS_JOB, name, 0,
		    "an RDMA device of this node",
		    "name only devices 'ibprep place' lists, or unset the variable",
		    "%s names %s, which this node does not have", var, name);
	for (unsigned p = 0; p < h->n_ports; p++) {
		const struct ibp_topo_port *tp = &h->ports[p];

		if ((port && tp->num != port) || tp->healthy)
			continue;
		rc = ibp_findings_addf(
		    f, "env_hca_unhealthy", IBP_SEV_WARN, IBP_CLASS_JOB, h->name, (int)tp->num,
		    "healthy ports only",
		    "remove it from the variable, or unset it and let spank-ib choose",
		    "%s names a port that is not usable: %s", var, tp->why);
		if (rc)
			return rc;
	}
	if (port && !port_of(h, (unsigned)port))
		return ibp_findings_addf(
		    f, "env_hca_absent", IBP_SEV_WARN, IBP_CLASS_JOB, h->name, (int)port,
		    "an existing port", "name only ports 'ibprep place' lists",
		    "%s names port %lu, which %s does not have", var, port, h->name);
	return 0;
}

int ibp_env_lint_nccl_ib_hca(const char *value, const struct ibp_topo *topo, struct ibp_findings *f)
{
	const char *p = value;
	bool exclude = false, exact = false;
	char fix[IBP_TEXT_MAX] = "";
	int rc = 0;

	if (!value)
		return 0;
	if (*p == '^') {
		exclude = true;
		p++;
	}
	if (*p == '=') {
		exact = true;
		p++;
	}
	if (!exclude && *p == '^')
		return ibp_findings_addf(
		    f, "nccl_ib_hca_syntax", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
		    "'^' before '=' (NCCL_IB_HCA=^=mlx5_0)", "write '^=' to exclude exact names",
		    "NCCL_IB_HCA='%s' has '^' after '=': NCCL reads it as a device name", value);
	if (strpbrk(p, "^="))
		return ibp_findings_addf(f, "nccl_ib_hca_syntax", IBP_SEV_WARN, IBP_CLASS_JOB, NULL,
					 0, "'^' and '=' only at the start of the whole list",
					 "put one '=' (or '^=') before the first entry only",
					 "NCCL_IB_HCA='%s' has '^' or '=' inside the list", value);
	if (!exact) {
		/* the fix of a prefix finding: the same list, exact, this node's devices only */
		size_t l = exclude ? 2 : 1;

		memcpy(fix, exclude ? "^=" : "=", l);
		exact_list(p, topo, fix + l, sizeof(fix) - l);
		if (!fix[l])
			fix[0] = '\0';
	}
	while (*p && !rc) {
		size_t el = strcspn(p, ",");

		if (el) {
			if (exclude) {
				/* excluding an absent name is harmless; only prefixes matter */
				if (!exact)
					rc = lint_entry("NCCL_IB_HCA", p, el, topo, true, true, fix,
							f);
			} else {
				rc = lint_entry("NCCL_IB_HCA", p, el, topo, !exact, false, fix, f);
			}
		}
		p += el;
		if (*p == ',')
			p++;
	}
	return rc;
}

int ibp_env_lint_ucx_net_devices(const char *value, const struct ibp_topo *topo,
				 struct ibp_findings *f)
{
	const char *p = value;
	int rc = 0;

	if (!value || !strcmp(value, "all"))
		return 0;
	while (*p && !rc) {
		size_t el = strcspn(p, ",");
		const char *colon = memchr(p, ':', el);

		if (el && !colon && hca_named(topo, p, el))
			rc = ibp_findings_addf(
			    f, "ucx_net_devices_portless", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			    "DEVICE:PORT entries", "add the port: UCX_NET_DEVICES=mlx5_0:1",
			    "UCX_NET_DEVICES entry '%.*s' has no port: UCX ignores it", (int)el, p);
		else if (el && colon && hca_named(topo, p, (size_t)(colon - p)))
			rc = lint_entry("UCX_NET_DEVICES", p, el, topo, false, false, NULL, f);
		p += el;
		if (*p == ',')
			p++;
	}
	return rc;
}

/* Appends NAME=VALUE, honouring the user's value.  Lint happens in the caller. */
static int env_put(struct ibp_env *env, const char *name, const char *value, bool force,
		   ibp_env_get_fn get, void *ctx, const char **user_out)
{
	struct ibp_env_var *v;
	char ubuf[VAL_MAX];
	int ul = get ? get(ctx, name, ubuf, sizeof(ubuf)) : -ENOENT;

	if (env->n == env->cap) {
		struct ibp_env_var *nv =
		    realloc(env->v, (env->cap ? env->cap * 2 : 16) * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		env->v = nv;
		env->cap = env->cap ? env->cap * 2 : 16;
	}
	v = &env->v[env->n];
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->value = strdup(value);
	if (ul >= 0 || ul == -ENOSPC)
		v->user = strdup(ul >= 0 ? ubuf : "(too long to read)");
	if (!v->value || ((ul >= 0 || ul == -ENOSPC) && !v->user)) {
		free(v->value);
		free(v->user);
		return -ENOMEM;
	}
	v->action = !v->user ? IBP_ENV_SET : force ? IBP_ENV_FORCED : IBP_ENV_USER_KEPT;
	env->n++;
	if (user_out)
		*user_out = v->user;
	return 0;
}

/* Appends "SEP ITEM" to a bounded buffer; false when it no longer fits. */
__attribute__((format(printf, 3, 4))) static bool cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t l = strlen(buf);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + l, len - l, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - l) {
		buf[l] = '\0';
		return false;
	}
	return true;
}

static void nic_list(const struct ibp_topo *topo, const struct ibp_place_nic *nics, size_t n,
		     char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (nics[i].hca < 0 || topo->hcas[nics[i].hca].kind != IBP_NIC_RDMA)
			continue;
		if (!cat(buf, len, "%s%s:%u", buf[0] ? "," : "", topo->hcas[nics[i].hca].name,
			 nics[i].port))
			break;
	}
}

static int gid_index_of(const struct ibp_topo *topo, const struct ibp_place_view *view)
{
	for (size_t i = 0; i < view->n_nics; i++) {
		const struct ibp_topo_port *p;

		if (view->nics[i].hca < 0)
			continue;
		p = port_of(&topo->hcas[view->nics[i].hca], view->nics[i].port);
		if (p && p->gid_index >= 0)
			return p->gid_index;
	}
	return -1;
}

static int put_and_lint(struct ibp_env *env, const struct ibp_topo *topo, const char *name,
			const char *value, const struct ibp_env_opts *opts, ibp_env_get_fn get,
			void *ctx, struct ibp_findings *f)
{
	const char *user = NULL;
	int rc = env_put(env, name, value, opts && opts->force, get, ctx, &user);

	if (rc || !user)
		return rc;
	if (!strcmp(name, "NCCL_IB_HCA"))
		return ibp_env_lint_nccl_ib_hca(user, topo, f);
	if (!strcmp(name, "UCX_NET_DEVICES"))
		return ibp_env_lint_ucx_net_devices(user, topo, f);
	if (!strcmp(name, "CUDA_DEVICE_ORDER") && strcmp(user, "PCI_BUS_ID") != 0)
		return ibp_findings_addf(
		    f, "cuda_device_order", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0, "PCI_BUS_ID",
		    "export CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers GPUs as Slurm and "
		    "nvidia-smi do",
		    "CUDA_DEVICE_ORDER=%s: CUDA's device 0 may not be the GPU Slurm gave as 0",
		    user);
	return 0;
}

int ibp_env_build(struct ibp_env *env, const struct ibp_topo *topo, const struct ibp_placement *pl,
		  const struct ibp_place_view *view, const struct ibp_policy *pol,
		  const struct ibp_env_opts *opts, ibp_env_get_fn get, void *ctx,
		  struct ibp_findings *f)
{
	char *val = malloc(VAL_MAX), num[32];
	bool nvidia = false;
	int rc = 0, gid;
	enum ibp_dist worst = IBP_DIST_PIX;

	ibp_env_init(env);
	if (!val)
		return -ENOMEM;
	if (!topo || !pl || !view || !pol) {
		free(val);
		return -EINVAL;
	}
#define PUT(name, value)                                                                           \
	do {                                                                                       \
		if (!rc)                                                                           \
			rc = put_and_lint(env, topo, name, value, opts, get, ctx, f);              \
	} while (0)
	/* NCCL: the node's healthy fabric ports (it picks per GPU itself and needs the rest for PXN) */
	if (pol->nccl_hca_per_task)
		nic_list(topo, view->nics, view->n_nics, val + 1, VAL_MAX - 1);
	else
		nic_list(topo, pl->fabric, pl->n_fabric, val + 1, VAL_MAX - 1);
	val[0] = '=';
	if (val[1])
		PUT("NCCL_IB_HCA", val);
	if (pol->socket_ifname[0] || (opts && opts->socket_ifname && opts->socket_ifname[0])) {
		snprintf(val, VAL_MAX, "=%s",
			 pol->socket_ifname[0] ? pol->socket_ifname : opts->socket_ifname);
		PUT("NCCL_SOCKET_IFNAME", val);
	}
	gid = gid_index_of(topo, view);
	snprintf(num, sizeof(num), "%d", gid);
	if (pol->set_gid_index && pl->fabric_ll == IBP_LL_ETH && gid >= 0)
		PUT("NCCL_IB_GID_INDEX", num);
	for (size_t i = 0; i < view->n_gpus; i++) {
		const struct ibp_place_gpu *g = &pl->gpus[view->gpus[i]];

		if (g->nic.hca >= 0 && g->nic.dist > worst)
			worst = g->nic.dist;
		nvidia |= topo->gpus[view->gpus[i]].d.vendor == 0x10de;
	}
	if (pol->set_gdr_level && view->n_gpus && view->n_nics)
		PUT("NCCL_NET_GDR_LEVEL", ibp_env_gdr_level(worst));
	for (size_t i = 0; i < topo->n_gpus; i++)
		nvidia |= topo->gpus[i].d.vendor == 0x10de;
	if (nvidia)
		PUT("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	/* UCX: this process's own ports, nearest first, always with the port */
	nic_list(topo, view->nics, view->n_nics, val, VAL_MAX);
	if (val[0])
		PUT("UCX_NET_DEVICES", val);
	if (pol->set_gid_index && pl->fabric_ll == IBP_LL_ETH && gid >= 0)
		PUT("UCX_IB_GID_INDEX", num);
	if (pol->ompi_ucx)
		PUT("OMPI_MCA_pml", "ucx");
	/* ibprep's own description of the placement */
	val[0] = '\0';
	for (size_t i = 0; i < view->n_gpus; i++)
		cat(val, VAL_MAX, "%s%s", i ? "," : "", topo->gpus[view->gpus[i]].d.pci);
	PUT("IBPREP_GPUS", val);
	nic_list(topo, view->nics, view->n_nics, val, VAL_MAX);
	for (size_t i = 0; i < view->n_nics; i++) /* Slingshot NICs by netdev name */
		if (view->nics[i].hca >= 0 && topo->hcas[view->nics[i].hca].kind != IBP_NIC_RDMA)
			cat(val, VAL_MAX, "%s%s", val[0] ? "," : "",
			    topo->hcas[view->nics[i].hca].name);
	PUT("IBPREP_HCAS", val);
	if (ibp_cpulist_format(view->cpus, val, VAL_MAX) >= 0)
		PUT("IBPREP_CPUS", val);
	if (ibp_cpulist_format(view->mems, val, VAL_MAX) >= 0)
		PUT("IBPREP_MEMS", val);
	snprintf(num, sizeof(num), "%u", view->local_rank);
	PUT("IBPREP_LOCAL_RANK", num);
	/* per GPU: BUSID|HCA:PORT|CPUS|MEMS, ';' between GPUs */
	val[0] = '\0';
	for (size_t i = 0; i < view->n_gpus; i++) {
		const struct ibp_place_gpu *g = &pl->gpus[view->gpus[i]];
		char nic[96] = "", cpus[1024] = "", mems[256] = "";

		if (g->nic.hca >= 0 && topo->hcas[g->nic.hca].kind != IBP_NIC_RDMA)
			snprintf(nic, sizeof(nic), "%s", topo->hcas[g->nic.hca].name);
		else
			ibp_place_nic_name(topo, &g->nic, nic, sizeof(nic));
		if (g->cpus)
			ibp_cpulist_format(g->cpus, cpus, sizeof(cpus));
		if (g->mems)
			ibp_cpulist_format(g->mems, mems, sizeof(mems));
		if (!cat(val, VAL_MAX, "%s%s|%s|%s|%s", i ? ";" : "",
			 topo->gpus[view->gpus[i]].d.pci, nic, cpus, mems))
			break;
	}
	if (val[0])
		PUT("IBPREP_GPU_MAP", val);
#undef PUT
	free(val);
	if (rc)
		ibp_env_release(env);
	return rc;
}

int ibp_env_tasks_at(const char *list, unsigned nodeid)
{
	const char *p = list;
	unsigned long node = nodeid;
	int found = -EINVAL;

	if (!list || !*list)
		return -EINVAL;
	/* the whole list is checked, not only up to NODEID's entry */
	while (*p) {
		char *end;
		unsigned long n, rep = 1;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		n = strtoul(p, &end, 10);
		if (errno || n < 1 || n > IBP_PLACE_MAX_TASKS)
			return -EINVAL;
		p = end;
		if (!strncmp(p, "(x", 2)) {
			if (p[2] < '0' || p[2] > '9')
				return -EINVAL;
			errno = 0;
			rep = strtoul(p + 2, &end, 10);
			if (errno || *end != ')' || rep < 1)
				return -EINVAL;
			p = end + 1;
		}
		if (found < 0 && node < rep)
			found = (int)n;
		else if (found < 0)
			node -= rep;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -EINVAL;
	}
	return found; /* -EINVAL: the list is shorter than the node index */
}

__attribute__((format(printf, 3, 4))) static int errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
		va_end(ap);
	}
	return 0;
}

int ibp_env_parse_gpus(const char *list, const char *from, const struct ibp_topo *topo,
		       unsigned *out, size_t max, bool *all, char *err, size_t errlen)
{
	int n;

	*all = false;
	if (!list)
		return -EINVAL;
	if (!strcmp(list, "all")) {
		*all = true;
		return 0;
	}
	if (strchr(list, ':')) {
		const char *p = list;

		n = 0;
		while (*p) {
			size_t l = strcspn(p, ",");
			char id[16];
			const struct ibp_topo_gpu *g;

			if (l == 0 || l >= sizeof(id)) {
				errf(err, errlen, "%s='%s': expected bus IDs like 0000:44:00.0",
				     from, list);
				return -EINVAL;
			}
			memcpy(id, p, l);
			id[l] = '\0';
			g = ibp_topo_find_gpu(topo, id);
			if (!g) {
				errf(err, errlen,
				     "%s names GPU %s, which is not in the topology: see "
				     "'ibprep place --gpus all'",
				     from, id);
				return -ERANGE;
			}
			for (int k = 0; k < n; k++)
				if (out[k] == g->index) {
					errf(err, errlen, "%s lists GPU %s twice", from, id);
					return -EINVAL;
				}
			if ((size_t)n >= max)
				return -E2BIG;
			out[n++] = g->index;
			p += l;
			if (*p == ',')
				p++;
		}
		return n;
	}
	n = ibp_indexlist_parse(list, out, max);
	if (n < 0) {
		errf(err, errlen,
		     "%s='%s' is not a GPU list: expected indices (0,1,3 or 0-3), bus IDs or all",
		     from, list);
		return n == -E2BIG ? -E2BIG : -EINVAL;
	}
	for (int i = 0; i < n; i++)
		if (out[i] >= topo->n_gpus) {
			errf(err, errlen,
			     "%s names GPU %u, but the node has %zu GPU%s (indices in PCI bus "
			     "order)",
			     from, out[i], topo->n_gpus, topo->n_gpus == 1 ? "" : "s");
			return -ERANGE;
		}
	return n;
}

/* A variable through GET into BUF: 1 set, 0 unset (or empty). */
static int getv(ibp_env_get_fn get, void *ctx, const char *name, char *buf, size_t len)
{
	int l = get ? get(ctx, name, buf, len) : -ENOENT;

	return l > 0;
}

int ibp_env_read_step(struct ibp_step_env *out, const struct ibp_topo *topo, ibp_env_get_fn get,
		      void *ctx, char *err, size_t errlen)
{
	static const char *const gpu_vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"};
	static const char *const task_vars[] = {"SLURM_STEP_TASKS_PER_NODE",
						"SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"};
	char buf[1024];
	unsigned long nodeid = 0;
	char *end;

	memset(out, 0, sizeof(*out));
	out->local_rank = -1;
	if (err && errlen)
		err[0] = '\0';
	if (getv(get, ctx, "SLURM_NODEID", buf, sizeof(buf))) {
		errno = 0;
		nodeid = strtoul(buf, &end, 10);
		if (errno || *end || buf[0] == '-' || nodeid > 1UL << 20) {
			errf(err, errlen, "SLURM_NODEID='%s': expected a node index", buf);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < 3; i++) {
		int n;

		if (!getv(get, ctx, task_vars[i], buf, sizeof(buf)))
			continue;
		n = ibp_env_tasks_at(buf, (unsigned)nodeid);
		if (n < 0) {
			errf(err, errlen, "%s='%s' at node %lu: expected a list like 8(x2),4",
			     task_vars[i], buf, nodeid);
			return -EINVAL;
		}
		out->ntasks = (unsigned)n;
		snprintf(out->ntasks_from, sizeof(out->ntasks_from), "%s", task_vars[i]);
		break;
	}
	if (getv(get, ctx, "SLURM_LOCALID", buf, sizeof(buf))) {
		unsigned long r;

		errno = 0;
		r = strtoul(buf, &end, 10);
		if (errno || *end || buf[0] == '-' || r >= IBP_PLACE_MAX_TASKS) {
			errf(err, errlen, "SLURM_LOCALID='%s': expected a local task index", buf);
			return -EINVAL;
		}
		out->local_rank = (int)r;
	}
	for (size_t i = 0; i < 2; i++) {
		bool all;
		int n;

		if (!getv(get, ctx, gpu_vars[i], buf, sizeof(buf)))
			continue;
		n = ibp_env_parse_gpus(buf, gpu_vars[i], topo, out->gpus, IBP_PLACE_MAX_GPUS, &all,
				       err, errlen);
		if (n < 0)
			return n;
		out->have_gpus = true;
		out->n_gpus = (size_t)n;
		snprintf(out->gpus_from, sizeof(out->gpus_from), "%s", gpu_vars[i]);
		break;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* prom.c: the Prometheus text exposition of prom.h and the atomic textfile write. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/atomic_write.h"
#include "ibprep/hca.h"
#include "ibprep/prom.h"

static bool name_chars(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *c = s; *c; c++) {
		bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			     (colon && *c == ':');
		bool digit = *c >= '0' && *c <= '9';
		if (!alpha && !(digit && c != s))
			return false;
	}
	return true;
}

bool ibp_prom_name_valid(const char *name)
{
	return name_chars(name, true);
}

bool ibp_prom_label_name_valid(const char *name)
{
	return name_chars(name, false) && strncmp(name, "__", 2) != 0;
}

/* Escapes IN into OUT; HELP text escapes only backslash and newline. */
static int escape(const char *in, char *out, size_t len, bool quote)
{
	size_t o = 0;

	if (!out || len == 0)
		return -ENOSPC;
	for (const char *c = in ? in : ""; *c; c++) {
		const char *rep = NULL;
		char one[2] = {*c, '\0'};
		if (*c == '\\')
			rep = "\\\\";
		else if (*c == '\n')
			rep = "\\n";
		else if (*c == '"' && quote)
			rep = "\\\"";
		else
			rep = one;
		size_t rl = strlen(rep);
		if (o + rl >= len) {
			out[0] = '\0';
			return -ENOSPC;
		}
		memcpy(out + o, rep, rl);
		o += rl;
	}
	out[o] = '\0';
	return (int)o;
}

int ibp_prom_escape(const char *in, char *out, size_t len)
{
	return escape(in, out, len, true);
}

void ibp_prom_init(struct ibp_prom *w, FILE *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

static int fail(struct ibp_prom *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

int ibp_prom_family(struct ibp_prom *w, const char *name, const char *type, const char *help)
{
	static const char *const types[] = {"gauge", "counter", "info", "stateset", "untyped"};
	char esc[512];
	bool type_ok = false;

	if (w->err)
		return w->err;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		type_ok = type_ok || (type && !strcmp(type, types[i]));
	if (!ibp_prom_name_valid(name) || strlen(name) >= sizeof(w->family) || !type_ok ||
	    w->n_done >= sizeof(w->done) / sizeof(w->done[0]))
		return fail(w, -EINVAL);
	for (size_t i = 0; i < w->n_done; i++)
		if (!strcmp(w->done[i], name))
			return fail(w, -EINVAL);
	if (escape(help, esc, sizeof(esc), false) < 0)
		return fail(w, -EINVAL);
	/* Text format 0.0.4 knows gauge, counter, untyped (and summary, histogram):
	 * info and stateset families are gauges there, as client libraries write them. */
	if (!strcmp(type, "info") || !strcmp(type, "stateset"))
		type = "gauge";
	snprintf(w->family, sizeof(w->family), "%s", name);
	snprintf(w->done[w->n_done++], sizeof(w->done[0]), "%s", name);
	if (fprintf(w->out, "# HELP %s %s\n# TYPE %s %s\n", name, esc, name, type) < 0)
		return fail(w, -EIO);
	return 0;
}

static void value_text(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: exact integers */
		snprintf(buf, len, "%.0f", v);
	else {
		/* the shortest text that reads back as the same double */
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
}

int ibp_prom_sample(struct ibp_prom *w, const char *name, const char *const *labels, double value)
{
	char esc[1024], val[40];
	size_t fl = strlen(w->family);

	if (w->err)
		return w->err;
	if (!fl || !ibp_prom_name_valid(name) || strncmp(name, w->family, fl) != 0)
		return fail(w, -EINVAL);
	if (fputs(name, w->out) < 0)
		return fail(w, -EIO);
	if (labels && labels[0]) {
		for (size_t i = 0; labels[i]; i += 2) {
			if (!ibp_prom_label_name_valid(labels[i]) || !labels[i + 1] ||
			    ibp_prom_escape(labels[i + 1], esc, sizeof(esc)) < 0)
				return fail(w, -EINVAL);
			if (fprintf(w->out, "%s%s=\"%s\"", i ? "," : "{", labels[i], esc) < 0)
				return fail(w, -EIO);
		}
		if (fputc('}', w->out) == EOF)
			return fail(w, -EIO);
	}
	value_text(value, val, sizeof(val));
	if (fprintf(w->out, " %s\n", val) < 0)
		return fail(w, -EIO);
	return 0;
}

int ibp_prom_finish(struct ibp_prom *w)
{
	if (!w->err && fflush(w->out) != 0)
		w->err = -EIO;
	if (!w->err && ferror(w->out))
		w->err = -EIO;
	return w->err;
}

/* ---- the check's metrics ------------------------------------------------- */

static bool finding_names(const struct ibp_finding *x, const char *code, const char *dev)
{
	return !strcmp(x->code, code) &&
	       (!strcmp(x->device, dev) || ibp_health_device_matches(x->device, dev));
}

static bool has_finding(const struct ibp_findings *f, const char *code, const char *dev)
{
	for (size_t i = 0; i < f->n; i++)
		if (finding_names(&f->v[i], code, dev))
			return true;
	return false;
}

/* Findings with the same labels are one series: its value counts them. */
static void write_findings(struct ibp_prom *w, const struct ibp_findings *f)
{
	ibp_prom_family(w, "ibprep_finding", "gauge",
			"Findings of the check by code, severity, class, device and port "
			"(the value counts findings with these labels)");
	for (size_t i = 0; i < f->n; i++) {
		const struct ibp_finding *x = &f->v[i];
		bool seen = false;
		double n = 0;
		char port[16] = "";
		for (size_t k = 0; k < f->n && !seen; k++) {
			const struct ibp_finding *y = &f->v[k];
			bool same = !strcmp(x->code, y->code) && x->severity == y->severity &&
				    x->fclass == y->fclass && !strcmp(x->device, y->device) &&
				    x->port == y->port;
			if (same && k < i)
				seen = true;
			else if (same)
				n++;
		}
		if (seen)
			continue;
		if (x->port > 0)
			snprintf(port, sizeof(port), "%d", x->port);
		const char *labels[] = {"code",     x->code,
					"severity", ibp_severity_name(x->severity),
					"class",    ibp_class_name(x->fclass),
					"device",   x->device,
					"port",     port,
					NULL};
		ibp_prom_sample(w, "ibprep_finding", labels, n);
	}
}

enum port_metric { PM_HEALTHY, PM_WIDTH, PM_SPEED };

/* One sample of metric M for port PT of H, if the port has that fact. */
static void port_sample(struct ibp_prom *w, const char *name, enum port_metric m,
			const struct ibp_hca *h, const struct ibp_port *pt,
			const struct ibp_findings *f)
{
	char port[16];
	double v;

	snprintf(port, sizeof(port), "%u", pt->num);
	const char *l[] = {"device", h->name, "port", port, NULL, NULL, NULL};
	switch (m) {
	case PM_HEALTHY:
		v = ibp_health_port_severity(f, h->name, pt->num) == IBP_SEV_FAIL ? 0 : 1;
		break;
	case PM_WIDTH: /* a port that is not ACTIVE has no link: its rate file means nothing */
		if (pt->state != IBP_PORT_ACTIVE || !pt->rate.known || !pt->rate.width)
			return;
		v = pt->rate.width;
		break;
	default:
		v = pt->state == IBP_PORT_ACTIVE && pt->rate.known
			? ibp_link_speed_rank(pt->rate.speed)
			: 0;
		if (v <= 0)
			return;
		l[4] = "speed";
		l[5] = pt->rate.speed;
		break;
	}
	ibp_prom_sample(w, name, l, v);
}

/* Per-port families; ports of HCAs the policy ignores are left out. */
static void write_ports(struct ibp_prom *w, const struct ibp_health_input *in,
			const struct ibp_policy *pol, const struct ibp_findings *f)
{
	static const struct {
		const char *name, *help;
		enum port_metric m;
	} fam[] = {
	    {"ibprep_port_healthy", "1 when the check found no failure on the port, 0 otherwise",
	     PM_HEALTHY},
	    {"ibprep_port_link_width_lanes", "Lanes the port's link trained at (1, 2, 4, 8, 12)",
	     PM_WIDTH},
	    {"ibprep_port_link_speed_generation",
	     "Per-lane speed generation of the port's link: SDR 1, DDR 2, QDR 3, FDR10 4, "
	     "FDR 5, EDR 6, HDR 7, NDR 8, XDR 9",
	     PM_SPEED},
	};
	const struct ibp_inventory *inv = &in->inv;

	for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		ibp_prom_family(w, fam[k].name, "gauge", fam[k].help);
		for (size_t i = 0; i < inv->n_hcas; i++) {
			const struct ibp_hca *h = &inv->hcas[i];
			if (ibp_health_ignored(pol, h->name))
				continue;
			for (size_t j = 0; j < h->n_ports; j++)
				port_sample(w, fam[k].name, fam[k].m, h, &h->ports[j], f);
		}
	}
}

static void write_pcie(struct ibp_prom *w, const struct ibp_health_input *in,
		       const struct ibp_policy *pol, const struct ibp_findings *f)
{
	static const struct {
		const char *name, *help;
		bool max, width;
	} m[] = {
	    {"ibprep_hca_pcie_link_width_lanes", "Lanes of the HCA's PCIe link now", false, true},
	    {"ibprep_hca_pcie_link_max_width_lanes", "Lanes the HCA's PCIe link can train at", true,
	     true},
	    {"ibprep_hca_pcie_link_speed_transfers_per_second",
	     "Per-lane speed of the HCA's PCIe link now", false, false},
	    {"ibprep_hca_pcie_link_max_speed_transfers_per_second",
	     "Per-lane speed the HCA's PCIe link can train at", true, false},
	};
	const struct ibp_inventory *inv = &in->inv;

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		ibp_prom_family(w, m[k].name, "gauge", m[k].help);
		for (size_t i = 0; i < inv->n_hcas; i++) {
			const struct ibp_hca *h = &inv->hcas[i];
			const struct ibp_pcie_link *l = &h->pcie;
			double v = m[k].width ? (m[k].max ? l->max_width : l->cur_width)
					      : (m[k].max ? l->max_gts : l->cur_gts) * 1e9;
			if (ibp_health_ignored(pol, h->name) || v <= 0)
				continue;
			const char *lab[] = {"device", h->name, "pci", h->pci, NULL};
			ibp_prom_sample(w, m[k].name, lab, v);
		}
	}
	ibp_prom_family(w, "ibprep_hca_pcie_downtrained", "gauge",
			"1 when the HCA's PCIe link trained below what the HCA and its slot "
			"can do (finding pcie_downtrained)");
	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct ibp_hca *h = &inv->hcas[i];
		if (ibp_health_ignored(pol, h->name))
			continue;
		const char *lab[] = {"device", h->name, "pci", h->pci, NULL};
		ibp_prom_sample(w, "ibprep_hca_pcie_downtrained", lab,
				has_finding(f, "pcie_downtrained", h->name) ? 1 : 0);
	}
}

static void write_node(struct ibp_prom *w, const struct ibp_prom_check *c)
{
	static const char *const sources[] = {"unknown", "self", "slurmd", "user"};
	const struct ibp_health_input *in = c->in;

	ibp_prom_family(w, "ibprep_gpus", "gauge", "GPUs on the node's PCI bus, by vendor");
	if (in->gpus_nvidia >= 0)
		ibp_prom_sample(w, "ibprep_gpus", (const char *const[]){"vendor", "nvidia", NULL},
				in->gpus_nvidia);
	if (in->gpus_amd >= 0)
		ibp_prom_sample(w, "ibprep_gpus", (const char *const[]){"vendor", "amd", NULL},
				in->gpus_amd);
	ibp_prom_family(w, "ibprep_gpudirect_module_loaded", "gauge",
			"1 when a GPUDirect RDMA peer-memory module (nvidia_peermem, nv_peer_mem "
			"or memory_peers) is loaded");
	ibp_prom_sample(w, "ibprep_gpudirect_module_loaded",
			(const char *const[]){"module", in->gdr_module, NULL},
			in->gdr_loaded ? 1 : 0);
	ibp_prom_family(w, "ibprep_memlock_limit_bytes", "gauge",
			"Locked-memory limit jobs get (source: slurmd's, the user's or the "
			"checking process's own); +Inf is unlimited");
	if (in->memlock_source != IBP_MEMLOCK_UNKNOWN &&
	    (unsigned)in->memlock_source < sizeof(sources) / sizeof(sources[0]))
		ibp_prom_sample(w, "ibprep_memlock_limit_bytes",
				(const char *const[]){"source", sources[in->memlock_source], NULL},
				in->memlock_kb == UINT64_MAX ? INFINITY
							     : (double)in->memlock_kb * 1024.0);
	if (c->pairs_known) {
		ibp_prom_family(w, "ibprep_gpu_hca_pair", "gauge",
				"The HCA port nearest each GPU (placement's choice) and their "
				"PCIe distance class (PIX, PXB, PHB, NODE, SYS)");
		for (size_t i = 0; i < c->n_pairs; i++) {
			const struct ibp_prom_pair *p = &c->pairs[i];
			char gpu[16], port[16];
			snprintf(gpu, sizeof(gpu), "%u", p->gpu);
			snprintf(port, sizeof(port), "%u", p->port);
			const char *l[] = {"gpu",      gpu,         "gpu_pci", p->gpu_pci,
					   "device",   p->device,   "port",    port,
					   "distance", p->distance, NULL};
			ibp_prom_sample(w, "ibprep_gpu_hca_pair", l, 1);
		}
	}
}

int ibp_prom_write_check(FILE *out, const struct ibp_prom_check *c)
{
	static const char *const verdicts[] = {"pass", "warn", "fail"};
	struct ibp_prom *w = malloc(sizeof(*w));

	if (!w)
		return -ENOMEM;
	ibp_prom_init(w, out);
	ibp_prom_family(w, "ibprep_build_info", "gauge", "The ibprep that wrote these metrics");
	ibp_prom_sample(w, "ibprep_build_info",
			(const char *const[]){"version", c->version ? c->version : "", NULL}, 1);
	const char *verdict = ibp_findings_verdict(c->findings);
	ibp_prom_family(w, "ibprep_check_verdict", "gauge",
			"The check's verdict: 1 for the current one of pass, warn, fail");
	for (size_t i = 0; i < 3; i++)
		ibp_prom_sample(w, "ibprep_check_verdict",
				(const char *const[]){"verdict", verdicts[i], NULL},
				!strcmp(verdict, verdicts[i]) ? 1 : 0);
	ibp_prom_family(w, "ibprep_check_duration_seconds", "gauge",
			"Wall time of the check that wrote these metrics");
	ibp_prom_sample(w, "ibprep_check_duration_seconds", NULL, c->duration_s);
	write_findings(w, c->findings);
	write_ports(w, c->in, c->pol, c->findings);
	write_pcie(w, c->in, c->pol, c->findings);
	write_node(w, c);
	int rc = ibp_prom_finish(w);
	free(w);
	return rc;
}

/* ---- atomic textfile ------------------------------------------------------ */

int ibp_prom_write_file(const char *dir, const char *name, const void *data, size_t len)
{
	int dfd, rc;

	if (!dir || !*dir)
		return -EINVAL; /* NAME: checked by ibp_atomic_write_at */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* 0644: the collector's mode; the dot-named temporary file is never a *.prom */
	rc = ibp_atomic_write_at(dfd, name, data, len, 0644);
	close(dfd);
	return rc;
}

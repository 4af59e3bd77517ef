/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report.c: the text table and the JSON document of report.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ibprep/cpulist.h"
#include "ibprep/report.h"

static const char *sev_word(enum ibp_severity s)
{
	return s == IBP_SEV_FAIL ? "fail" : s == IBP_SEV_WARN ? "warn" : "info";
}

int ibp_report_finding_line(const struct ibp_finding *x, const char *default_node, char *buf,
			    size_t len)
{
	char body[1024];
	int n = ibp_finding_format(x, default_node, body, sizeof(body));
	if (n < 0)
		return n;
	return snprintf(buf, len, "%s %s", sev_word(x->severity), body);
}

static const char *gid_type_name(enum ibp_gid_type t)
{
	return t == IBP_GID_TYPE_ROCE_V2      ? "RoCE v2"
	       : t == IBP_GID_TYPE_IB_ROCE_V1 ? "IB/RoCE v1"
					      : "unknown";
}

static void rate_text(const struct ibp_rate *r, char *buf, size_t len)
{
	if (!r->known)
		snprintf(buf, len, "-");
	else if (r->width && r->speed[0])
		snprintf(buf, len, "%g Gb/sec (%uX %s)", r->gbps, r->width, r->speed);
	else
		snprintf(buf, len, "%g Gb/sec", r->gbps);
}

static const char *port_verdict(const struct ibp_policy *p, const struct ibp_findings *f,
				const char *dev, unsigned port)
{
	if (ibp_health_ignored(p, dev))
		return "ignored";
	enum ibp_severity s = ibp_health_port_severity(f, dev, port);
	return s == IBP_SEV_FAIL ? "fail" : s == IBP_SEV_WARN ? "warn" : "ok";
}

int ibp_report_text(FILE *out, const struct ibp_health_input *in, const struct ibp_policy *p,
		    const struct ibp_findings *f)
{
	const struct ibp_inventory *inv = &in->inv;
	int wdev = 6, wrate = 4, wpci = 3, wstate = 6, wphys = 9;
	char rate[48], line[1200];

	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct ibp_hca *h = &inv->hcas[i];
		int l = (int)strlen(h->name);
		if (l > wdev)
			wdev = l;
		l = (int)strlen(h->pci);
		if (l > wpci)
			wpci = l;
		for (size_t j = 0; j < h->n_ports; j++) {
			rate_text(&h->ports[j].rate, rate, sizeof(rate));
			if ((int)strlen(rate) > wrate)
				wrate = (int)strlen(rate);
			l = (int)strlen(ibp_port_state_name(h->ports[j].state));
			if (l > wstate)
				wstate = l;
			l = (int)strlen(ibp_phys_state_name(h->ports[j].phys_state));
			if (l > wphys)
				wphys = l;
		}
	}
	if (inv->n_hcas) {
		fprintf(out, "%-*s  %4s  %-*s  %-*s  %-*s  %-10s  %-*s  %4s  %s\n", wdev, "DEVICE",
			"PORT", wstate, "STATE", wphys, "PHYS", wrate, "RATE", "LINK", wpci, "PCI",
			"NUMA", "VERDICT");
	}
	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct ibp_hca *h = &inv->hcas[i];
		char numa[16];
		snprintf(numa, sizeof(numa), h->numa >= 0 ? "%d" : "-", h->numa);
		if (!h->n_ports)
			fprintf(out, "%-*s  %4s  %-*s  %-*s  %-*s  %-10s  %-*s  %4s  %s\n", wdev,
				h->name, "-", wstate, "-", wphys, "-", wrate, "-", "-", wpci,
				h->pci[0] ? h->pci : "-", numa, port_verdict(p, f, h->name, 0));
		for (size_t j = 0; j < h->n_ports; j++) {
			const struct ibp_port *pt = &h->ports[j];
			rate_text(&pt->rate, rate, sizeof(rate));
			fprintf(out, "%-*s  %4u  %-*s  %-*s  %-*s  %-10s  %-*s  %4s  %s\n", wdev,
				h->name, pt->num, wstate, ibp_port_state_name(pt->state), wphys,
				ibp_phys_state_name(pt->phys_state), wrate, rate,
				ibp_link_layer_name(pt->link_layer), wpci, h->pci[0] ? h->pci : "-",
				numa, port_verdict(p, f, h->name, pt->num));
		}
	}
	if (inv->n_hcas && f->n)
		fputc('\n', out);
	/* failures first, then warnings, then information */
	for (int s = IBP_SEV_FAIL; s >= IBP_SEV_OK; s--)
		for (size_t i = 0; i < f->n; i++) {
			if ((int)f->v[i].severity != s)
				continue;
			ibp_report_finding_line(&f->v[i], in->node, line, sizeof(line));
			fprintf(out, "%s\n", line);
		}
	if (in->have_after)
		fprintf(out, "%scounters read twice, %u ms apart\n", f->n ? "" : "\n",
			in->window_ms);
	size_t nf = ibp_findings_count(f, IBP_SEV_FAIL, -1);
	size_t nw = ibp_findings_count(f, IBP_SEV_WARN, -1) - nf;
	fprintf(out, "%sverdict: %s", (inv->n_hcas || f->n) ? "\n" : "", ibp_findings_verdict(f));
	if (nf || nw) {
		fprintf(out, " (");
		if (nf)
			fprintf(out, "%zu failure%s%s", nf, nf == 1 ? "" : "s", nw ? ", " : "");
		if (nw)
			fprintf(out, "%zu warning%s", nw, nw == 1 ? "" : "s");
		fprintf(out, ")");
	}
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}

static void kv_int_or_null(struct ibp_json *j, const char *key, int64_t v, bool known)
{
	if (known)
		ibp_json_kv_int(j, key, v);
	else
		ibp_json_kv_null(j, key);
}

static void kv_str_or_null(struct ibp_json *j, const char *key, const char *s)
{
	ibp_json_kv_string(j, key, s && s[0] ? s : NULL);
}

static void json_pcie(struct ibp_json *j, const char *key, const struct ibp_pcie_link *l,
		      const char *pci)
{
	ibp_json_key(j, key);
	if (l->cur_gts <= 0 && l->max_gts <= 0 && !l->cur_width && !l->max_width && !pci) {
		ibp_json_null(j);
		return;
	}
	ibp_json_object_begin(j);
	if (pci)
		kv_str_or_null(j, "pci", pci);
	if (l->cur_gts > 0)
		ibp_json_kv_double(j, "current_gts", l->cur_gts);
	else
		ibp_json_kv_null(j, "current_gts");
	kv_int_or_null(j, "current_width", l->cur_width, l->cur_width > 0);
	if (l->max_gts > 0)
		ibp_json_kv_double(j, "max_gts", l->max_gts);
	else
		ibp_json_kv_null(j, "max_gts");
	kv_int_or_null(j, "max_width", l->max_width, l->max_width > 0);
	ibp_json_object_end(j);
}

static void json_port(struct ibp_json *j, const struct ibp_policy *p, const struct ibp_findings *f,
		      const struct ibp_hca *h, const struct ibp_port *pt)
{
	ibp_json_object_begin(j);
	ibp_json_kv_uint(j, "port", pt->num);
	ibp_json_kv_string(j, "state", ibp_port_state_name(pt->state));
	ibp_json_kv_string(j, "phys_state", ibp_phys_state_name(pt->phys_state));
	if (pt->rate.known)
		ibp_json_kv_double(j, "rate_gbps", pt->rate.gbps);
	else
		ibp_json_kv_null(j, "rate_gbps");
	kv_int_or_null(j, "width", pt->rate.width, pt->rate.width > 0);
	kv_str_or_null(j, "speed", pt->rate.speed);
	ibp_json_kv_string(j, "link_layer", ibp_link_layer_name(pt->link_layer));
	kv_int_or_null(j, "lid", pt->lid, pt->lid >= 0);
	kv_int_or_null(j, "sm_lid", pt->sm_lid, pt->sm_lid >= 0);
	kv_int_or_null(j, "lid_mask_count", pt->lid_mask_count, pt->lid_mask_count >= 0);
	kv_str_or_null(j, "netdev", pt->netdev);
	ibp_json_kv_string(j, "verdict", port_verdict(p, f, h->name, pt->num));
	ibp_json_key(j, "gids");
	ibp_json_array_begin(j);
	for (size_t g = 0; g < pt->n_gids; g++) {
		const struct ibp_gid *gid = &pt->gids[g];
		ibp_json_object_begin(j);
		ibp_json_kv_uint(j, "index", gid->index);
		ibp_json_kv_string(j, "gid", gid->addr);
		ibp_json_kv_string(j, "type", gid_type_name(gid->type));
		kv_str_or_null(j, "ndev", gid->ndev);
		ibp_json_kv_bool(j, "ipv4_mapped", gid->ipv4_mapped);
		ibp_json_object_end(j);
	}
	ibp_json_array_end(j);
	for (int hw = 0; hw <= 1; hw++) {
		ibp_json_key(j, hw ? "hw_counters" : "counters");
		ibp_json_object_begin(j);
		for (size_t k = 0; k < pt->n_counters; k++) {
			const struct ibp_counter *c = &pt->counters[k];
			if (c->hw == (hw == 1) && !c->read_errno)
				ibp_json_kv_uint(j, c->name, c->value);
		}
		ibp_json_object_end(j);
	}
	static const char *const lists[] = {"saturated_counters", "unreadable_counters"};
	for (int l = 0; l < 2; l++) {
		ibp_json_key(j, lists[l]);
		ibp_json_array_begin(j);
		for (size_t k = 0; k < pt->n_counters; k++) {
			const struct ibp_counter *c = &pt->counters[k];
			if (l == 0 ? (c->saturated && !c->read_errno) : c->read_errno != 0)
				ibp_json_string(j, c->name);
		}
		ibp_json_array_end(j);
	}
	ibp_json_object_end(j);
}

static void json_hca(struct ibp_json *j, const struct ibp_policy *p, const struct ibp_findings *f,
		     const struct ibp_hca *h)
{
	ibp_json_object_begin(j);
	ibp_json_kv_string(j, "name", h->name);
	kv_str_or_null(j, "node_guid", h->node_guid);
	kv_str_or_null(j, "fw_ver", h->fw_ver);
	kv_str_or_null(j, "hca_type", h->hca_type);
	kv_str_or_null(j, "board_id", h->board_id);
	kv_str_or_null(j, "node_desc", h->node_desc);
	kv_str_or_null(j, "pci", h->pci);
	kv_int_or_null(j, "numa", h->numa, h->numa >= 0);
	kv_str_or_null(j, "local_cpus", h->local_cpus);
	ibp_json_kv_bool(j, "ignored", ibp_health_ignored(p, h->name));
	json_pcie(j, "pcie", &h->pcie, NULL);
	json_pcie(j, "pcie_upstream", &h->pcie_upstream,
		  h->upstream_pci[0] ? h->upstream_pci : NULL);
	ibp_json_key(j, "netdevs");
	ibp_json_array_begin(j);
	for (size_t n = 0; n < h->n_netdevs; n++) {
		const struct ibp_netdev *nd = &h->netdevs[n];
		ibp_json_object_begin(j);
		ibp_json_kv_string(j, "name", nd->name);
		kv_str_or_null(j, "operstate", nd->operstate);
		kv_int_or_null(j, "mtu", nd->mtu, nd->mtu >= 0);
		kv_int_or_null(j, "dev_port", nd->dev_port, nd->dev_port >= 0);
		ibp_json_object_end(j);
	}
	ibp_json_array_end(j);
	ibp_json_key(j, "ports");
	ibp_json_array_begin(j);
	for (size_t k = 0; k < h->n_ports; k++)
		json_port(j, p, f, h, &h->ports[k]);
	ibp_json_array_end(j);
	ibp_json_object_end(j);
}

int ibp_report_json(struct ibp_json *j, const struct ibp_health_input *in,
		    const struct ibp_policy *p, const struct ibp_findings *f)
{
	static const char *const sources[] = {"unknown", "self", "slurmd", "user"};

	ibp_json_object_begin(j);
	ibp_json_kv_int(j, "schema", IBP_REPORT_SCHEMA);
	ibp_json_kv_string(j, "node", in->node);
	ibp_json_kv_string(j, "verdict", ibp_findings_verdict(f));
	ibp_json_key(j, "memlock");
	ibp_json_object_begin(j);
	ibp_json_kv_string(j, "source",
			   (unsigned)in->memlock_source < 4 ? sources[in->memlock_source]
							    : "unknown");
	if (in->memlock_source == IBP_MEMLOCK_UNKNOWN || in->memlock_kb == UINT64_MAX)
		ibp_json_kv_null(j, "limit_kb");
	else
		ibp_json_kv_uint(j, "limit_kb", in->memlock_kb);
	ibp_json_kv_bool(j, "unlimited",
			 in->memlock_source != IBP_MEMLOCK_UNKNOWN && in->memlock_kb == UINT64_MAX);
	ibp_json_object_end(j);
	ibp_json_key(j, "gpus");
	ibp_json_object_begin(j);
	kv_int_or_null(j, "nvidia", in->gpus_nvidia, in->gpus_nvidia >= 0);
	kv_int_or_null(j, "amd", in->gpus_amd, in->gpus_amd >= 0);
	ibp_json_object_end(j);
	ibp_json_key(j, "gdr");
	ibp_json_object_begin(j);
	ibp_json_kv_bool(j, "known", in->gdr_known);
	ibp_json_kv_bool(j, "loaded", in->gdr_loaded);
	kv_str_or_null(j, "module", in->gdr_module);
	ibp_json_object_end(j);
	if (in->have_after)
		ibp_json_kv_uint(j, "counter_window_ms", in->window_ms);
	else
		ibp_json_kv_null(j, "counter_window_ms");
	ibp_json_key(j, "hcas");
	ibp_json_array_begin(j);
	for (size_t i = 0; i < in->inv.n_hcas; i++)
		json_hca(j, p, f, &in->inv.hcas[i]);
	ibp_json_array_end(j);
	ibp_report_findings_json(j, f, in->node);
	return ibp_json_object_end(j);
}

int ibp_report_findings_json(struct ibp_json *j, const struct ibp_findings *f,
			     const char *default_node)
{
	ibp_json_key(j, "findings");
	ibp_json_array_begin(j);
	for (size_t i = 0; i < f->n; i++) {
		const struct ibp_finding *x = &f->v[i];
		ibp_json_object_begin(j);
		ibp_json_kv_string(j, "code", x->code);
		ibp_json_kv_string(j, "severity", ibp_severity_name(x->severity));
		ibp_json_kv_string(j, "class", ibp_class_name(x->fclass));
		ibp_json_kv_string(j, "node", x->node[0] ? x->node : default_node);
		kv_str_or_null(j, "device", x->device);
		kv_int_or_null(j, "port", x->port, x->port > 0);
		ibp_json_kv_string(j, "observed", x->observed);
		kv_str_or_null(j, "expected", x->expected);
		kv_str_or_null(j, "fix", x->fix);
		ibp_json_object_end(j);
	}
	return ibp_json_array_end(j);
}

static void json_set(struct ibp_json *j, const char *key, hwloc_const_bitmap_t set)
{
	char buf[4096];

	if (!set || hwloc_bitmap_iszero(set) || ibp_cpulist_format(set, buf, sizeof(buf)) < 0)
		ibp_json_kv_null(j, key);
	else
		ibp_json_kv_string(j, key, buf);
}

int ibp_report_task_json(struct ibp_json *j, const struct ibp_topo *t,
			 const struct ibp_place_view *v)
{
	ibp_json_object_begin(j);
	ibp_json_kv_uint(j, "local_rank", v->local_rank);
	ibp_json_key(j, "gpus");
	ibp_json_array_begin(j);
	for (size_t g = 0; g < v->n_gpus; g++)
		if (v->gpus[g] < t->n_gpus)
			ibp_json_string(j, t->gpus[v->gpus[g]].d.pci);
	ibp_json_array_end(j);
	/* the GPU indices too: partitions share a bus ID */
	ibp_json_key(j, "gpu_indices");
	ibp_json_array_begin(j);
	for (size_t g = 0; g < v->n_gpus; g++)
		if (v->gpus[g] < t->n_gpus)
			ibp_json_uint(j, t->gpus[v->gpus[g]].index);
	ibp_json_array_end(j);
	ibp_json_key(j, "hcas");
	ibp_json_array_begin(j);
	for (size_t n = 0; n < v->n_nics; n++) {
		const struct ibp_place_nic *nic = &v->nics[n];
		char name[96] = "";

		if (nic->hca >= 0 && (size_t)nic->hca < t->n_hcas &&
		    t->hcas[nic->hca].kind != IBP_NIC_RDMA)
			ibp_json_string(j, t->hcas[nic->hca].name);
		else if (ibp_place_nic_name(t, nic, name, sizeof(name)) > 0)
			ibp_json_string(j, name);
		else
			ibp_json_null(j);
	}
	ibp_json_array_end(j);
	ibp_json_key(j, "distances");
	ibp_json_array_begin(j);
	for (size_t n = 0; n < v->n_nics; n++)
		ibp_json_string(j, ibp_dist_name(v->nics[n].dist));
	ibp_json_array_end(j);
	json_set(j, "cpus", v->cpus);
	json_set(j, "mems", v->mems);
	return ibp_json_object_end(j);
}

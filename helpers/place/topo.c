/* SPDX-License-Identifier: GPL-2.0-or-later */
/* topo.c: GPUs, RDMA NICs and localities from hwloc; see include/ibprep/topo.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hwloc/shmem.h>

#include "ibprep/topo.h"

#define MAX_DEPTH 64 /* PCI nesting deeper than this is not a real machine */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Strict unsigned number: decimal, or hex with 0x; nothing else. */
static int parse_uint(const char *s, unsigned long long *out)
{
	char *end;
	int base = 10;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	errno = 0;
	*out = strtoull(s, &end, base);
	if (errno || *end || end == s)
		return -EINVAL;
	return 0;
}

/* strcmp with digit runs compared as numbers: mlx5_2 < mlx5_10. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			size_t la, lb;

			while (*a == '0' && a[1] >= '0' && a[1] <= '9')
				a++;
			while (*b == '0' && b[1] >= '0' && b[1] <= '9')
				b++;
			la = strspn(a, "0123456789");
			lb = strspn(b, "0123456789");
			if (la != lb)
				return la < lb ? -1 : 1;
			int c = strncmp(a, b, la);
			if (c)
				return c;
			a += la;
			b += lb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : (*b ? -1 : 0);
}

/* N hex digits at S into *OUT; false when any is not a hex digit. */
static bool hexn(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			v = v * 16 + (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (unsigned)(c - 'A' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

int ibp_pci_parse(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn)
{
	unsigned d = 0, b, v, f;
	size_t len;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len == 12) { /* "0000:44:00.0" */
		if (s[4] != ':' || !hexn(s, 4, &d))
			return -EINVAL;
		s += 5;
	} else if (len != 7) { /* "44:00.0" */
		return -EINVAL;
	}
	if (s[2] != ':' || s[5] != '.' || !hexn(s, 2, &b) || !hexn(s + 3, 2, &v) ||
	    !hexn(s + 6, 1, &f))
		return -EINVAL;
	if (v > 0x1f || f > 7)
		return -EINVAL;
	*domain = d;
	*bus = b;
	*dev = v;
	*fn = f;
	return 0;
}

const char *ibp_dist_name(enum ibp_dist d)
{
	static const char *const names[] = {"PIX", "PXB", "PHB", "NODE", "SYS", "unknown"};

	return (unsigned)d < 6 ? names[d] : "unknown";
}

const char *ibp_nic_kind_name(enum ibp_nic_kind k)
{
	static const char *const names[] = {"rdma", "slingshot", "libfabric"};

	return (unsigned)k < 3 ? names[k] : "unknown";
}

int ibp_dist_parse(const char *s, enum ibp_dist *out)
{
	for (int d = IBP_DIST_PIX; d <= IBP_DIST_SYS; d++)
		if (s && !strcmp(s, ibp_dist_name((enum ibp_dist)d))) {
			*out = (enum ibp_dist)d;
			return 0;
		}
	return -EINVAL;
}

void ibp_topo_init(struct ibp_topo *topo)
{
	memset(topo, 0, sizeof(*topo));
}

static void dev_release(struct ibp_topo_dev *d)
{
	hwloc_bitmap_free(d->cpuset);
	hwloc_bitmap_free(d->nodeset);
	d->cpuset = NULL;
	d->nodeset = NULL;
}

void ibp_topo_release(struct ibp_topo *topo)
{
	for (size_t i = 0; i < topo->n_gpus; i++)
		dev_release(&topo->gpus[i].d);
	for (size_t i = 0; i < topo->n_hcas; i++)
		dev_release(&topo->hcas[i].d);
	free(topo->gpus);
	free(topo->hcas);
	if (topo->t)
		hwloc_topology_destroy(topo->t);
	ibp_topo_init(topo);
}

static const struct ibp_devid *pci_id(hwloc_obj_t o)
{
	return ibp_devid_pci(o->attr->pcidev.vendor_id, o->attr->pcidev.device_id,
			     o->attr->pcidev.class_id);
}

static int dev_fill(struct ibp_topo *topo, struct ibp_topo_dev *d, hwloc_obj_t pci)
{
	hwloc_obj_t nonio = hwloc_get_non_io_ancestor_obj(topo->t, pci);
	hwloc_obj_t pkg = NULL;

	memset(d, 0, sizeof(*d));
	snprintf(d->pci, sizeof(d->pci), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain & 0xffff,
		 pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func & 7);
	d->vendor = pci->attr->pcidev.vendor_id;
	d->device = pci->attr->pcidev.device_id;
	d->class_id = pci->attr->pcidev.class_id;
	d->obj = pci;
	d->id = pci_id(pci);
	d->cpuset = hwloc_bitmap_dup(
	    nonio && nonio->cpuset ? nonio->cpuset : hwloc_topology_get_topology_cpuset(topo->t));
	d->nodeset = hwloc_bitmap_dup(nonio && nonio->nodeset
					  ? nonio->nodeset
					  : hwloc_topology_get_topology_nodeset(topo->t));
	if (!d->cpuset || !d->nodeset) {
		dev_release(d);
		return -ENOMEM;
	}
	d->numa = hwloc_bitmap_first(d->nodeset);
	d->package = -1;
	/* a virtual function or an old export says 0; anything absurd is unknown too */
	d->link_gbs = pci->attr->pcidev.linkspeed > 0.f && pci->attr->pcidev.linkspeed < 10000.f
			  ? (double)pci->attr->pcidev.linkspeed
			  : 0.;
	/* PCI that hangs off the Machine above several NUMA nodes: the file does not
	 * say where it is (old kernels, VMs, no ACPI _PXM); with one NUMA node the
	 * locality is that node whatever the attachment */
	if ((!nonio || nonio->type == HWLOC_OBJ_MACHINE) &&
	    hwloc_bitmap_weight(hwloc_topology_get_topology_nodeset(topo->t)) > 1) {
		d->numa = -1;
		d->locality_unknown = true;
		topo->n_locality_unknown++;
		return 0;
	}
	while ((pkg = hwloc_get_next_obj_by_type(topo->t, HWLOC_OBJ_PACKAGE, pkg)))
		if (!hwloc_bitmap_iszero(d->cpuset) &&
		    hwloc_bitmap_isincluded(d->cpuset, pkg->cpuset)) {
			d->package = (int)pkg->os_index;
			break;
		}
	return 0;
}

static int pci_cmp(const struct ibp_topo_dev *a, const struct ibp_topo_dev *b)
{
	const struct hwloc_pcidev_attr_s *x = &a->obj->attr->pcidev, *y = &b->obj->attr->pcidev;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return 0;
}

static int gpu_cmp(const void *a, const void *b)
{
	const struct ibp_topo_gpu *x = a, *y = b;
	int c = pci_cmp(&x->d, &y->d);

	if (c)
		return c;
	return x->part < y->part ? -1 : (x->part > y->part);
}

static int hca_cmp(const void *a, const void *b)
{
	return natural_cmp(((const struct ibp_topo_hca *)a)->name,
			   ((const struct ibp_topo_hca *)b)->name);
}

/* The number of colon-separated bytes of a hardware address: 6 Ethernet, 20 IPoIB. */
static unsigned addr_bytes(const char *a)
{
	unsigned n = 1;

	if (!a || !*a)
		return 0;
	for (; *a; a++)
		n += *a == ':';
	return n;
}

/* The netdev of PORT among the network osdevs of PCI (hwloc's "Port" info). */
static hwloc_obj_t port_netdev(hwloc_obj_t pci, unsigned port)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
		const char *p;
		unsigned long long v;

		if (c->type != HWLOC_OBJ_OS_DEVICE ||
		    c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK)
			continue;
		p = hwloc_obj_get_info_by_name(c, "Port");
		if ((!p && port == 1) || (p && !parse_uint(p, &v) && v == port))
			return c;
	}
	return NULL;
}

/* Local copy: the topology module must not depend on the sysfs reader being linked. */
static const char *state_name(enum ibp_port_state s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return (unsigned)s < 6 ? names[s] : "unknown";
}

static bool gid_v4_mapped(const char *g)
{
	return g && !strncmp(g, "0000:0000:0000:0000:0000:ffff:", 30);
}

/* Whether the device's link layer may be read from GIDs, LIDs and the PCI class. */
static bool verbs_ib_or_eth(const struct ibp_topo_hca *h)
{
	return h->transport != IBP_TR_EFA && h->transport != IBP_TR_UNKNOWN &&
	       h->transport != IBP_TR_USNIC;
}

/* Ports of an OpenFabrics osdev from its Port<N>* infos. */
static void ports_from_infos(struct ibp_topo_hca *h, hwloc_obj_t osdev, hwloc_obj_t pci)
{
	for (unsigned n = 1; n <= IBP_TOPO_MAX_PORTS; n++) {
		char key[32];
		const char *state, *lid;
		unsigned long long v;
		struct ibp_topo_port *p = &h->ports[h->n_ports];
		hwloc_obj_t nd;

		snprintf(key, sizeof(key), "Port%uState", n);
		state = hwloc_obj_get_info_by_name(osdev, key);
		snprintf(key, sizeof(key), "Port%uLID", n);
		lid = hwloc_obj_get_info_by_name(osdev, key);
		if (!state && !lid)
			continue;
		memset(p, 0, sizeof(*p));
		p->num = n;
		p->state = IBP_PORT_STATE_UNKNOWN;
		p->lid = -1;
		p->gid_index = -1;
		if (state && !parse_uint(state, &v) && v <= IBP_PORT_ACTIVE_DEFER)
			p->state = (enum ibp_port_state)v;
		if (lid && !parse_uint(lid, &v) && v <= 0xffff)
			p->lid = (int64_t)v;
		for (unsigned k = 0; k < 256; k++) {
			const char *g, *next;

			snprintf(key, sizeof(key), "Port%uGID%u", n, k);
			g = hwloc_obj_get_info_by_name(osdev, key);
			if (!g)
				break;
			if (!gid_v4_mapped(g))
				continue;
			/* the kernel lists each RoCE GID as a v1 then a v2 entry */
			snprintf(key, sizeof(key), "Port%uGID%u", n, k + 1);
			next = hwloc_obj_get_info_by_name(osdev, key);
			p->gid_index = (int)(next && !strcmp(next, g) ? k + 1 : k);
			break;
		}
		nd = port_netdev(pci, n);
		if (nd && nd->name)
			snprintf(p->netdev, sizeof(p->netdev), "%s", nd->name);
		p->link_layer = IBP_LL_UNKNOWN;
		if (nd && addr_bytes(hwloc_obj_get_info_by_name(nd, "Address")) == 20)
			p->link_layer = IBP_LL_IB;
		else if (nd && addr_bytes(hwloc_obj_get_info_by_name(nd, "Address")) == 6)
			p->link_layer = IBP_LL_ETH;
		else if (!verbs_ib_or_eth(h))
			p->link_layer = IBP_LL_UNKNOWN; /* EFA: neither, whatever its class */
		else if (p->gid_index >= 0 || pci->attr->pcidev.class_id == 0x0200)
			p->link_layer = IBP_LL_ETH;
		else if ((p->lid > 0 && p->lid < 0xffff) || pci->attr->pcidev.class_id == 0x0207)
			p->link_layer = IBP_LL_IB;
		if (p->state == IBP_PORT_STATE_UNKNOWN && p->link_layer == IBP_LL_IB &&
		    p->lid == 0) {
			/* no state, but LID 0 on an IB port: the subnet manager never
			 * brought it up (hwloc 1.x files give the LID, not the state) */
			p->healthy = false;
			snprintf(p->why, sizeof(p->why),
				 "LID 0 in the topology (no subnet manager assignment)");
		} else if (p->state == IBP_PORT_ACTIVE || p->state == IBP_PORT_STATE_UNKNOWN) {
			p->healthy = true;
		} else {
			p->healthy = false;
			snprintf(p->why, sizeof(p->why), "port state %s in the topology",
				 state_name(p->state));
		}
		h->n_ports++;
	}
}

/*
 * Ports of an OpenFabrics osdev the file gives no Port<N> infos for (hwloc
 * before 1.x's OpenFabrics backend, or a capture without it): one per network
 * interface of the function, numbered by its "Port" info or else in the
 * file's order; link layer from the address (20 bytes IPoIB, 6 Ethernet);
 * state unknown (used, and said so).
 */
static void ports_from_netdevs(struct ibp_topo_hca *h, hwloc_obj_t pci)
{
	unsigned next = 1;

	for (hwloc_obj_t c = pci->io_first_child; c && h->n_ports < IBP_TOPO_MAX_PORTS;
	     c = c->next_sibling) {
		struct ibp_topo_port *p = &h->ports[h->n_ports];
		const char *num, *addr;
		unsigned long long v;
		unsigned bytes;

		if (c->type != HWLOC_OBJ_OS_DEVICE ||
		    c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK)
			continue;
		addr = hwloc_obj_get_info_by_name(c, "Address");
		bytes = addr_bytes(addr);
		if (bytes != 20 && bytes != 6)
			continue;
		num = hwloc_obj_get_info_by_name(c, "Port");
		memset(p, 0, sizeof(*p));
		p->num = num && !parse_uint(num, &v) && v >= 1 && v <= IBP_TOPO_MAX_PORTS
			     ? (unsigned)v
			     : next;
		next = p->num + 1;
		p->state = IBP_PORT_STATE_UNKNOWN;
		p->link_layer = bytes == 20 ? IBP_LL_IB : IBP_LL_ETH;
		p->lid = -1;
		p->gid_index = -1;
		p->healthy = true;
		snprintf(p->netdev, sizeof(p->netdev), "%s", c->name ? c->name : "");
		h->n_ports++;
	}
}

/*
 * A verbs device has one port at least: when the file lists none (no Port<N>
 * infos, no netdev: EFA, or an export without the OpenFabrics details), port
 * 1 with the state unknown, its link layer from the PCI class as for listed
 * ports.
 */
static void port_one(struct ibp_topo_hca *h, hwloc_obj_t pci)
{
	struct ibp_topo_port *p = &h->ports[0];

	memset(p, 0, sizeof(*p));
	p->num = 1;
	p->state = IBP_PORT_STATE_UNKNOWN;
	p->link_layer = IBP_LL_UNKNOWN;
	if (verbs_ib_or_eth(h) && pci->attr->pcidev.class_id == 0x0207)
		p->link_layer = IBP_LL_IB;
	else if (verbs_ib_or_eth(h) && pci->attr->pcidev.class_id == 0x0200)
		p->link_layer = IBP_LL_ETH;
	p->lid = -1;
	p->gid_index = -1;
	p->healthy = true;
	p->assumed = true;
	h->n_ports = 1;
}

void ibp_topo_hca_identify(struct ibp_topo_hca *h, const char *driver, int node_type)
{
	const struct ibp_devid *id =
	    ibp_devid_rdma(driver, h->name, h->d.vendor, h->d.device, node_type);

	h->transport = id->transport;
	h->family = id->family;
	if (id->transport == IBP_TR_CXI)
		h->kind = IBP_NIC_SLINGSHOT;
	else
		h->kind = ibp_transport_nccl(id->transport) ? IBP_NIC_RDMA : IBP_NIC_LIBFABRIC;
}

static int grow(void **v, size_t n, size_t *cap, size_t size)
{
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, (*cap ? *cap * 2 : 8) * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = *cap ? *cap * 2 : 8;
	return 0;
}

static bool is_gpu_osdev(hwloc_obj_t c)
{
	return c->type == HWLOC_OBJ_OS_DEVICE && c->name &&
	       (c->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC ||
		c->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU);
}

/* The K-th osdev of PCI named PREFIX<digits...> (K < 0: count them). */
static int backend_osdevs(hwloc_obj_t pci, const char *prefix, int k, hwloc_obj_t *out)
{
	int n = 0;
	size_t pl = strlen(prefix);

	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
		if (is_gpu_osdev(c) && !strncmp(c->name, prefix, pl) && c->name[pl] >= '0' &&
		    c->name[pl] <= '9') {
			if (n == k && out)
				*out = c;
			n++;
		}
	return n;
}

/*
 * Compute partitions of a function whose table entry allows them: one per
 * ROCm SMI device (rsmiN), else per OpenCL device (openclNdM), the backends
 * that list an AMD partition as its own GPU.  1 for everything else.
 */
static unsigned partitions(hwloc_obj_t pci, const struct ibp_devid *id, const char **backend)
{
	static const char *const backends[] = {"rsmi", "opencl"};

	*backend = NULL;
	if (!(id->flags & IBP_DEVID_PARTITIONS))
		return 1;
	for (size_t b = 0; b < 2; b++) {
		int n = backend_osdevs(pci, backends[b], -1, NULL);

		if (n > 1) {
			*backend = backends[b];
			return n > IBP_TOPO_MAX_PARTS ? IBP_TOPO_MAX_PARTS : (unsigned)n;
		}
	}
	return 1;
}

static int add_gpu(struct ibp_topo *topo, hwloc_obj_t pci, size_t *cap)
{
	const char *backend;
	unsigned parts = partitions(pci, pci_id(pci), &backend);

	for (unsigned k = 0; k < parts; k++) {
		struct ibp_topo_gpu *g;
		hwloc_obj_t od = NULL;
		int rc = grow((void **)&topo->gpus, topo->n_gpus, cap, sizeof(*topo->gpus));

		if (rc)
			return rc;
		g = &topo->gpus[topo->n_gpus];
		memset(g, 0, sizeof(*g));
		rc = dev_fill(topo, &g->d, pci);
		if (rc)
			return rc;
		if (k && g->d.locality_unknown)
			topo->n_locality_unknown--; /* one function, counted once */
		g->part = k;
		g->n_parts = parts;
		if (backend)
			backend_osdevs(pci, backend, (int)k, &od);
		for (hwloc_obj_t c = pci->io_first_child; !od && c; c = c->next_sibling)
			if (is_gpu_osdev(c))
				od = c;
		if (od)
			snprintf(g->osdev, sizeof(g->osdev), "%s", od->name);
		topo->n_gpus++;
	}
	return 0;
}

static int add_nic(struct ibp_topo *topo, hwloc_obj_t pci, hwloc_obj_t osdev,
		   enum ibp_nic_kind kind, size_t *cap)
{
	struct ibp_topo_hca *h;
	int rc = grow((void **)&topo->hcas, topo->n_hcas, cap, sizeof(*topo->hcas));

	if (rc)
		return rc;
	h = &topo->hcas[topo->n_hcas];
	memset(h, 0, sizeof(*h));
	rc = dev_fill(topo, &h->d, pci);
	if (rc)
		return rc;
	snprintf(h->name, sizeof(h->name), "%s", osdev->name ? osdev->name : "?");
	ibp_topo_hca_identify(h, NULL, -1);
	if (kind == IBP_NIC_RDMA) {
		ports_from_infos(h, osdev, pci);
		if (!h->n_ports)
			ports_from_netdevs(h, pci);
		if (!h->n_ports)
			port_one(h, pci);
	} else {
		struct ibp_topo_port *p = &h->ports[0];

		/* Slingshot: one port, state not in the topology */
		p->num = 1;
		p->state = IBP_PORT_STATE_UNKNOWN;
		p->link_layer = IBP_LL_ETH;
		p->lid = -1;
		p->gid_index = -1;
		p->healthy = true;
		snprintf(p->netdev, sizeof(p->netdev), "%.15s", h->name);
		h->n_ports = 1;
	}
	topo->n_hcas++;
	return 0;
}

/* Walks the PCI devices once: GPUs, OpenFabrics osdevs, Slingshot NICs. */
static int collect(struct ibp_topo *topo)
{
	size_t gcap = 0, hcap = 0;
	hwloc_obj_t pci = NULL, root = hwloc_get_root_obj(topo->t);
	const char *host = hwloc_obj_get_info_by_name(root, "HostName");
	int rc;

	if (host)
		snprintf(topo->hostname, sizeof(topo->hostname), "%s", host);
	while ((pci = hwloc_get_next_pcidev(topo->t, pci))) {
		const struct ibp_devid *id = pci_id(pci);

		if (id->cls == IBP_DEVID_GPU) {
			rc = add_gpu(topo, pci, &gcap);
			if (rc)
				return rc;
			continue;
		}
		topo->n_vga += id->cls == IBP_DEVID_VGA;
		for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
			if (c->type != HWLOC_OBJ_OS_DEVICE)
				continue;
			if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
				rc = add_nic(topo, pci, c, IBP_NIC_RDMA, &hcap);
			else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK &&
				 pci->attr->pcidev.vendor_id == 0x17db &&
				 pci->attr->pcidev.device_id == 0x0501)
				rc = add_nic(topo, pci, c, IBP_NIC_SLINGSHOT, &hcap);
			else
				continue;
			if (rc)
				return rc;
		}
	}
	if (topo->n_gpus)
		qsort(topo->gpus, topo->n_gpus, sizeof(*topo->gpus), gpu_cmp);
	for (size_t i = 0; i < topo->n_gpus; i++)
		topo->gpus[i].index = (unsigned)i;
	if (topo->n_hcas)
		qsort(topo->hcas, topo->n_hcas, sizeof(*topo->hcas), hca_cmp);
	return 0;
}

static int topo_setup(struct ibp_topo *topo, enum hwloc_type_filter_e io_filter)
{
	ibp_topo_init(topo);
	if (hwloc_topology_init(&topo->t) < 0) {
		topo->t = NULL;
		return -ENOMEM;
	}
	hwloc_topology_set_io_types_filter(topo->t, io_filter);
	/* caches stay: I/O may hang below an L3 (MI250X GCDs sit under their CCD's L3) */
	/* distances, memory attributes and CPU kinds are not used: skip their cost */
	hwloc_topology_set_flags(topo->t, HWLOC_TOPOLOGY_FLAG_NO_DISTANCES |
					      HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |
					      HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
	return 0;
}

/* A loaded or adopted topology's devices collected, and the load's time since T0. */
static int topo_collected(struct ibp_topo *topo, double t0)
{
	int rc = collect(topo);

	if (rc) {
		ibp_topo_release(topo);
		return rc;
	}
	topo->load_ms = now_ms() - t0;
	return 0;
}

static int topo_finish(struct ibp_topo *topo, double t0)
{
	int rc;

	if (hwloc_topology_load(topo->t) < 0) {
		rc = errno ? -errno : -EINVAL;
		ibp_topo_release(topo);
		return rc == -ENOENT ? -EINVAL : rc;
	}
	return topo_collected(topo, t0);
}

int ibp_topo_load_xml(struct ibp_topo *topo, const char *path)
{
	double t0 = now_ms();
	struct stat st;
	int rc;

	ibp_topo_init(topo);
	if (!path || stat(path, &st) < 0)
		return path ? -errno : -EINVAL;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* important I/O only: GPUs, NICs and the bridges above them (cheaper import) */
	rc = topo_setup(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (rc)
		return rc;
	topo->from_file = true;
	if (hwloc_topology_set_xml(topo->t, path) < 0) {
		ibp_topo_release(topo);
		return -EINVAL;
	}
	return topo_finish(topo, t0);
}

int ibp_topo_load_xml_buffer(struct ibp_topo *topo, const char *buf, size_t len)
{
	double t0 = now_ms();
	char *copy = NULL;
	int rc;

	ibp_topo_init(topo);
	if (!buf || !len || len > (size_t)1 << 30)
		return -EINVAL;
	rc = topo_setup(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (rc)
		return rc;
	topo->from_file = true;
	/* hwloc's parsers expect a NUL-terminated buffer, NUL counted in the size */
	if (buf[len - 1] != '\0') {
		copy = malloc(len + 1);
		if (!copy) {
			ibp_topo_release(topo);
			return -ENOMEM;
		}
		memcpy(copy, buf, len);
		copy[len] = '\0';
		buf = copy;
		len++;
	}
	if (hwloc_topology_set_xmlbuffer(topo->t, buf, (int)len) < 0) {
		ibp_topo_release(topo);
		free(copy);
		return -EINVAL;
	}
	rc = topo_finish(topo, t0); /* hwloc reads the buffer during the load */
	free(copy);
	return rc;
}

/*
 * The mapped form's fixed address: 32 TiB, in the hole between a 64-bit
 * process's heap and its libraries on x86_64 and 48-bit arm64 (and in ASan's
 * application range).  A kernel that puts the mapping elsewhere (the range
 * taken, a 39-bit address space) makes the load -EBUSY: the caller's XML.
 */
#define MAP_ADDR ((uintptr_t)1 << 45)

int ibp_topo_load_mapped(struct ibp_topo *topo, int fd, size_t len)
{
	double t0 = now_ms();
	int rc;

	ibp_topo_init(topo);
	if (sizeof(void *) < 8)
		return -ENOTSUP;
	if (fd < 0 || !len || len > (size_t)1 << 30)
		return -EINVAL;
	errno = 0;
	if (hwloc_shmem_topology_adopt(&topo->t, fd, 0, (void *)MAP_ADDR, len, 0) < 0) {
		rc = errno ? -errno : -EINVAL;
		topo->t = NULL;
		return rc;
	}
	topo->from_file = true;
	topo->mapped = true;
	return topo_collected(topo, t0);
}

int ibp_topo_export_mapped(const struct ibp_topo *topo, char **buf, size_t *len)
{
	size_t n = 0, got = 0;
	ssize_t r;
	int fd, rc;

	*buf = NULL;
	*len = 0;
	if (sizeof(void *) < 8)
		return -ENOTSUP;
	if (!topo->t)
		return -EINVAL;
	if (hwloc_shmem_topology_get_length(topo->t, &n, 0) < 0 || !n)
		return -ENOMEM;
	/* hwloc writes the form through a shared mapping of a file: an anonymous one */
	fd = memfd_create("spank-ib-topology", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (hwloc_shmem_topology_write(topo->t, fd, 0, (void *)MAP_ADDR, n, 0) < 0) {
		rc = errno ? -errno : -EIO;
		goto out;
	}
	*buf = malloc(n);
	rc = -ENOMEM;
	if (!*buf)
		goto out;
	while (got < n &&
	       ((r = pread(fd, *buf + got, n - got, (off_t)got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	rc = got == n ? 0 : -EIO;
	if (rc) {
		free(*buf);
		*buf = NULL;
	} else {
		*len = n;
	}
out:
	close(fd);
	return rc;
}

static int load_live(struct ibp_topo *topo, bool whole)
{
	static const char *const slow[] = {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl"};
	double t0 = now_ms();
	int rc = topo_setup(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);

	if (rc)
		return rc;
	if (whole)
		hwloc_topology_set_flags(topo->t, hwloc_topology_get_flags(topo->t) |
						      HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++)
		hwloc_topology_set_components(topo->t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
					      slow[i]);
	return topo_finish(topo, t0);
}

int ibp_topo_load_live(struct ibp_topo *topo)
{
	return load_live(topo, false);
}

int ibp_topo_load_live_machine(struct ibp_topo *topo)
{
	return load_live(topo, true);
}

static size_t ancestors(hwloc_obj_t o, hwloc_obj_t *v)
{
	size_t n = 0;

	for (; o && n < MAX_DEPTH; o = o->parent)
		v[n++] = o;
	return n;
}

static bool is_host_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE &&
	       o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

enum ibp_dist ibp_topo_distance(const struct ibp_topo *topo, const struct ibp_topo_dev *a,
				const struct ibp_topo_dev *b)
{
	hwloc_obj_t va[MAX_DEPTH], vb[MAX_DEPTH], c = NULL;
	size_t na = ancestors(a->obj, va), nb = ancestors(b->obj, vb), ia = 0, ib = 0;
	unsigned bra = 0, brb = 0;

	for (ib = 0; ib < nb && !c; ib++)
		for (ia = 0; ia < na; ia++)
			if (va[ia] == vb[ib]) {
				c = va[ia];
				break;
			}
	if (!c)
		return IBP_DIST_SYS;
	ib--; /* the loop stepped past the match */
	if ((a->locality_unknown || b->locality_unknown) &&
	    (c->type == HWLOC_OBJ_MACHINE || c == hwloc_get_root_obj(topo->t)))
		return IBP_DIST_UNKNOWN; /* different host bridges, NUMA node not stated */
	if (c->type == HWLOC_OBJ_PCI_DEVICE || c->type == HWLOC_OBJ_OS_DEVICE)
		return IBP_DIST_PIX; /* one device (functions of one card share the bridge below) */
	if (c->type == HWLOC_OBJ_BRIDGE) {
		if (is_host_bridge(c))
			return IBP_DIST_PHB;
		/* bridges strictly between each device and the common one: a switch's
		 * downstream port below its upstream port is still "one bridge" */
		for (size_t k = 1; k < ia; k++)
			bra += va[k] && va[k]->type == HWLOC_OBJ_BRIDGE;
		for (size_t k = 1; k < ib; k++)
			brb += vb[k] && vb[k]->type == HWLOC_OBJ_BRIDGE;
		return bra <= 1 && brb <= 1 ? IBP_DIST_PIX : IBP_DIST_PXB;
	}
	/* different host bridges: NUMA decides */
	if (hwloc_bitmap_intersects(a->nodeset, b->nodeset))
		return IBP_DIST_NODE;
	return IBP_DIST_SYS;
}

bool ibp_topo_same_package(const struct ibp_topo_dev *a, const struct ibp_topo_dev *b)
{
	return a->package >= 0 && a->package == b->package;
}

/* The default judge: exact device name, port 0 for the whole device. */
static enum ibp_severity exact_severity(const struct ibp_findings *f, const char *dev,
					unsigned port)
{
	enum ibp_severity worst = IBP_SEV_OK;

	for (size_t i = 0; f && i < f->n; i++)
		if (!strcmp(f->v[i].device, dev) &&
		    (!f->v[i].port || (unsigned)f->v[i].port == port) && f->v[i].severity > worst)
			worst = f->v[i].severity;
	return worst;
}

/* The first fail finding about DEV/PORT, for the "why" text (NULL: none). */
static const struct ibp_finding *fail_finding(const struct ibp_findings *f, const char *dev,
					      unsigned port, ibp_port_severity_fn sev)
{
	for (size_t i = 0; f && i < f->n; i++) {
		struct ibp_findings one = {.v = &f->v[i], .n = 1, .cap = 1};

		if (f->v[i].severity == IBP_SEV_FAIL && sev(&one, dev, port) == IBP_SEV_FAIL)
			return &f->v[i];
	}
	return NULL;
}

/*
 * GB/s per lane and direction at GTS, with the generation's encoding (8b/10b
 * to 5 GT/s, 128b/130b to 32 GT/s, 242/256 FLIT after): hwloc's arithmetic,
 * so a file's figure and sysfs's lanes and speed compare.
 */
static double lane_gbs(double gts)
{
	if (gts <= 5.01)
		return gts * 0.8 / 8;
	if (gts <= 32.01)
		return gts * 128 / 130 / 8;
	return gts * 242 / 256 / 8;
}

int ibp_topo_link_text(const struct ibp_topo_dev *d, char *buf, size_t len)
{
	static const double gts[] = {2.5, 5, 8, 16, 32, 64};
	unsigned lanes[8], gens[8];
	size_t found = 0, o;
	int w;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	if (d->link_width && d->link_gts > 0) {
		unsigned gen = 0;

		for (size_t g = 0; g < sizeof(gts) / sizeof(gts[0]); g++)
			if (d->link_gts > gts[g] * 0.99 && d->link_gts < gts[g] * 1.01)
				gen = (unsigned)g + 1;
		w = gen ? snprintf(buf, len, "x%u Gen%u (%.1f GB/s)", d->link_width, gen,
				   d->link_gbs)
			: snprintf(buf, len, "x%u at %g GT/s (%.1f GB/s)", d->link_width,
				   d->link_gts, d->link_gbs);
		return w < 0 || (size_t)w >= len ? -ENOSPC : w;
	}
	if (d->link_gbs <= 0) {
		w = snprintf(buf, len, "unknown");
		return w < 0 || (size_t)w >= len ? -ENOSPC : w;
	}
	/* hwloc keeps only lanes x lane speed: every pair that gives the figure */
	for (size_t g = 0; g < sizeof(gts) / sizeof(gts[0]); g++)
		for (unsigned x = 1; x <= 16 && found < 8; x *= 2) {
			double v = lane_gbs(gts[g]) * x;

			if (d->link_gbs > v * 0.995 && d->link_gbs < v * 1.005) {
				lanes[found] = x;
				gens[found++] = (unsigned)g + 1;
			}
		}
	w = snprintf(buf, len, "%.1f GB/s%s", d->link_gbs, found ? " (" : "");
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	o = (size_t)w;
	/* newest generation first: "x16 Gen5"; "x1 Gen5, x2 Gen4 or x4 Gen3" */
	for (size_t i = 0; i < found; i++) {
		size_t k = found - 1 - i;

		w = snprintf(buf + o, len - o, "%sx%u Gen%u",
			     !i               ? ""
			     : i + 1 == found ? " or "
					      : ", ",
			     lanes[k], gens[k]);
		if (w < 0 || (size_t)w >= len - o)
			return -ENOSPC;
		o += (size_t)w;
	}
	if (found) {
		if (o + 2 > len)
			return -ENOSPC;
		buf[o++] = ')';
		buf[o] = '\0';
	}
	return (int)o;
}

int ibp_topo_apply_inventory(struct ibp_topo *topo, const struct ibp_inventory *inv,
			     const struct ibp_findings *health, ibp_port_severity_fn sev)
{
	if (!topo || !inv)
		return -EINVAL;
	for (size_t i = 0; i < topo->n_hcas; i++) {
		struct ibp_topo_hca *h = &topo->hcas[i];
		const struct ibp_hca *ih = NULL;

		if (h->kind == IBP_NIC_SLINGSHOT)
			continue; /* no verbs device: not in sys/class/infiniband */
		for (size_t k = 0; k < inv->n_hcas && !ih; k++)
			if (!strcmp(inv->hcas[k].name, h->name))
				ih = &inv->hcas[k];
		if (!ih) {
			for (unsigned p = 0; p < h->n_ports; p++) {
				h->ports[p].healthy = false;
				snprintf(h->ports[p].why, sizeof(h->ports[p].why),
					 "device absent from sysfs");
			}
			continue;
		}
		/* sysfs knows the driver and node_type the file does not (RoCE or iWARP) */
		ibp_topo_hca_identify(h, ih->driver[0] ? ih->driver : NULL, ih->node_type);
		/* and the link's lanes and speed, which the file only gives as their product */
		if (ih->pcie.cur_width && ih->pcie.cur_gts > 0 && ih->pcie.cur_width <= 32 &&
		    ih->pcie.cur_gts < 1000) {
			h->d.link_width = ih->pcie.cur_width;
			h->d.link_gts = ih->pcie.cur_gts;
			h->d.link_gbs = lane_gbs(ih->pcie.cur_gts) * ih->pcie.cur_width;
		}
		h->n_ports = 0;
		for (size_t k = 0; k < ih->n_ports && h->n_ports < IBP_TOPO_MAX_PORTS; k++) {
			const struct ibp_port *ip = &ih->ports[k];
			struct ibp_topo_port *p = &h->ports[h->n_ports++];

			memset(p, 0, sizeof(*p));
			p->num = ip->num;
			p->state = ip->state;
			p->link_layer = ip->link_layer;
			p->lid = ip->lid;
			p->gid_index = -1;
			for (size_t g = 0; g < ip->n_gids; g++)
				if (ip->gids[g].type == IBP_GID_TYPE_ROCE_V2 &&
				    ip->gids[g].ipv4_mapped) {
					p->gid_index = (int)ip->gids[g].index;
					break;
				}
			snprintf(p->netdev, sizeof(p->netdev), "%s", ip->netdev);
			p->healthy = ip->state == IBP_PORT_ACTIVE;
			if (!p->healthy)
				snprintf(p->why, sizeof(p->why), "port state %s",
					 state_name(ip->state));
			if (p->healthy && health) {
				const struct ibp_finding *x = fail_finding(
				    health, h->name, p->num, sev ? sev : exact_severity);

				if (x) {
					p->healthy = false;
					snprintf(p->why, sizeof(p->why), "%.39s (%.140s)", x->code,
						 x->observed);
				}
			}
		}
	}
	return 0;
}

const struct ibp_topo_gpu *ibp_topo_find_gpu(const struct ibp_topo *topo, const char *pci)
{
	unsigned d, b, v, f;

	if (ibp_pci_parse(pci, &d, &b, &v, &f))
		return NULL;
	for (size_t i = 0; i < topo->n_gpus; i++) {
		const struct hwloc_pcidev_attr_s *a = &topo->gpus[i].d.obj->attr->pcidev;

		if (a->domain == d && a->bus == b && a->dev == v && a->func == f)
			return &topo->gpus[i];
	}
	return NULL;
}

const struct ibp_topo_hca *ibp_topo_find_hca(const struct ibp_topo *topo, const char *name)
{
	for (size_t i = 0; i < topo->n_hcas; i++)
		if (!strcmp(topo->hcas[i].name, name))
			return &topo->hcas[i];
	return NULL;
}

bool ibp_topo_gpu_memory_node(hwloc_obj_t o)
{
	return o && o->type == HWLOC_OBJ_NUMANODE &&
	       ((o->subtype && !strcmp(o->subtype, "GPUMemory")) ||
		hwloc_obj_get_info_by_name(o, "PCIBusID"));
}

void ibp_topo_host_nodes(const struct ibp_topo *topo, hwloc_const_bitmap_t cpus, hwloc_bitmap_t out)
{
	hwloc_obj_t o = NULL;

	hwloc_cpuset_to_nodeset(topo->t, cpus, out);
	while ((o = hwloc_get_next_obj_by_type(topo->t, HWLOC_OBJ_NUMANODE, o)))
		if (ibp_topo_gpu_memory_node(o))
			hwloc_bitmap_clr(out, o->os_index);
}

hwloc_const_bitmap_t ibp_topo_cpuset(const struct ibp_topo *topo)
{
	return hwloc_topology_get_topology_cpuset(topo->t);
}

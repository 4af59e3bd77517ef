/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep rdmatest: the cross-node RDMA sanity test by hand, without Slurm.
 * Start it on every node of the list at about the same time, each with its
 * own --index:
 *
 *   ibprep rdmatest --hosts 'n[1-4]' --index 0 --transport socket
 *
 * parse -> pick the local ports (inventory) -> run -> report -> exit status:
 * 0 every link passed, 1 the test found a problem, 2 could not run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/hca.h"
#include "ibprep/hostlist.h"
#include "ibprep/json.h"
#include "ibprep/policy.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_ports.h"
#include "ibprep/rdmatest_rails.h"
#include "ibprep/report.h"
#include "ibprep/sysfs.h"

#define MAX_ADDRS IBP_HOSTLIST_MAX

static const struct ibprep_opt rdmatest_opts[] = {
    {"hosts", 'H', 0, "LIST", "the nodes, a Slurm host list (n[1-4,7],gpu[001-003])"},
    {"index", 'i', 0, "I", "this node's position in LIST (0-based)"},
    {"node", 'n', 0, "NAME", "... or this node's name in LIST"},
    {"addrs", 'a', 0, "A,B,...",
     "numeric address of every node, in LIST order (default: resolve the names)"},
    {"transport", 't', 0, "T",
     "socket (TCP, runs anywhere) or verbs (RDMA); default: the test_transport= key (verbs)"},
    {"device", 'd', 0, "DEV",
     "test this HCA; default: every ACTIVE port, in order, as rails (socket: over each "
     "port's netdev address, when they have one; quick mode: the first)"},
    {"port", 'p', 0, "P", "its port (default 1)"},
    {"gid-index", 'g', 0, "N", "RoCE GID index (default: the RoCE v2 IPv4 GID)"},
    {"sysfs-root", 'r', 0, "DIR", "read the ports from DIR/sys instead of /sys"},
    {"job", 'j', 0, "J",
     "identify the run (default SLURM_JOB_ID, or 0); the test port is derived from job and "
     "step: use the same on every node"},
    {"step", 's', 0, "S", "the step (default SLURM_STEP_ID, or 0)"},
    {"mode", 'm', 0, "M", "full (every port, each a rail: the default) or quick (rail 0 only)"},
    {"munge-socket", 'M', 0, "PATH", "munged's socket (default: munge's own)"},
    {"insecure", 'I', 0, NULL,
     "no munge credentials: anyone who reaches the port can take part; for machines without "
     "munge only"},
    {"buf", 'b', 0, "BYTES", "pattern size (default 1 MiB)"},
    {"burst", 'B', 0, "BYTES", "bandwidth burst"},
    {"json", 'J', 0, NULL, "one JSON document instead of text"},
    {NULL, 0, 0, NULL, NULL},
};

const struct ibprep_cmd_spec ibprep_rdmatest_spec = {
    .name = "rdmatest",
    .synopsis = "--hosts LIST (--index I | --node NAME) [OPTIONS]\n"
		"                       [KEY=VALUE ...]",
    .about = "Runs the cross-node RDMA sanity test with the other nodes of LIST, which run\n"
	     "the same command at about the same time with their own index.  Node i writes\n"
	     "to i+1 and i+2 and checks what i-1 and i-2 wrote, over each rail; a failure\n"
	     "names the node at fault, the device and the port.\n",
    .opts = rdmatest_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy: test_timeout=, test_min_bw=, test_max_lat_us=, test_ports=A-B, "
		    "test_pairing=, test_transport=",
    .epilog = "Ports: as root, the test listens on test_ports= (default 230-299, below\n"
	      "net.ipv4.ip_unprivileged_port_start: no other user can take them).  As\n"
	      "another user it cannot: it listens on unprivileged ports (default\n"
	      "61000-61999) that any local user could take first.  A range that overlaps\n"
	      "net.ipv4.ip_local_port_range is refused.\n"
	      "\n"
	      "ibprep rdmatest --child is internal: the test child of spank_ib.so (plan on\n"
	      "fd 0, result on fd 1, listeners from fd 3).\n"
	      "\n"
	      "exit status: 0 every link passed, 1 a problem was found, 2 could not run\n",
};

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Splits "a,b,c" in place into at most MAX pointers; -E2BIG when more. */
static long split_addrs(char *s, const char **v, size_t max)
{
	size_t n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		if (n == max)
			return -E2BIG;
		v[n++] = tok;
	}
	return (long)n;
}

static int pick_gid(const struct ibp_port *p, int want)
{
	int v2 = -1;

	if (want >= 0)
		return want;
	if (p->link_layer != IBP_LL_ETH)
		return 0;
	for (size_t g = 0; g < p->n_gids; g++) {
		if (p->gids[g].type != IBP_GID_TYPE_ROCE_V2)
			continue;
		if (p->gids[g].ipv4_mapped)
			return (int)p->gids[g].index;
		if (v2 < 0)
			v2 = (int)p->gids[g].index;
	}
	return v2 >= 0 ? v2 : 0;
}

static void fill_port(struct ibp_tx_port *tp, const struct ibp_hca *h, const struct ibp_port *p,
		      int gid_index)
{
	memset(tp, 0, sizeof(*tp));
	snprintf(tp->device, sizeof(tp->device), "%s", h->name);
	tp->port = p->num;
	tp->link_layer = p->link_layer;
	tp->rate_gbps = p->rate.known ? p->rate.gbps : 0;
	tp->gid_index = pick_gid(p, gid_index);
}

/*
 * The ports to test, from the inventory: --device/--port, or every ACTIVE
 * port.  NETDEV (may be NULL) gets each port's netdev (NETDEV_BUF holds
 * them).  QUIET: no port is no error (the socket transport then runs on
 * the node's address).
 */
static int pick_ports(const char *root, const char *device, unsigned port, int gid_index,
		      struct ibp_tx_port *ports, size_t *n, const char **netdev,
		      char (*netdev_buf)[IF_NAMESIZE], bool quiet)
{
	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings f;
	int rc;

	*n = 0;
	ibp_inventory_init(&inv);
	ibp_findings_init(&f);
	rc = ibp_sysfs_open(&fs, root);
	if (rc && quiet)
		return 0;
	if (rc) {
		fprintf(stderr, "ibprep rdmatest: cannot open sysfs root '%s': %s\n", root,
			strerror(-rc));
		return 2;
	}
	rc = ibp_inventory_load(&inv, &fs, &f);
	if (rc && quiet) {
		rc = 0;
		goto out;
	}
	if (rc) {
		fprintf(stderr, "ibprep rdmatest: cannot read the RDMA devices under '%s': %s\n",
			root, strerror(-rc));
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < inv.n_hcas; i++) {
		const struct ibp_hca *h = &inv.hcas[i];

		if (device && strcmp(h->name, device) != 0)
			continue;
		for (size_t k = 0; k < h->n_ports && *n < IBP_RDMATEST_MAX_RAILS; k++) {
			const struct ibp_port *p = &h->ports[k];

			if (device ? p->num != port : p->state != IBP_PORT_ACTIVE)
				continue;
			if (netdev) {
				snprintf(netdev_buf[*n], IF_NAMESIZE, "%s", p->netdev);
				netdev[*n] = netdev_buf[*n];
			}
			fill_port(&ports[(*n)++], h, p, gid_index);
		}
	}
	rc = 0;
	if (*n == 0 && !quiet) {
		if (device)
			fprintf(stderr,
				"ibprep rdmatest: %s port %u: not found under "
				"%s/sys/class/infiniband\n",
				device, port, root);
		else
			fprintf(
			    stderr,
			    "ibprep rdmatest: no ACTIVE RDMA port under %s/sys/class/infiniband: "
			    "use --transport socket, or check the node with 'ibprep check'\n",
			    root);
		rc = 2;
	}
out:
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);
	return rc;
}

static void json_out(const struct ibp_rdmatest_config *cfg, const struct ibp_hostlist *hl,
		     const struct ibp_findings *f, const struct ibp_rdmatest_result *res,
		     const char *transport)
{
	struct ibp_json j;

	ibp_json_init_file(&j, stdout, IBP_JSON_PRETTY);
	ibp_json_object_begin(&j);
	ibp_json_key(&j, "schema");
	ibp_json_int(&j, IBP_REPORT_SCHEMA);
	ibp_json_key(&j, "command");
	ibp_json_string(&j, "rdmatest");
	ibp_json_key(&j, "node");
	ibp_json_string(&j, hl->names[cfg->index]);
	ibp_json_key(&j, "index");
	ibp_json_uint(&j, cfg->index);
	ibp_json_key(&j, "nnodes");
	ibp_json_uint(&j, hl->n);
	ibp_json_key(&j, "transport");
	ibp_json_string(&j, transport);
	ibp_json_key(&j, "verdict");
	ibp_json_string(&j, ibp_findings_verdict(f));
	ibp_json_key(&j, "pass");
	ibp_json_bool(&j, res->pass);
	ibp_json_key(&j, "test_port");
	ibp_json_uint(&j, res->oob_port);
	ibp_json_key(&j, "elapsed_s");
	ibp_json_double(&j, res->elapsed_s);
	ibp_json_key(&j, "dropped_connections");
	ibp_json_uint(&j, res->dropped);
	ibp_json_key(&j, "links");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < res->n_links; i++) {
		const struct ibp_rdmatest_link *l = &res->links[i];

		ibp_json_object_begin(&j);
		ibp_json_key(&j, "from");
		ibp_json_string(&j, hl->names[l->from]);
		ibp_json_key(&j, "to");
		ibp_json_string(&j, hl->names[l->to]);
		ibp_json_key(&j, "round");
		ibp_json_uint(&j, l->round);
		ibp_json_key(&j, "rail");
		ibp_json_uint(&j, l->rail);
		ibp_json_key(&j, "status");
		ibp_json_string(&j, ibp_link_status_name(l->status));
		ibp_json_key(&j, "device");
		ibp_json_string(&j, l->device);
		ibp_json_key(&j, "port");
		ibp_json_uint(&j, l->port);
		ibp_json_key(&j, "peer_device");
		ibp_json_string(&j, l->peer_device);
		ibp_json_key(&j, "peer_port");
		ibp_json_uint(&j, l->peer_port);
		ibp_json_key(&j, "gbps"); /* null: no rate measured (a datagram rail, a failure) */
		if (l->gbps > 0)
			ibp_json_double(&j, l->gbps);
		else
			ibp_json_null(&j);
		ibp_json_key(&j, "lat_us");
		ibp_json_double(&j, l->lat_us);
		ibp_json_key(&j, "detail");
		ibp_json_string(&j, l->detail);
		ibp_json_object_end(&j);
	}
	ibp_json_array_end(&j);
	ibp_json_key(&j,
		     "probes"); /* cross-rail: does this node's rail reach another rail's port */
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < res->n_probes; i++) {
		const struct ibp_rdmatest_probe *q = &res->probes[i];

		ibp_json_object_begin(&j);
		ibp_json_key(&j, "to");
		ibp_json_string(&j, hl->names[q->to]);
		ibp_json_key(&j, "kind");
		ibp_json_string(&j, ibp_rdmatest_probe_kind_name(q->kind));
		ibp_json_key(&j, "round");
		ibp_json_uint(&j, q->round);
		ibp_json_key(&j, "rail");
		ibp_json_uint(&j, q->from_rail);
		ibp_json_key(&j, "to_rail");
		ibp_json_uint(&j, q->to_rail);
		ibp_json_key(&j, "reached");
		ibp_json_bool(&j, q->reached);
		ibp_json_object_end(&j);
	}
	ibp_json_array_end(&j);
	ibp_report_findings_json(&j, f, hl->names[cfg->index]);
	ibp_json_object_end(&j);
	if (ibp_json_finish(&j))
		fprintf(stderr, "ibprep rdmatest: writing JSON failed\n");
}

static void text_out(const struct ibp_rdmatest_config *cfg, const struct ibp_hostlist *hl,
		     const struct ibp_findings *f, const struct ibp_rdmatest_result *res)
{
	char line[1024];

	for (size_t i = 0; i < res->n_links; i++) {
		const struct ibp_rdmatest_link *l = &res->links[i];

		printf("link %s -> %s round %u rail %u", hl->names[l->from], hl->names[l->to],
		       l->round, l->rail);
		if (l->device[0])
			printf(" (%s port %u)", l->device, l->port);
		printf(": %s", ibp_link_status_name(l->status));
		if (l->gbps > 0)
			printf(", %.2f Gb/s", l->gbps);
		if (l->lat_us > 0)
			printf(", %.0f us", l->lat_us);
		if (l->detail[0])
			printf(": %s", l->detail);
		printf("\n");
	}
	for (size_t i = 0; i < f->n; i++) {
		ibp_report_finding_line(&f->v[i], hl->names[cfg->index], line, sizeof(line));
		printf("%s\n", line);
	}
	printf("verdict: %s (%s, node %zu of %zu, test port %u, %.3f s)\n", ibp_findings_verdict(f),
	       hl->names[cfg->index], cfg->index, hl->n, res->oob_port, res->elapsed_s);
}

/*
 * The listener: as root, the same as the plugin (bound here, below the
 * unprivileged start); as a user, unprivileged ports and a plain warning.
 * A range in the ephemeral range is refused either way.  0 or 2 (exit).
 */
static int setup_ports(struct ibp_policy *pol, bool ports_given, uint32_t job, uint32_t step,
		       const char *addr, int *fds, uint16_t *ports, size_t *n_listen)
{
	struct ibp_port_sysctl sc;
	struct ibp_findings f;
	struct ibp_sysfs fs;
	char line[1024];
	bool root = geteuid() == 0;
	int rc;

	*n_listen = 0;
	if (!root && !ports_given) {
		pol->test_port_lo = IBP_TEST_PORTS_USER_LO;
		pol->test_port_hi = IBP_TEST_PORTS_USER_HI;
	}
	memset(&sc, 0, sizeof(sc));
	if (!ibp_sysfs_open(&fs, "/")) {
		if (ibp_port_sysctl_read(&fs, &sc))
			memset(&sc, 0, sizeof(sc));
		ibp_sysfs_close(&fs);
	}
	ibp_findings_init(&f);
	rc = ibp_port_range_check(pol->test_port_lo, pol->test_port_hi, &sc, &f);
	for (size_t i = 0; i < f.n; i++) {
		/* As a user the unprivileged warning is said once, below. */
		if (!root && !strcmp(f.v[i].code, "test_ports_unprivileged"))
			continue;
		ibp_report_finding_line(&f.v[i], "", line, sizeof(line));
		fprintf(stderr, "ibprep rdmatest: %s\n", line);
	}
	ibp_findings_release(&f);
	if (rc)
		return 2;
	if (!root) {
		if (ibp_port_range_privileged(pol->test_port_lo, pol->test_port_hi, &sc)) {
			fprintf(
			    stderr,
			    "ibprep rdmatest: test_ports=%u-%u are privileged ports: only root "
			    "can listen there; run as root, or give unprivileged test_ports= on "
			    "every node\n",
			    pol->test_port_lo, pol->test_port_hi);
			return 2;
		}
		fprintf(stderr,
			"ibprep rdmatest: warning: not root: listening on unprivileged ports "
			"%u-%u, which any local user can bind first or answer on; such a user "
			"can make this test fail.  Run as root for a listener no user can take\n",
			pol->test_port_lo, pol->test_port_hi);
		return 0;
	}
	rc = ibp_rdmatest_listen(job, step, pol->test_port_lo, pol->test_port_hi, addr, fds, ports,
				 IBP_RDMATEST_MAX_LISTEN);
	if (rc < 0) {
		fprintf(stderr,
			"ibprep rdmatest: cannot listen on any candidate of test_ports=%u-%u for "
			"job %u step %u: %s\n",
			pol->test_port_lo, pol->test_port_hi, job, step, strerror(-rc));
		return 2;
	}
	*n_listen = (size_t)rc;
	return 0;
}

int ibprep_cmd_rdmatest(int argc, char **argv)
{
	struct ibp_rdmatest_config cfg = {0};
	struct ibp_rdmatest_result *res = NULL;
	struct ibp_tx_port ports[IBP_RDMATEST_MAX_RAILS];
	struct ibp_hostlist hl = {0};
	struct ibp_findings f;
	struct ibp_policy pol;
	const char **addrs = NULL;
	const char *hosts = NULL, *node = NULL, *device = NULL, *root = "/", *env;
	char *addr_arg = NULL, err[256];
	uint64_t index = UINT64_MAX, v;
	unsigned port = 1;
	int gid_index = -1, c, rc = 2;
	struct ibprep_args args;
	const char *pairs[256];
	size_t n_pairs = 0;
	bool json = false, ports_given = false;
	size_t n_ports = 0, n_listen = 0;
	int listen_fds[IBP_RDMATEST_MAX_LISTEN];
	uint16_t listen_ports[IBP_RDMATEST_MAX_LISTEN];

	/* The plugin's test child: nothing else on its command line. */
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return ibprep_rdmatest_child();
	for (size_t i = 0; i < IBP_RDMATEST_MAX_LISTEN; i++)
		listen_fds[i] = -1;
	ibp_policy_init(&pol);
	ibp_findings_init(&f);
	env = getenv("SLURM_JOB_ID");
	if (env && !parse_u64(env, UINT32_MAX, &v))
		cfg.job = (uint32_t)v;
	env = getenv("SLURM_STEP_ID");
	if (env && !parse_u64(env, UINT32_MAX, &v))
		cfg.step = (uint32_t)v;
	ibprep_args_init(&args, &ibprep_rdmatest_spec, argc, argv);
	while ((c = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		const char *val = args.value;

		switch (c) {
		case 'H':
			hosts = val;
			break;
		case 'i':
			if (parse_u64(val, IBP_HOSTLIST_MAX, &index))
				goto bad_value;
			break;
		case 'n':
			node = val;
			break;
		case 'a':
			addr_arg = args.value; /* split in place */
			break;
		case 't':
			if (ibp_policy_set(&pol, "test_transport", val, err, sizeof(err)))
				goto bad_policy;
			break;
		case 'd':
			device = val;
			break;
		case 'p':
			if (parse_u64(val, 255, &v) || v == 0)
				goto bad_value;
			port = (unsigned)v;
			break;
		case 'g':
			if (parse_u64(val, 65535, &v))
				goto bad_value;
			gid_index = (int)v;
			break;
		case 'r':
			root = val;
			break;
		case 'j':
			if (parse_u64(val, UINT32_MAX, &v))
				goto bad_value;
			cfg.job = (uint32_t)v;
			break;
		case 's':
			if (parse_u64(val, UINT32_MAX, &v))
				goto bad_value;
			cfg.step = (uint32_t)v;
			break;
		case 'm':
			if (!strcmp(val, "quick"))
				cfg.mode = IBP_RDMATEST_QUICK;
			else if (!strcmp(val, "full"))
				cfg.mode = IBP_RDMATEST_FULL;
			else
				goto bad_value;
			break;
		case 'M':
			cfg.munge_socket = val;
			break;
		case 'I':
			cfg.insecure = true;
			break;
		case 'b':
			if (parse_u64(val, 1 << 30, &v) || v == 0)
				goto bad_value;
			cfg.buf_len = (size_t)v;
			break;
		case 'B':
			if (parse_u64(val, 1ull << 32, &v) || v == 0)
				goto bad_value;
			cfg.burst_bytes = v;
			break;
		case 'J':
			json = true;
			break;
		case IBPREP_ARGS_OPERAND:
			if (n_pairs == sizeof(pairs) / sizeof(pairs[0])) {
				fprintf(stderr, "ibprep rdmatest: too many KEY=VALUE arguments\n");
				goto out;
			}
			pairs[n_pairs++] = val; /* applied after the options, as before */
			break;
		case IBPREP_ARGS_HELP:
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	for (size_t i = 0; i < n_pairs; i++) {
		if (ibp_policy_set_pair(&pol, pairs[i], err, sizeof(err)))
			goto bad_policy;
		if (!strncmp(pairs[i], "test_ports=", 11))
			ports_given = true;
	}
	if (!hosts) {
		fprintf(stderr, "ibprep rdmatest: --hosts is required\n");
		ibprep_usage(&ibprep_rdmatest_spec, stderr);
		return 2;
	}
	if (ibp_hostlist_expand(hosts, 0, &hl, err, sizeof(err))) {
		fprintf(stderr, "ibprep rdmatest: --hosts: %s\n", err);
		return 2;
	}
	if (node) {
		long k = ibp_hostlist_find(&hl, node);

		if (k < 0) {
			fprintf(stderr, "ibprep rdmatest: --node %s is not in --hosts %s\n", node,
				hosts);
			goto out;
		}
		if (index != UINT64_MAX && index != (uint64_t)k) {
			fprintf(stderr,
				"ibprep rdmatest: --node %s is index %ld, not --index %llu\n", node,
				k, (unsigned long long)index);
			goto out;
		}
		index = (uint64_t)k;
	}
	if (index == UINT64_MAX || index >= hl.n) {
		fprintf(stderr, "ibprep rdmatest: %s: give --index (0..%zu) or --node\n",
			index == UINT64_MAX ? "no index" : "index out of range", hl.n - 1);
		goto out;
	}
	if (addr_arg) {
		long n;

		addrs = calloc(hl.n, sizeof(*addrs));
		if (!addrs)
			goto out;
		n = split_addrs(addr_arg, addrs, hl.n);
		if (n != (long)hl.n) {
			fprintf(stderr,
				"ibprep rdmatest: --addrs has %s addresses, --hosts %zu nodes\n",
				n < 0 ? "more" : "fewer", hl.n);
			goto out;
		}
		/* a typo is the caller's, said now: not a failed link blamed on a node later */
		for (size_t i = 0; i < hl.n; i++) {
			struct in6_addr a;

			if (inet_pton(AF_INET, addrs[i], &a) != 1 &&
			    inet_pton(AF_INET6, addrs[i], &a) != 1) {
				fprintf(
				    stderr,
				    "ibprep rdmatest: --addrs: '%s' (entry %zu, for %s) is not a "
				    "numeric IPv4 or IPv6 address\n",
				    addrs[i], i + 1, hl.names[i]);
				goto out;
			}
		}
		cfg.addrs = addrs;
	}
	cfg.transport = ibp_transport_find(pol.test_transport);
	if (!cfg.transport) {
		fprintf(stderr,
			"ibprep rdmatest: transport '%s' is not built into this ibprep (libibverbs "
			"missing at build time?): use --transport socket\n",
			pol.test_transport);
		goto out;
	}
	if (cfg.transport->kind == IBP_TX_VERBS || device) {
		if (strcmp(root, "/") != 0 && ibprep_sysfs_root_check("rdmatest", root))
			goto out;
		rc = pick_ports(root, device, port, gid_index, ports, &n_ports, NULL, NULL, false);
		if (rc)
			goto out;
		rc = 2;
		cfg.ports = ports;
		cfg.n_ports = n_ports;
	} else {
		/* socket: each ACTIVE port over its own netdev's address, when they have one */
		const char *nd[IBP_RDMATEST_MAX_RAILS];
		static char nd_buf[IBP_RDMATEST_MAX_RAILS][IF_NAMESIZE];

		pick_ports(root, NULL, 0, gid_index, ports, &n_ports, nd, nd_buf, true);
		n_ports = ibp_rails_socket_ports(ports, nd, n_ports);
		if (n_ports) {
			cfg.ports = ports;
			cfg.n_ports = n_ports;
		}
	}
	if (cfg.insecure)
		fprintf(stderr,
			"ibprep rdmatest: warning: --insecure: neither the connections nor "
			"the frames are authenticated (no munge credential, MAC keys from "
			"public values); any process that reaches the test port can take part "
			"and alter the results\n");
	/* With --addrs, on this node's address (several "nodes" may share a host). */
	if (setup_ports(&pol, ports_given, cfg.job, cfg.step, addrs ? addrs[index] : NULL,
			listen_fds, listen_ports, &n_listen))
		goto out;
	if (n_listen) {
		cfg.listen_fds = listen_fds;
		cfg.listen_ports = listen_ports;
		cfg.n_listen_fds = n_listen;
	}
	cfg.nodes = &hl;
	cfg.index = (size_t)index;
	cfg.uid = (uint32_t)getuid();
	cfg.policy = &pol;
	res = calloc(1, sizeof(*res));
	if (!res)
		goto out;
	rc = ibp_rdmatest_run(&cfg, &f, res);
	if (rc) {
		for (size_t i = 0; i < f.n; i++) {
			ibp_report_finding_line(&f.v[i], hl.names[index], err, sizeof(err));
			fprintf(stderr, "ibprep rdmatest: %s\n", err);
		}
		if (!f.n)
			fprintf(stderr, "ibprep rdmatest: %s\n", strerror(-rc));
		rc = 2;
		goto out;
	}
	if (json)
		json_out(&cfg, &hl, &f, res, cfg.transport->name);
	else
		text_out(&cfg, &hl, &f, res);
	rc = ibp_findings_worst(&f) == IBP_SEV_FAIL ? 1 : 0;
	goto out;
bad_value:
	fprintf(stderr, "ibprep rdmatest: bad value '%s' for %s\n", args.value ? args.value : "",
		args.option ? args.option : "?");
	ibprep_usage(&ibprep_rdmatest_spec, stderr);
	goto out;
bad_policy:
	fprintf(stderr, "ibprep rdmatest: %s\n", err);
out:
	for (size_t i = 0; i < IBP_RDMATEST_MAX_LISTEN; i++)
		if (listen_fds[i] >= 0)
			close(listen_fds[i]);
	free(res);
	free(addrs);
	ibp_hostlist_release(&hl);
	ibp_findings_release(&f);
	return rc;
}

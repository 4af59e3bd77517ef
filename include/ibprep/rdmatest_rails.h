/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_rails.h: the rails a cross-node test runs on.  A rail is one
 * HCA port of the step (the placement's fabric ports, in their order: rail
 * k of one node pairs with rail k of the others).
 *
 * The verbs transport drives a port through RC QPs: InfiniBand and RoCE
 * ports only.  EFA (libfabric's efa provider, SRD, no RC), Slingshot
 * (libfabric's cxi, no verbs device) and the other kinds (iWARP needs
 * rdma_cm to connect, usNIC has no RC) are not driven: the caller leaves
 * them out and says so.
 *
 * The socket transport tests a rail over its port's own netdev (the IPoIB
 * interface of an IB port, the Ethernet netdev of a RoCE port): the
 * address of that netdev in this network namespace, and every socket
 * bound to it (transport.h), so a rail whose network is cut, or a port
 * cabled to another rail's switch, is seen as such and not through the
 * node's bootstrap interface.
 *
 * Reads the live network namespace (getifaddrs, netlink); never prints;
 * any context.
 */
#ifndef IBPREP_RDMATEST_RAILS_H
#define IBPREP_RDMATEST_RAILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/place.h"
#include "ibprep/transport.h"

/* Whether a transport of kind TX can drive a port of fabric kind KIND. */
bool ibp_rails_drivable(enum ibp_tx_kind tx, enum ibp_fabric_kind kind);

/*
 * The address of netdev IFNAME in this network namespace, numeric, into
 * ADDR: its first IPv4 address, else its first global IPv6 one (a
 * link-local address needs a scope, which a peer cannot use).  0,
 * -ENODEV (no such interface here), -EADDRNOTAVAIL (it has none),
 * -ENOSPC, or -errno of getifaddrs.
 */
int ibp_rails_netdev_addr(const char *ifname, char *addr, size_t len);
/* The same, with the address's prefix length (its netmask's bits) in *PREFIX. */
int ibp_rails_netdev_addr_prefix(const char *ifname, char *addr, size_t len, uint8_t *prefix);

/*
 * The socket transport's rails: PORTS[0..N) (device, port, rail filled by
 * the caller) with NETDEV[i] each port's netdev ("" none) get IFNAME and
 * ADDR (and PREFIX), and no rate (TCP over the netdev is no measure of the port's RDMA
 * rate, the bandwidth floor does not apply).  When no port has an address, none is set and 0 is returned: the
 * test then runs one rail on the node's own address (the nodes have no
 * per-rail IP networks); else N, a port without one keeping its IFNAME
 * and an empty ADDR (its links fail, naming the netdev; ports without a
 * netdev at all get the IFNAME "-").
 */
size_t ibp_rails_socket_ports(struct ibp_tx_port *ports, const char *const *netdev, size_t n);

#endif

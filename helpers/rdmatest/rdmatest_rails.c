/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_rails.c: which ports a transport can drive, and each port's own
 * netdev address for the socket transport (rdmatest_rails.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ibprep/rdmatest_rails.h"

bool ibp_rails_drivable(enum ibp_tx_kind tx, enum ibp_fabric_kind kind)
{
	if (tx == IBP_TX_SOCKET)
		return true; /* any port with an address on its netdev */
	return kind == IBP_FABRIC_IB || kind == IBP_FABRIC_ROCE;
}

/* The bits set in a netmask of LEN bytes. */
static uint8_t mask_bits(const unsigned char *m, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i < len; i++)
		for (unsigned b = 0; b < 8; b++)
			n += (m[i] >> b) & 1;
	return (uint8_t)n;
}

int ibp_rails_netdev_addr(const char *ifname, char *addr, size_t len)
{
	uint8_t prefix;

	return ibp_rails_netdev_addr_prefix(ifname, addr, len, &prefix);
}

int ibp_rails_netdev_addr_prefix(const char *ifname, char *addr, size_t len, uint8_t *prefix)
{
	struct ifaddrs *all = NULL;
	const struct ifaddrs *v6 = NULL, *v4 = NULL;
	char buf[INET6_ADDRSTRLEN];
	int rc = -EADDRNOTAVAIL;

	if (!ifname || !ifname[0] || strlen(ifname) >= IF_NAMESIZE || !if_nametoindex(ifname))
		return -ENODEV;
	if (getifaddrs(&all))
		return -errno;
	for (const struct ifaddrs *i = all; i && !v4; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) != 0)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			v4 = i;
		else if (i->ifa_addr->sa_family == AF_INET6 && !v6 &&
			 !IN6_IS_ADDR_LINKLOCAL(
			     &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
			v6 = i;
	}
	*prefix = 0;
	if (v4) {
		rc = inet_ntop(AF_INET, &((const struct sockaddr_in *)v4->ifa_addr)->sin_addr, buf,
			       sizeof(buf))
			 ? 0
			 : -EINVAL;
		if (v4->ifa_netmask && v4->ifa_netmask->sa_family == AF_INET)
			*prefix = mask_bits(
			    (const unsigned char *)&((const struct sockaddr_in *)v4->ifa_netmask)
				->sin_addr,
			    4);
	} else if (v6) {
		rc = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)v6->ifa_addr)->sin6_addr,
			       buf, sizeof(buf))
			 ? 0
			 : -EINVAL;
		if (v6->ifa_netmask && v6->ifa_netmask->sa_family == AF_INET6)
			*prefix = mask_bits(
			    (const unsigned char *)&((const struct sockaddr_in6 *)v6->ifa_netmask)
				->sin6_addr,
			    16);
	}
	freeifaddrs(all);
	if (rc)
		return rc;
	if ((size_t)snprintf(addr, len, "%s", buf) >= len)
		return -ENOSPC;
	return 0;
}

size_t ibp_rails_socket_ports(struct ibp_tx_port *ports, const char *const *netdev, size_t n)
{
	size_t with = 0;

	for (size_t i = 0; i < n; i++) {
		ports[i].addr[0] = '\0';
		ports[i].ifname[0] = '\0';
		/* TCP over the port's netdev is no measure of its RDMA rate: no floor from it */
		ports[i].rate_gbps = 0;
		ports[i].prefix = 0;
		if (netdev[i] && netdev[i][0] &&
		    !ibp_rails_netdev_addr_prefix(netdev[i], ports[i].addr, sizeof(ports[i].addr),
						  &ports[i].prefix))
			with++;
	}
	if (!with) {
		for (size_t i = 0; i < n; i++)
			ports[i].addr[0] = '\0';
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(ports[i].ifname, sizeof(ports[i].ifname), "%s",
			 netdev[i] && netdev[i][0] ? netdev[i] : "-");
	return n;
}

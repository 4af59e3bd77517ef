/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport.c: the transports by name (transport.h).  The one file that
 * knows both: neither transport knows the other.
 */
#include <string.h>

#include "ibprep/transport.h"

const struct ibp_transport_ops *ibp_transport_find(const char *name)
{
	if (!name)
		return NULL;
	if (!strcmp(name, "socket"))
		return &ibp_transport_socket;
	if (!strcmp(name, "verbs"))
		return &ibp_transport_verbs;
	return NULL;
}

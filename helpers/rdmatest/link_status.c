/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * link_status.c: a link's outcome and its name (oob.h), on the wire's
 * summaries, in the reports and in the results log, which the fabric reader
 * parses back.  Apart from oob.c so that a program that only writes the
 * results log (the step's watcher) does not link the codec and, through the
 * fingerprint, libibverbs.
 */
#include <errno.h>
#include <string.h>

#include "ibprep/oob.h"

static const char *const link_status_names[IBP_LINK_STATUS_COUNT] = {
    [IBP_LINK_UNTESTED] = "untested",
    [IBP_LINK_PASS] = "pass",
    [IBP_LINK_UNREACHABLE] = "unreachable",
    [IBP_LINK_AUTH] = "failed authentication",
    [IBP_LINK_PROTOCOL] = "protocol error",
    [IBP_LINK_TIMEOUT] = "timed out",
    [IBP_LINK_TRANSPORT] = "data path down",
    [IBP_LINK_CORRUPT] = "data corrupted",
    [IBP_LINK_BW_LOW] = "bandwidth low",
    [IBP_LINK_LAT_HIGH] = "latency high",
    [IBP_LINK_GONE] = "peer went away",
    [IBP_LINK_LOCAL] = "local failure",
    [IBP_LINK_VERSION] = "other protocol version",
};

const char *ibp_link_status_name(enum ibp_link_status s)
{
	if ((unsigned)s >= IBP_LINK_STATUS_COUNT)
		return "unknown";
	return link_status_names[s];
}

int ibp_link_status_parse(const char *name, size_t len, enum ibp_link_status *out)
{
	for (unsigned i = 0; i < IBP_LINK_STATUS_COUNT; i++) {
		const char *n = link_status_names[i];

		if (len && n[0] == name[0] && strlen(n) == len && !memcmp(n, name, len)) {
			*out = (enum ibp_link_status)i;
			return 0;
		}
	}
	return -EINVAL;
}

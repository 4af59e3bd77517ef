/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_linkwatch_text.c: arbitrary bytes into ibp_linkwatch_from_text (the
 * step's watcher reads the plugin's start-of-step read from its argument).
 * What it accepts must be within the enums and IBP_LW_MAX_PORTS, and must
 * write back and read back unchanged; what it refuses leaves no port.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/linkwatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ibp_linkwatch a, b;
static struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS];
static char s[IBP_LW_TEXT_MAX + 1], t[IBP_LW_TEXT_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > IBP_LW_TEXT_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (ibp_linkwatch_from_text(s, &a)) {
		if (a.n_ports)
			abort();
		return 0;
	}
	if (a.n_ports > IBP_LW_MAX_PORTS)
		abort();
	for (size_t i = 0; i < a.n_ports; i++) {
		const struct ibp_lw_port *p = &a.ports[i];

		if (p->state < IBP_PORT_STATE_UNKNOWN || p->state > IBP_PORT_ACTIVE_DEFER ||
		    p->phys_state < IBP_PHYS_UNKNOWN || p->phys_state > IBP_PHYS_PHY_TEST ||
		    p->port < 1 || p->port > 255 || !p->device[0])
			abort();
		memcpy(ids[i].device, p->device, sizeof(ids[i].device));
		ids[i].port = p->port;
	}
	if (ibp_linkwatch_to_text(&a, ids, a.n_ports, t, sizeof(t)) ||
	    ibp_linkwatch_from_text(t, &b) || b.n_ports != a.n_ports || b.mono_ns != a.mono_ns ||
	    b.real_ns != a.real_ns)
		abort();
	for (size_t i = 0; i < b.n_ports; i++) {
		const struct ibp_lw_port *x = &b.ports[i], *y = &a.ports[i];

		if (strcmp(x->device, y->device) || x->port != y->port || x->state != y->state ||
		    x->phys_state != y->phys_state)
			abort();
		for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++)
			if (x->c[c].known != y->c[c].known || x->c[c].value != y->c[c].value)
				abort();
	}
	return 0;
}

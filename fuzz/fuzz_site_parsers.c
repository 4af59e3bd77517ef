/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the parsers of what node checks read from elsewhere:
 * a line of `scontrol show node -o` (ibp_node_state_parse; the reason is
 * whatever an admin or another tool wrote), proc/<pid>/limits
 * (ibp_proc_parse_memlock), slurm.conf (ibp_slurm_conf_get), a
 * SlurmdPidFile pattern (ibp_slurm_expand_path), a Prometheus label value
 * (ibp_prom_escape).  None may crash, read or write out of bounds, or
 * return text that is not NUL-terminated inside its buffer; an escaped label
 * value never holds a raw newline or an unescaped quote.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/nodestate.h"
#include "ibprep/prom.h"
#include "ibprep/slurmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_node_state st;
	char out[256], esc[512];
	uint64_t kb;
	char *s;

	if (size > 65536)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (ibp_node_state_parse(s, "n1", &st) == 0) {
		if (strnlen(st.state, sizeof(st.state)) == sizeof(st.state) ||
		    strnlen(st.reason, sizeof(st.reason)) == sizeof(st.reason))
			abort();
		(void)ibp_drain_decide(&st, size & 1, "spank-ib check: x");
	}
	(void)ibp_proc_parse_memlock(s, &kb);
	int n = ibp_slurm_conf_get(s, "SlurmdPidFile", out, sizeof(out));
	if (n >= 0 && (size_t)n != strlen(out))
		abort();
	n = ibp_slurm_expand_path(s, "n1", "host1", out, sizeof(out));
	if (n >= 0 && ((size_t)n != strlen(out) || out[0] != '/'))
		abort();
	n = ibp_prom_escape(s, esc, sizeof(esc));
	if (n >= 0) {
		if ((size_t)n != strlen(esc) || strchr(esc, '\n'))
			abort();
		for (const char *c = esc; *c; c++) {
			if (*c == '\\') {
				if (!c[1] || !strchr("\\\"n", c[1]))
					abort();
				c++;
			} else if (*c == '"') {
				abort();
			}
		}
	}
	free(s);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nodestate.c: the drain/resume decisions of nodestate.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ibprep/nodestate.h"
#include "ibprep/text.h"

/* "KEY=" at the start of LINE or after a space; the value's start or NULL. */
static const char *field(const char *line, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl)
		if ((p == line || p[-1] == ' ') && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}

/* Is S (up to END) " [user@time]", with no space inside the brackets? */
static bool stamp_at(const char *s, const char *end)
{
	const char *rb, *at = NULL;

	if (end - s < 5 || s[0] != ' ' || s[1] != '[')
		return false;
	for (rb = s + 2; rb < end && *rb != ']'; rb++) {
		if (*rb == ' ')
			return false;
		if (*rb == '@')
			at = rb;
	}
	return rb < end && at && at > s + 2 && (rb + 1 == end || rb[1] == ' ');
}

int ibp_node_state_parse(const char *line, const char *node, struct ibp_node_state *st)
{
	const char *v;

	if (!line || !node || !*node || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	size_t nl = strlen(node);
	if (strncmp(line, "NodeName=", 9) != 0 || strncmp(line + 9, node, nl) != 0 ||
	    (line[9 + nl] != ' ' && line[9 + nl] != '\0' && line[9 + nl] != '\n'))
		return -ENOENT;
	snprintf(st->name, sizeof(st->name), "%s", node);
	const char *eol = strchr(line, '\n');
	const char *end = eol ? eol : line + strlen(line);

	v = field(line, "State");
	if (!v || v >= end)
		return -EINVAL;
	size_t sl = strcspn(v, " \n");
	if (sl == 0 || sl >= sizeof(st->state))
		return -EINVAL;
	memcpy(st->state, v, sl);
	st->state[sl] = '\0';
	char tmp[sizeof(st->state)], *save = NULL;
	memcpy(tmp, st->state, sl + 1);
	for (char *t = strtok_r(tmp, "+", &save); t; t = strtok_r(NULL, "+", &save))
		if (!strcmp(t, "DRAIN") || !strcmp(t, "DRAINED") || !strcmp(t, "DRAINING"))
			st->drain = true;

	v = field(line, "Reason");
	if (v && v < end) {
		/* the reason may hold spaces; " [user@time]" ends it when present */
		const char *r_end = end;
		for (const char *p = end - 1; p >= v; p--)
			if (stamp_at(p, end)) {
				r_end = p;
				break;
			}
		size_t rl = (size_t)(r_end - v);
		if (rl >= sizeof(st->reason))
			rl = sizeof(st->reason) - 1;
		memcpy(st->reason, v, rl);
		st->reason[rl] = '\0';
		if (!strcmp(st->reason, "(null)") || !strcmp(st->reason, "none"))
			st->reason[0] = '\0';
	}
	return 0;
}

bool ibp_drain_reason_ours(const char *reason, const char *node)
{
	size_t pl = strlen(IBP_DRAIN_PREFIX), nl = node ? strlen(node) : 0;

	if (!reason)
		return false;
	if (!strncmp(reason, IBP_DRAIN_PREFIX_CHECK, strlen(IBP_DRAIN_PREFIX_CHECK)))
		return true;
	/*
	 * The previous version's check wrote "spank-ib: NODE: ...".  The plugin's
	 * reasons after the same prefix start with a device ("mlx5_3 port 1: ")
	 * or a finding's text, never with the node's own name and ": ".
	 */
	return nl && !strncmp(reason, IBP_DRAIN_PREFIX, pl) && !strncmp(reason + pl, node, nl) &&
	       reason[pl + nl] == ':' && reason[pl + nl + 1] == ' ';
}

enum ibp_drain_action ibp_drain_decide(const struct ibp_node_state *st, bool node_fault,
				       const char *our_reason)
{
	bool ours = ibp_drain_reason_ours(st->reason, st->name);

	if (!node_fault)
		return st->drain && ours ? IBP_DRAIN_RESUME : IBP_DRAIN_NOTHING;
	if (st->reason[0] && !ours)
		return IBP_DRAIN_NOTHING; /* an admin's, NHC's, the plugin's or Slurm's own */
	if (!st->drain)
		return IBP_DRAIN_SET;
	if (!ours)
		return IBP_DRAIN_NOTHING; /* drained without a reason: not ours either */
	return our_reason && strcmp(st->reason, our_reason) != 0 ? IBP_DRAIN_UPDATE
								 : IBP_DRAIN_NOTHING;
}

bool ibp_drain_reason(const struct ibp_findings *f, const char *prefix, char *buf, size_t len)
{
	const struct ibp_finding *first = NULL;
	struct ibp_finding one;
	size_t more = 0;
	char line[1024];

	if (!buf || !len)
		return false;
	buf[0] = '\0';
	for (size_t i = 0; f && i < f->n; i++) {
		if (!ibp_finding_drainable(&f->v[i]))
			continue;
		if (!first)
			first = &f->v[i];
		else
			more++;
	}
	if (!first)
		return false;
	/*
	 * The finding's one-line text (escaped: one line, no control bytes)
	 * without the node, which is the drained node, nor the fix, which the
	 * message and the report carry.
	 */
	one = *first;
	one.node[0] = '\0';
	one.fix[0] = '\0';
	ibp_finding_format(&one, NULL, line, sizeof(line));
	size_t cap = len < IBP_DRAIN_REASON_MAX ? len : IBP_DRAIN_REASON_MAX;
	if (more)
		ibp_format_cut(buf, cap, "%s%s (+%zu more)", prefix ? prefix : "", line, more);
	else
		ibp_format_cut(buf, cap, "%s%s", prefix ? prefix : "", line);
	return true;
}

int ibp_drain_reason_clean(const char *in, char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t pl = strlen(IBP_DRAIN_PREFIX), n;

	if (!out || !len)
		return -EINVAL;
	out[0] = '\0';
	if (!in)
		return -EINVAL;
	n = strlen(in);
	if (n <= pl || n >= IBP_DRAIN_REASON_MAX || n >= len ||
	    strncmp(in, IBP_DRAIN_PREFIX, pl) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n;) {
		size_t adv = 1;

		if (s[i] >= 0x20 && s[i] < 0x7f) {
			out[i] = (char)s[i];
		} else if (s[i] >= 0x80 && (adv = ibp_utf8_len(s + i, n - i)) &&
			   !(s[i] == 0xc2 && s[i + 1] < 0xa0)) {
			memcpy(out + i, s + i, adv); /* well-formed, not a C1 control */
		} else {
			adv = 1;
			out[i] = '?';
		}
		i += adv;
	}
	out[n] = '\0';
	return 0;
}

const char *ibp_drain_action_name(enum ibp_drain_action a)
{
	switch (a) {
	case IBP_DRAIN_SET:
		return "drain";
	case IBP_DRAIN_UPDATE:
		return "update the reason";
	case IBP_DRAIN_RESUME:
		return "resume";
	default:
		return "nothing";
	}
}

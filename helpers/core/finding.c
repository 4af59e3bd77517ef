/* SPDX-License-Identifier: GPL-2.0-or-later */
/* finding.c: the findings list of finding.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/finding.h"
#include "ibprep/text.h"

void ibp_findings_init(struct ibp_findings *f)
{
	f->v = NULL;
	f->n = f->cap = 0;
}

void ibp_findings_release(struct ibp_findings *f)
{
	free(f->v);
	ibp_findings_init(f);
}

int ibp_findings_add(struct ibp_findings *f, const struct ibp_finding *x)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct ibp_finding *nv = reallocarray(f->v, cap, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		f->v = nv;
		f->cap = cap;
	}
	f->v[f->n++] = *x;
	return 0;
}

/* Copies S into a fixed field, cutting it with "..." when it does not fit. */
static void field_set(char *dst, size_t size, const char *s)
{
	ibp_format_cut(dst, size, "%s", s ? s : "");
}

int ibp_findings_vaddf(struct ibp_findings *f, const char *code, enum ibp_severity sev,
		       enum ibp_fault_class fclass, const char *device, int port,
		       const char *expected, const char *fix, const char *observed_fmt, va_list ap)
{
	struct ibp_finding x;
	char obs[IBP_TEXT_MAX + 4];

	memset(&x, 0, sizeof(x));
	field_set(x.code, sizeof(x.code), code);
	x.severity = sev;
	x.fclass = fclass;
	field_set(x.device, sizeof(x.device), device);
	x.port = port;
	field_set(x.expected, sizeof(x.expected), expected);
	field_set(x.fix, sizeof(x.fix), fix);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): a cross-file false positive */
	int n = vsnprintf(obs, sizeof(obs), observed_fmt, ap);
	if (n < 0)
		obs[0] = '\0';
	/* obs is 4 bytes longer than the field, so field_set sees the overflow */
	field_set(x.observed, sizeof(x.observed), obs);
	return ibp_findings_add(f, &x);
}

int ibp_findings_addf(struct ibp_findings *f, const char *code, enum ibp_severity sev,
		      enum ibp_fault_class fclass, const char *device, int port,
		      const char *expected, const char *fix, const char *observed_fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, observed_fmt);
	rc =
	    ibp_findings_vaddf(f, code, sev, fclass, device, port, expected, fix, observed_fmt, ap);
	va_end(ap);
	return rc;
}

enum ibp_severity ibp_findings_worst(const struct ibp_findings *f)
{
	enum ibp_severity w = IBP_SEV_OK;

	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].severity > w)
			w = f->v[i].severity;
	return w;
}

const char *ibp_findings_verdict(const struct ibp_findings *f)
{
	switch (ibp_findings_worst(f)) {
	case IBP_SEV_FAIL:
		return "fail";
	case IBP_SEV_WARN:
		return "warn";
	default:
		return "pass";
	}
}

size_t ibp_findings_count(const struct ibp_findings *f, enum ibp_severity sev, int fclass)
{
	size_t c = 0;

	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].severity >= sev && (fclass < 0 || (int)f->v[i].fclass == fclass))
			c++;
	return c;
}

const char *ibp_severity_name(enum ibp_severity s)
{
	switch (s) {
	case IBP_SEV_OK:
		return "ok";
	case IBP_SEV_WARN:
		return "warn";
	case IBP_SEV_FAIL:
		return "fail";
	}
	return "unknown";
}

const char *ibp_class_name(enum ibp_fault_class c)
{
	switch (c) {
	case IBP_CLASS_NODE:
		return "node";
	case IBP_CLASS_JOB:
		return "job";
	case IBP_CLASS_FABRIC:
		return "fabric";
	}
	return "unknown";
}

int ibp_finding_format(const struct ibp_finding *x, const char *default_node, char *buf, size_t len)
{
	const char *node = x->node[0] ? x->node : (default_node ? default_node : "");
	char where[IBP_DEV_MAX + 24] = "";
	char exp[IBP_TEXT_MAX + 16] = "";
	char fix[IBP_TEXT_MAX + 4] = "";

	if (x->device[0] && x->port > 0)
		snprintf(where, sizeof(where), "%s port %d: ", x->device, x->port);
	else if (x->device[0])
		snprintf(where, sizeof(where), "%s: ", x->device);
	if (x->expected[0])
		snprintf(exp, sizeof(exp), ", expected %s", x->expected);
	if (x->fix[0])
		snprintf(fix, sizeof(fix), ": %s", x->fix);
	if (!buf || !len) {
		char dummy[1];
		return snprintf(dummy, sizeof(dummy), "%s%s%s%s%s%s", node, node[0] ? ": " : "",
				where, x->observed, exp, fix);
	}
	{
		char raw[IBP_NODE_MAX + sizeof(where) + 3 * IBP_TEXT_MAX + 64];
		int n = snprintf(raw, sizeof(raw), "%s%s%s%s%s%s", node, node[0] ? ": " : "", where,
				 x->observed, exp, fix);

		/* fields carry user and sysfs text: made safe for a log or a terminal */
		ibp_text_escape(raw, buf, len);
		return n;
	}
}

bool ibp_finding_counts(const struct ibp_finding *x, bool health)
{
	return health || x->fclass != IBP_CLASS_NODE || !strcmp(x->code, IBP_SETUP_CODE);
}

bool ibp_finding_drainable(const struct ibp_finding *x)
{
	return x->severity == IBP_SEV_FAIL && x->fclass == IBP_CLASS_NODE &&
	       strcmp(x->code, IBP_SETUP_CODE) != 0;
}

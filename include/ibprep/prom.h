/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prom.h: the check's results in Prometheus' text exposition format
 * (version 0.0.4, which node_exporter's textfile collector reads), and the
 * atomic write of a textfile.
 *
 * What is exported (ibprep(1) and docs/site-integration.md list every
 * metric): the verdict, per-port health, each finding, link width and
 * speed generation, the HCA's PCIe link and whether it is downtrained, the
 * GPUDirect module, the memlock limit jobs get, the GPU-to-HCA pairs, the
 * check's duration, and ibprep_build_info{version}.  Labels "device" and
 * "port" are spelt as node_exporter's infiniband collector spells them, so
 * queries join on them; what that collector already exports (port state,
 * rate, raw counters) is not repeated.
 *
 * The writer checks names and escapes label values itself, so no value read
 * from sysfs can break the format.  No globals; any context; writes only to
 * the caller's stream (open_memstream gives a buffer).
 */
#ifndef IBPREP_PROM_H
#define IBPREP_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ibprep/finding.h"
#include "ibprep/health.h"
#include "ibprep/policy.h"

/* The file name the textfile collector reads in its directory. */
#define IBP_PROM_TEXTFILE "spank_ib.prom"

/* A metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.  A label name: [a-zA-Z_][a-zA-Z0-9_]*, not "__". */
bool ibp_prom_name_valid(const char *name);
bool ibp_prom_label_name_valid(const char *name);

/*
 * Escapes a label value as the format requires (backslash, double quote and
 * newline become \\, \" and \n) into OUT (LEN bytes).  Returns the escaped
 * length, or -ENOSPC when it does not fit (OUT is then "").
 */
int ibp_prom_escape(const char *in, char *out, size_t len);

/*
 * A writer over a stream.  Every call after the first error does nothing;
 * ibp_prom_finish() returns that error: -EINVAL (a bad name, a sample
 * outside its family, a family declared twice) or -EIO (the stream).
 */
struct ibp_prom {
	FILE *out;
	int err;
	char family[96];   /* the open family's name, "" none */
	char done[64][96]; /* families already written (a family must not repeat) */
	size_t n_done;
};

void ibp_prom_init(struct ibp_prom *w, FILE *out);
/* "# HELP NAME HELP" and "# TYPE NAME TYPE" (gauge, counter, info, stateset, untyped). */
int ibp_prom_family(struct ibp_prom *w, const char *name, const char *type, const char *help);
/*
 * One sample of the open family: NAME (the family's name, or the family
 * name plus a suffix such as _bucket), LABELS as NULL-terminated pairs
 * ("device", "mlx5_0", "port", "1", NULL) or NULL, VALUE (+Inf, -Inf and
 * NaN as the format spells them; integers exactly).
 */
int ibp_prom_sample(struct ibp_prom *w, const char *name, const char *const *labels, double value);
int ibp_prom_finish(struct ibp_prom *w);

/* One GPU with the HCA port placement gives it (ibp_place_compute). */
struct ibp_prom_pair {
	unsigned gpu;     /* index in PCI bus order */
	char gpu_pci[16]; /* "0000:18:00.0" */
	char device[64];  /* "mlx5_0" */
	unsigned port;    /* 1-based */
	char distance[8]; /* "PIX" ... "SYS" */
};

struct ibp_prom_check {
	const struct ibp_health_input *in;
	const struct ibp_policy *pol;
	const struct ibp_findings *findings;
	const struct ibp_prom_pair *pairs; /* may be NULL */
	size_t n_pairs;
	bool pairs_known;  /* a topology was read: export the pairs (possibly none) */
	double duration_s; /* the check's wall time */
	const char *version;
};

/* Writes every metric of the check to OUT.  0, -EINVAL or -EIO. */
int ibp_prom_write_check(FILE *out, const struct ibp_prom_check *c);

/*
 * Writes LEN bytes of DATA to DIR/NAME atomically: a temporary file in DIR
 * (O_EXCL, mode 0644), fsync, rename over NAME, fsync of DIR.  Readers see
 * the old file or the new one, never a part.  On any failure the temporary
 * file is removed and NAME is untouched.  0 or -errno (-ENOENT / -ENOTDIR:
 * DIR missing; -EACCES / -EROFS: not writable; -ENOSPC ...).  NAME must be a
 * plain file name (no '/'): -EINVAL otherwise.
 */
int ibp_prom_write_file(const char *dir, const char *name, const void *data, size_t len);

#endif

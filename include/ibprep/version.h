/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * version.h: the release of spank-ib.  The Makefile's VERSION is the one
 * source: it passes -DIBPREP_VERSION="x.y.z" to every compilation, and the
 * Debian and RPM packages take their version from the same variable.
 * `ibprep --version` and the Prometheus ibprep_build_info{version} print it.
 */
#ifndef IBPREP_VERSION_H
#define IBPREP_VERSION_H

#ifndef IBPREP_VERSION
#define IBPREP_VERSION "unknown" /* built without the Makefile */
#endif

#endif

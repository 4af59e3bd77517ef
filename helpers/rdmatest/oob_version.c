/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * oob_version.c: the protocol version this build speaks (oob.h).  Alone in
 * its object file so that a test program can link its own definition in
 * front of the library and make one simulated node another build
 * (tests/tools/rdmatest-sim.c); the library, the plugin and the command
 * always use this one.
 */
#include "ibprep/oob.h"

unsigned ibp_oob_wire_version(void)
{
	return IBP_OOB_VERSION;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun_shim.c: what a job's owner can do to the launch request with a
 * modified srun, as an LD_PRELOAD library for srun (the user's own process:
 * nothing here needs a privilege).  For test_spank_nodelist.sh.
 *
 *   IBP_SHIM_ENV_NODELIST=LIST   the SLURM_STEP_NODELIST srun puts in the
 *                                step's environment becomes LIST (srun
 *                                overwrites a user's --export of it: this is
 *                                env_array_overwrite_fmt in libslurm)
 *   IBP_SHIM_LAYOUT=OLD=NEW      the step layout slurmctld sent srun names
 *                                NEW instead of OLD (as many nodes): srun
 *                                sends the launch to NEW's nodes with NEW as
 *                                the step's node list, node count and index
 *                                consistent with it; only the credential,
 *                                which slurmctld signed, still says OLD
 *
 * Both interpose functions that libslurmfull calls through its PLT
 * (Slurm 22.05); the layout is the public slurm_step_layout_t.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

void env_array_overwrite_fmt(char ***array_ptr, const char *name, const char *value_fmt, ...);
int unpack_slurm_step_layout(slurm_step_layout_t **layout, void *buffer, uint16_t protocol_version);

typedef void (*overwrite_fn)(char ***array_ptr, const char *name, const char *value_fmt, ...);
typedef int (*unpack_fn)(slurm_step_layout_t **layout, void *buffer, uint16_t protocol_version);
typedef char *(*xstrdup_fn)(const char *s);
typedef void (*xfree_fn)(void **p);

void env_array_overwrite_fmt(char ***array_ptr, const char *name, const char *value_fmt, ...)
{
	overwrite_fn real = (overwrite_fn)dlsym(RTLD_NEXT, "env_array_overwrite_fmt");
	const char *forged = getenv("IBP_SHIM_ENV_NODELIST");
	char buf[8192];
	va_list ap;

	va_start(ap, value_fmt);
	vsnprintf(buf, sizeof(buf), value_fmt, ap);
	va_end(ap);
	if (forged && !strcmp(name, "SLURM_STEP_NODELIST"))
		snprintf(buf, sizeof(buf), "%s", forged);
	real(array_ptr, name, "%s", buf);
}

int unpack_slurm_step_layout(slurm_step_layout_t **layout, void *buffer, uint16_t protocol_version)
{
	unpack_fn real = (unpack_fn)dlsym(RTLD_NEXT, "unpack_slurm_step_layout");
	const char *spec = getenv("IBP_SHIM_LAYOUT");
	const char *eq = spec ? strchr(spec, '=') : NULL;
	int rc = real(layout, buffer, protocol_version);

	if (!rc && eq && *layout && (*layout)->node_list &&
	    strlen((*layout)->node_list) == (size_t)(eq - spec) &&
	    !strncmp((*layout)->node_list, spec, (size_t)(eq - spec))) {
		/* Slurm's own allocator: srun frees the list with it */
		xstrdup_fn dup = (xstrdup_fn)dlsym(RTLD_DEFAULT, "slurm_xstrdup");
		xfree_fn xfree = (xfree_fn)dlsym(RTLD_DEFAULT, "slurm_xfree");
		char *forged = dup ? dup(eq + 1) : NULL;

		if (forged && xfree) {
			xfree((void **)&(*layout)->node_list);
			(*layout)->node_list = forged;
			fprintf(stderr, "srun_shim: step layout %.*s -> %s\n", (int)(eq - spec),
				spec, eq + 1);
		}
	}
	return rc;
}

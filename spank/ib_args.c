/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_args.c: the admin's arguments, from plugstack.conf and config=FILE.
 *
 *   required spank_ib.so sysfs_root=/ topology=/etc/ibprep/%n.xml drain=yes ...
 *
 * Only the admin can set these: the plugin never takes a path, a policy
 * or a switch from the job's environment.  Every key, the plugin's own
 * and the policy's, goes through the library's one parser of
 * spank_ib.conf(5) (conf.h), the one `ibprep check --config` uses.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "spank_ib.h"

int spank_ib_short_hostname(char *buf, size_t len)
{
	char h[256];
	char *dot;

	if (gethostname(h, sizeof(h)) < 0)
		return -errno;
	h[sizeof(h) - 1] = '\0';
	dot = strchr(h, '.');
	if (dot)
		*dot = '\0';
	if (!h[0])
		return -ENOENT;
	if (strlen(h) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, h);
	return 0;
}

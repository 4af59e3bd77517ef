/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "ibprep/text.h"

int ibp_vformat_cut(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n;

	if (!buf || !len)
		return vsnprintf(NULL, 0, fmt, ap);
	n = vsnprintf(buf, len, fmt, ap);
	if (n >= (int)len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return n;
}

int ibp_format_cut(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = ibp_vformat_cut(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * text.h: formatting into fixed buffers.  Messages in this project go into
 * caller-supplied buffers; text that does not fit is cut and ends in "..."
 * so a reader sees it was cut, and nothing ever overflows.
 */
#ifndef IBPREP_TEXT_H
#define IBPREP_TEXT_H

#include <stdarg.h>
#include <stddef.h>

/*
 * vsnprintf into BUF (LEN bytes, may be 0); a cut text ends in "...".
 * Returns what vsnprintf returned.
 */
int ibp_vformat_cut(char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int ibp_format_cut(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

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
#include <stdint.h>

/*
 * vsnprintf into BUF (LEN bytes, may be 0); a cut text ends in "...", cut
 * at a UTF-8 character's boundary.  Returns what vsnprintf returned.
 */
int ibp_vformat_cut(char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int ibp_format_cut(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * vsnprintf at *OFF into BUF (LEN bytes), for text built piece by piece:
 * what fits is written, BUF stays NUL-terminated and *OFF moves past it.
 * 0; -ENOSPC when the text was cut (*OFF then LEN - 1: any later non-empty
 * append is refused too) or *OFF was already past the end (nothing written);
 * -EINVAL when vsnprintf fails (nothing appended).
 * A cut is raw (no "..."): the caller decides whether a cut text may
 * be shown or must be refused.
 */
int ibp_appendf(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The core's error return in one call: the message into ERR as
 * ibp_format_cut writes it (nothing when ERR is NULL or ERRLEN 0), and RC
 * (-errno) returned.
 */
int ibp_errf(int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Length of the well-formed UTF-8 sequence at S (N bytes available; Unicode
 * table 3-7), 0 when the bytes there are not one.  Shared with the JSON writer.
 */
size_t ibp_utf8_len(const unsigned char *s, size_t n);

/*
 * IN made safe for a log line or a terminal (user- or hardware-controlled
 * text: NCCL_IB_HCA, sysfs strings ...), the JSON writer's rules for text:
 * '\\' doubled, newline, tab and CR as a space (one line stays one), other
 * control bytes (ESC: terminal sequences), DEL,
 * C1 controls and bytes that are not UTF-8 as \xNN; well-formed UTF-8 kept.
 * Always NUL-terminated; a cut text ends in "...".  Its length, -ENOSPC
 * (cut) or -EINVAL (no buffer).
 */
int ibp_text_escape(const char *in, char *out, size_t len);

#endif

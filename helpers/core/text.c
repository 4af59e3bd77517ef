/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ibprep/text.h"

/*
 * Where to cut BUF[0..P) so that no UTF-8 character is split: P, or the
 * start of the character that P would split.  Bytes that are not UTF-8
 * are cut anywhere (ibp_text_escape shows them as \xNN).
 */
static size_t char_boundary(const char *buf, size_t p)
{
	size_t k = p, start, need;
	unsigned char lead;

	while (k > 0 && p - k < 3 && ((unsigned char)buf[k - 1] & 0xc0) == 0x80)
		k--;
	if (!k)
		return p;
	start = k - 1;
	lead = (unsigned char)buf[start];
	if (lead < 0xc2 || lead > 0xf4)
		return p;
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	return start + need > p ? start : p;
}

int ibp_vformat_cut(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n;

	if (!buf || !len)
		return vsnprintf(NULL, 0, fmt, ap);
	n = vsnprintf(buf, len, fmt, ap);
	if (n >= (int)len && len > 4)
		memcpy(buf + char_boundary(buf, len - 4), "...", 4);
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

int ibp_appendf(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	if (!buf || *off >= len)
		return -ENOSPC;
	room = len - *off;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		buf[*off] = '\0'; /* an encoding error: nothing of it kept */
		return -EINVAL;
	}
	if ((size_t)n >= room) {
		*off = len - 1;
		return -ENOSPC;
	}
	*off += (size_t)n;
	return 0;
}

int ibp_errf(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		ibp_vformat_cut(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/*
 * Length of the well-formed UTF-8 sequence at S (Unicode table 3-7), 0 when
 * the bytes there are not one.
 */
size_t ibp_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f; /* no UTF-16 surrogates */
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f; /* nothing above U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int ibp_text_escape(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strlen(in), o = 0;
	bool cut = false;

	if (!out || !len)
		return -EINVAL;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		char esc[8];
		size_t elen, adv = 1;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			esc[0] = (char)c;
			elen = 1;
		} else if (c == '\\') {
			esc[0] = esc[1] = '\\';
			elen = 2;
		} else if (c >= 0x80 && (adv = ibp_utf8_len(s + i, n - i)) &&
			   !(c == 0xc2 && s[i + 1] < 0xa0)) {
			/* well-formed and not a C1 control (U+0080..U+009F): as it is */
			elen = adv;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			esc[0] = ' '; /* one line stays one line, still readable */
			elen = 1;
			adv = 1;
		} else {
			/* controls, DEL, C1 controls and bytes that are not UTF-8: one at a time */
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[c >> 4];
			esc[3] = hex[c & 0xf];
			elen = 4;
			adv = 1;
		}
		if (o + elen >= len) {
			cut = true;
			break;
		}
		memcpy(out + o, elen == adv && c >= 0x80 ? in + i : esc, elen);
		o += elen;
		i += adv;
	}
	out[o] = '\0';
	if (cut && len > 4) {
		size_t at = o + 4 <= len - 1 ? o : len - 4;

		/* cut only between whole characters or escapes: step back over a partial one */
		while (at > 0 && ((unsigned char)out[at] & 0xc0) == 0x80)
			at--;
		memcpy(out + at, "...", 4);
	}
	return cut ? -ENOSPC : (int)o;
}

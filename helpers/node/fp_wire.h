/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fp_wire.h (internal): the bounded writer and reader of the compact wire
 * forms of the fingerprint and its sum (fingerprint.h).  Big-endian
 * integers; a string is a length byte and that many printable bytes (no
 * NUL, no padding).  Both sides stop at the first error and keep it
 * (ERR), so a codec reads as a plain list of fields and checks once at the
 * end: the writer never passes LEN, the reader never reads past it.
 */
#ifndef IBPREP_FP_WIRE_H
#define IBPREP_FP_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fpw_out {
	uint8_t *p;
	size_t len, off;
	int err; /* -ENOSPC */
};

struct fpw_in {
	const uint8_t *p;
	size_t len, off;
	int err; /* -EINVAL: short, or a bad string */
};

static inline void fpw_put(struct fpw_out *w, const void *b, size_t n)
{
	if (w->err || n > w->len - w->off) {
		w->err = -ENOSPC;
		return;
	}
	memcpy(w->p + w->off, b, n);
	w->off += n;
}

static inline void fpw_put8(struct fpw_out *w, uint8_t v)
{
	fpw_put(w, &v, 1);
}

static inline void fpw_put32(struct fpw_out *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	fpw_put(w, b, sizeof(b));
}

static inline void fpw_put64(struct fpw_out *w, uint64_t v)
{
	fpw_put32(w, (uint32_t)(v >> 32));
	fpw_put32(w, (uint32_t)v);
}

/* S is a checked string shorter than 256 bytes (its field's size). */
static inline void fpw_put_str(struct fpw_out *w, const char *s)
{
	size_t n = strlen(s);

	fpw_put8(w, (uint8_t)n);
	fpw_put(w, s, n);
}

static inline const uint8_t *fpw_get(struct fpw_in *r, size_t n)
{
	const uint8_t *p = r->p + r->off;

	if (r->err || n > r->len - r->off) {
		r->err = -EINVAL;
		return NULL;
	}
	r->off += n;
	return p;
}

static inline uint8_t fpw_get8(struct fpw_in *r)
{
	const uint8_t *p = fpw_get(r, 1);

	return p ? p[0] : 0;
}

static inline uint32_t fpw_get32(struct fpw_in *r)
{
	const uint8_t *p = fpw_get(r, 4);

	return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

static inline uint64_t fpw_get64(struct fpw_in *r)
{
	uint64_t hi = fpw_get32(r);

	return hi << 32 | fpw_get32(r);
}

/* A string for a field of SIZE bytes: length below SIZE, printable; OUT gets its NUL. */
static inline void fpw_get_str(struct fpw_in *r, char *out, size_t size)
{
	size_t n = fpw_get8(r);
	const uint8_t *p;

	if (n >= size)
		r->err = -EINVAL;
	p = fpw_get(r, n);
	if (!p)
		return;
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f) {
			r->err = -EINVAL;
			return;
		}
	memcpy(out, p, n);
	out[n] = '\0';
}

/* A string of a struct in memory: NUL within SIZE, printable (what fpw_get_str accepts). */
static inline int fpw_str_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n == size)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * json.h: a small streaming JSON writer.
 *
 * Writes one document, value by value, to a FILE* or to a growable buffer the
 * writer owns.  Strings are always escaped completely: '"', '\\', every
 * control character (U+0000..U+001F as \b \f \n \r \t or \u00XX, and DEL as
 * \u007f), and bytes that are not well-formed UTF-8 (stray continuation
 * bytes, overlong forms, surrogates, code points above U+10FFFF, truncated
 * sequences) become U+FFFD, so whatever a sysfs file or a user hands us the
 * output is valid JSON.  Non-finite doubles are written as null.
 *
 * Errors are sticky: the first one (-ENOMEM, -EIO from the stream, -EINVAL
 * for misuse such as a value without a key inside an object, a key inside an
 * array, a mismatched end or nesting deeper than IBP_JSON_MAX_DEPTH) stops
 * all further output and is returned by ibp_json_finish(), so callers may
 * write a whole document and check once.
 *
 * No globals; a writer is used by one thread at a time.  Any context.
 */
#ifndef IBPREP_JSON_H
#define IBPREP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IBP_JSON_MAX_DEPTH 32

enum {
	IBP_JSON_PRETTY = 1 << 0, /* newlines and two-space indentation */
};

struct ibp_json {
	FILE *fp;  /* the stream, or NULL: write to buf */
	char *buf; /* owned; NUL-terminated while err == 0 */
	size_t len, cap;
	int err; /* first error, sticky */
	unsigned flags;
	unsigned depth;
	bool in_object[IBP_JSON_MAX_DEPTH]; /* per open container: object or array */
	size_t count[IBP_JSON_MAX_DEPTH];   /* members written so far */
	bool have_key;                      /* a key was written and waits for its value */
	bool done;                          /* the top-level value is complete */
};

/*
 * Writer on a stream (not closed by the writer).  Output is buffered in
 * blocks: ibp_json_finish() writes the end of the document and frees the
 * block (ibp_json_release() is then a no-op; call it instead of finish to
 * drop an unfinished document).
 */
void ibp_json_init_file(struct ibp_json *j, FILE *fp, unsigned flags);
/* Writer into its own buffer; read it with ibp_json_buf, free with _release. */
void ibp_json_init_buf(struct ibp_json *j, unsigned flags);
/* Frees the buffer; safe on a zeroed or file writer; leaves it unusable. */
void ibp_json_release(struct ibp_json *j);

/* The buffer written so far ("" for a file writer, or when nothing was written). */
const char *ibp_json_buf(const struct ibp_json *j, size_t *len);

/*
 * Checks the document is complete (every container closed, one top-level
 * value), writes a final newline, flushes a stream (and frees a file
 * writer's block buffer, whatever the result).  0 or the sticky error;
 * -EINVAL for an incomplete document (nothing more is written).
 */
int ibp_json_finish(struct ibp_json *j);

int ibp_json_object_begin(struct ibp_json *j);
int ibp_json_object_end(struct ibp_json *j);
int ibp_json_array_begin(struct ibp_json *j);
int ibp_json_array_end(struct ibp_json *j);

/* A member name inside an object; the next call must write its value. */
int ibp_json_key(struct ibp_json *j, const char *key);

int ibp_json_string(struct ibp_json *j, const char *s);            /* NULL writes null */
int ibp_json_stringn(struct ibp_json *j, const char *s, size_t n); /* may hold NULs */
int ibp_json_stringf(struct ibp_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ibp_json_int(struct ibp_json *j, int64_t v);
int ibp_json_uint(struct ibp_json *j, uint64_t v);
int ibp_json_double(struct ibp_json *j, double v); /* shortest of %.15g; NaN/inf: null */
int ibp_json_bool(struct ibp_json *j, bool v);
int ibp_json_null(struct ibp_json *j);

/* key + value in one call, for objects. */
int ibp_json_kv_string(struct ibp_json *j, const char *key, const char *s);
int ibp_json_kv_int(struct ibp_json *j, const char *key, int64_t v);
int ibp_json_kv_uint(struct ibp_json *j, const char *key, uint64_t v);
int ibp_json_kv_double(struct ibp_json *j, const char *key, double v);
int ibp_json_kv_bool(struct ibp_json *j, const char *key, bool v);
int ibp_json_kv_null(struct ibp_json *j, const char *key);

#endif

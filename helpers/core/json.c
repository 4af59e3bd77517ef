/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json.c: the streaming JSON writer of json.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/json.h"
#include "ibprep/text.h"

void ibp_json_init_file(struct ibp_json *j, FILE *fp, unsigned flags)
{
	memset(j, 0, sizeof(*j));
	j->fp = fp;
	j->flags = flags;
	if (!fp)
		j->err = -EINVAL;
}

void ibp_json_init_buf(struct ibp_json *j, unsigned flags)
{
	memset(j, 0, sizeof(*j));
	j->flags = flags;
}

void ibp_json_release(struct ibp_json *j)
{
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
	if (!j->err)
		j->err = -EINVAL;
}

const char *ibp_json_buf(const struct ibp_json *j, size_t *len)
{
	if (j->fp || !j->buf) {
		if (len)
			*len = 0;
		return "";
	}
	if (len)
		*len = j->len;
	return j->buf;
}

static int fail(struct ibp_json *j, int err)
{
	if (!j->err)
		j->err = err;
	return j->err;
}

/* Writes the buffered bytes of a file writer to its stream. */
static int flush_file(struct ibp_json *j)
{
	if (j->len && fwrite(j->buf, 1, j->len, j->fp) != j->len)
		return fail(j, -EIO);
	j->len = 0;
	return 0;
}

/*
 * Appends to the buffer; a file writer flushes it to the stream in blocks
 * (one fwrite per token costs more than the formatting itself).
 */
static int emit(struct ibp_json *j, const char *s, size_t n)
{
	enum { FILE_BLOCK = 16384 };

	if (j->err)
		return j->err;
	if (j->fp && j->len + n > FILE_BLOCK && flush_file(j))
		return j->err;
	if (j->fp && n > FILE_BLOCK)
		return fwrite(s, 1, n, j->fp) == n ? 0 : fail(j, -EIO);
	if (n + 1 > j->cap - j->len || !j->buf) {
		size_t cap = j->cap ? j->cap : 256;
		while (cap - j->len < n + 1) {
			if (cap > SIZE_MAX / 2)
				return fail(j, -ENOMEM);
			cap *= 2;
		}
		char *nb = realloc(j->buf, cap);
		if (!nb)
			return fail(j, -ENOMEM);
		j->buf = nb;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
	return 0;
}

static void indent(struct ibp_json *j)
{
	static const char spaces[] = "  ";

	if (!(j->flags & IBP_JSON_PRETTY))
		return;
	emit(j, "\n", 1);
	for (unsigned d = 0; d < j->depth; d++)
		emit(j, spaces, 2);
}

/* The comma, the indentation and the grammar check before any value. */
static int before_value(struct ibp_json *j)
{
	if (j->err)
		return j->err;
	if (j->depth == 0)
		return j->done ? fail(j, -EINVAL) : 0; /* one top-level value only */
	unsigned d = j->depth - 1;
	if (j->in_object[d]) {
		if (!j->have_key)
			return fail(j, -EINVAL);
		j->have_key = false;
		return 0;
	}
	if (j->count[d]++)
		emit(j, ",", 1);
	indent(j);
	return j->err;
}

static int after_value(struct ibp_json *j)
{
	if (j->depth == 0)
		j->done = true;
	return j->err;
}

/* The quoted, escaped string; no grammar state touched. */
static int write_quoted(struct ibp_json *j, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t run = 0; /* start of the pending run of bytes copied as they are */
	size_t i = 0;

	emit(j, "\"", 1);
	while (i < n && !j->err) {
		unsigned char c = s[i];
		char esc[8];
		size_t elen = 0, adv = 1;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80) {
			size_t u = ibp_utf8_len(s + i, n - i);
			if (u) {
				i += u;
				continue;
			}
			elen = (size_t)snprintf(esc, sizeof(esc), "\\ufffd");
		} else if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			elen = 2;
		} else if (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') {
			esc[0] = '\\';
			esc[1] = c == '\n'   ? 'n'
				 : c == '\t' ? 't'
				 : c == '\r' ? 'r'
				 : c == '\b' ? 'b'
					     : 'f';
			elen = 2;
		} else {
			elen = (size_t)snprintf(esc, sizeof(esc), "\\u00%c%c", hex[c >> 4],
						hex[c & 0xf]);
		}
		emit(j, str + run, i - run);
		emit(j, esc, elen);
		i += adv;
		run = i;
	}
	emit(j, str + run, i - run);
	return emit(j, "\"", 1);
}

static int open_container(struct ibp_json *j, bool object)
{
	if (before_value(j))
		return j->err;
	if (j->depth >= IBP_JSON_MAX_DEPTH)
		return fail(j, -EINVAL);
	emit(j, object ? "{" : "[", 1);
	j->in_object[j->depth] = object;
	j->count[j->depth] = 0;
	j->depth++;
	return j->err;
}

static int close_container(struct ibp_json *j, bool object)
{
	if (j->err)
		return j->err;
	if (j->depth == 0 || j->in_object[j->depth - 1] != object || j->have_key)
		return fail(j, -EINVAL);
	bool empty = j->count[j->depth - 1] == 0;
	j->depth--;
	if (!empty)
		indent(j);
	emit(j, object ? "}" : "]", 1);
	return after_value(j);
}

int ibp_json_object_begin(struct ibp_json *j)
{
	return open_container(j, true);
}

int ibp_json_object_end(struct ibp_json *j)
{
	return close_container(j, true);
}

int ibp_json_array_begin(struct ibp_json *j)
{
	return open_container(j, false);
}

int ibp_json_array_end(struct ibp_json *j)
{
	return close_container(j, false);
}

int ibp_json_key(struct ibp_json *j, const char *key)
{
	if (j->err)
		return j->err;
	if (!key || j->depth == 0 || !j->in_object[j->depth - 1] || j->have_key)
		return fail(j, -EINVAL);
	if (j->count[j->depth - 1]++)
		emit(j, ",", 1);
	indent(j);
	write_quoted(j, key, strlen(key));
	if (j->flags & IBP_JSON_PRETTY)
		emit(j, ": ", 2);
	else
		emit(j, ":", 1);
	j->have_key = true;
	return j->err;
}

int ibp_json_stringn(struct ibp_json *j, const char *s, size_t n)
{
	if (!s)
		return ibp_json_null(j);
	if (before_value(j))
		return j->err;
	write_quoted(j, s, n);
	return after_value(j);
}

int ibp_json_string(struct ibp_json *j, const char *s)
{
	return ibp_json_stringn(j, s, s ? strlen(s) : 0);
}

int ibp_json_stringf(struct ibp_json *j, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): a cross-file false positive */
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(j, -EINVAL);
	if ((size_t)n < sizeof(small))
		return ibp_json_stringn(j, small, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big)
		return fail(j, -ENOMEM);
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): a cross-file false positive */
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = ibp_json_stringn(j, big, (size_t)n);
	free(big);
	return rc;
}

static int write_scalar(struct ibp_json *j, const char *text)
{
	if (before_value(j))
		return j->err;
	emit(j, text, strlen(text));
	return after_value(j);
}

int ibp_json_int(struct ibp_json *j, int64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRId64, v);
	return write_scalar(j, b);
}

int ibp_json_uint(struct ibp_json *j, uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	return write_scalar(j, b);
}

int ibp_json_double(struct ibp_json *j, double v)
{
	char b[40];
	if (!isfinite(v))
		return write_scalar(j, "null");
	snprintf(b, sizeof(b), "%.15g", v);
	return write_scalar(j, b);
}

int ibp_json_bool(struct ibp_json *j, bool v)
{
	return write_scalar(j, v ? "true" : "false");
}

int ibp_json_null(struct ibp_json *j)
{
	return write_scalar(j, "null");
}

int ibp_json_kv_string(struct ibp_json *j, const char *key, const char *s)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_string(j, s);
}

int ibp_json_kv_int(struct ibp_json *j, const char *key, int64_t v)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_int(j, v);
}

int ibp_json_kv_uint(struct ibp_json *j, const char *key, uint64_t v)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_uint(j, v);
}

int ibp_json_kv_double(struct ibp_json *j, const char *key, double v)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_double(j, v);
}

int ibp_json_kv_bool(struct ibp_json *j, const char *key, bool v)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_bool(j, v);
}

int ibp_json_kv_null(struct ibp_json *j, const char *key)
{
	return ibp_json_key(j, key) ? j->err : ibp_json_null(j);
}

/* A file writer's block buffer is not needed once the document is out. */
static void drop_block(struct ibp_json *j)
{
	if (!j->fp)
		return;
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
}

int ibp_json_finish(struct ibp_json *j)
{
	if (!j->err && (j->depth || !j->done))
		fail(j, -EINVAL);
	if (!j->err) {
		emit(j, "\n", 1);
		if (j->fp && !j->err && (flush_file(j) || fflush(j->fp) != 0))
			fail(j, -EIO);
	}
	drop_block(j);
	return j->err;
}

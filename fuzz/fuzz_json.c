/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the JSON writer's string escaping.  Any bytes written as
 * a key and a value must give a document a strict JSON reader accepts: only
 * printable ASCII, well-formed UTF-8 and valid escapes inside the quotes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/json.h"

/* Validates one JSON string starting at S[*i] (the opening quote). */
static void check_string(const unsigned char *s, size_t n, size_t *i)
{
	if (*i >= n || s[*i] != '"')
		abort();
	for (size_t k = *i + 1; k < n; k++) {
		unsigned char c = s[k];
		if (c == '"') {
			*i = k + 1;
			return;
		}
		if (c < 0x20)
			abort(); /* raw control character */
		if (c == '\\') {
			if (++k >= n)
				abort();
			if (s[k] == 'u') {
				if (k + 4 >= n)
					abort();
				for (int d = 1; d <= 4; d++)
					if (!strchr("0123456789abcdef", s[k + d]) || !s[k + d])
						abort();
				k += 4;
			} else if (!strchr("\"\\/bfnrt", s[k]) || !s[k]) {
				abort();
			}
			continue;
		}
		if (c < 0x80)
			continue;
		/* independent UTF-8 check: decode and reject overlong, surrogate, > 10FFFF */
		int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if (!len || c > 0xf4 || k + (size_t)len > n)
			abort();
		uint32_t cp = c & (0x7f >> len);
		for (int d = 1; d < len; d++) {
			if ((s[k + d] & 0xc0) != 0x80)
				abort();
			cp = (cp << 6) | (s[k + d] & 0x3f);
		}
		static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			abort();
		k += (size_t)len - 1;
	}
	abort(); /* unterminated */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_json j;
	size_t half = size / 2, len;
	char key[256];

	size_t kl = half < sizeof(key) - 1 ? half : sizeof(key) - 1;
	memcpy(key, data, kl);
	key[kl] = '\0'; /* a key is a C string */
	ibp_json_init_buf(&j, 0);
	ibp_json_object_begin(&j);
	ibp_json_key(&j, key);
	ibp_json_stringn(&j, (const char *)data + half, size - half);
	ibp_json_object_end(&j);
	if (ibp_json_finish(&j) != 0)
		abort();
	const unsigned char *s = (const unsigned char *)ibp_json_buf(&j, &len);
	size_t i = 0;
	if (len < 6 || s[i++] != '{')
		abort();
	check_string(s, len, &i);
	if (i >= len || s[i++] != ':')
		abort();
	check_string(s, len, &i);
	if (len - i != 2 || s[i] != '}' || s[i + 1] != '\n')
		abort();
	ibp_json_release(&j);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport_pattern.c: the test pattern every transport writes and checks
 * (transport.h): a deterministic function of the seed and the byte offset,
 * so a shifted, truncated, stale or zeroed buffer never passes.
 */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ibprep/transport.h"

static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t pattern_word(uint64_t seed, size_t word)
{
	return mix64(seed + 0x9e3779b97f4a7c15ull * (word + 1));
}

/*
 * Byte 8w + b of the pattern is byte b (little-endian) of word w: whole
 * words are stored and compared 8 bytes at a time (the pattern is judged on
 * every rail of every link, and a byte loop cost the socket transport a
 * sixth of its CPU), the tail byte by byte.
 */
void ibp_pattern_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t w = 0;

	for (; w * 8 + 8 <= len; w++) {
		uint64_t v = htole64(pattern_word(seed, w));

		memcpy(p + w * 8, &v, 8);
	}
	if (w * 8 < len) {
		uint64_t v = pattern_word(seed, w);

		for (size_t b = 0; w * 8 + b < len; b++)
			p[w * 8 + b] = (uint8_t)(v >> (8 * b));
	}
}

size_t ibp_pattern_check(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;

	for (size_t w = 0; w * 8 < len; w++) {
		uint64_t v = pattern_word(seed, w), got;

		if (w * 8 + 8 <= len) {
			memcpy(&got, p + w * 8, 8);
			if (got == htole64(v))
				continue;
		}
		for (size_t b = 0; b < 8 && w * 8 + b < len; b++)
			if (p[w * 8 + b] != (uint8_t)(v >> (8 * b)))
				return w * 8 + b;
	}
	return len;
}

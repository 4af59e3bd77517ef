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

static uint8_t pattern_byte(uint64_t seed, size_t pos)
{
	return (uint8_t)(pattern_word(seed, pos / 8) >> (8 * (pos % 8)));
}

/*
 * Byte 8w + b of the pattern is byte b (little-endian) of word w: whole
 * words are stored and compared 8 bytes at a time (the pattern is judged on
 * every rail of every link, and a byte loop cost the socket transport a
 * sixth of its CPU), the bytes before the first whole word and after the
 * last one by one.  OFF is where BUF starts in the pattern: a stream
 * writes and checks it a piece at a time.
 */
void ibp_pattern_fill_at(void *buf, size_t off, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		p[i] = pattern_byte(seed, off + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t v = htole64(pattern_word(seed, (off + i) / 8));

		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = pattern_byte(seed, off + i);
}

size_t ibp_pattern_check_at(const void *buf, size_t off, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		if (p[i] != pattern_byte(seed, off + i))
			return i;
	for (; i + 8 <= len; i += 8) {
		uint64_t got;

		memcpy(&got, p + i, 8);
		if (got != htole64(pattern_word(seed, (off + i) / 8)))
			break; /* the wrong byte, found below */
	}
	for (; i < len; i++)
		if (p[i] != pattern_byte(seed, off + i))
			return i;
	return len;
}

void ibp_pattern_fill(void *buf, size_t len, uint64_t seed)
{
	ibp_pattern_fill_at(buf, 0, len, seed);
}

size_t ibp_pattern_check(const void *buf, size_t len, uint64_t seed)
{
	return ibp_pattern_check_at(buf, 0, len, seed);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the plugin's own readers of files (spank/, built in):
 *
 *   slurm.conf's AuthInfo=socket= (spank_ib_authinfo_parse): a found path is
 *   absolute, printable, shorter than the buffer, and in the text;
 *   the verdict cache (spank_ib_cache_read), from raw bytes and from a file
 *   the plugin wrote itself (as root: spank_ib_cache_store) with the input
 *   laid over it: all or nothing, every string terminated, only node faults;
 *   the kept peer lookup (spank_ib_lookup_cache_read), from raw bytes: all
 *   or nothing, 1 or 2 names, every name terminated and not empty, every
 *   address numeric.
 *
 * The first byte chooses which (0xf0 and above: the lookup), and for the
 * verdict cache where the input goes.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../spank/spank_ib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct spank_ib_cache_key key = {.host = "n1", .job_id = 7, .uid = 1000};

/* A cache file the plugin wrote (root only: else none), and how many it holds. */
static uint8_t tmpl[64 * 1024];
static size_t tmpl_len, tmpl_n = (size_t)-1;

static void make_template(void)
{
	char dir[] = "/tmp/ibp-fuzz-cache.XXXXXX", path[PATH_MAX];
	struct ibp_findings f;
	int dfd, fd;
	ssize_t r;

	tmpl_n = 0;
	if (geteuid() != 0 || !mkdtemp(dir))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ibp_findings_init(&f);
	ibp_findings_addf(&f, "port_state", IBP_SEV_FAIL, IBP_CLASS_NODE, "mlx5_0", 1, "ACTIVE",
			  "check the cable", "port state DOWN");
	ibp_findings_addf(&f, "memlock", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0, NULL, NULL,
			  "the job's own: never kept");
	ibp_findings_addf(&f, "link_width", IBP_SEV_WARN, IBP_CLASS_NODE, "mlx5_3", 1, "4X",
			  "reseat", "link width 1X");
	if (dfd >= 0 && !spank_ib_cache_store(dfd, &key, 60, &f)) {
		snprintf(path, sizeof(path), "%s/job.7.n1", dir);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = fd >= 0 ? read(fd, tmpl, sizeof(tmpl)) : -1;
		if (r > 0) {
			tmpl_len = (size_t)r;
			tmpl_n = 2;
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	ibp_findings_release(&f);
	if (dfd >= 0)
		close(dfd);
	rmdir(dir);
}

static void check_findings(const struct ibp_findings *f, int rc)
{
	if (rc) {
		if (f->n)
			abort(); /* all or nothing */
		return;
	}
	if (f->n > 256)
		abort();
	for (size_t i = 0; i < f->n; i++) {
		const struct ibp_finding *x = &f->v[i];

		if (x->fclass != IBP_CLASS_NODE ||
		    strnlen(x->code, sizeof(x->code)) == sizeof(x->code) ||
		    strnlen(x->node, sizeof(x->node)) == sizeof(x->node) ||
		    strnlen(x->device, sizeof(x->device)) == sizeof(x->device) ||
		    strnlen(x->observed, sizeof(x->observed)) == sizeof(x->observed) ||
		    strnlen(x->expected, sizeof(x->expected)) == sizeof(x->expected) ||
		    strnlen(x->fix, sizeof(x->fix)) == sizeof(x->fix))
			abort();
	}
}

static void cache(const uint8_t *data, size_t size, bool over_template)
{
	static uint8_t buf[sizeof(tmpl) + 4096];
	struct ibp_findings f;
	size_t len = 0;
	int fd, rc;

	if (over_template && tmpl_len) {
		size_t at = size ? (size_t)data[0] * 7 % tmpl_len : 0;

		memcpy(buf, tmpl, tmpl_len);
		len = tmpl_len;
		if (size > 1) {
			size_t n = size - 1 < sizeof(buf) - at ? size - 1 : sizeof(buf) - at;

			memcpy(buf + at, data + 1, n);
			if (at + n > len)
				len = at + n;
		}
	} else {
		len = size < sizeof(buf) ? size : sizeof(buf);
		memcpy(buf, data, len);
	}
	fd = memfd_create("cache", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, buf, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET)) {
		close(fd);
		return;
	}
	ibp_findings_init(&f);
	rc = spank_ib_cache_read(fd, &key, UINT_MAX, &f);
	check_findings(&f, rc);
	/* the plugin's own file, untouched, reads back whole */
	if (over_template && tmpl_len && size <= 1 && (rc || f.n != tmpl_n))
		abort();
	ibp_findings_release(&f);
	close(fd);
}

static void lookup(const uint8_t *data, size_t size)
{
	struct spank_ib_lookup_answer a;
	unsigned char bin[sizeof(struct in6_addr)];
	int fd, rc;

	fd = memfd_create("lookup", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET)) {
		close(fd);
		return;
	}
	rc = spank_ib_lookup_cache_read(fd, &key, UINT_MAX, &a);
	close(fd);
	if (rc) {
		if (a.n)
			abort(); /* all or nothing */
		return;
	}
	if (a.n < 1 || a.n > 2)
		abort();
	for (size_t i = 0; i < a.n; i++)
		if (!a.names[i][0] ||
		    strnlen(a.names[i], sizeof(a.names[i])) == sizeof(a.names[i]) ||
		    strnlen(a.addrs[i], sizeof(a.addrs[i])) == sizeof(a.addrs[i]) ||
		    (inet_pton(AF_INET, a.addrs[i], bin) != 1 &&
		     inet_pton(AF_INET6, a.addrs[i], bin) != 1))
			abort();
}

static void authinfo(const uint8_t *data, size_t size)
{
	char out[320];
	size_t outlen = size ? 1 + data[0] % sizeof(out) : sizeof(out);
	int rc;

	memset(out, 'x', sizeof(out));
	rc = spank_ib_authinfo_parse((const char *)data, size, out, outlen);
	if (rc)
		return;
	size_t n = strnlen(out, outlen);
	if (n == outlen || out[0] != '/' || !memmem(data, size, out, n))
		abort();
	for (size_t i = 0; i < n; i++)
		if (out[i] <= 0x20 || out[i] >= 0x7f || out[i] == ',')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size || size > 65536)
		return 0;
	if (tmpl_n == (size_t)-1)
		make_template();
	if (data[0] >= 0xf0) {
		lookup(data + 1, size - 1);
		return 0;
	}
	switch (data[0] % 3) {
	case 0:
		authinfo(data + 1, size - 1);
		break;
	case 1:
		cache(data + 1, size - 1, false);
		break;
	default:
		cache(data + 1, size - 1, true);
		break;
	}
	return 0;
}

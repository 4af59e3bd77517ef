/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topo_load: one topology load in a fresh process, as the plugin pays it in
 * each step's slurmstepd: `xml` parses the file (ibp_topo_load_xml),
 * `cached` goes through the topology= cache in DIR (topo_cache.h: the
 * mapped form once it is stored, which the first run does as root).  Run
 * it under `perf stat -r 300 -e task-clock`; prints the load's own wall
 * time with -v.
 *
 *   cc -O2 -D_GNU_SOURCE -Iinclude -o /tmp/topo_load bench/topo_load.c \
 *      build/libibprep.a -lhwloc -lm
 *   /tmp/topo_load cached X.xml /tmp/cache   # once: stores the mapped form
 *   perf stat -r 300 -e task-clock /tmp/topo_load xml X.xml
 *   perf stat -r 300 -e task-clock /tmp/topo_load cached X.xml /tmp/cache
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ibprep/topo_cache.h"

int main(int argc, char **argv)
{
	struct ibp_topo t;
	char why[512] = "";
	int rc, fd, dfd;

	if (argc < 3 || (strcmp(argv[1], "xml") && strcmp(argv[1], "cached")) ||
	    (!strcmp(argv[1], "cached") && argc < 4)) {
		fprintf(stderr, "usage: topo_load xml FILE | cached FILE DIR [-v]\n");
		return 2;
	}
	if (!strcmp(argv[1], "xml")) {
		rc = ibp_topo_load_xml(&t, argv[2]);
	} else {
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		dfd = open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || dfd < 0) {
			perror("topo_load: open");
			return 1;
		}
		rc = ibp_topo_load_file_cached(&t, fd, dfd, "bench", geteuid() == 0, why,
					       sizeof(why));
		close(fd);
		close(dfd);
	}
	if (rc < 0) {
		fprintf(stderr, "topo_load: %s: %s\n", argv[2], strerror(-rc));
		return 1;
	}
	if (why[0])
		fprintf(stderr, "topo_load: %s\n", why);
	if (argc > 4 || (argc > 3 && !strcmp(argv[argc - 1], "-v")))
		printf("%s: %s, %zu GPUs, %zu NICs, load %.3f ms\n", argv[2],
		       rc == 1 ? "mapped" : "parsed", t.n_gpus, t.n_hcas, t.load_ms);
	ibp_topo_release(&t);
	return 0;
}

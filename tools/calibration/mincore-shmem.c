/* Native proxy for seed 004's page-cache lookup (series.pagemap_shmem_swap):
 * mincore(2) over shared anonymous memory whose PTEs are none does one
 * shmem page-cache (xarray) lookup per page (mm/mincore.c:
 * __mincore_unmapped_range() -> mincore_page() -> filemap_get_entry(); a
 * swap value entry goes on to mincore_swap()). Run by mincore-shmem.sh
 * (root, a temporary swap file). Prints ns per call for each state and
 * pages per call. Written for foliosim; no kernel code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proxy.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define PAGE 4096UL

/* Median over `reps` passes of the ns per mincore call of `per` pages over
 * [p, p + npages); also the resident count of the last pass. */
static double time_mincore(char *p, size_t npages, size_t per, int reps, size_t *resident) {
	unsigned char *vec = malloc(npages);
	double v[64];
	for (int r = 0; r < reps; r++) {
		double t = now();
		for (size_t i = 0; i < npages; i += per)
			if (mincore(p + i * PAGE, per * PAGE, vec + i)) { perror("mincore"); exit(1); }
		v[r] = (now() - t) / (npages / per);
	}
	*resident = 0;
	for (size_t i = 0; i < npages; i++) *resident += vec[i] & 1;
	free(vec);
	qsort(v, reps, sizeof v[0], cmp);
	return v[reps / 2];
}

static char *shmem(size_t npages) {
	char *p = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) { perror("mmap"); exit(1); }
	return p;
}

static void report(const char *state, char *p, size_t npages, int reps) {
	size_t pers[] = {1, 8, 64, 512}, res = 0;
	for (int i = 0; i < 4; i++) {
		double ns = time_mincore(p, npages, pers[i], reps, &res);
		printf("%-28s pages=%zu per_call=%zu ns_per_call=%.1f ns_per_page=%.2f resident=%zu\n",
		       state, npages, pers[i], ns, ns / pers[i], res);
	}
}

int main(int argc, char **argv) {
	size_t npages = argc > 1 ? strtoul(argv[1], 0, 0) : 16384;
	int reps = argc > 2 ? atoi(argv[2]) : 9;
	if (reps > 64) reps = 64;
	/* Present: PTEs present, no lookup (the walk's per-page baseline). */
	char *a = shmem(npages);
	for (size_t i = 0; i < npages; i++) a[i * PAGE] = 1;
	report("present-mapped", a, npages, reps);
	/* Never touched: none PTEs (no tables), lookups of an empty mapping. */
	char *b = shmem(npages);
	report("never-touched", b, npages, reps);
	/* In the page cache, not mapped here: a second mapping of the first
	 * region's shmem file cannot be had without fork, so zap a's PTEs with
	 * MADV_DONTNEED (the shmem folios stay in the page cache). */
	if (madvise(a, npages * PAGE, MADV_DONTNEED)) { perror("MADV_DONTNEED"); exit(1); }
	report("cached-unmapped", a, npages, reps);
	/* Swapped out: none PTEs, swap value entries in the xarray. */
	char *c = shmem(npages);
	for (size_t i = 0; i < npages; i++) c[i * PAGE] = 1;
	if (madvise(c, npages * PAGE, MADV_PAGEOUT)) { perror("MADV_PAGEOUT"); exit(1); }
	usleep(200000);
	report("swapped", c, npages, reps);
	return 0;
}

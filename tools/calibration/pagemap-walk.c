/* Native proxy for pagemap_read() before Linux 6.5
 * (series.pagemap_walk_to_pmd_end, the kernel of seed 004's measurements).
 * Before 6.5 a read(2) of `count` bytes at page k of a 2 MiB chunk walked
 * to the chunk's end (512 - k entries) and copied only `count` bytes; 6.18
 * walks only the requested pages. A 6.18 pread(2) of (512 - k) * 8 bytes
 * at page k does the same walk (plus a longer copy_to_user), so timing it
 * for every k measures what an 8-byte-read loop cost on the old kernel.
 *
 * The region is seed 004's state, scaled: shared anonymous memory, every
 * page (state "100") or every other page ("50") written, then the first
 * 3/4 (or 1/2) paged out with MADV_PAGEOUT, 2 MiB aligned; or every page
 * written and none ("present") or all ("swapped") paged out. Run by
 * pagemap-walk.sh (root, a temporary swap file). Prints the median ns per
 * read over the region for the 6.18 reads and the pre-6.5 proxy, per
 * batch (entries per read). Written for foliosim; no kernel code. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
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
#define CHUNK 512UL /* PAGEMAP_WALK_SIZE / PAGE_SIZE */

static uint64_t buf[2 * CHUNK];

/* One pass over [first, first + npages) in reads of `batch` entries;
 * `old` reads to the chunk end instead (the pre-6.5 walk). Returns ns. */
static double pass(int fd, size_t first, size_t npages, size_t batch, int old, uint64_t *swapped) {
	double t = now();
	*swapped = 0;
	for (size_t k = first; k < first + npages; k += batch) {
		size_t n = old ? CHUNK - k % CHUNK : batch;
		if (n < batch) n = batch;
		if (pread(fd, buf, n * 8, k * 8) != (ssize_t)(n * 8)) { perror("pread"); exit(1); }
		*swapped += (buf[0] >> 62) & 1;
	}
	return now() - t;
}

int main(int argc, char **argv) {
	size_t npages = argc > 1 ? strtoul(argv[1], 0, 0) : 16384;
	int reps = argc > 2 ? atoi(argv[2]) : 9;
	const char *state = argc > 3 ? argv[3] : "100";
	int half = !strcmp(state, "50");
	if (reps > 64) reps = 64;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	sched_setaffinity(0, sizeof set, &set);
	size_t len = npages * PAGE, align = CHUNK * PAGE;
	char *raw = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) { perror("mmap"); exit(1); }
	char *p = (char *)(((uintptr_t)raw + align - 1) & ~(align - 1));
	for (size_t i = 0; i < npages; i += half ? 2 : 1) p[i * PAGE] = 1;
	/* "present": nothing paged out; "swapped": all of it. */
	size_t out = half ? npages / 2 : npages / 4 * 3;
	if (!strcmp(state, "present")) out = 0;
	if (!strcmp(state, "swapped")) out = npages;
	if (out && madvise(p, out * PAGE, MADV_PAGEOUT)) { perror("MADV_PAGEOUT"); exit(1); }
	usleep(200000);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0) { perror("pagemap"); exit(1); }
	size_t first = (uintptr_t)p / PAGE;
	size_t batches[] = {1, 2, 8, 64, 512, 1024};
	for (int b = 0; b < 6; b++) {
		for (int old = 0; old < 2; old++) {
			double v[64];
			uint64_t sw = 0;
			for (int r = 0; r < reps; r++) v[r] = pass(fd, first, npages, batches[b], old, &sw);
			qsort(v, reps, sizeof v[0], cmp);
			printf("state=%s batch=%zu walk=%s ms=%.3f ns_per_read=%.1f\n", state,
			       batches[b], old ? "to-pmd-end" : "requested", v[reps / 2] / 1e6,
			       v[reps / 2] / (npages / batches[b]));
		}
	}
	return 0;
}

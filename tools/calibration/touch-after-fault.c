/*
 * touch-after-fault: how much a user access costs right after the fault
 * that mapped its page (docs/benchmarks.md, "Speculative walks ahead of a
 * fault"; modelled as sim/user_access_rewalk, crates/hw SpecWalk).
 *
 *   cc -O2 -o /tmp/taf tools/calibration/touch-after-fault.c
 *   /tmp/taf FILE MODE        (FILE: 256 MiB, warm in the page cache)
 *
 * Prints the thread CPU time of one pass over the 65536 pages of FILE,
 * mapped MAP_SHARED read-only, reading one byte per touched page. A
 * "window" is the 16-page fault-around window of the host (64 KiB).
 *   0      every page in order (each fault, then the rest of its window)
 *   1      every page in a random order (SplitMix64, seed 1)
 *   2      only the first page of each window, in order (the faults alone)
 *   3      only the first page of each window, in a random order
 *   4      only the last page of each window, in order
 *   5      only the first page of each window, in descending order
 *   6, 7   fault every window first (untimed), then time a pass over all
 *          pages in order (6) or in a random order (7)
 *   8      as 0, page k of a window read at byte 64*k (another line)
 *   10     fault window w, then touch the other pages of window w-1
 *   11     as 0, the other pages read at byte 2048
 *   12     as 0, the other pages read at byte 0 and then byte 64
 *   20+n   fault window w, then touch its next n pages (n = 0..16)
 *   100+n  fault the first page of each 1 MiB, then its next n pages
 *          (n = 0..300; for files of 1 MiB folios)
 *   50     only every STRIDE-th page (env STRIDE): one access per folio
 *   60     fault window w, spin SPIN iterations (env), then touch its
 *          other 15 pages; 61 the same without the touches (subtract)
 *   62     as 0, with an lfence after the first page's load, so that
 *          the other pages' loads cannot issue before its fault; 63 the
 *          same without the other pages (subtract)
 * SHIFT=k (env) maps the file k pages past a 2 MiB boundary, so that
 * large folios straddle page tables and fault-around maps them by window.
 * Files of one folio size: write them with dd bs=<size> (ext4 makes
 * folios of the write size).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SZ (256UL << 20)
#define NP (SZ / 4096)
#define WIN 16

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t rng = 1;
static uint64_t splitmix64(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Fisher-Yates over the page indices. */
static void shuffle(uint32_t *idx)
{
	for (uint32_t i = NP - 1; i > 0; i--) {
		uint32_t j = splitmix64() % (i + 1), t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
}

static volatile const char *map(int fd)
{
	const char *shift = getenv("SHIFT");
	if (!shift)
		return mmap(NULL, SZ, PROT_READ, MAP_SHARED, fd, 0);
	char *b = mmap(NULL, SZ + (4UL << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return MAP_FAILED;
	b = (char *)(((uintptr_t)b + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	return mmap(b + atoi(shift) * 4096UL, SZ, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
}

int main(int argc, char **argv)
{
	static uint32_t idx[NP];
	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE MODE (modes: see the source's header)\n", argv[0]);
		return 2;
	}
	int fd = open(argv[1], O_RDONLY), mode = atoi(argv[2]);
	volatile const char *p = fd < 0 ? MAP_FAILED : map(fd);
	if (p == MAP_FAILED) {
		perror(argv[1]);
		return 1;
	}
#define AT(page, off) (p[(size_t)(page) * 4096 + (off)])
	for (uint32_t i = 0; i < NP; i++)
		idx[i] = i;
	if (mode == 1 || mode == 3)
		shuffle(idx);
	unsigned long sum = 0;
	double t0 = cpu_ms();
	if (mode == 0 || mode == 1) {
		for (uint32_t i = 0; i < NP; i++)
			sum += AT(idx[i], 0);
	} else if (mode == 2) {
		for (uint32_t i = 0; i < NP; i += WIN)
			sum += AT(i, 0);
	} else if (mode == 3) {
		for (uint32_t i = 0; i < NP; i++)
			if (idx[i] % WIN == 0)
				sum += AT(idx[i], 0);
	} else if (mode == 4) {
		for (uint32_t i = 0; i < NP; i += WIN)
			sum += AT(i + WIN - 1, 0);
	} else if (mode == 5) {
		for (uint32_t w = NP / WIN; w-- > 0;)
			sum += AT(w * WIN, 0);
	} else if (mode == 6 || mode == 7) {
		for (uint32_t i = 0; i < NP; i += WIN)
			sum += AT(i, 0);
		if (mode == 7)
			shuffle(idx);
		t0 = cpu_ms();
		for (uint32_t i = 0; i < NP; i++)
			sum += AT(idx[i], 0);
	} else if (mode == 8 || mode == 11 || mode == 12) {
		for (uint32_t i = 0; i < NP; i += WIN) {
			sum += AT(i, 0);
			for (int k = 1; k < WIN; k++) {
				sum += AT(i + k, mode == 8 ? 64 * k : mode == 11 ? 2048 : 0);
				if (mode == 12)
					sum += AT(i + k, 64);
			}
		}
	} else if (mode == 10) {
		for (uint32_t i = 0; i < NP; i += WIN) {
			sum += AT(i, 0);
			if (i)
				for (int k = 1; k < WIN; k++)
					sum += AT(i - WIN + k, 0);
		}
		for (int k = 1; k < WIN; k++)
			sum += AT(NP - WIN + k, 0);
	} else if ((mode >= 20 && mode <= 20 + WIN) || (mode >= 100 && mode <= 400)) {
		uint32_t step = mode >= 100 ? 256 : WIN;
		int n = mode - (mode >= 100 ? 100 : 20);
		for (uint32_t i = 0; i < NP; i += step) {
			sum += AT(i, 0);
			for (int k = 1; k <= n && i + k < NP; k++)
				sum += AT(i + k, 0);
		}
	} else if (mode == 60 || mode == 61) {
		const char *sp = getenv("SPIN");
		long spin = sp ? atol(sp) : 0;
		for (uint32_t i = 0; i < NP; i += WIN) {
			sum += AT(i, 0);
			for (volatile long s = 0; s < spin; s++)
				;
			if (mode == 60)
				for (int k = 1; k < WIN; k++)
					sum += AT(i + k, 0);
		}
	} else if (mode == 62 || mode == 63) {
		for (uint32_t i = 0; i < NP; i += WIN) {
			sum += AT(i, 0);
			__asm__ volatile("lfence" ::: "memory");
			if (mode == 62)
				for (int k = 1; k < WIN; k++)
					sum += AT(i + k, 0);
		}
	} else if (mode == 50) {
		const char *st = getenv("STRIDE");
		uint32_t stride = st ? (uint32_t)atoi(st) : 0;
		if (!stride) {
			fprintf(stderr, "mode 50 needs STRIDE=<pages>\n");
			return 2;
		}
		for (uint32_t i = 0; i < NP; i += stride)
			sum += AT(i, 0);
	} else {
		fprintf(stderr, "unknown mode %d\n", mode);
		return 2;
	}
	printf("mode %d: %.2f ms\n", mode, cpu_ms() - t0);
	return sum == 42; /* keeps the loads */
}

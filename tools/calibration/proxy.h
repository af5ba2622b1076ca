/* Timing helpers shared by the native proxy programs in this folder
 * (mincore-shmem.c, pagemap-walk.c). Written for foliosim. */
#ifndef FOLIOSIM_PROXY_H
#define FOLIOSIM_PROXY_H
#include <time.h>

static inline double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* qsort() order of doubles, for medians. */
static inline int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}
#endif

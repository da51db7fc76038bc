// SPDX-License-Identifier: MIT
#include "config.h"

#include <time.h>

#include "latency.h"

static unsigned bucket_of(uint64_t ns)
{
	unsigned lg;

	if (ns < 4)
		return (unsigned)ns;
	lg = 63u - (unsigned)__builtin_clzll(ns);
	return lg * 4 + (unsigned)((ns >> (lg - 2)) & 3);
}

/* Smallest value above every value of bucket b. */
static uint64_t bucket_top(unsigned b)
{
	unsigned lg = b / 4;

	if (b < 4)
		return b + 1;
	return (4ull + (b & 3) + 1) << (lg - 2);
}

void czfs_latency_add(struct czfs_latency *l, uint64_t ns)
{
	unsigned long long max = atomic_load_explicit(&l->max_ns, memory_order_relaxed);

	atomic_fetch_add_explicit(&l->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->bucket[bucket_of(ns)], 1, memory_order_relaxed);
	while (ns > max && !atomic_compare_exchange_weak(&l->max_ns, &max, ns))
		;
}

void czfs_latency_summary(struct czfs_latency *l, uint64_t *avg,
			  uint64_t *p99, uint64_t *max)
{
	uint64_t n = atomic_load(&l->count), want, seen = 0;

	*avg = n ? atomic_load(&l->sum_ns) / n : 0;
	*max = atomic_load(&l->max_ns);
	*p99 = 0;
	if (!n)
		return;
	want = n - n / 100;		/* the smallest value >= 99% of them */
	for (unsigned b = 0; b < CZFS_LAT_BUCKETS; b++) {
		seen += atomic_load(&l->bucket[b]);
		if (seen >= want) {
			*p99 = bucket_top(b) < *max ? bucket_top(b) : *max;
			return;
		}
	}
	*p99 = *max;
}

uint64_t czfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

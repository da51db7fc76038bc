/* SPDX-License-Identifier: MIT */
/*
 * Latency recorder: count, sum, max and a log-linear histogram (4 buckets
 * per power of two, so a percentile is known within 19%).  Lock-free.
 */
#ifndef CZFS_LATENCY_H
#define CZFS_LATENCY_H

#include <stdatomic.h>
#include <stdint.h>

#define CZFS_LAT_BUCKETS	256

struct czfs_latency {
	atomic_ullong count, sum_ns, max_ns;
	atomic_ullong bucket[CZFS_LAT_BUCKETS];
};

/* Record one duration (lock-free: any thread). */
void czfs_latency_add(struct czfs_latency *l, uint64_t ns);

/* Average, 99th percentile (upper bound of its bucket) and maximum. */
void czfs_latency_summary(struct czfs_latency *l, uint64_t *avg,
			  uint64_t *p99, uint64_t *max);

/* Monotonic clock in nanoseconds. */
uint64_t czfs_now_ns(void);

#endif /* CZFS_LATENCY_H */

// SPDX-License-Identifier: MIT
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "progress.h"

#define MK_PROGRESS_INTERVAL_NS	200000000ll	/* five lines a second */
#define MIB			(1024.0 * 1024.0)

static long long ns_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000ll + (b->tv_nsec - a->tv_nsec);
}

void mk_progress_init(struct mk_progress *p, bool enabled,
		      uint64_t files_total, uint64_t bytes_total)
{
	memset(p, 0, sizeof(*p));
	p->enabled = enabled;
	p->files_total = files_total;
	p->bytes_total = bytes_total;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

double mk_progress_elapsed(const struct mk_progress *p)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return ns_between(&p->start, &now) / 1e9;
}

static void draw(struct mk_progress *p, double secs)
{
	double rate = secs > 0 ? p->bytes_in / secs : 0;
	double ratio = p->bytes_out ? (double)p->bytes_in / p->bytes_out : 0;
	char eta[32] = "--";

	if (rate > 0 && p->bytes_total >= p->bytes_in)
		snprintf(eta, sizeof(eta), "%.0fs",
			 (p->bytes_total - p->bytes_in) / rate);
	fprintf(stderr, "\r%llu/%llu files, %.1f MiB in, %.1f MiB out, ratio %.2f, %.1f MB/s, ETA %s \033[K",
		(unsigned long long)p->files, (unsigned long long)p->files_total,
		p->bytes_in / MIB, p->bytes_out / MIB, ratio, rate / 1e6, eta);
	fflush(stderr);
	p->drawn = true;
}

/* Whether a line is due (enabled, 200 ms since the last); the time now. */
static bool due(struct mk_progress *p, double *secs)
{
	struct timespec now;

	if (!p->enabled)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ns_between(&p->last, &now) < MK_PROGRESS_INTERVAL_NS)
		return false;
	p->last = now;
	*secs = ns_between(&p->start, &now) / 1e9;
	return true;
}

void mk_progress_update(struct mk_progress *p)
{
	double secs;

	if (due(p, &secs))
		draw(p, secs);
}

void mk_progress_reading(struct mk_progress *p, uint64_t members,
			 uint64_t bytes)
{
	double secs;

	if (!due(p, &secs))
		return;
	fprintf(stderr, "\rreading the tar: %llu members, %.1f MiB of data, %.1f MB/s \033[K",
		(unsigned long long)members, bytes / MIB,
		secs > 0 ? bytes / secs / 1e6 : 0.0);
	fflush(stderr);
	p->drawn = true;
}

void mk_progress_end(struct mk_progress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = false;
}

void mk_progress_summary(const struct mk_progress *p, uint64_t nfiles,
			 uint64_t ndirs, uint64_t input_bytes,
			 uint64_t image_bytes)
{
	double secs = mk_progress_elapsed(p);

	printf("mkfs.czfs: %llu files, %llu directories, %llu input bytes, "
	       "%llu image bytes, ratio %.2f, %.2f s, %.1f MB/s\n",
	       (unsigned long long)nfiles, (unsigned long long)ndirs,
	       (unsigned long long)input_bytes, (unsigned long long)image_bytes,
	       image_bytes ? (double)input_bytes / image_bytes : 0.0, secs,
	       secs > 0 ? input_bytes / secs / 1e6 : 0.0);
}

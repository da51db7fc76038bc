// SPDX-License-Identifier: MIT
/* Problem messages and their counts; the progress line; growable arrays. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsck.h"
#include "util.h"

/* Past this many, problems are counted but not printed. */
#define FSCK_MAX_SHOWN		1000
#define FSCK_PROGRESS_NS	200000000ll	/* five lines a second */

/* Library messages already printed, by hash: damage met twice (the open
 * is retried without the space map) is reported once. */
#define LOG_SEEN_SLOTS	1024

static uint64_t log_seen[LOG_SEEN_SLOTS];
static bool log_muted;

static uint64_t msg_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h | 1;
}

static bool log_seen_before(const char *msg)
{
	uint64_t h = msg_hash(msg);
	unsigned i = (unsigned)(h % LOG_SEEN_SLOTS);

	for (unsigned n = 0; n < LOG_SEEN_SLOTS; n++, i = (i + 1) % LOG_SEEN_SLOTS) {
		if (log_seen[i] == h)
			return true;
		if (!log_seen[i]) {
			log_seen[i] = h;
			return false;
		}
	}
	return false;		/* full: say it again */
}

void fsck_log_sink(enum czfs_log_level level, const char *msg)
{
	if (log_muted || log_seen_before(msg))
		return;
	fflush(stdout);
	fprintf(stderr, "fsck.czfs: %s%s\n",
		level == CZFS_LOG_WARN ? "warning: " : "", msg);
}

void fsck_log_mute(bool mute)
{
	log_muted = mute;
}

static void __attribute__((format(printf, 3, 0)))
say(struct fsck_ctx *c, const char *kind, const char *fmt, va_list ap)
{
	if (c->o.silent)
		return;
	if (c->shown == FSCK_MAX_SHOWN)
		printf("fsck.czfs: more problems, not shown\n");
	if (c->shown++ >= FSCK_MAX_SHOWN)
		return;
	fsck_progress_end(c);
	printf("fsck.czfs: %s", kind);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

void fsck_error(struct fsck_ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->errors++;
	va_start(ap, fmt);
	say(c, "", fmt, ap);
	va_end(ap);
}

void fsck_fixable(struct fsck_ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->fixable++;
	va_start(ap, fmt);
	say(c, "", fmt, ap);
	va_end(ap);
}

void fsck_warn(struct fsck_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(c, "warning: ", fmt, ap);
	va_end(ap);
}

void fsck_note(struct fsck_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(c, "note: ", fmt, ap);
	va_end(ap);
}

const char *fsck_name(const char *name, unsigned len, char *buf)
{
	len = MIN(len, CZFS_NAME_MAX);
	for (unsigned i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	buf[len] = '\0';
	return buf;
}

static long long ns_since(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000ll + (b->tv_nsec - a->tv_nsec);
}

void fsck_progress(struct fsck_ctx *c, uint64_t blocks)
{
	uint64_t total = c->fs ? c->fs->cp.used_blocks : 0;
	struct timespec now;

	c->pr_done += blocks;
	if (!c->o.progress || c->o.silent || !total)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ns_since(&c->pr_last, &now) < FSCK_PROGRESS_NS)
		return;
	c->pr_last = now;
	fprintf(stderr, "\rchecking: %llu nodes, %llu clusters, %.1f%% of %llu blocks \033[K",
		(unsigned long long)c->nodes, (unsigned long long)c->clusters,
		100.0 * (double)MIN(c->pr_done, total) / (double)total,
		(unsigned long long)total);
	fflush(stderr);
	c->pr_drawn = true;
}

void fsck_progress_end(struct fsck_ctx *c)
{
	if (!c->pr_drawn)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	c->pr_drawn = false;
}

void *fsck_vec_push(struct fsck_vec *vec, const void *elem)
{
	void *slot;

	if (vec->n == vec->cap) {
		size_t cap = czfs_grow_cap(vec->cap, vec->n + 1, 64, vec->size);
		void *v = cap ? realloc(vec->v, cap * vec->size) : NULL;

		if (!v)
			return NULL;
		vec->v = v;
		vec->cap = cap;
	}
	slot = (char *)vec->v + vec->n++ * vec->size;
	memcpy(slot, elem, vec->size);
	return slot;
}

void fsck_vec_free(struct fsck_vec *vec)
{
	free(vec->v);
	vec->v = NULL;
	vec->n = vec->cap = 0;
}

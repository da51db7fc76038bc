// SPDX-License-Identifier: MIT
/* Whether a read-only mount's listings carry attributes (see rdplus.h). */
#include "config.h"

#include <string.h>

#include "rdplus.h"
#include "util.h"

void czfs_rdplus_init(struct czfs_rdplus *rp)
{
	memset(rp, 0, sizeof(*rp));
	pthread_mutex_init(&rp->lock, NULL);
	rp->gap = CZFS_RDPLUS_GAP_MIN;
	rp->since = rp->gap;		/* the first listing probes */
}

void czfs_rdplus_destroy(struct czfs_rdplus *rp)
{
	pthread_mutex_destroy(&rp->lock);
}

/* Locked. */
static void go_bare(struct czfs_rdplus *rp)
{
	rp->bare = true;
	rp->probe_dir = rp->probe_ino = 0;
	memset(rp->recent, 0, sizeof(rp->recent));
}

/* Locked. */
static void go_attrs(struct czfs_rdplus *rp)
{
	rp->bare = false;
	rp->gap = CZFS_RDPLUS_GAP_MIN;
	rp->since = 0;
}

enum czfs_rdplus_mode czfs_rdplus_listing(struct czfs_rdplus *rp, uint64_t dir)
{
	enum czfs_rdplus_mode mode = CZFS_RDPLUS_ATTRS;

	pthread_mutex_lock(&rp->lock);
	if (!rp->bare) {
		rp->since++;
		if (rp->probe_dir && rp->since > CZFS_RDPLUS_PROBE_WAIT)
			go_bare(rp);		/* nobody stats files */
		else if (!rp->probe_dir && rp->since >= rp->gap)
			mode = CZFS_RDPLUS_PROBE;
	}
	if (rp->bare) {
		rp->recent[rp->next] = dir;
		rp->next = (rp->next + 1) % CZFS_RDPLUS_RECENT;
		mode = CZFS_RDPLUS_BARE;
	}
	pthread_mutex_unlock(&rp->lock);
	return mode;
}

void czfs_rdplus_probe_sent(struct czfs_rdplus *rp, uint64_t dir, uint64_t ino)
{
	pthread_mutex_lock(&rp->lock);
	if (!rp->bare && !rp->probe_dir) {
		rp->probe_dir = dir;
		rp->probe_ino = ino;
		rp->since = 0;
	}
	pthread_mutex_unlock(&rp->lock);
}

void czfs_rdplus_lookup(struct czfs_rdplus *rp, uint64_t dir, uint64_t ino)
{
	pthread_mutex_lock(&rp->lock);
	if (!rp->bare && rp->probe_dir == dir && rp->probe_ino == ino) {
		rp->probe_dir = rp->probe_ino = 0;	/* a stat-ing walk */
		rp->since = 0;
		rp->gap = MIN(rp->gap * 2, CZFS_RDPLUS_GAP_MAX);
	} else if (rp->bare) {
		for (unsigned i = 0; i < CZFS_RDPLUS_RECENT; i++)
			if (rp->recent[i] == dir) {
				go_attrs(rp);
				break;
			}
	}
	pthread_mutex_unlock(&rp->lock);
}

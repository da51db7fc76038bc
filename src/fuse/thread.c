// SPDX-License-Identifier: MIT
/* Per-thread scratch state for FUSE and prefetch threads. */
#include "config.h"

#include <stdlib.h>

#include "compress.h"
#include "daemon.h"
#include "thread.h"

static pthread_key_t thread_key;
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;

static void thread_free(void *arg)
{
	struct czfs_thread *t = arg;

	czfs_codec_free(t->codec);
	free(t->scratch);
	free(t->load);
	free(t->run);
	free(t);
}

static void thread_key_init(void)
{
	pthread_key_create(&thread_key, thread_free);
}

struct czfs_thread *czfs_fuse_thread(void)
{
	struct czfs_thread *t;

	pthread_once(&thread_once, thread_key_init);
	t = pthread_getspecific(thread_key);
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->codec = czfs_codec_new();
	if (!t->codec ||
	    posix_memalign(&t->scratch, CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE)) {
		thread_free(t);
		return NULL;
	}
	pthread_setspecific(thread_key, t);
	return t;
}

// SPDX-License-Identifier: MIT
/* Following `mount -o remount,ro|rw` (see remount.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "flusher.h"
#include "flushreq.h"
#include "log.h"
#include "mountinfo.h"
#include "remount.h"
#include "worker.h"

struct czfs_remount {
	struct czfs_worker w;		/* one thread, in sigwait */
};

struct find_mount {
	const char *mountpoint;
	int ro;
};

static int note_ro(const struct czfs_mount_entry *me, void *arg)
{
	struct find_mount *fm = arg;

	if (!strcmp(me->mountpoint, fm->mountpoint))
		fm->ro = me->ro;		/* the last one wins: stacked */
	return 0;
}

/* Whether our mount is read-only in the kernel; -ENOENT if it is gone. */
static int kernel_ro(const struct czfs_daemon *dm)
{
	struct find_mount fm = { dm->mountpoint, -ENOENT };
	int err = czfs_mountinfo_each(note_ro, &fm);

	return err < 0 ? err : fm.ro;
}

static void follow_kernel(struct czfs_daemon *dm)
{
	int ro = kernel_ro(dm);
	int err;

	if (ro < 0 || ro == atomic_load(&dm->remounted_ro))
		return;
	if (ro) {
		err = czfs_flusher_checkpoint_clean(dm);
		if (err)
			czfs_err("remount read-only: the checkpoint failed: %s",
				 strerror(-err));
		else
			czfs_info("remounted read-only: image is final");
		atomic_store(&dm->remounted_ro, true);
	} else {
		atomic_store(&dm->remounted_ro, false);
		czfs_flushreq_change(dm);
		czfs_info("remounted read-write");
	}
}

static void *remount_thread(void *arg)
{
	struct czfs_daemon *dm = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (!sigwait(&set, &sig) && !czfs_worker_stopped(&dm->rm->w))
		if (dm->fl && dm->mountpoint)	/* started read-write */
			follow_kernel(dm);
	return NULL;
}

int czfs_remount_start(struct czfs_daemon *dm)
{
	struct czfs_remount *rm = calloc(1, sizeof(*rm));
	sigset_t set;
	int err;

	if (!rm)
		return -ENOMEM;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	err = -pthread_sigmask(SIG_BLOCK, &set, NULL);
	dm->rm = rm;
	czfs_worker_init(&rm->w);
	if (!err)
		err = czfs_worker_run(&rm->w, 1, remount_thread, dm);
	if (err)
		czfs_remount_stop(dm);
	return err;
}

void czfs_remount_stop(struct czfs_daemon *dm)
{
	struct czfs_remount *rm = dm->rm;

	if (!rm)
		return;
	czfs_worker_stop(&rm->w);
	for (unsigned i = 0; i < rm->w.n; i++)	/* out of sigwait */
		pthread_kill(rm->w.threads[i], SIGUSR1);
	czfs_worker_join(&rm->w);
	czfs_worker_free(&rm->w);
	dm->rm = NULL;
	free(rm);
}

bool czfs_remount_is_ro(const struct czfs_daemon *dm)
{
	return atomic_load(&dm->remounted_ro);
}

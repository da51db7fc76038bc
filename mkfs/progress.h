/* SPDX-License-Identifier: MIT */
/*
 * Progress line and final summary.  The line is drawn on stderr (only when
 * it is a terminal) at most five times a second; the writer updates the
 * counters and calls mk_progress_update() as often as it likes.
 */
#ifndef MKFS_PROGRESS_H
#define MKFS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct mk_progress {
	bool enabled;
	bool drawn;			/* a line is on the screen */
	struct timespec start, last;
	uint64_t files_total, bytes_total;
	/* updated by the writer */
	uint64_t files, bytes_in, bytes_out;
};

/* Start the clock.  enabled: draw the line (stderr must be a terminal). */
void mk_progress_init(struct mk_progress *p, bool enabled,
		      uint64_t files_total, uint64_t bytes_total);

/* Redraw the line if 200 ms passed since the last time. */
void mk_progress_update(struct mk_progress *p);

/* The line while a tar stream is read (tar.h): its members and file
 * bytes so far; as often as it likes, drawn as mk_progress_update's. */
void mk_progress_reading(struct mk_progress *p, uint64_t members,
			 uint64_t bytes);

/* Erase the line, if drawn. */
void mk_progress_end(struct mk_progress *p);

/* Seconds since mk_progress_init(). */
double mk_progress_elapsed(const struct mk_progress *p);

/* Print the one-line summary on stdout. */
void mk_progress_summary(const struct mk_progress *p, uint64_t nfiles,
			 uint64_t ndirs, uint64_t input_bytes,
			 uint64_t image_bytes);

#endif /* MKFS_PROGRESS_H */

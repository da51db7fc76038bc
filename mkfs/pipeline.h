/* SPDX-License-Identifier: MIT */
/*
 * Parallel, ordered compression.  A reader thread reads file data (and
 * symlink targets) in inode order into chunks of a bounded ring; worker
 * threads encode the clusters of each chunk, each with its own codec; the
 * consumer gets the chunks back in the order they were read, so the image
 * does not depend on the number of threads.
 *
 * A chunk holds consecutive clusters of one file (one read(2) fills it);
 * holes of sparse files (SEEK_DATA/SEEK_HOLE) produce no chunk at all.
 */
#ifndef MKFS_PIPELINE_H
#define MKFS_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "packing.h"

struct mk_tree;
struct mk_pipe;

struct mk_cluster {
	struct czfs_cluster_info ci;	/* blkaddr unset; HOLE: no item */
	uint64_t index;			/* cluster number in the file */
	unsigned out_off;		/* encoded bytes in chunk->out */
	unsigned out_len;
};

struct mk_chunk {
	uint64_t ino;
	uint64_t in_bytes;		/* file bytes read into the chunk */
	unsigned nclusters;
	struct mk_cluster *cl;
	uint8_t *out;			/* encoded clusters, back to back */
	/* a pack (packing.h): sent before the chunks of the window's inodes
	 * (ino is its first); its one cluster (none when it holds only
	 * copies) is pack seq, the members are those it places */
	bool pack;
	bool shared;			/* a file with copies (copies.h): no
					 * inline clusters, its extents shared */
	bool new_window;		/* the first pack of a window */
	uint64_t seq;
	struct mk_member *members;
	unsigned nmembers;
};

struct mk_pipe_opts {
	unsigned jobs;			/* worker threads, >= 1 */
	unsigned cluster_shift;
	struct czfs_cluster_policy pol;	/* allow_inline: for a file's tail */
	struct mk_pack_opts pack;	/* enabled: tails go into packs */
};

/* Start the reader and the workers over t.  Returns 0 or -errno. */
int mk_pipe_start(const struct mk_tree *t, const struct mk_pipe_opts *o,
		  struct mk_pipe **out);

/*
 * The next chunk in read order, or NULL at the end or after a failure
 * (then mk_pipe_stop() returns the error).  Give it back with
 * mk_pipe_release() before asking for the one after it.
 */
struct mk_chunk *mk_pipe_next(struct mk_pipe *p);
void mk_pipe_release(struct mk_pipe *p, struct mk_chunk *c);

/* The bytes read from the files so far (the holes of sparse files are
 * not read); all of them once mk_pipe_next() has returned NULL. */
uint64_t mk_pipe_read_bytes(const struct mk_pipe *p);

/*
 * Stop every thread and free the pipe.  Returns 0, -ECANCELED when it was
 * stopped before the end, or the first error of the reader or a worker,
 * after printing a message naming it ("cannot read DIR/x: ...").
 */
int mk_pipe_stop(struct mk_pipe *p);

#endif /* MKFS_PIPELINE_H */

/* SPDX-License-Identifier: MIT */
/*
 * A compressed tar stream (gzip, xz, zstd, bzip2...) decompressed on a
 * thread of its own, through libarchive's filters and its raw format, so
 * that decompressing overlaps parsing and spooling (tar2sqfs and
 * mkfs.erofs get the same from a `zstd -dc |` pipe).  The decompressed
 * bytes pass through a small ring of buffers handed to the tar reader
 * without a copy: memory is bounded whatever the stream's size.
 */
#ifndef MKFS_UNPACK_H
#define MKFS_UNPACK_H

#include <archive.h>
#include <stdbool.h>
#include <stddef.h>

struct mk_unpack;

/*
 * Open file ("-": stdin), a regular file when regular says so (the
 * caller's stat).  A compressed stream, stdin or a pipe gets the thread
 * in *out; an uncompressed regular file gives *out NULL (read it
 * directly).
 * Returns 0 or -errno, with libarchive's message in msg (len bytes).
 */
int mk_unpack_start(const char *file, bool regular, struct mk_unpack **out,
		    char *msg, size_t len);

/* archive_read_open's callbacks over up (its client data): the next
 * buffer of bytes, and the end (which stops the thread and frees up). */
la_ssize_t mk_unpack_read(struct archive *a, void *up, const void **buf);
int mk_unpack_close(struct archive *a, void *up);

#endif /* MKFS_UNPACK_H */

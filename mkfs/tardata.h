/* SPDX-License-Identifier: MIT */
/*
 * Where the bytes of mkfs.czfs --tar's members go (tar.h): left where
 * they lie in an uncompressed tar file, read through a buffer whose
 * place in the file is known, or spooled to an unlinked file beside the
 * image; and on the way, each member's full clusters to the encoders
 * (preenc.h).  tar.c reads the headers and calls mk_tardata_member for
 * each regular file's data, in stream order, from one thread.
 */
#ifndef MKFS_TARDATA_H
#define MKFS_TARDATA_H

#include <archive.h>
#include <stddef.h>
#include <sys/stat.h>

struct mk_inode;
struct mk_tar_opts;
struct mk_tardata;
struct mk_tree;

/*
 * Open t's spool (t->datafd) in o->spool_dir, and start the encoders
 * when o->pre asks for them; name is the tar's, for messages.  Returns
 * 0, -ENOMEM, or another -errno after printing a message.
 */
int mk_tardata_new(struct mk_tree *t, const struct mk_tar_opts *o,
		   const char *name, struct mk_tardata **out);

/*
 * archive_read_open of a on file (a path, not stdin), whose stat(2) is
 * st.  An uncompressed regular file that is not the image (o->exclude)
 * keeps its members' bytes in place (t->tarfd).  Returns ARCHIVE_OK, or
 * an error with a's error set (the open(2)'s errno too).
 */
int mk_tardata_open(struct mk_tardata *d, struct archive *a,
		    const char *file, const struct stat *st);

/*
 * The data of the member whose header a just read, into regular file ip
 * (ip->size set from that header): ip->data_off and ip->maybe_sparse
 * set, t->data_bytes counted.  Returns 0, or -errno with *why saying
 * why (d's, until the next call).
 */
int mk_tardata_member(struct mk_tardata *d, struct archive *a,
		      struct mk_inode *ip, const char **why);

/*
 * The end, after a is freed: the encodings made go to the tree when err
 * is 0 and they all went well; d is freed (NULL is accepted).  Returns
 * err, or else the encoders' error after printing it.
 */
int mk_tardata_end(struct mk_tardata *d, int err);

/* libarchive's error on a (a truncated stream, a bad checksum) and the
 * byte of the tar where it was met, in msg; returns its -errno. */
int mk_tardata_archive_why(struct archive *a, char *msg, size_t len);

#endif /* MKFS_TARDATA_H */

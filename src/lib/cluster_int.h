/* SPDX-License-Identifier: MIT */
/*
 * Checks the cluster decoders share (cluster_check.c: used by cluster.c,
 * and by the kinds in files of their own, cluster_slice.c), so that no
 * kind's file calls back into cluster.c.  Not for callers outside the
 * codec: they go through czfs_cluster_decode.
 */
#ifndef CZFS_CLUSTER_INT_H
#define CZFS_CLUSTER_INT_H

#include "log.h"

struct czfs_codec;
struct czfs_cluster_info;

/* A damaged cluster's log line: its kind, block and size first. */
#define cluster_err(ci, fmt, ...)					\
	czfs_err("%s cluster at block %llu (%u bytes): " fmt,		\
		 czfs_cluster_kind_name((ci)->kind),			\
		 (unsigned long long)(ci)->blkaddr, (ci)->ulen, ##__VA_ARGS__)

/* buf's crc32c against ci->checksum: 0 or -EFSCORRUPTED (logged). */
int czfs_cluster_verify_crc(const struct czfs_cluster_info *ci,
			    const void *buf, unsigned len);

/* Decompress clen bytes of payload into exactly ci->ulen bytes at dst with
 * ci->alg: 0, -EFSCORRUPTED (logged) or -ENOMEM. */
int czfs_cluster_expand(struct czfs_codec *codec,
			const struct czfs_cluster_info *ci, const void *payload,
			unsigned clen, void *dst);

/* ci->nblocks in 1..CZFS_MAX_CLUSTER_BLOCKS: 0 or -EFSCORRUPTED (logged). */
int czfs_cluster_check_nblocks(const struct czfs_cluster_info *ci);

#endif /* CZFS_CLUSTER_INT_H */

/* SPDX-License-Identifier: MIT */
/*
 * Checks the cluster decoders share (cluster.c, and the kinds in files of
 * their own: cluster_slice.c).  Not for callers outside the codec: they
 * go through czfs_cluster_decode.
 */
#ifndef CZFS_CLUSTER_INT_H
#define CZFS_CLUSTER_INT_H

struct czfs_codec;
struct czfs_cluster_info;

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

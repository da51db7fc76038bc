// SPDX-License-Identifier: MIT
/* The checks the cluster decoders share (cluster_int.h). */
#include "config.h"

#include <errno.h>

#include "cluster.h"
#include "cluster_int.h"
#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

const char *czfs_cluster_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[CZFS_CLUSTER_HOLE] = "hole",
		[CZFS_CLUSTER_RAW] = "raw",
		[CZFS_CLUSTER_COMPRESSED] = "compressed",
		[CZFS_CLUSTER_INLINE] = "inline",
		[CZFS_CLUSTER_INLINE_COMPRESSED] = "inline-compressed",
		[CZFS_CLUSTER_RESERVED] = "reserved",
		[CZFS_CLUSTER_BLOCKMAP] = "block-mapped",
		[CZFS_CLUSTER_PACKED] = "packed",
		[CZFS_CLUSTER_SLICE] = "sliced",
	};

	return kind < ARRAY_SIZE(names) && names[kind] ? names[kind] : "unknown";
}

int czfs_cluster_verify_crc(const struct czfs_cluster_info *ci,
			    const void *buf, unsigned len)
{
	uint32_t crc = czfs_crc32c(0, buf, len);

	if (crc == ci->checksum)
		return 0;
	cluster_err(ci, "checksum mismatch: stored %08x, computed %08x",
		    ci->checksum, crc);
	return -EFSCORRUPTED;
}

int czfs_cluster_expand(struct czfs_codec *codec,
			const struct czfs_cluster_info *ci, const void *payload,
			unsigned clen, void *dst)
{
	const struct czfs_compressor *comp = czfs_compressor_get((int)ci->alg);
	int err;

	if (!comp) {
		cluster_err(ci, "unknown algorithm %u", ci->alg);
		return -EFSCORRUPTED;
	}
	err = comp->decompress(codec, payload, clen, dst, ci->ulen);
	if (err == -EFSCORRUPTED)
		cluster_err(ci, "%u bytes of %s data do not decode to %u bytes",
			    clen, comp->name, ci->ulen);
	return err;
}

int czfs_cluster_check_nblocks(const struct czfs_cluster_info *ci)
{
	if (ci->nblocks >= 1 && ci->nblocks <= CZFS_MAX_CLUSTER_BLOCKS)
		return 0;
	cluster_err(ci, "nblocks %u outside 1..%u", ci->nblocks,
		    CZFS_MAX_CLUSTER_BLOCKS);
	return -EFSCORRUPTED;
}

// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: mkfs.czfs --tar's reader (mkfs/tar.c, pathtree.c)
 * over the fuzzer's bytes as a tar stream, compressed or not, then the
 * whole-copy pass that reads the spooled data back; clusters are encoded
 * as they are read (preenc.c, in the caller, 4 KiB clusters).  Hostile headers,
 * paths, links and sparse maps must end in an error, never a crash, a
 * hang or a write outside the spool.  Messages go to stderr: run it
 * with -close_fd_mask=2 for quiet, from a few tarballs as seeds:
 *   build-fuzz/tests/fuzz/fuzz_tar -close_fd_mask=2 -max_len=65536 DIR
 */
#include "config.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "copies.h"
#include "preenc.h"
#include "scan.h"
#include "tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* no threads: the same paths each run, so that runs repeat */
	struct mk_preenc_opts pre = { .jobs = 0, .cluster_shift = 0,
				      .pol = { .alg = CZFS_ALG_LZ4,
					       .zero_detect = true } };
	struct mk_tar_opts o = { .uid = -1, .gid = -1,
				 .whiteouts = size & 1 ? MK_WH_OVERLAY : MK_WH_KEEP,
				 .spool_dir = "/tmp", .pre = &pre };
	struct mk_copies_stats st;
	struct mk_tree t;
	char path[64];
	int fd = memfd_create("fuzz-tar", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!mk_tar_read(path, &o, &t))
		mk_find_copies(&t, 4096, &st);
	mk_tree_free(&t);
	close(fd);
	return 0;
}

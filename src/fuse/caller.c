// SPDX-License-Identifier: MIT
/* The caller's groups and capabilities (see caller.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "caller.h"

/* gid < 0: capability cap alone */
static bool in_group_or_capable(fuse_req_t req, long long gid, int cap)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], *line = NULL, *p, *end;
	unsigned long long caps;
	bool yes = gid >= 0 && ctx->gid == gid;
	size_t len = 0;
	FILE *f;

	if (yes)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!yes && getline(&line, &len, f) > 0) {
		if (!strncmp(line, "Groups:", 7) && gid >= 0) {
			for (p = line + 7; !yes; p = end) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				yes = (long long)g == gid;
			}
		} else if (!strncmp(line, "CapEff:", 7)) {
			caps = strtoull(line + 7, NULL, 16);
			yes = caps & (1ull << cap);
		}
	}
	free(line);
	fclose(f);
	return yes;
}

bool czfs_caller_in_group_or_capable(fuse_req_t req, gid_t gid)
{
	return in_group_or_capable(req, gid, CZFS_CAP_FSETID);
}

bool czfs_caller_capable(fuse_req_t req)
{
	return in_group_or_capable(req, -1, CZFS_CAP_FSETID);
}

bool czfs_caller_has_cap(fuse_req_t req, int cap)
{
	return in_group_or_capable(req, -1, cap);
}

uint32_t czfs_caller_kill_suidgid(fuse_req_t req, uint32_t mode, gid_t gid)
{
	uint32_t kill = mode & S_ISUID;

	if (S_ISDIR(mode))	/* a chown drops them from fifos and devices too */
		return 0;
	if ((mode & S_ISGID) &&
	    ((mode & S_IXGRP) || !czfs_caller_in_group_or_capable(req, gid)))
		kill |= S_ISGID;
	return kill;
}

uint32_t czfs_caller_kill_priv(fuse_req_t req, uint32_t mode, gid_t gid)
{
	uint32_t kill = czfs_caller_kill_suidgid(req, mode, gid);

	return kill && !czfs_caller_capable(req) ? kill : 0;
}

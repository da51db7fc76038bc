// SPDX-License-Identifier: MIT
/* The caller's groups and capabilities (see caller.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caller.h"

#define CAP_FSETID_BIT	4

bool czfs_caller_in_group_or_capable(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], *line = NULL, *p, *end;
	unsigned long long caps;
	bool yes = ctx->gid == gid;
	size_t len = 0;
	FILE *f;

	if (yes)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!yes && getline(&line, &len, f) > 0) {
		if (!strncmp(line, "Groups:", 7)) {
			for (p = line + 7; !yes; p = end) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				yes = g == gid;
			}
		} else if (!strncmp(line, "CapEff:", 7)) {
			caps = strtoull(line + 7, NULL, 16);
			yes = caps & (1ull << CAP_FSETID_BIT);
		}
	}
	free(line);
	fclose(f);
	return yes;
}

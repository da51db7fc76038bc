// SPDX-License-Identifier: MIT
/* Reading the czfs mounts of /proc/self/mountinfo. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void copy_unescaped(char *d, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < cap; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			d[n++] = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
					(s[3] - '0'));
			s += 3;
		} else {
			d[n++] = *s;
		}
	}
	d[n] = 0;
}

/*
 * One line: ID PARENT DEV ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE
 * SUPEROPTS.  False for a line that is not a czfs mount.
 */
static bool parse_line(char *line, struct czfs_mount_entry *me)
{
	char *sep = strstr(line, " - "), *save, *mnt, *type, *src, *super;

	if (!sep)
		return false;
	*sep = 0;
	type = strtok_r(sep + 3, " \n", &save);
	src = strtok_r(NULL, " \n", &save);
	super = strtok_r(NULL, " \n", &save);
	if (!type || !src || strcmp(type, "fuse.czfs"))
		return false;
	strtok_r(line, " ", &save);
	for (int i = 0; i < 3; i++)
		strtok_r(NULL, " ", &save);
	mnt = strtok_r(NULL, " ", &save);
	if (!mnt)
		return false;
	copy_unescaped(me->mountpoint, sizeof(me->mountpoint), mnt);
	copy_unescaped(me->source, sizeof(me->source), src);
	me->ro = super && !strncmp(super, "ro", 2) && (!super[2] || super[2] == ',');
	return true;
}

int czfs_mountinfo_each(int (*fn)(const struct czfs_mount_entry *me, void *arg),
			void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct czfs_mount_entry *me;
	char *line = NULL;
	size_t len = 0;
	int ret = 0;

	if (!f)
		return -errno;
	me = malloc(sizeof(*me));
	if (!me) {
		fclose(f);
		return -ENOMEM;
	}
	while (!ret && getline(&line, &len, f) > 0)
		if (parse_line(line, me))
			ret = fn(me, arg);
	free(me);
	free(line);
	fclose(f);
	return ret;
}

// SPDX-License-Identifier: MIT
/* The chattr flags: one table for the daemon's ioctls and tar's names. */
#include "config.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <string.h>

#include "chattr.h"
#include "czfs_fs.h"
#include "util.h"

/* names[0] is the one written; libarchive knows no u* names on Linux but
 * BSD tars write them, and a user's append-only is the same to czfs. */
static const struct {
	uint32_t czfs;
	unsigned fs, xfs;
	const char *names[7];
} flags_tab[] = {
	{ CZFS_INODE_IMMUTABLE, FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE,
	  { "schg", "schange", "simmutable", "uchg", "uchange", "uimmutable" } },
	{ CZFS_INODE_APPEND, FS_APPEND_FL, FS_XFLAG_APPEND,
	  { "sappnd", "sappend", "uappnd", "uappend" } },
	{ CZFS_INODE_NOATIME, FS_NOATIME_FL, FS_XFLAG_NOATIME, { "noatime" } },
	{ CZFS_INODE_NODUMP, FS_NODUMP_FL, FS_XFLAG_NODUMP, { "nodump" } },
	{ CZFS_INODE_COMPRESS, FS_COMPR_FL, 0, { "compress" } },	/* as btrfs */
	{ CZFS_INODE_NOCOMPRESS, FS_NOCOMP_FL, 0, { NULL } },
};

/* FS_*_FL (xfs false) or FS_XFLAG_* of the CZFS_INODE_* flags. */
static unsigned to_bits(uint32_t flags, bool xfs)
{
	unsigned bits = 0;

	for (unsigned i = 0; i < ARRAY_SIZE(flags_tab); i++)
		if (flags & flags_tab[i].czfs)
			bits |= xfs ? flags_tab[i].xfs : flags_tab[i].fs;
	return bits;
}

unsigned czfs_chattr_to_fs(uint32_t flags)
{
	return to_bits(flags, false);
}

unsigned czfs_chattr_to_xfs(uint32_t flags)
{
	return to_bits(flags, true);
}

/* The other way. */
static int from_bits(unsigned bits, bool xfs, uint32_t *flags)
{
	*flags = 0;
	for (unsigned i = 0; i < ARRAY_SIZE(flags_tab); i++) {
		unsigned b = xfs ? flags_tab[i].xfs : flags_tab[i].fs;

		if (b && (bits & b)) {
			*flags |= flags_tab[i].czfs;
			bits &= ~b;
		}
	}
	return bits ? -EOPNOTSUPP : 0;
}

int czfs_chattr_from_fs(unsigned fs, uint32_t *flags)
{
	return from_bits(fs, false, flags);
}

int czfs_chattr_from_xfs(unsigned xfs, uint32_t *flags)
{
	return from_bits(xfs, true, flags);
}

/* The CZFS_INODE_* bit of the name (len bytes), or 0. */
static uint32_t by_name(const char *name, size_t len)
{
	for (unsigned i = 0; i < ARRAY_SIZE(flags_tab); i++)
		for (const char *const *n = flags_tab[i].names; *n; n++)
			if (strlen(*n) == len && !memcmp(*n, name, len))
				return flags_tab[i].czfs;
	return 0;
}

/* Whether the name (len bytes) clears a flag: "no" + a name, or a name
 * that is "no" + it ("dump"). */
static bool clears(const char *name, size_t len)
{
	char no[32] = "no";

	if (len > 2 && !memcmp(name, "no", 2) && by_name(name + 2, len - 2))
		return true;
	if (len + 3 > sizeof(no))
		return false;
	memcpy(no + 2, name, len);
	return by_name(no, len + 2) != 0;
}

static void add_rest(char *rest, size_t cap, const char *name, size_t len)
{
	size_t used = strlen(rest);

	if (used + 2 >= cap)
		return;		/* full: the start says enough */
	if (used)
		rest[used++] = ',';
	len = MIN(len, cap - 1 - used);
	memcpy(rest + used, name, len);
	rest[used + len] = 0;
}

int czfs_chattr_parse(const char *text, uint32_t *flags, char *rest,
		      size_t len)
{
	*flags = 0;
	rest[0] = 0;
	while (*text) {
		size_t n = strcspn(text, ", \t");
		uint32_t f = by_name(text, n);

		if (f)
			*flags |= f;
		else if (n && !clears(text, n))
			add_rest(rest, len, text, n);
		text += n;
		text += *text != 0;
	}
	return !rest[0];
}

void czfs_chattr_text(uint32_t flags, char *buf, size_t len)
{
	buf[0] = 0;
	for (unsigned i = 0; i < ARRAY_SIZE(flags_tab); i++)
		if ((flags & flags_tab[i].czfs) && flags_tab[i].names[0])
			add_rest(buf, len, flags_tab[i].names[0],
				 strlen(flags_tab[i].names[0]));
}

bool czfs_chattr_unsupported(int err)
{
	return err == -ENOTTY || err == -EOPNOTSUPP || err == -EINVAL;
}

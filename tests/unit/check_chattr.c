// SPDX-License-Identifier: MIT
/*
 * Unit tests: the chattr flag table (src/lib/chattr.c): the kernel's bits
 * both ways, and tar's SCHILY.fflags names both ways.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <linux/fs.h>
#include <string.h>

#include "chattr.h"
#include "czfs_fs.h"
#include "util.h"

static const struct {
	const char *text;	/* SCHILY.fflags as a tar has it */
	uint32_t flags;		/* what czfs keeps */
	const char *rest;	/* the names it does not */
} parse_cases[] = {
	{ "", 0, "" },
	{ "sappnd", CZFS_INODE_APPEND, "" },
	{ "uappnd", CZFS_INODE_APPEND, "" },		/* BSD's user flag */
	{ "schg,nodump", CZFS_INODE_IMMUTABLE | CZFS_INODE_NODUMP, "" },
	{ "uchg noatime", CZFS_INODE_IMMUTABLE | CZFS_INODE_NOATIME, "" },
	{ "compress", CZFS_INODE_COMPRESS, "" },
	{ "nosappnd,dump,noschg", 0, "" },		/* clearing: no-ops */
	{ "nocow,sappnd,bogus", CZFS_INODE_APPEND, "nocow,bogus" },
	{ ",,hidden,", 0, "hidden" },
};

START_TEST(fflags_text_to_flags)
{
	uint32_t flags = 0xffff;
	char rest[64];

	ck_assert_int_eq(czfs_chattr_parse(parse_cases[_i].text, &flags, rest,
					   sizeof(rest)),
			 !*parse_cases[_i].rest);
	ck_assert_uint_eq(flags, parse_cases[_i].flags);
	ck_assert_str_eq(rest, parse_cases[_i].rest);
}
END_TEST

START_TEST(flags_to_text_and_back)
{
	uint32_t all = CZFS_INODE_ATTR_FLAGS | CZFS_INODE_COMPRESS, back;
	char text[CZFS_CHATTR_TEXT_MAX], rest[8];

	czfs_chattr_text(all | CZFS_INODE_NOCOMPRESS, text, sizeof(text));
	ck_assert_str_eq(text, "schg,sappnd,noatime,nodump,compress");
	ck_assert(czfs_chattr_parse(text, &back, rest, sizeof(rest)));
	ck_assert_uint_eq(back, all);	/* nocompress has no tar name */
	czfs_chattr_text(0, text, sizeof(text));
	ck_assert_str_eq(text, "");
}
END_TEST

START_TEST(a_long_rest_is_cut)
{
	uint32_t flags;
	char rest[8];

	ck_assert(!czfs_chattr_parse("aaaaaaaaaaaa,sappnd,b", &flags, rest,
				     sizeof(rest)));
	ck_assert_uint_eq(flags, CZFS_INODE_APPEND);
	ck_assert_str_eq(rest, "aaaaaaa");
}
END_TEST

START_TEST(kernel_bits_both_ways)
{
	uint32_t flags;

	ck_assert_uint_eq(czfs_chattr_to_fs(CZFS_INODE_APPEND | CZFS_INODE_NOCOMPRESS),
			  FS_APPEND_FL | FS_NOCOMP_FL);
	ck_assert_int_eq(czfs_chattr_from_fs(FS_IMMUTABLE_FL | FS_COMPR_FL, &flags), 0);
	ck_assert_uint_eq(flags, CZFS_INODE_IMMUTABLE | CZFS_INODE_COMPRESS);
	ck_assert_int_eq(czfs_chattr_from_fs(FS_NODUMP_FL | FS_SYNC_FL, &flags),
			 -EOPNOTSUPP);
	ck_assert_uint_eq(czfs_chattr_to_xfs(CZFS_INODE_NOATIME | CZFS_INODE_COMPRESS),
			  FS_XFLAG_NOATIME);	/* no xflag for compression */
	ck_assert_int_eq(czfs_chattr_from_xfs(FS_XFLAG_APPEND, &flags), 0);
	ck_assert_uint_eq(flags, CZFS_INODE_APPEND);
	ck_assert_int_eq(czfs_chattr_from_xfs(FS_XFLAG_SYNC, &flags), -EOPNOTSUPP);
}
END_TEST

/* the errors of a filesystem that keeps no flags, not those of a failure */
START_TEST(unsupported_errors)
{
	ck_assert(czfs_chattr_unsupported(-ENOTTY));
	ck_assert(czfs_chattr_unsupported(-EOPNOTSUPP));
	ck_assert(czfs_chattr_unsupported(-EINVAL));
	ck_assert(!czfs_chattr_unsupported(-EIO));
	ck_assert(!czfs_chattr_unsupported(-EPERM));
	ck_assert(!czfs_chattr_unsupported(0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chattr");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, fflags_text_to_flags, 0,
			    (int)ARRAY_SIZE(parse_cases));
	tcase_add_test(tc, flags_to_text_and_back);
	tcase_add_test(tc, a_long_rest_is_cut);
	tcase_add_test(tc, kernel_bits_both_ways);
	tcase_add_test(tc, unsupported_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

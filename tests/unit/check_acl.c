// SPDX-License-Identifier: MIT
/*
 * Unit tests: POSIX ACL xattrs and the mode, both ways — the mode an
 * access ACL gives (setfacl) and the ACL a chmod leaves.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "acl.h"
#include "util.h"

#define U_OBJ	0x01
#define U	0x02
#define G_OBJ	0x04
#define G	0x08
#define MASK	0x10
#define OTHER	0x20
#define END	0

struct ent {
	unsigned tag, perm, id;
};

/* The xattr form of entries (up to END); returns its length. */
static size_t acl_bytes(const struct ent *e, uint8_t *out)
{
	uint32_t v = cpu_to_le32(2);
	size_t len = 4;

	memcpy(out, &v, 4);
	for (; e->tag != END; e++, len += 8) {
		uint16_t t = cpu_to_le16((uint16_t)e->tag);
		uint16_t p = cpu_to_le16((uint16_t)e->perm);
		uint32_t id = cpu_to_le32(e->id);

		memcpy(out + len, &t, 2);
		memcpy(out + len + 2, &p, 2);
		memcpy(out + len + 4, &id, 4);
	}
	return len;
}

static unsigned perm_of(const uint8_t *acl, size_t len, unsigned tag)
{
	for (size_t off = 4; off < len; off += 8) {
		uint16_t t, p;

		memcpy(&t, acl + off, 2);
		memcpy(&p, acl + off + 2, 2);
		if (le16_to_cpu(t) == tag)
			return le16_to_cpu(p);
	}
	ck_abort_msg("no entry with tag %#x", tag);
	return 0;
}

static const struct {
	const char *what;
	struct ent e[7];
	int ret;
	mode_t perm;
} mode_cases[] = {
	{ "the mode says it all", { { U_OBJ, 6, 0 }, { G_OBJ, 4, 0 },
	  { OTHER, 4, 0 }, { END } }, 1, 0644 },
	{ "a named user: the group class is the mask",
	  { { U_OBJ, 6, 0 }, { U, 6, 1234 }, { G_OBJ, 4, 0 }, { MASK, 6, 0 },
	    { OTHER, 0, 0 }, { END } }, 0, 0660 },
	{ "a mask alone is kept", { { U_OBJ, 7, 0 }, { G_OBJ, 7, 0 },
	  { MASK, 1, 0 }, { OTHER, 5, 0 }, { END } }, 0, 0715 },
	{ "no OTHER entry", { { U_OBJ, 6, 0 }, { G_OBJ, 4, 0 }, { END } },
	  -EINVAL, 0 },
	{ "a named user without a mask", { { U_OBJ, 6, 0 }, { U, 6, 1 },
	  { G_OBJ, 4, 0 }, { OTHER, 4, 0 }, { END } }, -EINVAL, 0 },
	{ "a bad permission", { { U_OBJ, 8, 0 }, { G_OBJ, 4, 0 },
	  { OTHER, 4, 0 }, { END } }, -EINVAL, 0 },
};

START_TEST(access_acl_gives_the_mode)
{
	uint8_t acl[64];
	size_t len = acl_bytes(mode_cases[_i].e, acl);
	mode_t perm = 01;

	/* given an access ACL, when its mode is asked for */
	int ret = czfs_acl_mode(acl, len, &perm);

	/* then the bits and whether the ACL is needed are those of the kernel */
	ck_assert_msg(ret == mode_cases[_i].ret, "%s: returned %d",
		      mode_cases[_i].what, ret);
	if (ret >= 0)
		ck_assert_msg(perm == mode_cases[_i].perm, "%s: mode %o",
			      mode_cases[_i].what, (unsigned)perm);
}
END_TEST

START_TEST(chmod_rewrites_the_base_entries)
{
	static const struct ent with_mask[] = { { U_OBJ, 6, 0 }, { U, 7, 55 },
		{ G_OBJ, 4, 0 }, { MASK, 7, 0 }, { OTHER, 4, 0 }, { END } };
	static const struct ent plain[] = { { U_OBJ, 6, 0 }, { G_OBJ, 4, 0 },
		{ OTHER, 4, 0 }, { END } };
	uint8_t acl[64];
	size_t len = acl_bytes(with_mask, acl);
	mode_t perm;

	/* given an ACL with a mask, when chmod 0750 */
	ck_assert_int_eq(czfs_acl_chmod(acl, len, 0750), 0);
	/* then owner, mask and other change; the named user and group do not */
	ck_assert_uint_eq(perm_of(acl, len, U_OBJ), 7);
	ck_assert_uint_eq(perm_of(acl, len, MASK), 5);
	ck_assert_uint_eq(perm_of(acl, len, OTHER), 0);
	ck_assert_uint_eq(perm_of(acl, len, U), 7);
	ck_assert_uint_eq(perm_of(acl, len, G_OBJ), 4);
	ck_assert_int_eq(czfs_acl_mode(acl, len, &perm), 0);
	ck_assert_uint_eq(perm, 0750);
	/* given an ACL without a mask, then the owning group takes the bits */
	len = acl_bytes(plain, acl);
	ck_assert_int_eq(czfs_acl_chmod(acl, len, 0531), 0);
	ck_assert_uint_eq(perm_of(acl, len, G_OBJ), 3);
	ck_assert_int_eq(czfs_acl_mode(acl, len, &perm), 1);
	ck_assert_uint_eq(perm, 0531);
	/* a malformed ACL is refused */
	ck_assert_int_eq(czfs_acl_chmod(acl, len - 1, 0777), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, access_acl_gives_the_mode, 0,
			    (int)(sizeof(mode_cases) / sizeof(mode_cases[0])));
	tcase_add_test(tc, chmod_rewrites_the_base_entries);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/* POSIX ACL xattrs: validation and inheritance (see acl.h). */
#include "config.h"

#include <errno.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "acl.h"
#include "util.h"

#define ACL_VERSION	2
#define TAG_USER_OBJ	0x01
#define TAG_USER	0x02
#define TAG_GROUP_OBJ	0x04
#define TAG_GROUP	0x08
#define TAG_MASK	0x10
#define TAG_OTHER	0x20

struct acl_entry {
	__le16 tag;
	__le16 perm;
	__le32 id;
};

#define HDR	4u
#define ENT	((unsigned)sizeof(struct acl_entry))

int czfs_acl_valid(const void *val, size_t len)
{
	const uint8_t *p = val;
	uint32_t version;
	unsigned seen = 0;

	if (len < HDR || (len - HDR) % ENT || (len - HDR) / ENT > CZFS_ACL_MAX_ENTRIES)
		return 0;
	memcpy(&version, p, 4);
	if (le32_to_cpu(version) != ACL_VERSION)
		return 0;
	for (size_t off = HDR; off < len; off += ENT) {
		struct acl_entry e;
		unsigned tag;

		memcpy(&e, p + off, ENT);
		tag = le16_to_cpu(e.tag);
		if (le16_to_cpu(e.perm) & ~7u)
			return 0;
		switch (tag) {
		case TAG_USER_OBJ: case TAG_GROUP_OBJ: case TAG_MASK: case TAG_OTHER:
			if (seen & tag)
				return 0;	/* one of each */
			seen |= tag;
			break;
		case TAG_USER: case TAG_GROUP:
			seen |= tag;
			break;
		default:
			return 0;
		}
	}
	/* the three base entries, and a mask when there are named ones */
	if ((seen & (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER)) !=
	    (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER))
		return 0;
	return !(seen & (TAG_USER | TAG_GROUP)) || (seen & TAG_MASK);
}

int czfs_acl_mode(const void *val, size_t len, mode_t *perm)
{
	const uint8_t *p = val;
	unsigned group = 0, mask = 0;
	bool has_mask = false, named = false;
	mode_t m = 0;

	if (!czfs_acl_valid(val, len))
		return -EINVAL;
	for (size_t off = HDR; off < len; off += ENT) {
		struct acl_entry e;
		unsigned bits;

		memcpy(&e, p + off, ENT);
		bits = le16_to_cpu(e.perm);
		switch (le16_to_cpu(e.tag)) {
		case TAG_USER_OBJ: m |= bits << 6; break;
		case TAG_GROUP_OBJ: group = bits; break;
		case TAG_MASK: mask = bits; has_mask = true; break;
		case TAG_OTHER: m |= bits; break;
		default: named = true; break;
		}
	}
	*perm = m | ((has_mask ? mask : group) << 3);
	return !named && !has_mask;
}

/* Entry at off of an ACL gets perm. */
static void entry_set_perm(uint8_t *acl, size_t off, unsigned perm)
{
	__le16 p = cpu_to_le16((uint16_t)perm);

	memcpy(acl + off + offsetof(struct acl_entry, perm), &p, sizeof(p));
}

int czfs_acl_chmod(void *val, size_t len, mode_t mode)
{
	uint8_t *p = val;
	size_t group_at = 0, mask_at = 0;

	if (!czfs_acl_valid(val, len))
		return -EINVAL;
	for (size_t off = HDR; off < len; off += ENT) {
		__le16 tag;

		memcpy(&tag, p + off, sizeof(tag));
		switch (le16_to_cpu(tag)) {
		case TAG_USER_OBJ: entry_set_perm(p, off, (mode >> 6) & 7); break;
		case TAG_GROUP_OBJ: group_at = off; break;
		case TAG_MASK: mask_at = off; break;
		case TAG_OTHER: entry_set_perm(p, off, mode & 7); break;
		default: break;
		}
	}
	/* the group class: the mask when there is one, else the owning group */
	entry_set_perm(p, mask_at ? mask_at : group_at, (mode >> 3) & 7);
	return 0;
}

int czfs_acl_inherit(const void *dflt, size_t dlen, mode_t *mode, void *acl,
		     size_t cap, size_t *acl_len)
{
	uint8_t *out = acl;
	unsigned group_at = 0, mask_at = 0;
	bool extended = false;
	mode_t m = *mode;

	if (!czfs_acl_valid(dflt, dlen))
		return -EINVAL;
	if (dlen > cap)
		return -ERANGE;
	memcpy(out, dflt, dlen);
	for (size_t off = HDR; off < dlen; off += ENT) {
		struct acl_entry e;
		unsigned perm;

		memcpy(&e, out + off, ENT);
		perm = le16_to_cpu(e.perm);
		switch (le16_to_cpu(e.tag)) {
		case TAG_USER_OBJ:
			perm &= (m >> 6) & 7;
			m = (m & ~0700u) | (perm << 6);
			break;
		case TAG_GROUP_OBJ:
			group_at = (unsigned)off;
			break;
		case TAG_MASK:
			mask_at = (unsigned)off;
			break;
		case TAG_OTHER:
			perm &= m & 7;
			m = (m & ~07u) | perm;
			break;
		default:
			extended = true;
			break;
		}
		e.perm = cpu_to_le16((uint16_t)perm);
		memcpy(out + off, &e, ENT);
	}
	/* the group class: the mask when there is one, else the owning group */
	{
		unsigned at = mask_at ? mask_at : group_at;
		struct acl_entry e;
		unsigned perm;

		memcpy(&e, out + at, ENT);
		perm = le16_to_cpu(e.perm) & ((m >> 3) & 7);
		m = (m & ~070u) | (perm << 3);
		e.perm = cpu_to_le16((uint16_t)perm);
		memcpy(out + at, &e, ENT);
	}
	*mode = m;
	*acl_len = extended || mask_at ? dlen : 0;	/* else the mode says it all */
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * POSIX ACLs in their xattr form (system.posix_acl_access/default, as the
 * kernel passes them): the kernel enforces them (FUSE_CAP_POSIX_ACL) and
 * keeps the mode in step on chmod and setfacl; a new inode's inheritance
 * of its parent's default ACL is the filesystem's job (posix_acl_create).
 */
#ifndef CZFS_ACL_H
#define CZFS_ACL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CZFS_ACL_ACCESS		"system.posix_acl_access"
#define CZFS_ACL_DEFAULT	"system.posix_acl_default"
#define CZFS_ACL_MAX_ENTRIES	256

/*
 * A new inode's ACL from its parent's default ACL (xattr bytes dflt,
 * dlen), as posix_acl_create: *mode (the mode asked for, umask not applied)
 * is masked by the ACL, and the ACL by the mode.  The access ACL goes to
 * acl (capacity cap) unless the mode says it all (*acl_len 0).  Returns 0,
 * or -EINVAL for a malformed default ACL, -ERANGE if cap is too small.
 */
int czfs_acl_inherit(const void *dflt, size_t dlen, mode_t *mode, void *acl,
		     size_t cap, size_t *acl_len);

/* Is the xattr a well-formed ACL (version 2, sane entries)? */
int czfs_acl_valid(const void *val, size_t len);

/*
 * The permission bits an access ACL gives the inode, as the kernel's
 * posix_acl_equiv_mode: owner from USER_OBJ, group from MASK (GROUP_OBJ
 * without a mask), other from OTHER, into *perm (0777 bits only).
 * Returns 1 when the mode says it all (no named entries, no mask: the
 * ACL need not be stored), 0 when it is needed, -EINVAL when malformed.
 */
int czfs_acl_mode(const void *val, size_t len, mode_t *perm);

/*
 * chmod of an inode with an access ACL, as the kernel's posix_acl_chmod:
 * USER_OBJ, MASK (GROUP_OBJ without a mask) and OTHER take the new mode's
 * bits, in place.  Returns 0, or -EINVAL when malformed.
 */
int czfs_acl_chmod(void *val, size_t len, mode_t mode);

#endif /* CZFS_ACL_H */

// SPDX-License-Identifier: MIT
/* FUSE_HANDLE_KILLPRIV_V2 on libfuse 3.14 (killpriv.h). */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "killpriv.h"
#include "util.h"

/* One session a process: the INIT request to answer, and the answer. */
static atomic_ullong init_unique;
static atomic_bool init_offered, init_done, taken;
/* The request the thread is serving: libfuse reads it and serves it on
 * the same thread, whichever loop runs. */
static __thread bool asked;

/* Where each request that may carry a kill flag carries it. */
static const struct {
	uint32_t opcode;
	size_t arg_size, field;		/* its argument; the flags' offset */
	uint32_t flag;
} kill_flags[] = {
	{ FUSE_WRITE, sizeof(struct fuse_write_in),
	  offsetof(struct fuse_write_in, write_flags), FUSE_WRITE_KILL_SUIDGID },
	{ FUSE_OPEN, sizeof(struct fuse_open_in),
	  offsetof(struct fuse_open_in, open_flags), FUSE_OPEN_KILL_SUIDGID },
	{ FUSE_CREATE, sizeof(struct fuse_create_in),
	  offsetof(struct fuse_create_in, open_flags), FUSE_OPEN_KILL_SUIDGID },
	{ FUSE_SETATTR, sizeof(struct fuse_setattr_in),
	  offsetof(struct fuse_setattr_in, valid), FATTR_KILL_SUIDGID },
};

/* What the request in buf[0..n) asks of the kill flags. */
static bool kill_flag(const uint8_t *buf, size_t n)
{
	const struct fuse_in_header *in = (const void *)buf;
	uint32_t flags;

	for (size_t i = 0; i < ARRAY_SIZE(kill_flags); i++) {
		if (kill_flags[i].opcode != in->opcode)
			continue;
		if (n - sizeof(*in) < kill_flags[i].arg_size)
			return false;
		memcpy(&flags, buf + sizeof(*in) + kill_flags[i].field, sizeof(flags));
		return flags & kill_flags[i].flag;
	}
	return false;
}

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
	const struct fuse_in_header *in = buf;
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	asked = false;
	if (n < (ssize_t)sizeof(*in))
		return n;
	if (in->opcode == FUSE_INIT && !atomic_load(&init_done)) {
		/* major, minor, max_readahead, flags: as old as the protocol */
		const uint32_t *w = (const void *)(in + 1);

		if ((size_t)n >= sizeof(*in) + 4 * sizeof(uint32_t))
			atomic_store(&init_offered,
				     (w[3] & FUSE_HANDLE_KILLPRIV_V2) != 0);
		atomic_store(&init_unique, in->unique);
		return n;
	}
	asked = kill_flag(buf, (size_t)n);
	return n;
}

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;

	(void)userdata;
	if (!atomic_load(&init_done) && count >= 2 &&
	    iov[0].iov_len == sizeof(*out) && out->unique &&
	    out->unique == atomic_load(&init_unique)) {
		struct fuse_init_out *o = iov[1].iov_base;

		if (!out->error && atomic_load(&init_offered) &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) +
				      sizeof(o->flags)) {
			o->flags |= FUSE_HANDLE_KILLPRIV_V2;
			atomic_store(&taken, true);
		}
		atomic_store(&init_done, true);
	}
	return writev(fd, iov, count);
}

int czfs_killpriv_setup(struct czfs_daemon *dm)
{
	static const struct fuse_custom_io io = {
		.read = kp_read,
		.writev = kp_writev,
	};

	return fuse_session_custom_io(dm->se, &io, fuse_session_fd(dm->se)) ?
	       -EIO : 0;
}

bool czfs_killpriv_on(void)
{
	return atomic_load(&taken);
}

bool czfs_killpriv_asked(void)
{
	return asked;
}

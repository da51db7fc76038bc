// SPDX-License-Identifier: MIT
/*
 * A tree built from paths (pathtree.h).  The map holds, for each path,
 * the directory and index of its entry; indexes hold until the end, when
 * each directory's entries are sorted for the numbering.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "czfs_fs.h"
#include "pathtree.h"
#include "scan.h"
#include "util.h"

struct path_slot {
	char *path;			/* NULL: a free slot */
	struct mk_inode *dir;
	unsigned idx;			/* of the entry in dir->dents */
};

struct mk_pathtree {
	struct mk_tree *t;
	struct mk_inode *root;
	struct path_slot *map;
	size_t nmap, map_cap;		/* cap is a power of two */
	struct mk_inode **all;		/* every inode made */
	size_t nall, all_cap;
};

static size_t path_hash(const char *s, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29) & (cap - 1);
}

static struct path_slot *map_find(struct mk_pathtree *pt, const char *path)
{
	size_t i = path_hash(path, pt->map_cap);

	while (pt->map[i].path && strcmp(pt->map[i].path, path))
		i = (i + 1) & (pt->map_cap - 1);
	return &pt->map[i];
}

/* Room for one more path. */
static int map_reserve(struct mk_pathtree *pt)
{
	size_t old_cap = pt->map_cap;
	struct path_slot *old = pt->map;

	if (2 * (pt->nmap + 1) <= pt->map_cap)
		return 0;
	pt->map_cap = old_cap ? old_cap * 2 : 1024;
	pt->map = calloc(pt->map_cap, sizeof(*pt->map));
	if (!pt->map) {
		pt->map = old;
		pt->map_cap = old_cap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].path)
			*map_find(pt, old[i].path) = old[i];
	free(old);
	return 0;
}

struct mk_inode *mk_pt_inode(struct mk_pathtree *pt)
{
	struct mk_inode *ip;

	if (CZFS_GROW(pt->all, pt->nall, pt->all_cap, 1024))
		return NULL;
	ip = calloc(1, sizeof(*ip));
	if (ip)
		pt->all[pt->nall++] = ip;
	return ip;
}

static void copy_meta(struct mk_inode *ip, const struct mk_inode *tmpl)
{
	ip->mode = tmpl->mode;
	ip->uid = tmpl->uid;
	ip->gid = tmpl->gid;
	ip->atime = tmpl->atime;
	ip->mtime = tmpl->mtime;
	ip->ctime = tmpl->ctime;
}

int mk_pt_new(struct mk_tree *t, const struct mk_inode *tmpl,
	      struct mk_pathtree **out)
{
	struct mk_pathtree *pt = calloc(1, sizeof(*pt));

	if (!pt || !(pt->root = mk_pt_inode(pt)) ||
	    !(pt->root->path = strdup("."))) {
		mk_pt_free(pt);
		return -ENOMEM;
	}
	pt->t = t;
	copy_meta(pt->root, tmpl);
	*out = pt;
	return 0;
}

static struct mk_inode **entry_of(const struct path_slot *s)
{
	return &s->dir->dents[s->idx].inode;
}

struct mk_inode *mk_pt_get(struct mk_pathtree *pt, const char *path)
{
	struct path_slot *s;

	if (!*path)
		return pt->root;
	if (!pt->map_cap)
		return NULL;
	s = map_find(pt, path);
	return s->path ? *entry_of(s) : NULL;
}

static int dent_push(struct mk_inode *dir, const char *name,
		     struct mk_inode *ip)
{
	unsigned n = dir->ndents;
	struct mk_dentry *d;

	if (!n || (n >= 8 && !(n & (n - 1)))) {	/* full: 0, 8, 16, ... */
		d = realloc(dir->dents, MAX(8u, 2 * n) * sizeof(*d));
		if (!d)
			return -ENOMEM;
		dir->dents = d;
	}
	d = &dir->dents[n];
	d->name = strdup(name);
	if (!d->name)
		return -ENOMEM;
	d->name_len = (unsigned)strlen(name);
	d->inode = ip;
	dir->ndents++;
	return 0;
}

/* A new entry for ip at path in dir (path is free in the map). */
static int add_entry(struct mk_pathtree *pt, struct mk_inode *dir,
		     const char *path, struct mk_inode *ip)
{
	const char *name = strrchr(path, '/');
	struct path_slot *s;
	char *key = strdup(path);
	int err = key ? map_reserve(pt) : -ENOMEM;

	if (!err)
		err = dent_push(dir, name ? name + 1 : path, ip);
	if (err) {
		free(key);
		return err;
	}
	s = map_find(pt, path);
	s->path = key;
	s->dir = dir;
	s->idx = dir->ndents - 1;
	pt->nmap++;
	return 0;
}

/* The parent directory of path, made if missing. */
static int parent_dir(struct mk_pathtree *pt, const char *path,
		      struct mk_inode **out)
{
	const char *slash = strrchr(path, '/');
	char *parent;
	int err;

	if (!slash) {
		*out = pt->root;
		return 0;
	}
	parent = strndup(path, (size_t)(slash - path));
	if (!parent)
		return -ENOMEM;
	err = mk_pt_dir(pt, parent, out);
	free(parent);
	return err;
}

int mk_pt_dir(struct mk_pathtree *pt, const char *path,
	      struct mk_inode **out)
{
	struct mk_inode *ip = mk_pt_get(pt, path), *dir;
	int err;

	if (ip) {
		*out = ip;
		return S_ISDIR(ip->mode) ? 0 : -ENOTDIR;
	}
	err = parent_dir(pt, path, &dir);
	if (err)
		return err;
	ip = mk_pt_inode(pt);
	if (!ip || !(ip->path = strdup(path)))
		return -ENOMEM;
	copy_meta(ip, pt->root);
	ip->mode = S_IFDIR | 0755;
	*out = ip;
	return add_entry(pt, dir, path, ip);
}

int mk_pt_link(struct mk_pathtree *pt, const char *path,
	       struct mk_inode *ip, struct mk_inode **at)
{
	struct mk_inode *dir, *old;
	int err = parent_dir(pt, path, &dir);

	if (err)
		return err;
	old = mk_pt_get(pt, path);
	*at = old && S_ISDIR(old->mode) ? old : ip;
	if (!old)
		return add_entry(pt, dir, path, ip);
	if (S_ISDIR(old->mode) != S_ISDIR(ip->mode))
		return S_ISDIR(old->mode) ? -EISDIR : -EEXIST;
	if (!S_ISDIR(old->mode))
		*entry_of(map_find(pt, path)) = ip;
	return 0;
}

static int dentry_cmp(const void *a, const void *b)
{
	const struct mk_dentry *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Number dir's entries after the inodes numbered so far. */
static int number_entries(struct mk_tree *t, struct mk_inode *dir)
{
	int err = 0;

	if (dir->ndents)
		qsort(dir->dents, dir->ndents, sizeof(*dir->dents), dentry_cmp);
	for (unsigned i = 0; i < dir->ndents && !err; i++) {
		struct mk_inode *ip = dir->dents[i].inode;

		if (ip->ino) {		/* a hard link to one numbered */
			ip->nlink++;
			continue;
		}
		err = mk_tree_add(t, ip);
		ip->nlink = S_ISDIR(ip->mode) ? 2 : 1;
		if (S_ISDIR(ip->mode)) {
			ip->parent = dir->ino;
			dir->nlink++;
			t->ndirs++;
		} else {
			t->nfiles++;
			t->bytes += ip->size;
		}
	}
	return err;
}

int mk_pt_finish(struct mk_pathtree *pt)
{
	struct mk_tree *t = pt->t;
	int err = mk_tree_add(t, pt->root);

	pt->root->nlink = 2;
	pt->root->parent = CZFS_ROOT_INO;
	t->ndirs = 1;
	/* Walking the array while appending to it: breadth-first order. */
	for (uint64_t i = 0; !err && i < t->count; i++)
		if (S_ISDIR(t->inodes[i]->mode))
			err = number_entries(t, t->inodes[i]);
	if (err) {
		free(t->inodes);
		t->inodes = NULL;
		t->count = t->cap = 0;
		mk_pt_free(pt);
		return err;
	}
	for (size_t i = 0; i < pt->nall; i++)
		if (!pt->all[i]->ino)
			mk_inode_free(pt->all[i]);
	pt->nall = 0;
	mk_pt_free(pt);
	return 0;
}

void mk_pt_free(struct mk_pathtree *pt)
{
	if (!pt)
		return;
	for (size_t i = 0; i < pt->map_cap; i++)
		free(pt->map[i].path);
	for (size_t i = 0; i < pt->nall; i++)
		mk_inode_free(pt->all[i]);
	free(pt->map);
	free(pt->all);
	free(pt);
}

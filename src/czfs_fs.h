/* SPDX-License-Identifier: MIT */
/*
 * czfs on-disk format, version 1.
 *
 * This header is the single description of the image format.  Every tool
 * (mkfs.czfs, czfs-fuse, fsck.czfs, dump.czfs) and the tests include it.
 * All multi-byte fields are little-endian; every structure has a fixed size
 * checked at compile time at the bottom of this file.
 *
 * Layout (4 KiB blocks, 64-bit block addresses):
 *
 *   block 0      superblock (static after mkfs)
 *   block 1, 2   checkpoint slots; generation g lives in slot (g & 1)
 *   block 3..    everything else, allocated copy-on-write from the space map:
 *                file clusters, B-tree nodes, space-map bitmap and index
 *                blocks, large xattr values
 *
 * A checkpoint names the root of the single metadata B-tree and the
 * space-map index.  Nothing reachable from the newest valid checkpoint is
 * ever overwritten in place, so a crash at any moment leaves that
 * checkpoint intact (see man/czfs.5).
 *
 * Item data sits at any byte offset inside a leaf: code copies it into a
 * local structure (memcpy) before reading fields, never casts in place.
 *
 * The B-tree holds items sorted by key (objectid, type, offset):
 *   (ino,  INODE,   0)            struct czfs_inode
 *   (ino,  XATTR,   namehash)     czfs_xattr_entry records
 *   (ino,  DENTRY,  namehash)     czfs_dentry records (directories)
 *   (ino,  CLUSTER, index)        struct czfs_cluster [+ inline payload]
 *   (0,    ORPHAN,  ino)          empty: inode unlinked while open
 *   (PACK, PACK,   blkaddr)      struct czfs_pack: a shared pack of tails,
 *                                 or a run of compressed clusters
 *   (PACK, PACK,   CZFS_PACK_SLICED_KEY(blkaddr, offset))
 *                                 struct czfs_pack: a pack stored as a
 *                                 slice of a run (after every other)
 */
#ifndef CZFS_FS_H
#define CZFS_FS_H

#include <assert.h>
#include <stdint.h>
#include <linux/types.h>	/* __le16, __le32, __le64, __u8, __s8 */

#define CZFS_BLOCK_SHIFT	12
#define CZFS_BLOCK_SIZE		(1u << CZFS_BLOCK_SHIFT)

#define CZFS_SUPER_MAGIC	0x53465a43u	/* "CZFS" */
#define CZFS_CP_MAGIC		0x50435a43u	/* "CZCP" */
#define CZFS_NODE_MAGIC		0x444e5a43u	/* "CZND" */
#define CZFS_SMAP_MAGIC		0x4d535a43u	/* "CZSM" */
#define CZFS_CLUSTER_MAGIC	0x4c435a43u	/* "CZCL" */
#define CZFS_LEAFPACK_MAGIC	0x504c5a43u	/* "CZLP" */

#define CZFS_VERSION_MAJOR	1
#define CZFS_VERSION_MINOR	0

#define CZFS_SB_BLKADDR		0
#define CZFS_CP_BLKADDR0	1
#define CZFS_CP_BLKADDR1	2
#define CZFS_FIRST_DATA_BLKADDR	3

/* Cluster sizes: 2^shift blocks, 4 KiB .. 256 KiB. */
#define CZFS_MIN_CLUSTER_SHIFT	0
#define CZFS_MAX_CLUSTER_SHIFT	6
#define CZFS_MAX_CLUSTER_BLOCKS	(1u << CZFS_MAX_CLUSTER_SHIFT)
#define CZFS_MAX_CLUSTER_SIZE	(CZFS_BLOCK_SIZE << CZFS_MAX_CLUSTER_SHIFT)

#define CZFS_ROOT_INO		1ull	/* equals FUSE_ROOT_ID */
#define CZFS_FIRST_INO		2ull
#define CZFS_MAX_INO		((1ull << 56) - 1)	/* must fit a key offset */
#define CZFS_NAME_MAX		255
#define CZFS_SYMLINK_MAX	4095
#define CZFS_XATTR_NAME_MAX	255
#define CZFS_XATTR_SIZE_MAX	65536
#define CZFS_MAX_FILE_SIZE	(1ull << 48)	/* 256 TiB */

/* ---- feature bits ------------------------------------------------------ */

/* compat: an old reader may ignore them. */
/* ro_compat: an old reader may mount read-only. */
/* incompat: an old reader must refuse the image. */
#define CZFS_FEATURE_INCOMPAT_LZ4	0x00000001u	/* lz4 or lz4hc clusters */
#define CZFS_FEATURE_INCOMPAT_ZSTD	0x00000002u	/* zstd clusters */
/* inodes may carry the chattr flags CZFS_INODE_ATTR_FLAGS (an older
 * inode decoder refuses them, and an older writer would not obey them) */
#define CZFS_FEATURE_INCOMPAT_ATTR_FLAGS	0x00000004u
/* fallocate's promises: RESERVED clusters, the clusters' prealloc, inode
 * prealloc and checkpoint prealloc_blocks are kept: an older decoder
 * refuses the cluster kind and field, and an older writer would not
 * honour the space they set aside */
#define CZFS_FEATURE_INCOMPAT_PREALLOC	0x00000008u
/* BLOCKMAP clusters: raw blocks each at its own address (hot clusters
 * rewritten in part); an older decoder refuses the kind */
#define CZFS_FEATURE_INCOMPAT_BLOCKMAP	0x00000010u
/* PACKED clusters and PACK items: small files and tails share packs; an
 * older decoder refuses the kind, and an older writer would free a pack's
 * blocks while other files still use them */
#define CZFS_FEATURE_INCOMPAT_PACKED	0x00000020u
/* SLICE clusters and run PACK items: compressed clusters stored back to
 * back at byte offsets of shared runs of blocks; an older decoder refuses
 * the kind, and an older writer would free a run's blocks while other
 * clusters still use them */
#define CZFS_FEATURE_INCOMPAT_SLICED	0x00000040u
/* Leaf packs: leaves stored compressed together, their pointers marked
 * CZFS_LEAFPACK_PTR; an older decoder cannot read them */
#define CZFS_FEATURE_INCOMPAT_LEAFPACK	0x00000080u
/* Sliced packs: packs of small files and tails stored compressed at byte
 * offsets of runs (PACKED items with slice fields, PACK items keyed by
 * CZFS_PACK_SLICED_KEY); an older decoder refuses the fields, and an
 * older writer would leave a run's count of them wrong */
#define CZFS_FEATURE_INCOMPAT_SLICED_PACKS	0x00000100u
#define CZFS_FEATURE_INCOMPAT_SUPP	(CZFS_FEATURE_INCOMPAT_LZ4 | \
					 CZFS_FEATURE_INCOMPAT_ZSTD | \
					 CZFS_FEATURE_INCOMPAT_ATTR_FLAGS | \
					 CZFS_FEATURE_INCOMPAT_PREALLOC | \
					 CZFS_FEATURE_INCOMPAT_BLOCKMAP | \
					 CZFS_FEATURE_INCOMPAT_PACKED | \
					 CZFS_FEATURE_INCOMPAT_SLICED | \
					 CZFS_FEATURE_INCOMPAT_LEAFPACK | \
					 CZFS_FEATURE_INCOMPAT_SLICED_PACKS)
/* every inode's inline_bytes counts its inline cluster payloads */
#define CZFS_FEATURE_RO_COMPAT_INLINE_BYTES	0x00000001u
#define CZFS_FEATURE_RO_COMPAT_SUPP	CZFS_FEATURE_RO_COMPAT_INLINE_BYTES
/* the size limit follows the host: a writable mount raises max_blocks as
 * the image fills, within the free space of the filesystem holding it
 * (mkfs.czfs without -s) */
#define CZFS_FEATURE_COMPAT_GROW	0x00000001u
#define CZFS_FEATURE_COMPAT_SUPP	CZFS_FEATURE_COMPAT_GROW

/* ---- compression algorithms (on-disk ids) ------------------------------ */

enum czfs_alg {
	CZFS_ALG_NONE	= 0,
	CZFS_ALG_LZ4	= 1,
	CZFS_ALG_LZ4HC	= 2,	/* decoded by the lz4 decoder */
	CZFS_ALG_ZSTD	= 3,
	CZFS_ALG_MAX	= 3,
};

/* ---- superblock (block 0, offset 0) ------------------------------------ */

struct czfs_super_block {
	__le32 magic;			/* CZFS_SUPER_MAGIC */
	__le32 checksum;		/* crc32c of this struct, field zeroed */
	__le16 version_major;		/* CZFS_VERSION_MAJOR; others refused */
	__le16 version_minor;
	__le32 feature_compat;
	__le32 feature_incompat;
	__le32 feature_ro_compat;
	__u8 block_shift;		/* CZFS_BLOCK_SHIFT; others refused */
	__u8 cluster_shift;	/* default for new files, 0..6 */
	__u8 default_alg;		/* enum czfs_alg for new files */
	__s8 default_level;	/* 0 = the algorithm's default */
	__le32 reserved0;
	__le64 max_blocks;		/* size limit set at mkfs, in blocks */
	__le64 cp_blkaddr[2];		/* CZFS_CP_BLKADDR0, CZFS_CP_BLKADDR1 */
	__le64 create_time;		/* seconds since the epoch */
	__le32 create_nsec;
	__le32 reserved1;
	__u8 uuid[16];
	__le64 hash_seed[2];		/* key of the name hash (siphash) */
	char label[64];			/* NUL-padded, not always terminated */
	__u8 reserved[88];		/* zero */
};

/* ---- checkpoint (blocks 1 and 2) --------------------------------------- */

#define CZFS_CP_CLEAN_UMOUNT	0x01	/* written by a clean unmount */
#define CZFS_CP_COVERED		0x02	/* made with one flush: see below */

/*
 * A checkpoint occupies a whole block.  The valid slot with the highest
 * generation wins; a slot is valid when its magic, checksum, blkaddr and
 * generation parity match.
 *
 * A COVERED checkpoint was written together with the blocks it brought
 * into use, and one flush made them all durable (a database's fsync: half
 * the flushes of writing the blocks, flushing, then the checkpoint).  So
 * it may have reached the disk without some of them.  It names them:
 * after the nr_smap_index index addresses, smap_index[] holds nr_covered
 * extents (CZFS_CP_EXTENT: every block in use in this checkpoint and not
 * in the one before), and covered_crc is the crc32c of their contents in
 * that order.  A reader that finds the crc wrong (or a block unreadable)
 * takes the other slot, the generation before, which was durable before
 * this one was written.
 */
#define CZFS_CP_EXTENT_BITS	16
#define CZFS_CP_EXTENT_MAX	(1u << CZFS_CP_EXTENT_BITS)	/* blocks */
#define CZFS_CP_EXTENT(addr, n)	((uint64_t)(addr) << CZFS_CP_EXTENT_BITS | \
				 (uint64_t)((n) - 1))
#define CZFS_CP_EXTENT_ADDR(e)	((e) >> CZFS_CP_EXTENT_BITS)
#define CZFS_CP_EXTENT_LEN(e)	(((e) & (CZFS_CP_EXTENT_MAX - 1)) + 1)
struct czfs_checkpoint {
	__le32 checksum;		/* crc32c of the block, field zeroed */
	__le32 magic;			/* CZFS_CP_MAGIC */
	__le64 blkaddr;			/* slot address: catches misplaced writes */
	__le64 generation;		/* > 0; slot = cp_blkaddr[generation & 1] */
	__le64 root_blkaddr;		/* B-tree root node */
	__le64 root_generation;		/* generation stored in the root node */
	__u8 root_level;		/* 0 when the root is a leaf */
	__u8 flags;		/* CZFS_CP_* */
	__le16 nr_smap_index;		/* index addresses in smap_index[] */
	__le16 nr_covered;		/* COVERED: extents after them */
	__le16 reserved0;
	__le64 image_blocks;		/* blocks the image file holds now */
	__le64 max_blocks;		/* current size limit (>= image_blocks) */
	__le64 used_blocks;		/* blocks marked used in the space map */
	__le64 next_ino;		/* next inode number to hand out */
	__le64 inode_count;		/* live inodes */
	__le64 commit_time;		/* seconds since the epoch */
	__le32 commit_nsec;
	__le32 covered_crc;		/* COVERED: crc32c of their blocks */
	__le64 mount_count;
	__le64 prealloc_blocks;		/* blocks promised to clusters, all
					 * inodes (INCOMPAT_PREALLOC) */
	__le64 reserved[1];
	/* Addresses of space-map index blocks (0 = index block all free),
	 * then the covered extents. */
	__le64 smap_index[496];
};

/* ---- space map ---------------------------------------------------------
 *
 * One bit per block, 1 = in use.  A bitmap block holds 32768 bits and has
 * no header: its address and crc live in an index block entry.  An index
 * block covers 254 bitmap blocks (about 31.75 GiB of image).  A zero
 * address means "all free" for either level.
 */
#define CZFS_SMAP_BITS_PER_BLOCK	(CZFS_BLOCK_SIZE * 8u)
#define CZFS_SMAP_ENTRIES_PER_INDEX	254u

struct czfs_smap_entry {
	__le64 blkaddr;			/* bitmap block, 0 = all free */
	__le32 checksum;		/* crc32c of the bitmap block */
	__le32 reserved;
};

struct czfs_smap_index {
	__le32 checksum;		/* crc32c of the block, field zeroed */
	__le32 magic;			/* CZFS_SMAP_MAGIC */
	__le64 blkaddr;			/* where this block lives */
	__le64 generation;		/* checkpoint generation that wrote it */
	__le64 first_bitmap;		/* number of its first bitmap block */
	struct czfs_smap_entry entries[CZFS_SMAP_ENTRIES_PER_INDEX];
};

/* ---- B-tree nodes ------------------------------------------------------ */

enum czfs_item_type {
	CZFS_ITEM_INODE		= 1,
	CZFS_ITEM_XATTR		= 2,
	CZFS_ITEM_DENTRY	= 3,
	CZFS_ITEM_CLUSTER	= 4,
	CZFS_ITEM_ORPHAN	= 5,
	CZFS_ITEM_PACK		= 6,
	CZFS_ITEM_TYPE_MAX	= 6,
};

#define CZFS_ORPHAN_OBJECTID	0ull
/* PACK items sort after every inode's items (above CZFS_MAX_INO) */
#define CZFS_PACK_OBJECTID	0xffffffffffffffffull
#define CZFS_KEY_OFFSET_BITS	56
#define CZFS_KEY_OFFSET_MASK	((1ull << CZFS_KEY_OFFSET_BITS) - 1)

/* Key: objectid, then (type << 56 | offset); compare as two u64. */
struct czfs_disk_key {
	__le64 objectid;
	__le64 type_offset;
};

#define CZFS_TREE_FS		1	/* owner of the filesystem tree */

struct czfs_node_header {
	__le32 checksum;		/* crc32c of the block, field zeroed */
	__le32 magic;			/* CZFS_NODE_MAGIC */
	__le64 blkaddr;			/* where this node lives */
	__le64 generation;		/* checkpoint generation that wrote it */
	__le64 owner;			/* CZFS_TREE_FS */
	__le16 nritems;
	__u8 level;		/* 0 = leaf */
	__u8 flags;		/* zero */
	__le32 reserved0;
	__le64 reserved1;
};

/* Internal node: header, then nritems pointers in key order. */
struct czfs_node_ptr {
	struct czfs_disk_key key;	/* smallest key in the child */
	__le64 blkaddr;
	__le64 generation;		/* child's header generation */
};

/*
 * Leaf packs (INCOMPAT_LEAFPACK, made by mkfs): up to CZFS_LEAFPACK_MAX
 * leaves that are consecutive children of one level-1 node, compressed
 * together into whole blocks: a struct czfs_leafpack header, then the
 * payload, which decodes to the leaves' 4 KiB blocks one after another.
 * The parent's pointer to leaf i of a pack at blocks [base, base + n) is
 *   CZFS_LEAFPACK_PTR | i << 56 | (n - 1) << 48 | base
 * and the leaf's own header holds CZFS_LEAFPACK_PTR | i << 56 (the pack's
 * header holds base).  A node written after mkfs never points into a
 * pack: the copy-on-write of a level-1 node stores its packed children
 * as plain leaves and frees their packs, and a level-1 node with packed
 * children is never merged with another.
 */
#define CZFS_LEAFPACK_PTR	(1ull << 63)
#define CZFS_LEAFPACK_MAX	32
#define CZFS_LEAFPACK_MAX_BLOCKS	256

struct czfs_leafpack {
	__le32 magic;			/* CZFS_LEAFPACK_MAGIC */
	__le32 checksum;		/* crc32c of header (field zeroed) + payload */
	__le64 blkaddr;			/* the pack's first block */
	__le64 generation;		/* the leaves' generation */
	__le32 clen;			/* payload bytes after this header */
	__u8 alg;			/* enum czfs_alg, not NONE */
	__u8 nleaves;			/* 2..CZFS_LEAFPACK_MAX */
	__le16 reserved;		/* zero */
};

/*
 * Leaf: header, then nritems item headers in key order growing forward;
 * item data is packed at the end of the block growing backward: item 0's
 * data ends at the block end, item i's data ends where item i-1's begins.
 */
struct czfs_item {
	struct czfs_disk_key key;
	__le16 offset;			/* from the start of the block */
	__le16 size;
} __attribute__((packed));

#define CZFS_NODE_HDR_SIZE	((unsigned)sizeof(struct czfs_node_header))
#define CZFS_NODE_MAX_PTRS	((CZFS_BLOCK_SIZE - CZFS_NODE_HDR_SIZE) / \
				 (unsigned)sizeof(struct czfs_node_ptr))
#define CZFS_LEAF_SPACE		(CZFS_BLOCK_SIZE - CZFS_NODE_HDR_SIZE)
#define CZFS_MAX_ITEM_SIZE	(CZFS_LEAF_SPACE - (unsigned)sizeof(struct czfs_item))
#define CZFS_MAX_LEVEL		8

/* ---- inode item -------------------------------------------------------- */

#define CZFS_INODE_NOCOMPRESS	0x0001	/* store new clusters raw */
#define CZFS_INODE_COMPRESS	0x0002	/* compress even if it does not pay */
/* chattr flags (INCOMPAT_ATTR_FLAGS), enforced as the kernel filesystems do */
#define CZFS_INODE_IMMUTABLE	0x0004	/* chattr +i: no change at all */
#define CZFS_INODE_APPEND	0x0008	/* chattr +a: data only appended */
#define CZFS_INODE_NOATIME	0x0010	/* chattr +A: atime never updated */
#define CZFS_INODE_NODUMP	0x0020	/* chattr +d: dump(8) skips it */
#define CZFS_INODE_ATTR_FLAGS	0x003c
#define CZFS_INODE_FLAGS_KNOWN	0x003f

struct czfs_inode {
	__le32 mode;			/* S_IFMT | permission bits */
	__le32 nlink;
	__le32 uid;
	__le32 gid;
	__le64 size;			/* bytes; symlinks: target length */
	__le64 blocks;			/* 4 KiB blocks stored for this inode */
	__le64 atime;			/* seconds, signed */
	__le64 mtime;
	__le64 ctime;
	__le64 btime;			/* creation */
	__le32 atime_nsec;
	__le32 mtime_nsec;
	__le32 ctime_nsec;
	__le32 btime_nsec;
	__le32 rdev_major;		/* device nodes */
	__le32 rdev_minor;
	__le64 parent;			/* directories: parent inode */
	__le64 generation;
	__le32 flags;			/* CZFS_INODE_* */
	__u8 alg;			/* algorithm for new clusters */
	__s8 level;		/* 0 = the algorithm's default */
	__u8 cluster_shift;	/* this file's cluster size, 0..6 */
	__u8 reserved0;
	__le64 nentries;		/* directories: entries, without . and .. */
	__le64 inline_bytes;		/* payload bytes of its inline clusters
					 * and its PACKED ones' shares of their
					 * packs (exact with
					 * RO_COMPAT_INLINE_BYTES) */
	__le64 prealloc;		/* blocks its clusters are promised
					 * (INCOMPAT_PREALLOC) */
	__le64 reserved[1];
};

/* ---- directory entries -------------------------------------------------
 *
 * A DENTRY item holds every entry whose name hashes to its key offset
 * (usually one), each a czfs_dentry followed by the name (no NUL), packed
 * without padding.
 */
#define CZFS_DIRHASH_BITS	52

struct czfs_dentry {
	__le64 ino;
	__le16 name_len;		/* 1..255 */
	__u8 type;			/* DT_* value */
	__u8 reserved;
} __attribute__((packed));

/* ---- extended attributes -----------------------------------------------
 *
 * An XATTR item holds every attribute whose full name ("user.foo") hashes
 * to its key offset: czfs_xattr_entry, name (no NUL), then the value
 * inline, or a czfs_xattr_extent when CZFS_XATTR_EXTERNAL is set.
 */
#define CZFS_XATTR_EXTERNAL	0x01
#define CZFS_XATTR_INLINE_MAX	1024	/* larger values go to blocks */

struct czfs_xattr_entry {
	__u8 flags;		/* CZFS_XATTR_* */
	__u8 name_len;		/* 1..255 */
	__le16 reserved;
	__le32 value_len;		/* 0..CZFS_XATTR_SIZE_MAX */
};

struct czfs_xattr_extent {
	__le64 blkaddr;			/* value_len bytes, zero-padded */
	__le32 checksum;		/* crc32c of the value bytes */
	__le32 reserved;
};

/* ---- clusters ----------------------------------------------------------
 *
 * A file is cut into clusters of 2^cluster_shift blocks.  Cluster i covers
 * bytes [i << (12 + shift), (i + 1) << (12 + shift)).  No item: a hole
 * (reads as zeros).  An all-zero cluster is stored as a hole.
 *
 * fallocate's promise (INCOMPAT_PREALLOC): an item's prealloc counts the
 * blocks of free space set aside for the cluster's next write (the
 * cluster stored raw), counted in the inode's prealloc and the
 * checkpoint's prealloc_blocks.  A RESERVED cluster is a hole fallocate
 * set aside: no data, no blocks, reads as zeros; nblocks, alg, checksum,
 * blkaddr and ulen are 0.  A data cluster that holds less than a cluster
 * (a file's tail) may carry a promise too, for the rest of it.  Writing the
 * cluster replaces the item (the promise is kept: the space is given back
 * at its stored size); a punch, a truncate or the file's deletion drop it.
 */
enum czfs_cluster_kind {
	CZFS_CLUSTER_RAW		= 1,	/* nblocks raw blocks */
	CZFS_CLUSTER_COMPRESSED		= 2,	/* header + payload in nblocks */
	CZFS_CLUSTER_INLINE		= 3,	/* raw bytes in the item */
	CZFS_CLUSTER_INLINE_COMPRESSED	= 4,	/* compressed bytes in the item */
	CZFS_CLUSTER_RESERVED		= 5,	/* no data yet: prealloc promised */
	CZFS_CLUSTER_BLOCKMAP		= 6,	/* raw blocks, each its own address */
	CZFS_CLUSTER_PACKED		= 7,	/* a byte range of a shared pack */
	CZFS_CLUSTER_SLICE		= 8,	/* compressed, at a byte range of
						 * a shared run */
};

#define CZFS_INLINE_MAX		2048	/* largest inline payload */

struct czfs_cluster {
	__u8 kind;			/* enum czfs_cluster_kind */
	__u8 alg;			/* compressed kinds: enum czfs_alg */
	__u8 nblocks;		/* extent kinds: blocks stored, 1..64 */
	__u8 reserved0;
	__le32 checksum;		/* crc32c: raw = the nblocks blocks,
					 * compressed = the payload,
					 * inline = the payload in the item */
	__le64 blkaddr;			/* extent kinds: first block; else 0 */
	__le32 ulen;			/* bytes of file data it holds */
	__le32 prealloc;		/* blocks promised for its next write
					 * (INCOMPAT_PREALLOC): RESERVED 1..64,
					 * others 0, or 1..64 if ulen < the
					 * cluster size */
	/* inline kinds: payload follows, item size - 24 bytes */
};

/*
 * A BLOCKMAP cluster (INCOMPAT_BLOCKMAP): a cluster rewritten in part is
 * stored raw, block by block, so that rewriting one block writes one
 * block (copy-on-write) and the item.  The item is the struct followed by
 * one struct czfs_cluster_block per block of its data, DIV_ROUND_UP(ulen,
 * 4096) of them; an entry with blkaddr 0 is a block of zeros (no
 * storage).  alg, checksum and blkaddr are 0; nblocks counts the entries
 * with blocks (0..64).  Each entry's checksum is the crc32c of its whole
 * stored block; bytes of the last block past ulen read as zeros.
 */
struct czfs_cluster_block {
	__le64 blkaddr;			/* 0: zeros */
	__le32 checksum;		/* crc32c of the 4 KiB block; 0 for zeros */
	__le32 reserved;		/* zero */
};

/*
 * A PACKED cluster (INCOMPAT_PACKED): its bytes are a range of a *pack*,
 * one blob of up to CZFS_PACK_MAX_ULEN bytes made of many files' small
 * clusters (small files, tails) stored together at blkaddr, compressed
 * (alg != 0: stored as a COMPRESSED cluster of pack_ulen bytes would be,
 * header and all) or raw (alg 0: as a RAW cluster).  The struct's alg,
 * nblocks, checksum and blkaddr describe the pack exactly as a RAW or
 * COMPRESSED item of ulen pack_ulen would, so a reader needs no other
 * item; ulen is the cluster's own bytes, at offset in the decoded pack.
 * The item is the struct followed by struct czfs_cluster_packed (40
 * bytes).  A packed cluster counts no blocks in its inode's blocks (the
 * pack's blocks are owned by the PACK item, which counts its references),
 * its share of the pack's blocks, ceil(ulen * nblocks * 4096 / pack_ulen),
 * in the inode's inline_bytes.
 *
 * A sliced pack (INCOMPAT_SLICED_PACKS, slice_clen != 0): the pack is
 * stored compressed (alg != 0) as a SLICE would be, its payload (no
 * header) slice_clen bytes at byte slice_off of block blkaddr, in the run
 * that starts run_back blocks before blkaddr; nblocks are the blocks the
 * payload touches, checksum its crc32c.  Its PACK item is keyed by
 * CZFS_PACK_SLICED_KEY(blkaddr, slice_off) and counts the PACKED items;
 * the run counts the pack once, its slice_clen bytes live; the share in
 * inline_bytes is ceil(ulen * slice_clen / pack_ulen).
 */
#define CZFS_PACK_MAX_ULEN	CZFS_MAX_CLUSTER_SIZE

struct czfs_cluster_packed {
	__le32 offset;			/* of the cluster's bytes in the pack */
	__le32 pack_ulen;		/* decoded pack bytes, 1..256 KiB */
	__le32 slice_clen;		/* a sliced pack: payload bytes; else 0 */
	__le16 slice_off;		/* a sliced pack: start in blkaddr */
	__u8 run_back;			/* a sliced pack: blkaddr - its run */
	__u8 reserved;			/* zero */
};

/*
 * A SLICE cluster (INCOMPAT_SLICED): a compressed cluster whose payload
 * (no header) lies at a byte offset of a *run*, nblocks blocks that hold
 * the payloads of many clusters back to back, so that no cluster is
 * rounded up to whole blocks of its own.  blkaddr and nblocks are the
 * blocks the payload touches (the first and last may be shared with the
 * neighbouring slices), checksum the crc32c of the payload, alg its codec
 * (1..); compression saved a block, as for a COMPRESSED cluster.  The
 * item is the struct followed by struct czfs_cluster_slice.  The run's
 * blocks are owned by its PACK item (flag CZFS_PACK_RUN), which counts
 * the slices in it; a slice counts its clen in the inode's inline_bytes,
 * no blocks.  mkfs.czfs makes them; writes through a mount store whole
 * clusters as before, and a rewritten slice drops its reference.
 */
struct czfs_cluster_slice {
	__le32 offset;			/* payload start in block blkaddr, 0..4095 */
	__le32 clen;			/* payload bytes */
	__le64 run;			/* the run's first block: its PACK key */
};

#define CZFS_RUN_MAX_BLOCKS	255	/* blocks of one run */

/*
 * (CZFS_PACK_OBJECTID, PACK, blkaddr): one per pack or run.  refs counts
 * the PACKED (or, for a run, SLICE) items that point at blkaddr
 * (identical clusters may share one range: each counts); the nblocks
 * blocks are freed, and the item deleted, in the transaction that drops
 * the last one.  A run (flags CZFS_PACK_RUN): alg 0, ulen the bytes its
 * slices use from its start (nblocks = DIV_ROUND_UP(ulen, 4096), 1..255),
 * and in checksum's place the payload bytes of the slices still in it
 * (live, 1..ulen): recompression moves the slices of a run less than
 * half live.
 *
 * A sliced pack (flags CZFS_PACK_SLICED, key CZFS_PACK_SLICED_KEY(first
 * block, byte offset in it)): refs, alg (1..), ulen and checksum as its
 * PACKED items say; nblocks the blocks its payload touches, clen its
 * payload bytes, run_back its first block's distance from its run's (whose
 * PACK item counts the pack as one reference and clen live bytes).  The
 * transaction that drops its last reference deletes it and drops its
 * reference of the run.
 */
#define CZFS_PACK_RUN		0x01
#define CZFS_PACK_SLICED	0x02
#define CZFS_PACK_SLICED_BIT	(1ull << 55)	/* above any block address;
						 * key offsets are < 2^56 */
#define CZFS_PACK_SLICED_MAX_BLKADDR	(1ull << 43)	/* a sliced pack's
							 * blocks lie below */
#define CZFS_PACK_SLICED_KEY(blkaddr, off) \
	(CZFS_PACK_SLICED_BIT | (uint64_t)(blkaddr) << CZFS_BLOCK_SHIFT | (off))

struct czfs_pack {
	__le32 refs;			/* >= 1 */
	__u8 alg;			/* as the PACKED items say */
	__u8 nblocks;			/* 1..64; a run's 1..255 */
	__u8 flags;			/* CZFS_PACK_RUN or CZFS_PACK_SLICED */
	__u8 run_back;			/* a sliced pack's; else zero */
	__le32 ulen;			/* decoded bytes */
	__le32 checksum;		/* as the PACKED items say; a run: live */
	__le32 clen;			/* a sliced pack's payload; else zero */
	__le32 reserved;		/* zero */
};

/*
 * A compressed cluster on disk starts with this header; the payload
 * follows, and the rest of the last block is zero.  A cluster is stored
 * compressed only if header + payload need at least one block fewer than
 * storing it raw.
 */
struct czfs_cluster_header {
	__le32 magic;			/* CZFS_CLUSTER_MAGIC */
	__le32 clen;			/* payload bytes */
	__le32 ulen;			/* decompressed bytes */
	__le32 checksum;		/* crc32c of the payload */
};

/* ---- compile-time layout checks ----------------------------------------- */

static_assert(sizeof(struct czfs_super_block) == 256, "superblock size");
static_assert(sizeof(struct czfs_checkpoint) == CZFS_BLOCK_SIZE, "checkpoint size");
static_assert(sizeof(struct czfs_smap_entry) == 16, "smap entry size");
static_assert(sizeof(struct czfs_smap_index) == CZFS_BLOCK_SIZE, "smap index size");
static_assert(sizeof(struct czfs_disk_key) == 16, "key size");
static_assert(sizeof(struct czfs_node_header) == 48, "node header size");
static_assert(sizeof(struct czfs_node_ptr) == 32, "node ptr size");
static_assert(sizeof(struct czfs_item) == 20, "item size");
static_assert(sizeof(struct czfs_leafpack) == 32, "leaf pack header size");
static_assert(sizeof(struct czfs_inode) == 144, "inode size");
static_assert(sizeof(struct czfs_dentry) == 12, "dentry size");
static_assert(sizeof(struct czfs_xattr_entry) == 8, "xattr entry size");
static_assert(sizeof(struct czfs_xattr_extent) == 16, "xattr extent size");
static_assert(sizeof(struct czfs_cluster) == 24, "cluster item size");
static_assert(sizeof(struct czfs_cluster_header) == 16, "cluster header size");
static_assert(sizeof(struct czfs_cluster_packed) == 16, "packed extension size");
static_assert(sizeof(struct czfs_cluster_block) == 16, "block map entry size");
static_assert(sizeof(struct czfs_cluster_slice) == 16, "slice extension size");
static_assert(sizeof(struct czfs_pack) == 24, "pack item size");

#endif /* CZFS_FS_H */

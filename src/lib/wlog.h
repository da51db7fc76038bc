/* SPDX-License-Identifier: MIT */
/*
 * Write logs, for power-loss replay (dm-log-writes style).
 *
 * The recording device (czfs_bdev_log_create, bdev.h) appends every
 * completed write, punch and resize of the device it wraps, and every
 * completed flush, to a log file: a header, then records.  The reader
 * below rebuilds the image as a disk may hold it after a power cut at any
 * record: what the last completed flush covers, and any subset (and any
 * 4 KiB-torn prefix of a write) of what came after it.
 *
 * A flush covers only the writes that had completed when it was issued:
 * a write still in flight on another thread may miss it.  So each flush
 * record carries, in arg, the number of records logged when it began;
 * those are durable once the flush record is there.
 *
 * Every field is little-endian.  A log ends with a whole record, or with a
 * torn one (the writer killed in the middle of an append), which the
 * reader drops.
 */
#ifndef CZFS_WLOG_H
#define CZFS_WLOG_H

#include <stddef.h>
#include <stdint.h>

#include "bdev.h"

#define CZFS_WLOG_MAGIC		"CZFSWLOG"	/* 8 bytes, no NUL */
#define CZFS_WLOG_VERSION	1
#define CZFS_WLOG_REC_MAGIC	0x52575a43u	/* "CZWR" */

/* At offset 0 of the log. */
struct czfs_wlog_header {
	char magic[8];			/* CZFS_WLOG_MAGIC */
	uint32_t version;		/* CZFS_WLOG_VERSION */
	uint32_t header_size;		/* sizeof(struct czfs_wlog_header) */
	uint64_t initial_size;		/* the device's size when logging began */
	uint64_t reserved[2];		/* 0 */
};

/* Record operations. */
#define CZFS_WLOG_WRITE		'w'	/* len bytes of data follow */
#define CZFS_WLOG_FLUSH		'f'	/* arg: records logged when it began */
#define CZFS_WLOG_PUNCH		'p'	/* [off, off + len) reads as zeros */
#define CZFS_WLOG_RESIZE	'r'	/* the device's size is now off */

/* One record; a write's data follows it. */
struct czfs_wlog_rec {
	uint32_t magic;			/* CZFS_WLOG_REC_MAGIC */
	uint8_t op;			/* CZFS_WLOG_* */
	uint8_t pad[3];			/* 0 */
	uint64_t seq;			/* its index in the log, from 0 */
	uint64_t off;
	uint64_t len;
	uint64_t arg;
	uint32_t data_crc;		/* crc32c of the data (0 if none) */
	uint32_t crc;			/* crc32c of this record, this field 0 */
};

_Static_assert(sizeof(struct czfs_wlog_header) == 40, "wlog header layout");
_Static_assert(sizeof(struct czfs_wlog_rec) == 48, "wlog record layout");

/* A log read into memory (czfs_wlog_load). */
struct czfs_wlog_entry {
	char op;			/* CZFS_WLOG_* */
	uint64_t off, len, arg;
	const uint8_t *data;		/* a write's len bytes, in the mapping */
	uint64_t end;			/* the log's size once it was appended */
};

struct czfs_wlog {
	uint64_t initial_size;
	struct czfs_wlog_entry *e;
	size_t n;
	int torn_tail;			/* a partial last record was dropped */
	void *map;			/* the file, mapped */
	size_t map_len;
};

/* A file mapped read-only: *map and *len (0: empty, nothing mapped), or
 * -errno; czfs_wlog_unmap_file gives it back.  (Logs and images both.) */
int czfs_wlog_map_file(const char *path, void **map, size_t *len);
void czfs_wlog_unmap_file(void *map, size_t len);

/*
 * Read the log at path.  0, or -errno: -EINVAL for a file that is not a
 * log or holds a damaged record (the log names the record and why), or
 * the errno of open, stat or mmap.
 */
int czfs_wlog_load(const char *path, struct czfs_wlog **out);
/* The same for a log already in memory (not copied: it must outlive *out). */
int czfs_wlog_parse(const void *buf, size_t len, struct czfs_wlog **out);
/* Free (accepts NULL). */
void czfs_wlog_free(struct czfs_wlog *log);

/* How many records lie wholly within the log's first pos bytes. */
size_t czfs_wlog_records_at(const struct czfs_wlog *log, uint64_t pos);

/* ---- replay ------------------------------------------------------------ */

/*
 * The durable image at a cut, advanced record by record: the image as it
 * was when logging began, with every record applied that a flush logged
 * before the cut covers.
 */
struct czfs_replay {
	const struct czfs_wlog *log;
	uint8_t *img;			/* the durable image's bytes */
	uint64_t size, cap;
	size_t applied;			/* records [0, applied) are in img */
	size_t cut;			/* the last cut advanced to */
};

/* Start from image (size bytes, copied; the log's initial_size is
 * checked: -EINVAL with a log line if it differs).  0 or -ENOMEM. */
int czfs_replay_init(struct czfs_replay *r, const struct czfs_wlog *log,
		     const void *image, uint64_t size);
void czfs_replay_destroy(struct czfs_replay *r);

/* Move the cut to the first n records (n never less than the last cut:
 * -EINVAL; n > log->n: -EINVAL): what their flushes cover is applied.
 * Afterwards records [r->applied, n) are the ones a power cut may or may
 * not have kept.  0 or -ENOMEM. */
int czfs_replay_advance(struct czfs_replay *r, size_t n);

/* For czfs_replay_bdev's pick[]: the whole record. */
#define CZFS_REPLAY_WHOLE	UINT32_MAX

/*
 * A device holding the image after a power cut at the current cut: the
 * durable image, then of records [r->applied, r->cut), in order, those
 * pick[i - r->applied] keeps: 0 none, CZFS_REPLAY_WHOLE all of it, k the
 * first k 4 KiB blocks of a write (a torn write; a punch or a resize is
 * kept whole for any k).  Flush records are skipped.  The device is
 * writable (its writes stay in memory, the durable image is not changed)
 * and reads r->img: r must not advance until it is closed.  0 or -ENOMEM.
 */
int czfs_replay_bdev(struct czfs_replay *r, const uint32_t *pick,
		     struct czfs_bdev **out);

/* The records a cut's subsets choose from: r->cut - r->applied. */
static inline size_t czfs_replay_pending(const struct czfs_replay *r)
{
	return r->cut - r->applied;
}

#endif /* CZFS_WLOG_H */

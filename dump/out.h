/* SPDX-License-Identifier: MIT */
/*
 * Output for dump.czfs: one call sequence writes either readable text or
 * JSON.  Text: each field on its own line ("key: value"), indented by
 * nesting; the fields of an array row on one line ("key value  key
 * value").  JSON: objects, arrays and rows as such, strings escaped (bytes
 * that are not UTF-8 as \u00XX).
 */
#ifndef DUMP_OUT_H
#define DUMP_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DOUT_MAX_DEPTH	16

struct dout {
	FILE *f;
	bool json;
	unsigned depth;
	bool comma[DOUT_MAX_DEPTH];	/* JSON: a value was written at depth */
	bool in_row;			/* text: fields go on one line */
};

void dout_init(struct dout *o, FILE *f, bool json);
/* The top-level object (JSON braces; nothing in text). */
void dout_begin(struct dout *o);
void dout_end(struct dout *o);

/* Nested object, array, and an array's row (an object on one line). */
void dout_obj(struct dout *o, const char *key);
void dout_obj_end(struct dout *o);
void dout_arr(struct dout *o, const char *key);
void dout_arr_end(struct dout *o);
void dout_row(struct dout *o);
void dout_row_end(struct dout *o);

void dout_u64(struct dout *o, const char *key, uint64_t v);
void dout_i64(struct dout *o, const char *key, int64_t v);
void dout_oct(struct dout *o, const char *key, uint32_t v);	/* text: 0644 */
void dout_hex(struct dout *o, const char *key, uint64_t v);	/* text: 0x.. */
void dout_bool(struct dout *o, const char *key, bool v);
void dout_ratio(struct dout *o, const char *key, double v);	/* 2 decimals */
void dout_str(struct dout *o, const char *key, const char *s);
/* len bytes of s, which may hold any byte. */
void dout_strn(struct dout *o, const char *key, const char *s, size_t len);
/* A time: text "2001-02-03 04:05:06.123456789 UTC", JSON seconds and ns. */
void dout_time(struct dout *o, const char *key, int64_t sec, uint32_t nsec);

#endif /* DUMP_OUT_H */

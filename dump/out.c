// SPDX-License-Identifier: MIT
/* Text or JSON from the same calls. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "out.h"

void dout_init(struct dout *o, FILE *f, bool json)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = json;
}

static void indent(struct dout *o)
{
	for (unsigned i = 0; i < o->depth; i++)
		fputs("  ", o->f);
}

/* Before a value: JSON separator and key; text key and spacing. */
static void key(struct dout *o, const char *k)
{
	unsigned d = o->depth < DOUT_MAX_DEPTH ? o->depth : DOUT_MAX_DEPTH - 1;

	if (o->json) {
		bool had = o->comma[d];

		if (had)
			fputc(',', o->f);
		o->comma[d] = true;
		if (!o->in_row) {
			fputc('\n', o->f);
			indent(o);
		} else if (had) {
			fputc(' ', o->f);
		}
		if (k)
			fprintf(o->f, "\"%s\": ", k);
		return;
	}
	if (o->in_row) {
		if (o->comma[d])
			fputs("  ", o->f);
		o->comma[d] = true;
		if (k)
			fprintf(o->f, "%s ", k);
		return;
	}
	indent(o);
	if (k)
		fprintf(o->f, "%s: ", k);
}

/* After a scalar: text ends the line unless in a row. */
static void done(struct dout *o)
{
	if (!o->json && !o->in_row)
		fputc('\n', o->f);
}

/* Text: "key:" on a line of its own; JSON: key and bracket. */
static void open_level(struct dout *o, const char *k, char ch)
{
	if (o->json) {
		key(o, k);
		fputc(ch, o->f);
	} else {
		indent(o);
		fprintf(o->f, "%s:\n", k);
	}
	if (o->depth + 1 < DOUT_MAX_DEPTH)
		o->comma[o->depth + 1] = false;
	o->depth++;
}

static void close_level(struct dout *o, char ch)
{
	o->depth--;
	if (!o->json)
		return;
	fputc('\n', o->f);
	indent(o);
	fputc(ch, o->f);
}

void dout_begin(struct dout *o)
{
	if (o->json) {
		fputc('{', o->f);
		o->depth = 1;
		o->comma[1] = false;
	}
}

void dout_end(struct dout *o)
{
	if (o->json) {
		fputs("\n}\n", o->f);
		o->depth = 0;
	}
}

void dout_obj(struct dout *o, const char *k)
{
	open_level(o, k, '{');
}

void dout_obj_end(struct dout *o)
{
	close_level(o, '}');
}

void dout_arr(struct dout *o, const char *k)
{
	open_level(o, k, '[');
}

void dout_arr_end(struct dout *o)
{
	close_level(o, ']');
}

void dout_row(struct dout *o)
{
	key(o, NULL);
	if (o->json)
		fputc('{', o->f);
	o->in_row = true;
	if (o->depth + 1 < DOUT_MAX_DEPTH)
		o->comma[o->depth + 1] = false;
	o->depth++;
}

void dout_row_end(struct dout *o)
{
	o->depth--;
	o->in_row = false;
	fputs(o->json ? "}" : "\n", o->f);
}

void dout_u64(struct dout *o, const char *k, uint64_t v)
{
	key(o, k);
	fprintf(o->f, "%" PRIu64, v);
	done(o);
}

void dout_i64(struct dout *o, const char *k, int64_t v)
{
	key(o, k);
	fprintf(o->f, "%" PRId64, v);
	done(o);
}

void dout_oct(struct dout *o, const char *k, uint32_t v)
{
	key(o, k);
	fprintf(o->f, o->json ? "%" PRIu32 : "0%" PRIo32, v);
	done(o);
}

void dout_hex(struct dout *o, const char *k, uint64_t v)
{
	key(o, k);
	fprintf(o->f, o->json ? "%" PRIu64 : "0x%" PRIx64, v);
	done(o);
}

void dout_bool(struct dout *o, const char *k, bool v)
{
	key(o, k);
	fputs(o->json ? (v ? "true" : "false") : (v ? "yes" : "no"), o->f);
	done(o);
}

void dout_ratio(struct dout *o, const char *k, double v)
{
	key(o, k);
	if (isfinite(v))
		fprintf(o->f, "%.2f", v);
	else
		fputs(o->json ? "null" : "-", o->f);
	done(o);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0. */
static unsigned utf8_len(const unsigned char *s, size_t left)
{
	unsigned n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0xc2 || s[0] > 0xf4 || left < n)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;		/* no surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (unsigned i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

static void json_string(FILE *f, const unsigned char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned n;

		if (s[i] == '"' || s[i] == '\\') {
			fprintf(f, "\\%c", s[i]);
		} else if (s[i] < 0x20 || s[i] == 0x7f) {
			fprintf(f, "\\u%04x", s[i]);
		} else if (s[i] < 0x80) {
			fputc(s[i], f);
		} else if ((n = utf8_len(s + i, len - i))) {
			fwrite(s + i, 1, n, f);
			i += n - 1;
		} else {
			fprintf(f, "\\u%04x", s[i]);	/* not UTF-8 */
		}
	}
	fputc('"', f);
}

void dout_strn(struct dout *o, const char *k, const char *s, size_t len)
{
	key(o, k);
	if (o->json) {
		json_string(o->f, (const unsigned char *)s, len);
	} else {
		for (size_t i = 0; i < len; i++) {
			unsigned char ch = (unsigned char)s[i];

			fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, o->f);
		}
	}
	done(o);
}

void dout_str(struct dout *o, const char *k, const char *s)
{
	dout_strn(o, k, s, strlen(s));
}

void dout_time(struct dout *o, const char *k, int64_t sec, uint32_t nsec)
{
	char nk[64], buf[64];
	struct tm tm;
	time_t t = (time_t)sec;

	if (o->json) {
		dout_i64(o, k, sec);
		snprintf(nk, sizeof(nk), "%s_nsec", k);
		dout_u64(o, nk, nsec);
		return;
	}
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, sizeof(buf), "%" PRId64, sec);
	key(o, k);
	fprintf(o->f, "%s.%09" PRIu32 " UTC", buf, nsec);
	done(o);
}

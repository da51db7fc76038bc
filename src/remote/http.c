// SPDX-License-Identifier: MIT
/*
 * The HTTP(S) transport of remote images (see http.h): libcurl handles
 * kept alive in a pool, one request with its timeout, retries and
 * backoff, and the probe that pins the object's identity.
 */
#include "config.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "http.h"
#include "log.h"
#include "s3auth.h"
#include "util.h"

#define POOL_MAX	32		/* idle connections kept */
#define BACKOFF_MS	100		/* first retry's wait, doubled each time */
#define BACKOFF_MAX_MS	2000

struct czfs_http {
	char *url;			/* what curl fetches (may hold secrets) */
	char *shown;			/* the same without them, for logs */
	struct czfs_s3_creds creds;	/* s3:// only */
	char *sigv4;
	struct curl_slist *hdrs;	/* identity check, S3 headers */
	char *cafile;
	long timeout_ms;
	unsigned retries;
	struct czfs_remote_stats *rs;	/* the device's counters */
	pthread_mutex_t lock;		/* the idle pool */
	CURL *idle[POOL_MAX];
	unsigned nidle;
};

/* What one response brought: its body scattered into an iovec. */
struct sink {
	const struct iovec *iov;
	int cnt, i;
	size_t pos;			/* in iov[i] */
	size_t got, want;
	bool overflow;
	curl_off_t length;		/* a HEAD's Content-Length */
	char etag[128], lastmod[64];	/* headers of the open's probe */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t sink_write(char *data, size_t one, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t left = n;

	if (s->got + n > s->want) {
		s->overflow = true;	/* a 200 with the whole object */
		return 0;
	}
	while (left) {
		const struct iovec *v = &s->iov[s->i];
		size_t k = MIN(left, v->iov_len - s->pos);

		memcpy((char *)v->iov_base + s->pos, data, k);
		data += k;
		left -= k;
		s->pos += k;
		if (s->pos == v->iov_len) {
			s->i++;
			s->pos = 0;
		}
	}
	s->got += n;
	return n;
}

/* Copy the value of header name (case-insensitive) into out. */
static void header_value(const char *line, size_t n, const char *name,
			 char *out, size_t cap)
{
	size_t nl = strlen(name), len;

	if (n <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' ||
		     line[n - 1] == ' '))
		n--;
	len = MIN(n, cap - 1);
	memcpy(out, line, len);
	out[len] = '\0';
}

static size_t sink_header(char *line, size_t one, size_t n, void *arg)
{
	struct sink *s = arg;

	header_value(line, n, "ETag", s->etag, sizeof(s->etag));
	header_value(line, n, "Last-Modified", s->lastmod, sizeof(s->lastmod));
	return n;
}

static CURL *handle_get(struct czfs_http *ht)
{
	CURL *h = NULL;

	pthread_mutex_lock(&ht->lock);
	if (ht->nidle)
		h = ht->idle[--ht->nidle];
	pthread_mutex_unlock(&ht->lock);
	if (h)
		return h;
	h = curl_easy_init();
	if (!h)
		return NULL;
	curl_easy_setopt(h, CURLOPT_URL, ht->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ht->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, MIN(ht->timeout_ms, 10000L));
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "czfs/" CZFS_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, sink_header);
	if (ht->cafile)
		curl_easy_setopt(h, CURLOPT_CAINFO, ht->cafile);
	if (ht->sigv4) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, ht->sigv4);
		/* apart, not as USERPWD: an access key may hold a ':' */
		curl_easy_setopt(h, CURLOPT_USERNAME, ht->creds.id);
		curl_easy_setopt(h, CURLOPT_PASSWORD, ht->creds.secret);
	}
	if (ht->hdrs)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, ht->hdrs);
	return h;
}

static void handle_put(struct czfs_http *ht, CURL *h)
{
	pthread_mutex_lock(&ht->lock);
	if (ht->nidle < POOL_MAX) {
		ht->idle[ht->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&ht->lock);
	curl_easy_cleanup(h);
}

static void note_latency(struct czfs_http *ht, uint64_t us)
{
	unsigned i = 0;

	while (i < CZFS_REMOTE_LAT_BUCKETS - 1 && us >= (1ull << i))
		i++;
	atomic_fetch_add_explicit(&ht->rs->lat[i], 1, memory_order_relaxed);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * One try: GET [off, off + want) (a HEAD when want is 0) into s.
 * Returns 0, -EAGAIN for what a retry may cure (why in *why), or the
 * final error.
 */
static int try_request(struct czfs_http *ht, CURL *h, struct sink *s,
		       uint64_t off, char *why, size_t whylen)
{
	char range[64];
	uint64_t t0 = now_us();
	long code = 0;
	CURLcode rc;

	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(h, CURLOPT_NOBODY, s->want ? 0L : 1L);
	if (s->want)
		snprintf(range, sizeof(range), "%llu-%llu",
			 (unsigned long long)off,
			 (unsigned long long)(off + s->want - 1));
	curl_easy_setopt(h, CURLOPT_RANGE, s->want ? range : NULL);
	atomic_fetch_add_explicit(&ht->rs->requests, 1, memory_order_relaxed);
	rc = curl_easy_perform(h);
	note_latency(ht, now_us() - t0);
	atomic_fetch_add_explicit(&ht->rs->bytes, s->got, memory_order_relaxed);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &s->length);
	if (rc == CURLE_WRITE_ERROR && s->overflow) {
		snprintf(why, whylen, "the server ignores range requests");
		return -EIO;
	}
	if (rc == CURLE_SSL_CACERT_BADFILE) {	/* no trust store: retrying cannot help */
		snprintf(why, whylen, "no CA certificates to check the server's certificate against (install ca-certificates, or give -o cafile=FILE)");
		return -EIO;
	}
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
		return rc == CURLE_PEER_FAILED_VERIFICATION ||
		       rc == CURLE_URL_MALFORMAT ||
		       rc == CURLE_UNSUPPORTED_PROTOCOL ? -EIO : -EAGAIN;
	}
	snprintf(why, whylen, "HTTP %ld", code);
	if (code == 412)
		snprintf(why, whylen, "the object changed since it was opened");
	if (code == 404)
		return -ENOENT;
	if (code == 401 || code == 403)
		return -EACCES;
	if (code >= 500 || code == 429 || code == 408)
		return -EAGAIN;
	if (s->want ? code != 206 && !(code == 200 && off == 0) : code != 200)
		return -EIO;
	if (s->got != s->want) {
		snprintf(why, whylen, "a short body (%zu of %zu bytes)", s->got,
			 s->want);
		return -EAGAIN;
	}
	return 0;
}

/* A request with its retries; the log line says why it failed. */
static int request(struct czfs_http *ht, const struct iovec *iov, int cnt,
		   uint64_t off, size_t len, struct sink *s)
{
	char why[160] = "";
	CURL *h = handle_get(ht);
	int err = -EAGAIN;

	if (!h)
		return -ENOMEM;
	for (unsigned t = 0; err == -EAGAIN && t <= ht->retries; t++) {
		if (t) {
			long ms = MIN((long)BACKOFF_MS << (t - 1), BACKOFF_MAX_MS);

			atomic_fetch_add_explicit(&ht->rs->retries, 1,
						  memory_order_relaxed);
			nanosleep(&(struct timespec){ ms / 1000,
				  (ms % 1000) * 1000000 }, NULL);
		}
		*s = (struct sink){ .iov = iov, .cnt = cnt, .want = len };
		err = try_request(ht, h, s, off, why, sizeof(why));
	}
	handle_put(ht, h);
	if (err) {
		atomic_fetch_add_explicit(&ht->rs->errors, 1, memory_order_relaxed);
		czfs_err("%s: %s [%llu, +%zu): %s%s", ht->shown,
			 len ? "read" : "open", (unsigned long long)off, len, why,
			 err == -EAGAIN ? " (gave up after retries)" : "");
		if (err == -EAGAIN)
			err = -EIO;
	}
	return err;
}

static int add_header(struct czfs_http *ht, const char *name, const char *v)
{
	struct curl_slist *l = NULL;
	char *line;

	if (asprintf(&line, "%s: %s", name, v) >= 0) {
		l = curl_slist_append(ht->hdrs, line);
		explicit_bzero(line, strlen(line));	/* a token is a secret */
		free(line);
	}
	if (!l)
		return -ENOMEM;
	ht->hdrs = l;
	return 0;
}

/* s3://bucket/key: its HTTPS URL, credentials and the SigV4 setting. */
static int setup_s3(struct czfs_http *ht, const char *name,
		    const struct czfs_remote_opts *o)
{
	const char *region = czfs_s3_region(o->s3_region);
	int err;

	err = czfs_s3_url(name, czfs_s3_endpoint(o->s3_endpoint), region,
			  o->s3_style, &ht->url);
	if (err == -EINVAL)
		czfs_err("%s: not s3://BUCKET/KEY at a http(s) endpoint", name);
	if (!err) {
		err = czfs_s3_creds_find(&ht->creds);
		if (err == -EACCES)
			czfs_err("%s: no S3 credentials (AWS_ACCESS_KEY_ID and "
				 "AWS_SECRET_ACCESS_KEY, or ~/.aws/credentials)",
				 name);
	}
	if (!err && !(ht->sigv4 = czfs_s3_sigv4_param(region)))
		err = -ENOMEM;
	/* A GET has no body: its hash is the empty string's. */
	if (!err)
		err = add_header(ht, "x-amz-content-sha256",
				 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
				 "649b934ca495991b7852b855");
	if (!err && ht->creds.token)
		err = add_header(ht, "x-amz-security-token", ht->creds.token);
	return err;
}

int czfs_http_open(const char *url, const struct czfs_remote_opts *o,
		   struct czfs_remote_stats *stats, struct czfs_http **out)
{
	const char *cafile = o->cafile ? o->cafile : getenv("CURL_CA_BUNDLE");
	struct czfs_http *ht;
	int err = 0;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	ht = calloc(1, sizeof(*ht));
	if (!ht)
		return -ENOMEM;
	pthread_mutex_init(&ht->lock, NULL);
	ht->rs = stats;
	ht->timeout_ms = (long)(o->timeout ? o->timeout : CZFS_REMOTE_TIMEOUT) * 1000;
	ht->retries = o->retries < 0 ? CZFS_REMOTE_RETRIES : (unsigned)o->retries;
	ht->shown = czfs_url_redact(url);
	if (!ht->shown)
		err = -ENOMEM;
	if (!err && cafile && !(ht->cafile = strdup(cafile)))
		err = -ENOMEM;
	if (!err && czfs_url_kind(url) == CZFS_URL_S3)
		err = setup_s3(ht, url, o);
	else if (!err && !(ht->url = strdup(url)))
		err = -ENOMEM;
	if (err) {
		czfs_http_close(ht);
		return err;
	}
	*out = ht;
	return 0;
}

void czfs_http_close(struct czfs_http *ht)
{
	if (!ht)
		return;
	while (ht->nidle)
		curl_easy_cleanup(ht->idle[--ht->nidle]);
	curl_slist_free_all(ht->hdrs);
	czfs_s3_creds_free(&ht->creds);
	if (ht->url)
		explicit_bzero(ht->url, strlen(ht->url));
	free(ht->url);
	free(ht->shown);
	free(ht->sigv4);
	free(ht->cafile);
	pthread_mutex_destroy(&ht->lock);
	free(ht);
}

const char *czfs_http_shown(const struct czfs_http *ht)
{
	return ht->shown;
}

int czfs_http_probe(struct czfs_http *ht, uint64_t *size, char *identity,
		    size_t cap)
{
	struct sink s;
	int err;

	err = request(ht, NULL, 0, 0, 0, &s);
	if (err)
		return err;
	if (s.length < 0) {
		czfs_err("%s: the server gives no size", ht->shown);
		return -EIO;
	}
	*size = (uint64_t)s.length;
	/* A weak ETag cannot be matched byte for byte: use the date then. */
	if (s.etag[0] && strncmp(s.etag, "W/", 2))
		err = add_header(ht, "If-Match", s.etag);
	else if (s.lastmod[0])
		err = add_header(ht, "If-Unmodified-Since", s.lastmod);
	else
		czfs_warn("%s: no ETag or Last-Modified: a change of the object "
			  "cannot be seen", ht->shown);
	snprintf(identity, cap, "%s", s.etag[0] ? s.etag : s.lastmod);
	if (!err)
		for (unsigned i = 0; i < ht->nidle; i++)
			curl_easy_setopt(ht->idle[i], CURLOPT_HTTPHEADER, ht->hdrs);
	return err;
}

int czfs_http_get_range(struct czfs_http *ht, const struct iovec *iov, int cnt,
			uint64_t off, size_t len)
{
	struct sink s;

	return request(ht, iov, cnt, off, len, &s);
}

// SPDX-License-Identifier: MIT
/* URL names of images: kind, redaction, s3:// addresses. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url.h"

enum czfs_url_kind czfs_url_kind(const char *name)
{
	if (!strncasecmp(name, "http://", 7) || !strncasecmp(name, "https://", 8))
		return CZFS_URL_HTTP;
	if (!strncasecmp(name, "s3://", 5))
		return CZFS_URL_S3;
	return CZFS_URL_NONE;
}

/* Write the redacted form of a URL name into out (room for strlen + 1). */
static void redact_into(const char *name, char *out)
{
	const char *auth = strstr(name, "://") + 3;
	size_t hostlen = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', hostlen);
	const char *host = at ? at + 1 : auth;
	size_t pre = (size_t)(auth - name);
	size_t rest = strcspn(host, "?#");

	memmove(out, name, pre);
	memmove(out + pre, host, rest);
	out[pre + rest] = '\0';
}

char *czfs_url_redact(const char *name)
{
	char *out = strdup(name);

	if (out && czfs_url_kind(name) != CZFS_URL_NONE)
		redact_into(name, out);
	return out;
}

bool czfs_url_redact_inplace(char *name)
{
	size_t len = strlen(name);

	if (czfs_url_kind(name) == CZFS_URL_NONE)
		return false;
	redact_into(name, name);
	if (strlen(name) == len)
		return false;
	memset(name + strlen(name), 0, len - strlen(name));
	return true;
}

/* A bucket that can be the first label of a host name (virtual style). */
static bool host_label(const char *s, size_t n)
{
	if (!n || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) &&
		    s[i] != '-')
			return false;
	return true;
}

int czfs_s3_url(const char *s3name, const char *endpoint, const char *region,
		enum czfs_s3_style style, char **out)
{
	const char *bucket = s3name + 5, *key = strchr(bucket, '/');
	char *aws = NULL;
	const char *host;
	size_t blen, slen;
	int n;

	if (czfs_url_kind(s3name) != CZFS_URL_S3 || !key || key == bucket ||
	    !key[1])
		return -EINVAL;
	blen = (size_t)(key - bucket);
	if (!endpoint) {
		if (asprintf(&aws, "https://s3.%s.amazonaws.com", region) < 0)
			return -ENOMEM;
		endpoint = aws;
		if (style == CZFS_S3_STYLE_AUTO)
			style = CZFS_S3_STYLE_VIRTUAL;
	}
	host = strstr(endpoint, "://");
	slen = host ? (size_t)(host - endpoint) : 0;
	if (!host || czfs_url_kind(endpoint) != CZFS_URL_HTTP ||
	    (style == CZFS_S3_STYLE_VIRTUAL && !host_label(bucket, blen))) {
		free(aws);
		return -EINVAL;
	}
	host += 3;
	if (style == CZFS_S3_STYLE_VIRTUAL)
		n = asprintf(out, "%.*s://%.*s.%.*s%s", (int)slen, endpoint,
			     (int)blen, bucket, (int)strcspn(host, "/"), host,
			     key);
	else
		n = asprintf(out, "%.*s/%.*s%s",
			     (int)(strlen(endpoint) -
				   (endpoint[strlen(endpoint) - 1] == '/')),
			     endpoint, (int)blen, bucket, key);
	free(aws);
	return n < 0 ? -ENOMEM : 0;
}

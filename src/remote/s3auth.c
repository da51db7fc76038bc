// SPDX-License-Identifier: MIT
/* S3 credentials from the environment or ~/.aws/credentials. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3auth.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	char *end = s + strlen(s);

	while (isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* key = value lines of one [profile] section of an INI file. */
static int creds_from_file(FILE *f, const char *profile, char **id,
			   char **secret, char **token)
{
	char line[1024];
	bool in = false;

	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line), *eq, *key, **slot = NULL;

		if (*s == '[') {
			s[strcspn(s, "]")] = '\0';
			in = !strcmp(trim(s + 1), profile);
			continue;
		}
		eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		*eq = '\0';
		key = trim(s);
		if (!strcmp(key, "aws_access_key_id"))
			slot = id;
		else if (!strcmp(key, "aws_secret_access_key"))
			slot = secret;
		else if (!strcmp(key, "aws_session_token"))
			slot = token;
		if (slot && !*slot && !(*slot = strdup(trim(eq + 1))))
			return -ENOMEM;
	}
	return 0;
}

static int creds_file(char **id, char **secret, char **token)
{
	const char *path = env("AWS_SHARED_CREDENTIALS_FILE");
	const char *profile = env("AWS_PROFILE");
	char *home = NULL;
	FILE *f;
	int err;

	if (!path && env("HOME")) {
		if (asprintf(&home, "%s/.aws/credentials", env("HOME")) < 0)
			return -ENOMEM;
		path = home;
	}
	f = path ? fopen(path, "re") : NULL;
	free(home);
	if (!f)
		return 0;
	err = creds_from_file(f, profile ? profile : "default", id, secret, token);
	fclose(f);
	return err;
}

static void wipe(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

int czfs_s3_creds_find(struct czfs_s3_creds *c)
{
	char *id = NULL, *secret = NULL, *token = NULL;
	int err = 0;

	if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
		id = strdup(env("AWS_ACCESS_KEY_ID"));
		secret = strdup(env("AWS_SECRET_ACCESS_KEY"));
		if (env("AWS_SESSION_TOKEN"))
			token = strdup(env("AWS_SESSION_TOKEN"));
		if (!id || !secret || (env("AWS_SESSION_TOKEN") && !token))
			err = -ENOMEM;
	} else {
		err = creds_file(&id, &secret, &token);
	}
	if (!err && (!id || !secret))
		err = -EACCES;
	if (!err) {
		*c = (struct czfs_s3_creds){ id, secret, token };
		id = secret = token = NULL;
	}
	wipe(id);
	wipe(secret);
	wipe(token);
	return err;
}

void czfs_s3_creds_free(struct czfs_s3_creds *c)
{
	wipe(c->id);
	wipe(c->secret);
	wipe(c->token);
	c->id = c->secret = c->token = NULL;
}

const char *czfs_s3_region(const char *given)
{
	if (given)
		return given;
	if (env("AWS_REGION"))
		return env("AWS_REGION");
	return env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION") : "us-east-1";
}

const char *czfs_s3_endpoint(const char *given)
{
	if (given)
		return given;
	return env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3") :
	       env("AWS_ENDPOINT_URL");
}

char *czfs_s3_sigv4_param(const char *region)
{
	char *s;

	return asprintf(&s, "aws:amz:%s:s3", region) < 0 ? NULL : s;
}

/* SPDX-License-Identifier: MIT */
/*
 * S3 credentials and addressing, as the AWS tools find them: the
 * environment first, then the shared credentials file.
 */
#ifndef CZFS_S3AUTH_H
#define CZFS_S3AUTH_H

struct czfs_s3_creds {
	char *id;			/* the access key (may hold ':', as
					 * Swift's "account:user" does) */
	char *secret;
	char *token;			/* session token, or NULL */
};

/*
 * AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), else
 * the [AWS_PROFILE or default] section of AWS_SHARED_CREDENTIALS_FILE or
 * ~/.aws/credentials.  Returns 0, -EACCES when none is found, -ENOMEM.
 * The strings are secrets: never log them; czfs_s3_creds_free wipes them.
 */
int czfs_s3_creds_find(struct czfs_s3_creds *c);
void czfs_s3_creds_free(struct czfs_s3_creds *c);

/* The region: given, else AWS_REGION, AWS_DEFAULT_REGION, "us-east-1". */
const char *czfs_s3_region(const char *given);

/* The endpoint: given, else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, NULL (AWS). */
const char *czfs_s3_endpoint(const char *given);

/*
 * The libcurl CURLOPT_AWS_SIGV4 value for region: "aws:amz:REGION:s3".
 * Returns a malloc'd string or NULL.
 */
char *czfs_s3_sigv4_param(const char *region);

#endif /* CZFS_S3AUTH_H */

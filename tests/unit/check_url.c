// SPDX-License-Identifier: MIT
/* Unit tests: URL names (kind, redaction, s3:// addresses), S3 credentials. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "s3auth.h"
#include "url.h"

static const struct {
	const char *name, *shown;
} redact_cases[] = {
	{ "/srv/img.czfs", "/srv/img.czfs" },
	{ "http://host/img", "http://host/img" },
	{ "https://user:pw@host:8443/a/img", "https://host:8443/a/img" },
	{ "http://pw@host/img?X-Amz-Signature=abc", "http://host/img" },
	{ "HTTPS://u:p@h/x#frag", "HTTPS://h/x" },
	{ "s3://bucket/key", "s3://bucket/key" },
	{ "http://host/p@th", "http://host/p@th" },	/* @ past the host */
};

START_TEST(redact_table)
{
	char *s = czfs_url_redact(redact_cases[_i].name);
	char buf[128];
	bool changed;

	/* given a name, when redacted, then no userinfo or query is left */
	ck_assert_str_eq(s, redact_cases[_i].shown);
	free(s);
	snprintf(buf, sizeof(buf), "%s", redact_cases[_i].name);
	changed = czfs_url_redact_inplace(buf);
	ck_assert_str_eq(buf, redact_cases[_i].shown);
	ck_assert_int_eq(changed, strcmp(redact_cases[_i].name,
					 redact_cases[_i].shown) != 0);
}
END_TEST

START_TEST(kind_by_scheme)
{
	ck_assert_int_eq(czfs_url_kind("img"), CZFS_URL_NONE);
	ck_assert_int_eq(czfs_url_kind("./http://x"), CZFS_URL_NONE);
	ck_assert_int_eq(czfs_url_kind("http://x/y"), CZFS_URL_HTTP);
	ck_assert_int_eq(czfs_url_kind("Https://x/y"), CZFS_URL_HTTP);
	ck_assert_int_eq(czfs_url_kind("s3://b/k"), CZFS_URL_S3);
	ck_assert_int_eq(czfs_url_kind("ftp://x/y"), CZFS_URL_NONE);
}
END_TEST

static const struct {
	const char *name, *endpoint, *region;
	enum czfs_s3_style style;
	int err;
	const char *url;
} s3_cases[] = {
	/* AWS: virtual host by default, the region in the host */
	{ "s3://examplebucket/test.txt", NULL, "us-east-1", CZFS_S3_STYLE_AUTO,
	  0, "https://examplebucket.s3.us-east-1.amazonaws.com/test.txt" },
	{ "s3://examplebucket/a/b.img", NULL, "eu-west-1", CZFS_S3_STYLE_PATH,
	  0, "https://s3.eu-west-1.amazonaws.com/examplebucket/a/b.img" },
	/* another store: path style by default, its port kept */
	{ "s3://b/k", "http://127.0.0.1:9000", "r", CZFS_S3_STYLE_AUTO,
	  0, "http://127.0.0.1:9000/b/k" },
	{ "s3://b/k", "http://127.0.0.1:9000/", "r", CZFS_S3_STYLE_PATH,
	  0, "http://127.0.0.1:9000/b/k" },
	{ "s3://b-1/k/x", "http://localhost:9000", "r", CZFS_S3_STYLE_VIRTUAL,
	  0, "http://b-1.localhost:9000/k/x" },
	/* refused: a bucket no host label can be, no key, no bucket, bad endpoint */
	{ "s3://Bad_Bucket/k", "http://h", "r", CZFS_S3_STYLE_VIRTUAL, -EINVAL, NULL },
	{ "s3://b", NULL, "r", CZFS_S3_STYLE_AUTO, -EINVAL, NULL },
	{ "s3://b/", NULL, "r", CZFS_S3_STYLE_AUTO, -EINVAL, NULL },
	{ "s3:///k", NULL, "r", CZFS_S3_STYLE_AUTO, -EINVAL, NULL },
	{ "s3://b/k", "ftp://h", "r", CZFS_S3_STYLE_AUTO, -EINVAL, NULL },
};

START_TEST(s3_url_table)
{
	char *url = NULL;

	ck_assert_int_eq(czfs_s3_url(s3_cases[_i].name, s3_cases[_i].endpoint,
				     s3_cases[_i].region, s3_cases[_i].style,
				     &url), s3_cases[_i].err);
	if (!s3_cases[_i].err)
		ck_assert_str_eq(url, s3_cases[_i].url);
	free(url);
}
END_TEST

START_TEST(s3_creds_env_then_file)
{
	char path[] = "/tmp/czfs-creds.XXXXXX";
	struct czfs_s3_creds c = { 0 };
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	char *sig;

	fputs("[default]\naws_access_key_id = AKD\naws_secret_access_key=SD\n"
	      "[other]\n aws_access_key_id=AKO\naws_secret_access_key = SO \n"
	      "aws_session_token = TOK\n", f);
	fclose(f);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	/* the file's default profile, then a named one with its token */
	ck_assert_int_eq(czfs_s3_creds_find(&c), 0);
	ck_assert_str_eq(c.id, "AKD");
	ck_assert_str_eq(c.secret, "SD");
	ck_assert_ptr_null(c.token);
	czfs_s3_creds_free(&c);
	setenv("AWS_PROFILE", "other", 1);
	ck_assert_int_eq(czfs_s3_creds_find(&c), 0);
	ck_assert_str_eq(c.id, "AKO");
	ck_assert_str_eq(c.secret, "SO");
	ck_assert_str_eq(c.token, "TOK");
	czfs_s3_creds_free(&c);
	/* the environment wins over the file */
	setenv("AWS_ACCESS_KEY_ID", "acct:user", 1);	/* Swift's form */
	setenv("AWS_SECRET_ACCESS_KEY", "wJalr:XUtn", 1);
	ck_assert_int_eq(czfs_s3_creds_find(&c), 0);
	ck_assert_str_eq(c.id, "acct:user");
	ck_assert_str_eq(c.secret, "wJalr:XUtn");
	czfs_s3_creds_free(&c);
	/* none anywhere */
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_PROFILE", "absent", 1);
	ck_assert_int_eq(czfs_s3_creds_find(&c), -EACCES);
	unsetenv("AWS_PROFILE");
	unlink(path);
	/* region and the SigV4 parameter libcurl takes */
	unsetenv("AWS_REGION");
	setenv("AWS_DEFAULT_REGION", "eu-north-1", 1);
	ck_assert_str_eq(czfs_s3_region(NULL), "eu-north-1");
	ck_assert_str_eq(czfs_s3_region("ap-south-1"), "ap-south-1");
	sig = czfs_s3_sigv4_param("us-east-1");
	ck_assert_str_eq(sig, "aws:amz:us-east-1:s3");
	free(sig);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("url");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, redact_table, 0,
			    sizeof(redact_cases) / sizeof(redact_cases[0]));
	tcase_add_test(tc, kind_by_scheme);
	tcase_add_loop_test(tc, s3_url_table, 0,
			    sizeof(s3_cases) / sizeof(s3_cases[0]));
	tcase_add_test(tc, s3_creds_env_then_file);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

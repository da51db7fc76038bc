// SPDX-License-Identifier: MIT
#include "config.h"

#include <stdio.h>

#include "log.h"

static czfs_log_fn log_sink;
static enum czfs_log_level log_max = CZFS_LOG_INFO;

void czfs_log_set_sink(czfs_log_fn fn, enum czfs_log_level max)
{
	log_sink = fn;
	log_max = max;
}

void czfs_log_stderr(enum czfs_log_level level, const char *msg)
{
	fprintf(stderr, "czfs: %s%s\n",
		level <= CZFS_LOG_ERR ? "error: " :
		level == CZFS_LOG_WARN ? "warning: " : "", msg);
}

void czfs_log(enum czfs_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!log_sink || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_sink(level, msg);
}

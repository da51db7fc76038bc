/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics.  The library never prints on its own: it reports through a
 * sink that the program installs (stderr for the tools, stderr or syslog
 * for the daemon).  With no sink, messages are dropped.
 */
#ifndef CZFS_LOG_H
#define CZFS_LOG_H

#include <stdarg.h>

enum czfs_log_level {
	CZFS_LOG_ERR	= 3,
	CZFS_LOG_WARN	= 4,
	CZFS_LOG_INFO	= 6,
	CZFS_LOG_DEBUG	= 7,
};

typedef void (*czfs_log_fn)(enum czfs_log_level level, const char *msg);

/* Install the sink (NULL drops messages); messages above max are dropped. */
void czfs_log_set_sink(czfs_log_fn fn, enum czfs_log_level max);

/* A sink that writes "czfs: <msg>" lines to stderr. */
void czfs_log_stderr(enum czfs_log_level level, const char *msg);

/*
 * Format a message (cut at 511 bytes) and hand it to the sink, unless its
 * level is above the sink's max.  Safe from any thread once the sink is
 * installed; it never exits.
 */
void czfs_log(enum czfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define czfs_err(...)	czfs_log(CZFS_LOG_ERR, __VA_ARGS__)
#define czfs_warn(...)	czfs_log(CZFS_LOG_WARN, __VA_ARGS__)
#define czfs_info(...)	czfs_log(CZFS_LOG_INFO, __VA_ARGS__)
#define czfs_dbg(...)	czfs_log(CZFS_LOG_DEBUG, __VA_ARGS__)

#endif /* CZFS_LOG_H */

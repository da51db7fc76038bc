/* SPDX-License-Identifier: MIT */
#ifndef CZFS_CRC32C_H
#define CZFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli), as in iSCSI and ext4: czfs_crc32c(0, "123456789", 9)
 * is 0xe3069283.  Chain calls by passing the previous result as crc.
 * Uses the SSE4.2 instruction when the CPU has it.  Thread-safe.
 */
uint32_t czfs_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable table-driven version, exposed for tests. */
uint32_t czfs_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif /* CZFS_CRC32C_H */

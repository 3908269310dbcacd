/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way ringway reads /sys: paths are relative ("sys/class/net/eth0/
 * speed") and resolved under a root, "" meaning the real "/".  Tests point
 * the root (RINGWAY_SYSFS_ROOT) at a recorded tree.  No call blocks.
 */
#ifndef RW_SYSFS_H
#define RW_SYSFS_H

#include <stddef.h>

/**
 * Read a small text file, trailing newline stripped.
 * \return 0, or -errno (-ENOENT when the file is absent, -ENOSPC when it does
 *         not fit in len).  buf is untouched on failure.
 */
int rw_sysfs_read(const char *root, const char *rel, char *buf, size_t len);

/** Read a file holding one integer.  0 or -errno (-EINVAL: not a number). */
int rw_sysfs_read_long(const char *root, const char *rel, long *out);

/**
 * Resolve rel and its symlinks under root.  The result is the canonical
 * path as the machine sees it (root prefix removed, starts with '/').
 * \return 0 or -errno.
 */
int rw_sysfs_realpath(const char *root, const char *rel, char *buf, size_t len);

/**
 * The entries of directory rel under root, sorted, without "." and "..".
 * \param[out] names a NULL-terminated array owned by the caller: free it
 *             with rw_sysfs_list_free().  Untouched on failure.
 * \return 0 or -errno (-ENOENT when the directory is absent, -ENOMEM).
 */
int rw_sysfs_list(const char *root, const char *rel, char ***names);

/** Free what rw_sysfs_list() returned; NULL is a no-op. */
void rw_sysfs_list_free(char **names);

#endif /* RW_SYSFS_H */

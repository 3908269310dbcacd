/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/rw_sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"

static int join(const char *root, const char *rel, char *out, size_t len)
{
	const char *sep = "/";
	int n;

	while (*rel == '/')
		rel++;
	if (!root || !*root)
		root = "";
	else if (root[strlen(root) - 1] == '/')
		sep = "";
	n = snprintf(out, len, "%s%s%s", root, sep, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rw_sysfs_read(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	char tmp[4096];
	ssize_t n;
	int fd, rc;

	rc = join(root, rel, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, tmp, sizeof(tmp) - 1);
	rc = n < 0 ? -errno : 0;
	rw_close_fd(&fd);
	if (rc)
		return rc;
	while (n > 0 && (tmp[n - 1] == '\n' || tmp[n - 1] == ' '))
		n--;
	tmp[n] = '\0';
	if ((size_t)n >= len)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)n + 1);
	return 0;
}

int rw_sysfs_read_long(const char *root, const char *rel, long *out)
{
	char buf[64];
	char *end;
	long v;
	int rc = rw_sysfs_read(root, rel, buf, sizeof(buf));

	if (rc)
		return rc;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (end == buf || *end != '\0' || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

int rw_sysfs_realpath(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], rroot[PATH_MAX];
	const char *p = real;
	int rc = join(root, rel, path, sizeof(path));

	if (rc)
		return rc;
	if (!realpath(path, real))
		return -errno;
	if (root && *root) {
		size_t n;

		if (!realpath(root, rroot))
			return -errno;
		n = strlen(rroot);
		if (strncmp(real, rroot, n) != 0 || (real[n] && real[n] != '/'))
			return -EXDEV; /* link escapes the fixture tree */
		p = real + n;
		if (!*p)
			p = "/";
	}
	if (strlen(p) >= len)
		return -ENOSPC;
	strcpy(buf, p);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void rw_sysfs_list_free(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

int rw_sysfs_list(const char *root, const char *rel, char ***names)
{
	char path[PATH_MAX];
	struct dirent *e;
	char **v = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	int rc = join(root, rel, path, sizeof(path));

	if (rc)
		return rc;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n + 2 > cap) {
			char **nv = realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				goto err_free;
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[n] = strdup(e->d_name);
		if (!v[n])
			goto err_free;
		v[++n] = NULL;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	qsort(v, n, sizeof(*v), cmp_name);
	*names = v;
	return 0;

err_free:
	closedir(d);
	rw_sysfs_list_free(v);
	return -ENOMEM;
}

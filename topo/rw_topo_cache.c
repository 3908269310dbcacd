/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last-level cache of a CPU, from sysfs (rw_topo.h): each
 * sys/devices/system/cpu/cpuN/cache/indexK directory describes one cache
 * of CPU N (level, type, size as "32768K"); the one of the highest level
 * that holds data is the last level.  Read per call, no topology needed:
 * coll asks once per communicator.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_params.h"
#include "topo/rw_sysfs.h"
#include "topo/rw_topo.h"

/* "32768K", "1M", "512": bytes, or 0 when it is none of those. */
static size_t parse_size(const char *text)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (end == text || errno)
		return 0;
	switch (*end) {
	case 'K':
		v <<= 10, end++;
		break;
	case 'M':
		v <<= 20, end++;
		break;
	case 'G':
		v <<= 30, end++;
		break;
	default:
		break;
	}
	return *end == '\0' ? (size_t)v : 0;
}

int rw_topo_cache_bytes(const struct rw_config *cfg, int cpu, size_t *out)
{
	char rel[128], text[64];
	char **names = NULL;
	long best_level = 0;
	size_t best = 0;
	int rc;

	if (cpu < 0)
		cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache", cpu);
	rc = rw_sysfs_list(cfg->sysfs_root, rel, &names);
	if (rc)
		return rc;
	for (char **n = names; *n; n++) {
		long level;
		size_t bytes;

		if (strncmp(*n, "index", 5) != 0)
			continue;
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache/%s/type", cpu, *n);
		if (rw_sysfs_read(cfg->sysfs_root, rel, text, sizeof(text)) ||
		    strcmp(text, "Instruction") == 0)
			continue;
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache/%s/level", cpu, *n);
		if (rw_sysfs_read_long(cfg->sysfs_root, rel, &level) || level <= best_level)
			continue;
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cache/%s/size", cpu, *n);
		if (rw_sysfs_read(cfg->sysfs_root, rel, text, sizeof(text)))
			continue;
		bytes = parse_size(text);
		if (!bytes)
			continue;
		best_level = level;
		best = bytes;
	}
	rw_sysfs_list_free(names);
	if (!best)
		return -ENOENT;
	*out = best;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The sysfs seam: reads and symlink resolution under a fixture root. */
#include "support/rw_test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo/rw_sysfs.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char path[PATH_MAX];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/rw-sysfs-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:03.0/net/eth9", root);
	char cmd[PATH_MAX + 256];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s %s/sys/class/net", path, root);
	if (system(cmd) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/sys/class/net/eth9", root);
	if (symlink("../../devices/pci0000:00/0000:00:03.0/net/eth9", path))
		return -1;
	snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:03.0/net/eth9/device",
		 root);
	if (symlink("../../../0000:00:03.0", path))
		return -1;
	put("sys/devices/pci0000:00/0000:00:03.0/net/eth9/speed", "25000\n");
	put("sys/devices/pci0000:00/0000:00:03.0/net/eth9/operstate", "up\n");
	put("sys/devices/pci0000:00/0000:00:03.0/net/eth9/mtu", "nine thousand\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void reads_text_and_numbers(void **state)
{
	char buf[32];
	long v = 0;

	(void)state;
	assert_int_equal(rw_sysfs_read(root, "sys/class/net/eth9/operstate", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "up");
	assert_int_equal(rw_sysfs_read_long(root, "/sys/class/net/eth9/speed", &v), 0);
	assert_int_equal(v, 25000);
	assert_int_equal(rw_sysfs_read_long(root, "sys/class/net/eth9/mtu", &v), -EINVAL);
	assert_int_equal(v, 25000); /* untouched on failure */
	assert_int_equal(rw_sysfs_read(root, "sys/class/net/eth7/speed", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(rw_sysfs_read(root, "sys/class/net/eth9/operstate", buf, 2), -ENOSPC);
}

static void resolves_links_relative_to_root(void **state)
{
	char buf[PATH_MAX];

	(void)state;
	assert_int_equal(rw_sysfs_realpath(root, "sys/class/net/eth9/device", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/devices/pci0000:00/0000:00:03.0");
	assert_int_equal(rw_sysfs_realpath(root, "sys/class/net/nope/device", buf, sizeof(buf)),
			 -ENOENT);
}

static void live_root_works(void **state)
{
	char buf[64];

	(void)state;
	/* /proc is always there; the empty root means the real "/" */
	assert_int_equal(rw_sysfs_read("", "proc/sys/kernel/ostype", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "Linux");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_text_and_numbers),
		cmocka_unit_test(resolves_links_relative_to_root),
		cmocka_unit_test(live_root_works),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo/ from sysfs alone, under RINGWAY_SYSFS_ROOT: the discovery of builds
 * without hwloc, the transports' NIC facts and the last-level cache, each
 * from a tree the test writes under /tmp.
 */
#include "support/rw_test.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "topo/rw_topo.h"

/* --- sysfs alone (the discovery of builds without hwloc) ----------------------------- */

static void put(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX], cmd[PATH_MAX + 16];
	FILE *f;

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) < sizeof(path));
	assert_true((size_t)snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path) < sizeof(cmd));
	*strrchr(cmd, '/') = '\0';
	strcat(cmd, "'");
	assert_int_equal(system(cmd), 0);
	if (!text)
		return;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* put() at a path made by fmt. */
__attribute__((format(printf, 3, 4))) static void putf(const char *root, const char *text,
						       const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	assert_true((size_t)vsnprintf(rel, sizeof(rel), fmt, ap) < sizeof(rel));
	va_end(ap);
	put(root, rel, text);
}

static void link_to(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	put(root, rel, NULL);
	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) < sizeof(path));
	assert_int_equal(symlink(target, path), 0);
}

static void pci_dev(const char *root, const char *dir, const char *busid, const char *cls,
		    const char *vendor)
{
	char rel[PATH_MAX], target[PATH_MAX];
	const char *files[][2] = {
		{"class", cls},
		{"vendor", vendor},
		{"device", "0x1db6\n"},
		{"numa_node", "-1\n"},
		{"current_link_speed", "8.0 GT/s PCIe\n"},
		{"current_link_width", "16\n"},
	};

	for (size_t i = 0; i < RW_ARRAY_SIZE(files); i++)
		putf(root, files[i][1], "sys/devices/%s/%s", dir, files[i][0]);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", busid);
	snprintf(target, sizeof(target), "../../../devices/%s", dir);
	link_to(root, rel, target);
}

#define NIC_PCI_PATH "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:04:00.0"

/* rw_topo_nic_facts(dev) under root says exactly this; every field is
 * written (the struct starts as garbage). */
static void nic_facts_are(const char *root, const char *dev, const char *pci_path, int speed_mbps,
			  uint64_t guid, int ifindex)
{
	struct rw_topo_nic_facts f;

	memset(&f, 0x5a, sizeof(f));
	assert_int_equal(rw_topo_nic_facts(root, dev, &f), 0);
	assert_string_equal(f.pci_path, pci_path);
	assert_int_equal(f.speed_mbps, speed_mbps);
	assert_true(f.guid == guid);
	assert_int_equal(f.ifindex, ifindex);
}

static void sysfs_tree_discovery(void **state)
{
	char root[] = "/tmp/rw-topo-sys-XXXXXX", cmd[64];
	const char *sw = "pci0000:00/0000:00:01.0/0000:01:00.0";
	const char *nic = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:04:00.0";
	char dir[PATH_MAX];
	struct rw_topo_nic_choice c;
	struct rw_topo_path p;
	struct rw_topo_nic_facts f;
	struct rw_config cfg;
	struct rw_topo *t;

	(void)state;
	assert_non_null(mkdtemp(root));
	put(root, "sys/devices/system/node/node0/cpulist", "0-7\n");
	snprintf(dir, sizeof(dir), "%s/0000:02:01.0/0000:03:00.0", sw);
	pci_dev(root, dir, "0000:03:00.0", "0x030200\n", "0x10de\n");
	pci_dev(root, nic, "0000:04:00.0", "0x020700\n", "0x15b3\n");
	pci_dev(root, "pci0000:00/0000:00:02.0/0000:05:00.0", "0000:05:00.0", "0x030000\n",
		"0x10de\n");
	pci_dev(root, "pci0000:00/0000:00:03.0", "0000:00:03.0", "0x010802\n", "0x8086\n");
	putf(root, "4: ACTIVE\n", "sys/devices/%s/infiniband/mlx5_0/ports/1/state", nic);
	putf(root, "100 Gb/sec (4X EDR)\n", "sys/devices/%s/infiniband/mlx5_0/ports/1/rate", nic);
	putf(root, "InfiniBand\n", "sys/devices/%s/infiniband/mlx5_0/ports/1/link_layer", nic);
	putf(root, "0c42:a103:0034:5a10\n", "sys/devices/%s/infiniband/mlx5_0/node_guid", nic);
	snprintf(dir, sizeof(dir), "sys/devices/%s/infiniband/mlx5_0/device", nic);
	link_to(root, dir, "../../../0000:04:00.0");
	snprintf(dir, sizeof(dir), "sys/devices/%s/net/ib0/device", nic);
	link_to(root, dir, "../../../0000:04:00.0");
	snprintf(dir, sizeof(dir), "../../devices/%s/infiniband/mlx5_0", nic);
	link_to(root, "sys/class/infiniband/mlx5_0", dir);
	snprintf(dir, sizeof(dir), "../../devices/%s/net/ib0", nic);
	link_to(root, "sys/class/net/ib0", dir);

	assert_int_equal(
		rw_test_config(&cfg, (const char *const[]){"RINGWAY_SYSFS_ROOT", root, NULL}), 0);
	assert_int_equal(rw_topo_create_from_sysfs(&cfg, &t), 0);
	assert_int_equal(rw_topo_numa_count(t), 1);
	assert_int_equal(rw_topo_numa_get(t, 0)->npus, 8);
	assert_int_equal(rw_topo_gpu_count(t), 2); /* 3D controller and VGA class */
	assert_int_equal(rw_topo_nic_count(t), 1); /* mlx5_0 with its netdev ib0 */
	assert_string_equal(rw_topo_nic_get(t, 0)->name, "mlx5_0");
	assert_string_equal(rw_topo_nic_get(t, 0)->netdev, "ib0");
	assert_int_equal(rw_topo_nic_get(t, 0)->kind, RW_TOPO_NIC_IB);
	assert_int_equal(rw_topo_nic_get(t, 0)->speed_mbps, 100000);
	assert_true(rw_topo_nic_get(t, 0)->guid == 0x0c42a10300345a10ull);
	assert_string_equal(rw_topo_nic_get(t, 0)->pci_path,
			    "/sys/devices/"
			    "pci0000:00/"
			    "0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:04:00.0");
	assert_int_equal(rw_topo_nic_for_gpu(t, 0, &c), 0);
	assert_int_equal(c.path.type, RW_TOPO_PATH_PIX);
	assert_true(c.path.bw_gbps > 15.7f && c.path.bw_gbps < 15.8f); /* Gen3 x16 */
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(1), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_PHB);
	rw_topo_destroy(t);

	/* the transports' reader: the same facts, live, by RDMA device or netdev */
	nic_facts_are(root, "mlx5_0", NIC_PCI_PATH, 100000, 0x0c42a10300345a10ull, 0);
	putf(root, "200000\n", "sys/devices/%s/net/ib0/speed", nic);
	putf(root, "3\n", "sys/devices/%s/net/ib0/ifindex", nic);
	putf(root, "0a:0b:0c:0d:0e:0f\n", "sys/devices/%s/net/ib0/address", nic);
	nic_facts_are(root, "ib0", NIC_PCI_PATH, 200000, 0x0a0b0c0d0e0full, 3);
	nic_facts_are(root, "eth9", "", 0, 0, 0); /* what sysfs does not know is 0 or "" */
	assert_int_equal(rw_topo_nic_facts(root, "../../etc", &f), -EINVAL);
	assert_int_equal(rw_topo_nic_facts(root, "", &f), -EINVAL);
	assert_int_equal(rw_topo_nic_facts(root, NULL, &f), -EINVAL);
	assert_int_equal(rw_topo_nic_facts(root, "mlx5_0", NULL), -EINVAL);

	/* GID types and the peer-memory module, for the ib transport */
	putf(root, "RoCE v2\n", "sys/devices/%s/infiniband/mlx5_0/ports/1/gid_attrs/types/3", nic);
	putf(root, "IB/RoCE v1\n", "sys/devices/%s/infiniband/mlx5_0/ports/1/gid_attrs/types/2",
	     nic);
	assert_int_equal(rw_topo_ib_gid_roce(root, "mlx5_0", 1, 3), 2);
	assert_int_equal(rw_topo_ib_gid_roce(root, "mlx5_0", 1, 2), 1);
	assert_int_equal(rw_topo_ib_gid_roce(root, "mlx5_0", 1, 4), 0);
	assert_int_equal(rw_topo_ib_gid_roce(root, "mlx5_0", 2, 3), 0);
	assert_false(rw_topo_peermem_loaded(root, NULL));
	put(root, "sys/module/nvidia_peermem/version", "1.1\n");
	{
		const char *why = NULL;

		assert_true(rw_topo_peermem_loaded(root, &why));
		assert_string_equal(why, "sys/module/nvidia_peermem/version");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);

	/* an empty root: nothing to build a topology from */
	rw_test_log_expect("nothing found under");
	assert_int_equal(rw_test_config(&cfg, (const char *const[]){"RINGWAY_SYSFS_ROOT",
								    "/nonexistent-root", NULL}),
			 0);
	assert_int_equal(rw_topo_create_from_sysfs(&cfg, &t), -EIO);
}

/* The last-level cache from a recorded sysfs: the data or unified cache of
 * the highest level, an instruction cache and an unreadable size skipped;
 * a CPU without cache directories has none. */
static void last_level_cache_from_sysfs(void **state)
{
	static const struct {
		const char *index, *level, *type, *size;
	} caches[] = {
		{"index0", "1\n", "Data\n", "32K\n"},
		{"index1", "1\n", "Instruction\n", "32K\n"},
		{"index2", "2\n", "Unified\n", "1024K\n"},
		{"index3", "3\n", "Unified\n", "32768K\n"},
		{"index4", "4\n", "Instruction\n", "64M\n"},
		{"index5", "4\n", "Unified\n", "lots\n"},
	};
	char root[] = "/tmp/rw-topo-llc-XXXXXX", cmd[64];
	struct rw_config cfg;
	size_t bytes = 7;

	(void)state;
	assert_non_null(mkdtemp(root));
	for (size_t i = 0; i < RW_ARRAY_SIZE(caches); i++) {
		static const char *const file[] = {"level", "type", "size"};
		const char *text[] = {caches[i].level, caches[i].type, caches[i].size};

		for (int k = 0; k < 3; k++)
			putf(root, text[k], "sys/devices/system/cpu/cpu1/cache/%s/%s",
			     caches[i].index, file[k]);
	}
	put(root, "sys/devices/system/cpu/cpu1/cache/uevent", "");
	put(root, "sys/devices/system/cpu/cpu0/online", "1\n");
	assert_int_equal(
		rw_test_config(&cfg, (const char *const[]){"RINGWAY_SYSFS_ROOT", root, NULL}), 0);
	assert_int_equal(rw_topo_cache_bytes(&cfg, 1, &bytes), 0);
	assert_int_equal(bytes, 32u << 20);
	bytes = 7;
	assert_int_equal(rw_topo_cache_bytes(&cfg, 0, &bytes), -ENOENT);
	assert_int_equal(rw_topo_cache_bytes(&cfg, 2, &bytes), -ENOENT);
	assert_int_equal(bytes, 7);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	/* this machine: sysfs has one when it has CPU caches at all */
	rw_config_defaults(&cfg);
	if (rw_topo_cache_bytes(&cfg, -1, &bytes) == 0)
		assert_true(bytes >= 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sysfs_tree_discovery, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(last_level_cache_from_sysfs, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

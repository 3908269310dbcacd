/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo/: discovery from hwloc XML fixtures, path classes, GPU -> NIC, ring
 * order, channels, the multi-host ring, the plugin's NIC properties, NVML
 * through stand-in libraries, bad input, and this machine (discovery from
 * sysfs alone: test_topo_sysfs.c).
 *
 * Golden files: tests/topo/golden/<fixture>.txt hold ringway-topo's report
 * for each fixture.  Regenerate them after an intended change with
 *   RINGWAY_UPDATE_GOLDEN=1 ./test_topo      (then review the git diff)
 */
#include "support/rw_test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "topo/rw_topo.h"

static const char *const fixtures[] = {
	"hgx8-2s-4sw", "gpu4-nic2", "2s-1nic", "cpu-only", "gpu2-nonic", "dgx1v-nvlink",
};

/* Load fixture `name` from the fixtures folder (the working directory), with
 * its recorded sysfs tree as RINGWAY_SYSFS_ROOT when it has one. */
static struct rw_topo *load(const char *name)
{
	char xml[128], sys[128];
	struct rw_config cfg;
	struct rw_topo *t = NULL;
	struct stat st;

	if (!RW_HAVE_HWLOC)
		skip(); /* XML needs hwloc; bad_xml_fails_cleanly checks the message */
	snprintf(xml, sizeof(xml), "%s.xml", name);
	snprintf(sys, sizeof(sys), "%s.sys", name);
	if (stat(sys, &st) == 0)
		assert_int_equal(rw_test_config(&cfg, (const char *const[]){"RINGWAY_SYSFS_ROOT",
									    sys, NULL}),
				 0);
	else
		rw_config_defaults(&cfg);
	assert_int_equal(rw_topo_create_from_xml(&cfg, xml, &t), 0);
	assert_non_null(t);
	return t;
}

static char *report(const struct rw_topo *t, int nhosts)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rw_topo_write_report(t, nhosts, f), 0);
	fclose(f);
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* RW_TEST_ASSERT_LOG_CLEAN(), but the log is reset even when it fails, so
 * one test's stray warning does not fail every later one. */
static int teardown(void **state)
{
	int unexpected = rw_test_log_unexpected();

	(void)state;
	if (unexpected)
		print_error("%d unexpected warning(s), last: %s\n", unexpected,
			    rw_test_log_last_unexpected());
	rw_test_log_reset();
	return unexpected ? -1 : 0;
}

/* --- goldens ------------------------------------------------------------------ */

static void reports_match_goldens(void **state)
{
	const char *update = rw_env_get("RINGWAY_UPDATE_GOLDEN");

	(void)state;
	for (size_t i = 0; i < RW_ARRAY_SIZE(fixtures); i++) {
		char path[PATH_MAX], *want, *got, *a, *b;
		struct rw_topo *t = load(fixtures[i]);
		int line = 1;

		got = report(t, 2);
		rw_topo_destroy(t);
		snprintf(path, sizeof(path), "%s/%s.txt", RW_TOPO_GOLDEN, fixtures[i]);
		if (update && !strcmp(update, "1")) {
			FILE *f = fopen(path, "w");

			assert_non_null(f);
			fputs(got, f);
			fclose(f);
			print_message("updated %s\n", path);
			free(got);
			continue;
		}
		want = slurp(path);
		if (!want)
			fail_msg("no golden %s: run with RINGWAY_UPDATE_GOLDEN=1", path);
		for (a = want, b = got; *a && *a == *b; a++, b++)
			line += *a == '\n';
		if (*a || *b)
			fail_msg("%s differs from the golden at line %d:\n--- golden\n%.200s\n"
				 "--- now\n%.200s\n(RINGWAY_UPDATE_GOLDEN=1 regenerates)",
				 fixtures[i], line, a, b);
		free(want);
		free(got);
	}
}

/* --- the 8-GPU box --------------------------------------------------------------- */

static void hgx8_spreads_gpus_over_switch_nics(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");
	const char *want[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3",
			      "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"};
	struct rw_topo_nic_choice c;

	(void)state;
	assert_int_equal(rw_topo_gpu_count(t), 8);
	assert_int_equal(rw_topo_nic_count(t), 9); /* 8 HCAs and the 1 GbE port */
	assert_int_equal(rw_topo_numa_count(t), 2);
	for (int g = 0; g < 8; g++) {
		assert_int_equal(rw_topo_nic_for_gpu(t, g, &c), 0);
		assert_string_equal(rw_topo_nic_get(t, c.nic)->name, want[g]);
		assert_int_equal(c.path.type, RW_TOPO_PATH_PIX);
		assert_non_null(strstr(c.reason, "same PCIe switch"));
	}
	/* the second GPU of a switch says why it did not get the first NIC */
	rw_topo_nic_for_gpu(t, 1, &c);
	assert_non_null(strstr(c.reason, "mlx5_0 is as close but already serves 1 GPU"));
	assert_int_equal(rw_topo_nic_for_gpu(t, 8, &c), -EINVAL);
	assert_int_equal(rw_topo_nic_for_gpu(t, -1, &c), -EINVAL);
	rw_topo_destroy(t);
}

static void hgx8_paths_and_bandwidth(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");
	struct rw_topo_path p;
	int eno1 = rw_topo_nic_find(t, "eno1");

	(void)state;
	assert_int_equal(rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(1), &p), 0);
	assert_int_equal(p.type, RW_TOPO_PATH_PIX);
	assert_true(p.bw_gbps > 31.4f && p.bw_gbps < 31.6f); /* PCIe Gen4 x16 */
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(2), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_NODE); /* two host bridges of socket 0 */
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(4), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_SYS);
	assert_true(p.bw_gbps > 15.9f && p.bw_gbps < 16.1f); /* AMD socket link estimate */
	rw_topo_path(t, RW_TOPO_GPU(3), RW_TOPO_GPU(3), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_LOC);
	assert_true(eno1 >= 0);
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_NIC(eno1), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_NODE);
	assert_true(p.bw_gbps < 1.0f); /* its PCIe Gen2 x1 link */
	assert_int_equal(rw_topo_path(t, RW_TOPO_GPU(9), RW_TOPO_GPU(0), &p), -EINVAL);
	assert_string_equal(rw_topo_path_name(RW_TOPO_PATH_PXB), "PXB");
	rw_topo_destroy(t);
}

static void hgx8_ring_channels_and_two_hosts(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");
	const struct rw_topo *hosts[2] = {t, t};
	struct rw_topo_channel ch[RW_TOPO_MAX_CHANNELS];
	struct rw_topo_hop hops[16];
	bool sends[16] = {0}, recvs[16] = {0};
	int order[8], n, nch;

	(void)state;
	assert_int_equal(rw_topo_ring_order(t, order, 8, &n), 0);
	assert_int_equal(n, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(order[i], i); /* PCIe switch order */
	assert_int_equal(rw_topo_ring_order(t, order, 7, &n), -ENOSPC);
	assert_int_equal(rw_topo_channels(t, ch, RW_TOPO_MAX_CHANNELS, &nch), 0);
	assert_int_equal(nch, 8);
	/* channel 0 replaces the socket crossing GPU 7 -> GPU 0 */
	assert_int_equal(ch[0].gpu_in, 0);
	assert_int_equal(ch[0].gpu_out, 7);
	assert_int_equal(ch[0].cut, RW_TOPO_PATH_SYS);
	assert_string_equal(rw_topo_nic_get(t, ch[0].nic_in)->name, "mlx5_0");
	assert_string_equal(rw_topo_nic_get(t, ch[0].nic_out)->name, "mlx5_7");
	for (int c = 0; c < nch; c++) { /* each NIC sends once and receives once */
		assert_false(sends[ch[c].nic_out]);
		assert_false(recvs[ch[c].nic_in]);
		sends[ch[c].nic_out] = recvs[ch[c].nic_in] = true;
	}
	assert_int_equal(rw_topo_channels(t, ch, 2, &nch), 0);
	assert_int_equal(nch, 2);

	assert_int_equal(rw_topo_multihost_ring(hosts, 2, 0, hops, 16, &n), 0);
	assert_int_equal(n, 16);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(hops[i].host, i / 8);
		assert_int_equal(hops[i].gpu, i % 8);
		assert_int_equal(hops[i].nic_in >= 0, i % 8 == 0);
		assert_int_equal(hops[i].nic_out >= 0, i % 8 == 7);
	}
	/* channel 1 enters each host at GPU 4 and leaves from GPU 3 */
	assert_int_equal(rw_topo_multihost_ring(hosts, 2, 1, hops, 16, &n), 0);
	assert_int_equal(hops[0].gpu, 4);
	assert_int_equal(hops[7].gpu, 3);
	assert_int_equal(rw_topo_multihost_ring(hosts, 2, 0, hops, 15, &n), -ENOSPC);
	assert_int_equal(rw_topo_multihost_ring(hosts, 0, 0, hops, 16, &n), -EINVAL);
	rw_topo_destroy(t);
}

static void plugin_gets_pci_path_speed_guid_rail(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");
	struct rw_topo_net_props p, q;

	(void)state;
	assert_int_equal(rw_topo_net_props(t, "mlx5_3", &p), 0);
	assert_string_equal(p.pci_path, "/sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/"
					"0000:42:04.0/0000:54:00.0");
	assert_int_equal(p.speed_mbps, 200000);
	assert_true(p.guid == 0xb8cef60300a12b43ull);
	assert_int_equal(p.port, 1);
	assert_int_equal(p.numa, 0);
	assert_int_equal(p.rail_id, 3);
	assert_int_equal(p.plane_id, 0);
	/* the same NIC by netdev and by bus id */
	assert_int_equal(rw_topo_net_props(t, "ib3", &q), 0);
	assert_memory_equal(&p, &q, sizeof(p));
	assert_int_equal(rw_topo_net_props(t, "0000:54:00.0", &q), 0);
	assert_string_equal(q.pci_path, p.pci_path);
	/* plain Ethernet: speed from sysfs, no rail */
	assert_int_equal(rw_topo_net_props(t, "eno1", &q), 0);
	assert_int_equal(q.speed_mbps, 1000);
	assert_int_equal(q.rail_id, RW_TOPO_ID_UNDEF);
	assert_int_equal(q.plane_id, RW_TOPO_ID_UNDEF);
	assert_int_equal(rw_topo_net_props(t, "mlx5_9", &q), -ENOENT);
	assert_int_equal(rw_topo_net_props(t, NULL, &q), -ENOENT);
	rw_topo_destroy(t);

	/* one NIC: nothing to infer rails from */
	t = load("2s-1nic");
	assert_int_equal(rw_topo_net_props(t, "ens7f0np0", &p), 0);
	assert_int_equal(p.rail_id, RW_TOPO_ID_UNDEF);
	assert_int_equal(p.speed_mbps, 100000);
	assert_int_equal(p.numa, 1);
	rw_topo_destroy(t);
}

static void lookups_normalise_bus_ids(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");

	(void)state;
	assert_int_equal(rw_topo_gpu_find(t, "0000:4E:00.0"), 3);
	assert_int_equal(rw_topo_gpu_find(t, "00000000:4e:00.0"), 3);
	assert_int_equal(rw_topo_gpu_find(t, "4e:00.0"), 3);
	assert_int_equal(rw_topo_gpu_find(t, "0000:4e:00.1"), -1);
	assert_int_equal(rw_topo_gpu_find(t, "garbage"), -1);
	assert_string_equal(rw_topo_gpu_get(t, 3)->busid, "0000:4e:00.0");
	assert_null(rw_topo_gpu_get(t, 8));
	assert_null(rw_topo_nic_get(t, -1));
	assert_null(rw_topo_numa_get(t, 2));
	assert_int_equal(rw_topo_numa_get(t, 1)->ncores, 64);
	assert_string_equal(rw_topo_cpu_model(t), "AMD EPYC 7742 64-Core Processor");
	rw_topo_destroy(t);
}

/* A recorded sysfs tree where mlx5_1's port is down. */
static void down_port_is_not_chosen(void **state)
{
	char root[] = "/tmp/rw-topo-XXXXXX", path[PATH_MAX];
	struct rw_topo_nic_choice c;
	struct rw_config cfg;
	struct rw_topo *t;

	(void)state;
	if (!RW_HAVE_HWLOC)
		skip();
	assert_non_null(mkdtemp(root));
	for (int n = 0; n < 8; n++) {
		FILE *f;

		snprintf(path, sizeof(path), "mkdir -p %s/sys/class/infiniband/mlx5_%d/ports/1",
			 root, n);
		assert_int_equal(system(path), 0);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_%d/ports/1/state", root,
			 n);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(n == 1 ? "1: DOWN\n" : "4: ACTIVE\n", f);
		fclose(f);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_%d/ports/1/rate", root,
			 n);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(n == 1 ? "10 Gb/sec (4X SDR)\n" : "200 Gb/sec (4X HDR)\n", f);
		fclose(f);
	}
	assert_int_equal(
		rw_test_config(&cfg, (const char *const[]){"RINGWAY_SYSFS_ROOT", root, NULL}), 0);
	assert_int_equal(rw_topo_create_from_xml(&cfg, "hgx8-2s-4sw.xml", &t), 0);
	assert_int_equal(rw_topo_nic_get(t, rw_topo_nic_find(t, "mlx5_1"))->state,
			 RW_TOPO_LINK_DOWN);
	assert_int_equal(rw_topo_nic_for_gpu(t, 1, &c), 0);
	assert_string_equal(rw_topo_nic_get(t, c.nic)->name, "mlx5_0");
	assert_non_null(strstr(c.reason, "mlx5_1 is as close but its port is down"));
	/* rails keep their numbers: the dead port does not shift the others */
	assert_int_equal(rw_topo_nic_get(t, rw_topo_nic_find(t, "mlx5_2"))->rail_id, 2);
	rw_topo_destroy(t);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}

/* --- NVLink ------------------------------------------------------------------------ */

static void ring_follows_nvlink(void **state)
{
	struct rw_topo *t = load("dgx1v-nvlink");
	const int want[8] = {0, 3, 2, 1, 5, 6, 7, 4}; /* all double links */
	struct rw_topo_path p;
	int order[8], n;

	(void)state;
	assert_int_equal(rw_topo_ring_order(t, order, 8, &n), 0);
	assert_int_equal(n, 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(order[i], want[i]);
		rw_topo_path(t, RW_TOPO_GPU(order[i]), RW_TOPO_GPU(order[(i + 1) % 8]), &p);
		assert_int_equal(p.type, RW_TOPO_PATH_NVL);
		assert_true(p.bw_gbps > 49.9f && p.bw_gbps < 50.1f);
	}
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(5), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_SYS); /* no NVLink between them */
	rw_topo_destroy(t);
}

static void nvml_links_reorder_the_ring(void **state)
{
	struct rw_topo *t = load("gpu4-nic2");
	const int want[4] = {0, 1, 3, 2}; /* 0-1 PIX, 1=3 NVL, 3-2 PIX, 2=0 NVL */
	struct rw_topo_path p;
	int order[4], n;

	(void)state;
	assert_int_equal(rw_topo_ring_order(t, order, 4, &n), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(order[i], i); /* no NVLink yet: PCIe order */
	assert_int_equal(rw_topo_load_nvml(t, RW_FAKE_NVML_OK), 0);
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(2), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_NVL);
	assert_true(p.bw_gbps > 39.9f && p.bw_gbps < 40.1f); /* 2 NVLink3 links */
	assert_int_equal(rw_topo_ring_order(t, order, 4, &n), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(order[i], want[i]); /* NVLink neighbours adjacent */
	assert_non_null(strstr(rw_topo_note(t, 1), "with NVLink"));
	rw_topo_destroy(t);
}

static void nvml_missing_or_failing_is_a_note(void **state)
{
	struct rw_topo *t = load("gpu4-nic2");
	struct rw_topo_path p;
	int notes = 0;

	(void)state;
	assert_int_equal(rw_topo_load_nvml(t, "libnvidia-ml-not-here.so.1"), -ENOENT);
	assert_int_equal(rw_topo_load_nvml(t, RW_FAKE_NVML_FAIL), -EIO);
	assert_int_equal(rw_topo_load_nvml(t, RW_FAKE_NVML_NOSYM), -ENOSYS);
	while (rw_topo_note(t, notes))
		notes++;
	assert_non_null(strstr(rw_topo_note(t, notes - 3), "NVML absent"));
	assert_non_null(strstr(rw_topo_note(t, notes - 2), "Driver Not Loaded"));
	assert_non_null(strstr(rw_topo_note(t, notes - 1), "nvmlDeviceGetNvLinkState"));
	assert_int_equal(rw_test_log_count("no NVLink data"), 3); /* INFO, not WARN */
	rw_topo_path(t, RW_TOPO_GPU(0), RW_TOPO_GPU(2), &p);
	assert_int_equal(p.type, RW_TOPO_PATH_NODE); /* unchanged */
	rw_topo_destroy(t);
}

/* --- hosts without NIC or GPU -------------------------------------------------------- */

static void host_without_nic(void **state)
{
	struct rw_topo *t = load("gpu2-nonic");
	const struct rw_topo *hosts[2] = {t, t};
	struct rw_topo_channel ch[4];
	struct rw_topo_nic_choice c;
	struct rw_topo_hop hops[8];
	int order[2], n = -1;

	(void)state;
	assert_int_equal(rw_topo_nic_count(t), 0);
	assert_int_equal(rw_topo_nic_for_gpu(t, 0, &c), 0);
	assert_int_equal(c.nic, -1);
	assert_string_equal(c.reason, "no NIC on this host");
	assert_int_equal(rw_topo_ring_order(t, order, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rw_topo_channels(t, ch, 4, &n), -ENODEV);
	assert_int_equal(rw_topo_multihost_ring(hosts, 2, 0, hops, 8, &n), -ENODEV);
	assert_string_equal(rw_topo_gpu_get(t, 1)->model, "NVIDIA RTX A6000"); /* class 0300 */
	rw_topo_destroy(t);
}

static void host_without_gpu(void **state)
{
	struct rw_topo *t = load("cpu-only");
	struct rw_topo *g = load("hgx8-2s-4sw");
	const struct rw_topo *hosts[3] = {g, t, g};
	struct rw_topo_channel ch[4];
	struct rw_topo_nic_choice c;
	struct rw_topo_hop hops[32];
	int order[1], n = -1;

	(void)state;
	assert_int_equal(rw_topo_gpu_count(t), 0);
	assert_int_equal(rw_topo_nic_for_gpu(t, 0, &c), -EINVAL);
	assert_int_equal(rw_topo_ring_order(t, order, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rw_topo_channels(t, ch, 4, &n), 0);
	assert_int_equal(n, 1); /* the HCA; the Ethernet NIC has no RDMA */
	assert_string_equal(rw_topo_nic_get(t, ch[0].nic_in)->name, "mlx5_0");
	assert_int_equal(ch[0].gpu_in, -1);
	/* a GPU-less host in a ring of GPU hosts is one stop */
	assert_int_equal(rw_topo_multihost_ring(hosts, 3, 0, hops, 32, &n), 0);
	assert_int_equal(n, 17);
	assert_int_equal(hops[8].host, 1);
	assert_int_equal(hops[8].gpu, -1);
	assert_int_equal(hops[8].nic_in, ch[0].nic_in);
	assert_int_equal(hops[8].nic_out, ch[0].nic_out);
	assert_int_equal(hops[9].host, 2);
	rw_topo_destroy(t);
	rw_topo_destroy(g);
}

/* --- bad input ------------------------------------------------------------------------ */

static int try_xml(const char *path)
{
	struct rw_topo *t = (struct rw_topo *)0x1;
	struct rw_config cfg;
	int rc;

	rw_config_defaults(&cfg);
	rc = rw_topo_create_from_xml(&cfg, path, &t);
	if (rc)
		assert_ptr_equal(t, (struct rw_topo *)0x1); /* untouched on failure */
	else
		rw_topo_destroy(t);
	return rc;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void bad_xml_fails_cleanly(void **state)
{
	char dir[] = "/tmp/rw-topo-xml-XXXXXX", path[PATH_MAX], cmd[PATH_MAX + 16];

	(void)state;
	if (!RW_HAVE_HWLOC) {
		rw_test_log_expect("built without hwloc");
		assert_int_equal(try_xml("gpu4-nic2.xml"), -ENOTSUP);
		return;
	}
	assert_non_null(mkdtemp(dir));
	rw_test_log_expect("cannot open hwloc XML");
	rw_test_log_expect("is not an hwloc XML topology");
	rw_test_log_expect("hwloc_topology_set_xml");
	rw_test_log_expect("has no processing unit");

	snprintf(path, sizeof(path), "%s/missing.xml", dir);
	assert_int_equal(try_xml(path), -ENOENT);
	assert_int_equal(rw_test_log_count("cannot open hwloc XML"), 1);

	snprintf(path, sizeof(path), "%s/garbage.xml", dir);
	write_file(path, "this is not XML at all\n\x01\x02");
	assert_int_equal(try_xml(path), -EINVAL);

	snprintf(path, sizeof(path), "%s/empty.xml", dir);
	write_file(path, "");
	assert_int_equal(try_xml(path), -EINVAL);

	snprintf(path, sizeof(path), "%s/other.xml", dir);
	write_file(path, "<?xml version=\"1.0\"?>\n<inventory><item/></inventory>\n");
	assert_int_equal(try_xml(path), -EINVAL);

	snprintf(path, sizeof(path), "%s/truncated.xml", dir);
	write_file(path, "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
			 "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\">\n");
	assert_int_equal(try_xml(path), -EINVAL);

	assert_int_equal(try_xml(dir), -EINVAL); /* a directory */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void create_follows_topo_xml_param(void **state)
{
	struct rw_config cfg;
	struct rw_topo *t;

	(void)state;
	if (!RW_HAVE_HWLOC)
		skip();
	assert_int_equal(rw_test_config(&cfg, (const char *const[]){"RINGWAY_TOPO_XML",
								    "gpu4-nic2.xml", NULL}),
			 0);
	assert_int_equal(rw_topo_create(&cfg, &t), 0);
	assert_string_equal(rw_topo_source(t), "hwloc XML gpu4-nic2.xml");
	assert_int_equal(rw_topo_gpu_count(t), 4);
	/* no sysfs root given: a recorded machine reads nothing of this one */
	assert_int_equal(rw_topo_nic_get(t, 0)->speed_mbps, 0);
	assert_int_equal(rw_topo_nic_get(t, 0)->state, RW_TOPO_LINK_UP); /* Port1State */
	rw_topo_destroy(t);
}

/* --- this machine -------------------------------------------------------------------- */

static void live_machine(void **state)
{
	struct rw_config cfg;
	struct rw_topo *t = NULL, *s = NULL;
	char *text;
	int order[64], n;

	(void)state;
	rw_config_defaults(&cfg);
	assert_int_equal(rw_topo_create_live(&cfg, &t), 0);
	assert_non_null(t);
	assert_true(rw_topo_numa_count(t) >= 1);
	assert_true(rw_topo_numa_get(t, 0)->npus >= 1);
	assert_true(rw_topo_gpu_count(t) <= 64);
	assert_int_equal(rw_topo_ring_order(t, order, 64, &n), 0);
	assert_int_equal(n, rw_topo_gpu_count(t));
	text = report(t, 2);
	assert_non_null(strstr(text, "this machine"));
	assert_non_null(strstr(text, "NUMA nodes:"));
	assert_non_null(strstr(text, "GPU -> NIC:"));
	print_message("--- this machine ---\n%s", text);
	free(text);
	rw_topo_destroy(t);
	/* sysfs alone finds the same devices here */
	assert_int_equal(rw_topo_create_from_sysfs(&cfg, &s), 0);
	assert_int_equal(rw_topo_create_live(&cfg, &t), 0);
	assert_int_equal(rw_topo_gpu_count(s), rw_topo_gpu_count(t));
	assert_int_equal(rw_topo_nic_count(s), rw_topo_nic_count(t));
	for (int i = 0; i < rw_topo_nic_count(t); i++)
		assert_string_equal(rw_topo_nic_get(s, i)->busid, rw_topo_nic_get(t, i)->busid);
	rw_topo_destroy(s);
	rw_topo_destroy(t);
}

static int group_setup(void **state)
{
	(void)state;
	rw_test_log_install();
	return chdir(RW_TOPO_FIXTURES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(reports_match_goldens, teardown),
		cmocka_unit_test_teardown(hgx8_spreads_gpus_over_switch_nics, teardown),
		cmocka_unit_test_teardown(hgx8_paths_and_bandwidth, teardown),
		cmocka_unit_test_teardown(hgx8_ring_channels_and_two_hosts, teardown),
		cmocka_unit_test_teardown(plugin_gets_pci_path_speed_guid_rail, teardown),
		cmocka_unit_test_teardown(lookups_normalise_bus_ids, teardown),
		cmocka_unit_test_teardown(down_port_is_not_chosen, teardown),
		cmocka_unit_test_teardown(ring_follows_nvlink, teardown),
		cmocka_unit_test_teardown(nvml_links_reorder_the_ring, teardown),
		cmocka_unit_test_teardown(nvml_missing_or_failing_is_a_note, teardown),
		cmocka_unit_test_teardown(host_without_nic, teardown),
		cmocka_unit_test_teardown(host_without_gpu, teardown),
		cmocka_unit_test_teardown(bad_xml_fails_cleanly, teardown),
		cmocka_unit_test_teardown(create_follows_topo_xml_param, teardown),
		cmocka_unit_test_teardown(live_machine, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}

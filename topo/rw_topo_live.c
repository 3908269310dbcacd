/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live reads: a model of this machine (rw_topo_create_live), and the NIC
 * facts the model takes from sysfs when it may read it (t->read_sysfs: this
 * machine, or a fixture root): the PCI path as the kernel resolves it, port
 * state, speed and GUID.
 */
#include "topo/rw_topo_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "topo/rw_sysfs.h"

enum rw_topo_link_state rw_topo_ib_state(const char *s)
{
	long v = strtol(s, NULL, 10);

	/* IB port states: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER */
	if (v == 4 || v == 5)
		return RW_TOPO_LINK_UP;
	if (v >= 1 && v <= 3)
		return RW_TOPO_LINK_DOWN;
	return RW_TOPO_LINK_UNKNOWN;
}

/* --- one NIC's sysfs files (the model and rw_topo_nic_facts share them) -- */

uint64_t rw_topo_guid_parse(const char *s)
{
	uint64_t g = 0;

	for (const char *c = s; *c; c++)
		if (isxdigit((unsigned char)*c))
			g = g << 4 |
			    (uint64_t)(isdigit((unsigned char)*c) ? *c - '0'
								  : (tolower(*c) - 'a' + 10));
	return g;
}

int rw_topo_ib_rate(const char *root, const char *ibdev, int port)
{
	char rel[160], buf[64];
	double gbps;

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/rate", ibdev, port);
	if (rw_sysfs_read(root, rel, buf, sizeof(buf)))
		return 0;
	gbps = strtod(buf, NULL); /* "200 Gb/sec (4X HDR)" */
	return gbps > 0 && gbps < INT_MAX / 1000.0 ? (int)(gbps * 1000.0 + 0.5) : 0;
}

uint64_t rw_topo_ib_guid(const char *root, const char *ibdev)
{
	char rel[160], buf[64];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/node_guid", ibdev);
	return rw_sysfs_read(root, rel, buf, sizeof(buf)) ? 0 : rw_topo_guid_parse(buf);
}

int rw_topo_netdev_speed(const char *root, const char *netdev)
{
	char rel[160];
	long v;

	snprintf(rel, sizeof(rel), "sys/class/net/%s/speed", netdev);
	if (rw_sysfs_read_long(root, rel, &v) || v <= 0 || v >= 100000000)
		return 0; /* -1: no link or a virtual device */
	return (int)v;
}

/* --- the model's NICs ------------------------------------------------------ */

static void read_ib_port(struct rw_topo *t, struct rw_topo_nic *nic)
{
	char rel[160], buf[64];
	int first_up = 0, rate;

	for (int p = 1; p <= RW_MAX(nic->nports, 1); p++) {
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/state", nic->ibdev, p);
		if (rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)))
			continue;
		if (rw_topo_ib_state(buf) == RW_TOPO_LINK_UP) {
			first_up = p;
			break;
		}
		if (p == 1)
			nic->state = rw_topo_ib_state(buf);
	}
	if (first_up) {
		nic->port = first_up;
		nic->state = RW_TOPO_LINK_UP;
	}
	rate = rw_topo_ib_rate(t->sysfs_root, nic->ibdev, nic->port);
	if (rate)
		nic->speed_mbps = rate;
	if (!nic->guid)
		nic->guid = rw_topo_ib_guid(t->sysfs_root, nic->ibdev);
}

static void read_netdev(struct rw_topo *t, struct rw_topo_nic *nic)
{
	char rel[160], buf[64];

	if (!nic->speed_mbps)
		nic->speed_mbps = rw_topo_netdev_speed(t->sysfs_root, nic->netdev);
	snprintf(rel, sizeof(rel), "sys/class/net/%s/operstate", nic->netdev);
	if (nic->kind == RW_TOPO_NIC_ETH && !rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf))) {
		if (!strcmp(buf, "up"))
			nic->state = RW_TOPO_LINK_UP;
		else if (!strcmp(buf, "down") || !strcmp(buf, "lowerlayerdown") ||
			 !strcmp(buf, "notpresent"))
			nic->state = RW_TOPO_LINK_DOWN;
	}
}

void rw_topo_nic_read_live(struct rw_topo *t, struct rw_topo_nic *nic, bool on_pci)
{
	if (on_pci) {
		char rel[64], path[RW_TOPO_PATH_MAX];

		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", nic->busid);
		if (rw_sysfs_realpath(t->sysfs_root, rel, path, sizeof(path)) == 0)
			memcpy(nic->pci_path, path, sizeof(path));
	}
	if (nic->ibdev[0])
		read_ib_port(t, nic);
	if (nic->netdev[0])
		read_netdev(t, nic);
}

int rw_topo_create_live(const struct rw_config *cfg, struct rw_topo **out)
{
	struct rw_topo *t;
	int rc;

	t = rw_topo_alloc(cfg, RW_HAVE_HWLOC ? "hwloc, this machine" : "sysfs, this machine");
	if (!t)
		return -ENOMEM;
	t->read_sysfs = true;
#if RW_HAVE_HWLOC
	rc = rw_topo_hwloc_live(t);
#else
	RW_INFO(RW_LOG_INIT, "topo: built without hwloc; reading PCI devices from sysfs");
	rw_topo_add_note(t, "built without hwloc: PCI tree read from sysfs");
	rc = rw_topo_sysfs_live(t);
#endif
	if (rc)
		goto err_destroy;
	rc = rw_topo_load_nvml(t, "libnvidia-ml.so.1");
	if (rc && rc != -ENOENT && rc != -ENOSYS && rc != -EIO)
		goto err_destroy;
	*out = t;
	return 0;

err_destroy:
	rw_topo_destroy(t);
	return rc;
}

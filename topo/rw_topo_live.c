/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live reads: a model of this machine (rw_topo_create_live), and the NIC
 * facts the model takes from sysfs when it may read it (t->read_sysfs: this
 * machine, or a fixture root): the PCI path as the kernel resolves it, port
 * state, speed and GUID.
 */
#include "topo/rw_topo_int.h"

#include <errno.h>
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

static void read_ib_port(struct rw_topo *t, struct rw_topo_nic *nic)
{
	char rel[160], buf[64];
	int first_up = 0;

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
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/rate", nic->ibdev, nic->port);
	if (!rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf))) {
		double gbps = strtod(buf, NULL); /* "200 Gb/sec (4X HDR)" */

		if (gbps > 0)
			nic->speed_mbps = (int)(gbps * 1000.0 + 0.5);
	}
	if (!nic->guid) {
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/node_guid", nic->ibdev);
		if (!rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)))
			nic->guid = rw_topo_guid_parse(buf);
	}
}

static void read_netdev(struct rw_topo *t, struct rw_topo_nic *nic)
{
	char rel[160], buf[64];
	long speed;

	snprintf(rel, sizeof(rel), "sys/class/net/%s/speed", nic->netdev);
	if (!nic->speed_mbps && !rw_sysfs_read_long(t->sysfs_root, rel, &speed) && speed > 0 &&
	    speed < 100000000)
		nic->speed_mbps = (int)speed;
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

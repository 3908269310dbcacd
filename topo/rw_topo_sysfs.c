/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs front-end: the discovery used when ringway is built without hwloc
 * (and testable on a recorded tree through RINGWAY_SYSFS_ROOT).  The PCIe
 * tree comes from the canonical sysfs path of each device of interest,
 * "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/.../0000:0c:00.0":
 * every component is a bridge on the way.  GPUs are NVIDIA class 0x03xx
 * functions of /sys/bus/pci/devices; NICs come from /sys/class/infiniband
 * and /sys/class/net (devices with a PCI parent only).
 */
#include "topo/rw_topo_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "topo/rw_sysfs.h"

#define PCI_VENDOR_NVIDIA 0x10de

static bool is_busid(const char *s)
{
	char norm[RW_TOPO_BUSID_MAX];

	return strlen(s) == 12 && !rw_topo_busid_norm(s, norm, sizeof(norm));
}

static long read_hex(struct rw_topo *t, const char *busid, const char *file)
{
	char rel[128];
	long v;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/%s", busid, file);
	return rw_sysfs_read_long(t->sysfs_root, rel, &v) ? -1 : v;
}

/* "16.0 GT/s PCIe" x width, less the line encoding, in GB/s. */
static float link_gbps(struct rw_topo *t, const char *busid)
{
	char rel[128], buf[64];
	double gts;
	long width;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/current_link_width", busid);
	if (rw_sysfs_read_long(t->sysfs_root, rel, &width) || width <= 0)
		return 0.0f;
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/current_link_speed", busid);
	if (rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)))
		return 0.0f;
	gts = strtod(buf, NULL);
	return (float)(gts * (double)width * (gts >= 8.0 ? 128.0 / 130.0 : 0.8) / 8.0);
}

static int find_pci(const struct rw_topo *t, const char *busid, int parent)
{
	for (int i = 0; i < t->npci; i++)
		if (t->pci[i].parent == parent && !strcmp(t->pci[i].busid, busid))
			return i;
	return -1;
}

/* Add the chain of a device's canonical path; its node index or -errno. */
static int add_chain(struct rw_topo *t, const char *busid, int numa)
{
	char rel[128], path[RW_TOPO_PATH_MAX], *save = NULL, *c;
	int parent = -1, rc;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", busid);
	rc = rw_sysfs_realpath(t->sysfs_root, rel, path, sizeof(path));
	if (rc)
		return rc;
	if (strncmp(path, "/sys/devices/", 13))
		return -EINVAL;
	for (c = strtok_r(path + 13, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		struct rw_topo_pci node = {.parent = parent, .numa = numa};
		int idx;

		if (parent < 0 && strncmp(c, "pci", 3))
			return -EINVAL;
		if (parent >= 0 && !is_busid(c))
			break; /* past the PCI part ("virtio2", "net") */
		idx = find_pci(t, c, parent);
		if (idx < 0) {
			snprintf(node.busid, sizeof(node.busid), "%s", c);
			if (parent < 0) {
				node.kind = RW_TOPO_PCI_HOSTBRIDGE;
			} else {
				node.kind =
					strcmp(c, busid) ? RW_TOPO_PCI_BRIDGE : RW_TOPO_PCI_DEVICE;
				node.link_gbps = link_gbps(t, c);
				node.vendor = (unsigned)read_hex(t, c, "vendor");
				node.device = (unsigned)read_hex(t, c, "device");
				node.class_id = (unsigned)(read_hex(t, c, "class") >> 8);
			}
			idx = rw_topo_add_pci(t, &node);
			if (idx < 0)
				return idx;
		}
		if (parent < 0 && t->pci[idx].numa < 0)
			t->pci[idx].numa = numa;
		parent = idx;
		if (!strcmp(c, busid))
			return idx;
	}
	return -EINVAL;
}

static int device_numa(struct rw_topo *t, const char *busid)
{
	char rel[128];
	long v;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/numa_node", busid);
	if (!rw_sysfs_read_long(t->sysfs_root, rel, &v) && v >= 0)
		return (int)v;
	return t->nnuma == 1 ? t->numa[0].os_index : -1;
}

/* The PCI function under a class device ("sys/class/net/eth0"), or "". */
static void class_busid(struct rw_topo *t, const char *rel, char *busid, size_t len)
{
	char path[RW_TOPO_PATH_MAX], dev[160], *c, *save = NULL;

	busid[0] = '\0';
	snprintf(dev, sizeof(dev), "%s/device", rel);
	if (rw_sysfs_realpath(t->sysfs_root, dev, path, sizeof(path)))
		return;
	for (c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save))
		if (is_busid(c))
			snprintf(busid, len, "%s", c);
}

static int count_list(const char *list)
{
	int n = 0;

	/* "0-3,8-11" */
	for (const char *p = list; *p;) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		n += (int)(b - a + 1);
		p = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return n;
}

static void copy_cut(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n < len) {
		memcpy(dst, src, n + 1);
		return;
	}
	memcpy(dst, src, len - 4);
	memcpy(dst + len - 4, "...", 4);
}

static int add_numa_nodes(struct rw_topo *t)
{
	char **nodes = NULL, buf[RW_PARAM_STR_MAX], rel[128];
	long threads = 1;
	int rc = 0;

	if (!rw_sysfs_read(t->sysfs_root,
			   "sys/devices/system/cpu/cpu0/topology/thread_siblings_list", buf,
			   sizeof(buf)))
		threads = RW_MAX(count_list(buf), 1);
	if (rw_sysfs_list(t->sysfs_root, "sys/devices/system/node", &nodes) == 0) {
		for (char **n = nodes; *n && !rc; n++) {
			struct rw_topo_numa numa = {0};

			if (strncmp(*n, "node", 4) || sscanf(*n + 4, "%d", &numa.os_index) != 1)
				continue;
			snprintf(rel, sizeof(rel), "sys/devices/system/node/%s/cpulist", *n);
			if (rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)))
				continue;
			copy_cut(numa.cpus, sizeof(numa.cpus), buf);
			numa.npus = count_list(buf);
			numa.ncores = (int)(numa.npus / threads);
			rc = rw_topo_add_numa(t, &numa);
		}
		rw_sysfs_list_free(nodes);
	}
	if (!rc && !t->nnuma &&
	    !rw_sysfs_read(t->sysfs_root, "sys/devices/system/cpu/online", buf, sizeof(buf))) {
		struct rw_topo_numa numa = {.npus = count_list(buf)};

		numa.ncores = (int)(numa.npus / threads);
		copy_cut(numa.cpus, sizeof(numa.cpus), buf);
		rc = rw_topo_add_numa(t, &numa);
	}
	return rc;
}

static int add_gpus(struct rw_topo *t)
{
	char **devs = NULL;
	int rc = rw_sysfs_list(t->sysfs_root, "sys/bus/pci/devices", &devs);

	if (rc)
		return rc == -ENOENT ? 0 : rc;
	for (char **d = devs; *d && rc >= 0; d++) {
		struct rw_topo_gpu gpu = {0};
		long cls = read_hex(t, *d, "class");

		if (read_hex(t, *d, "vendor") != PCI_VENDOR_NVIDIA || cls < 0 ||
		    (cls >> 16) != 0x03 || rw_topo_busid_norm(*d, gpu.busid, sizeof(gpu.busid)))
			continue;
		gpu.numa = device_numa(t, *d);
		snprintf(gpu.model, sizeof(gpu.model), "NVIDIA [10de:%04lx]",
			 read_hex(t, *d, "device") & 0xffff);
		rc = add_chain(t, *d, gpu.numa);
		if (rc >= 0)
			rc = rw_topo_add_gpu(t, &gpu, rc);
		else if (rc != -ENOMEM)
			rc = 0; /* an odd sysfs path: leave that GPU out */
	}
	rw_sysfs_list_free(devs);
	return rc < 0 ? rc : 0;
}

static int add_nic(struct rw_topo *t, struct rw_topo_nic *nic)
{
	int node;

	if (!nic->busid[0] || rw_topo_nic_find(t, nic->busid) >= 0 ||
	    (nic->netdev[0] && rw_topo_nic_find(t, nic->netdev) >= 0))
		return 0;
	nic->numa = device_numa(t, nic->busid);
	node = add_chain(t, nic->busid, nic->numa);
	if (node == -ENOMEM)
		return node;
	return rw_topo_add_nic(t, nic, node < 0 ? -1 : node);
}

/* "3c:ec:ef:00:04:22" */
static uint64_t mac_to_u64(const char *s)
{
	uint64_t v = 0;

	for (; *s; s++) {
		char c = (char)(*s | 0x20);

		if (*s >= '0' && *s <= '9')
			v = v << 4 | (uint64_t)(*s - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
	}
	return v;
}

static int add_nics(struct rw_topo *t)
{
	char **names = NULL, rel[160], buf[64];
	int rc = 0;

	if (!rw_sysfs_list(t->sysfs_root, "sys/class/infiniband", &names)) {
		for (char **n = names; *n && !rc; n++) {
			struct rw_topo_nic nic = {.kind = RW_TOPO_NIC_ROCE};
			char **ports = NULL, **nets = NULL;

			snprintf(nic.ibdev, sizeof(nic.ibdev), "%s", *n);
			snprintf(nic.name, sizeof(nic.name), "%s", *n);
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s", *n);
			class_busid(t, rel, nic.busid, sizeof(nic.busid));
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports", *n);
			if (!rw_sysfs_list(t->sysfs_root, rel, &ports)) {
				while (ports[nic.nports])
					nic.nports++;
				rw_sysfs_list_free(ports);
			}
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/1/link_layer",
				 *n);
			if (!rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)) &&
			    !strcmp(buf, "InfiniBand"))
				nic.kind = RW_TOPO_NIC_IB;
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/device/net", *n);
			if (!rw_sysfs_list(t->sysfs_root, rel, &nets)) {
				if (nets[0])
					snprintf(nic.netdev, sizeof(nic.netdev), "%s", nets[0]);
				rw_sysfs_list_free(nets);
			}
			rc = add_nic(t, &nic);
		}
		rw_sysfs_list_free(names);
	}
	if (!rc && !rw_sysfs_list(t->sysfs_root, "sys/class/net", &names)) {
		for (char **n = names; *n && !rc; n++) {
			struct rw_topo_nic nic = {.kind = RW_TOPO_NIC_ETH};

			snprintf(nic.netdev, sizeof(nic.netdev), "%s", *n);
			snprintf(nic.name, sizeof(nic.name), "%s", *n);
			snprintf(rel, sizeof(rel), "sys/class/net/%s", *n);
			class_busid(t, rel, nic.busid, sizeof(nic.busid));
			snprintf(rel, sizeof(rel), "sys/class/net/%s/address", *n);
			if (!rw_sysfs_read(t->sysfs_root, rel, buf, sizeof(buf)) &&
			    strlen(buf) == 17)
				nic.guid = mac_to_u64(buf);
			rc = add_nic(t, &nic);
		}
		rw_sysfs_list_free(names);
	}
	return rc;
}

int rw_topo_sysfs_live(struct rw_topo *t)
{
	int rc = add_numa_nodes(t);

	if (!rc)
		rc = add_gpus(t);
	if (!rc)
		rc = add_nics(t);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "topo: reading PCI devices from sysfs under '%s/' failed: %s",
			t->sysfs_root, strerror(-rc));
		return rc;
	}
	if (!t->nnuma && !t->npci) {
		RW_WARN(RW_LOG_INIT, "topo: nothing found under '%s/sys': no topology",
			t->sysfs_root);
		return -EIO;
	}
	return rw_topo_finish(t);
}

int rw_topo_create_from_sysfs(const struct rw_config *cfg, struct rw_topo **out)
{
	char source[RW_PARAM_STR_MAX + 16];
	struct rw_topo *t;
	int rc;

	snprintf(source, sizeof(source), "sysfs, %s",
		 cfg->sysfs_root[0] ? cfg->sysfs_root : "this machine");
	t = rw_topo_alloc(cfg, source);
	if (!t)
		return -ENOMEM;
	t->read_sysfs = true;
	rc = rw_topo_sysfs_live(t);
	if (rc) {
		rw_topo_destroy(t);
		return rc;
	}
	*out = t;
	return 0;
}

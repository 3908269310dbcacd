/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net properties: what the transports' getProperties report about a NIC.
 * rw_topo_nic_facts() reads one NIC live from sysfs (the transports' one
 * source of PCI path, speed and GUID), with the GID types and the
 * peer-memory module the ib transport asks about; rw_topo_net_props()
 * answers from a built model (the plugin takes the rails from it).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/rw_sysfs.h"
#include "topo/rw_topo_int.h"

/* "0000:00:03.0" */
static bool is_pci_bdf(const char *s, size_t len)
{
	static const char pat[] = "xxxx:xx:xx.x";

	if (len != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (pat[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != pat[i])
			return false;
	}
	return true;
}

/* rel resolved, cut after its last PCI address component; "" when none. */
static void pci_dir(const char *root, const char *rel, char *out, size_t len)
{
	char path[PATH_MAX];
	char *p, *cut = NULL;

	out[0] = '\0';
	if (rw_sysfs_realpath(root, rel, path, sizeof(path)))
		return;
	for (p = path; *p;) {
		char *end = strchr(p + 1, '/');
		size_t n = end ? (size_t)(end - p - 1) : strlen(p + 1);

		if (*p == '/' && is_pci_bdf(p + 1, n))
			cut = p + 1 + n;
		if (!end)
			break;
		p = end;
	}
	if (!cut || (size_t)(cut - path) >= len)
		return;
	*cut = '\0';
	memcpy(out, path, (size_t)(cut - path) + 1);
}

static void netdev_facts(const char *root, const char *name, struct rw_topo_nic_facts *f)
{
	char rel[64 + RW_TOPO_NAME_MAX], mac[64];
	unsigned b[6];
	long v;

	snprintf(rel, sizeof(rel), "sys/class/net/%s/device", name);
	pci_dir(root, rel, f->pci_path, sizeof(f->pci_path));
	f->speed_mbps = rw_topo_netdev_speed(root, name);
	snprintf(rel, sizeof(rel), "sys/class/net/%s/ifindex", name);
	if (!rw_sysfs_read_long(root, rel, &v) && v > 0 && v <= INT_MAX)
		f->ifindex = (int)v;
	snprintf(rel, sizeof(rel), "sys/class/net/%s/address", name);
	if (!rw_sysfs_read(root, rel, mac, sizeof(mac)) &&
	    sscanf(mac, "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6) {
		for (int i = 0; i < 6; i++)
			f->guid = f->guid << 8 | (b[i] & 0xff);
	}
}

static void ibdev_facts(const char *root, const char *name, struct rw_topo_nic_facts *f)
{
	char rel[64 + RW_TOPO_NAME_MAX];

	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/device", name);
	pci_dir(root, rel, f->pci_path, sizeof(f->pci_path));
	f->speed_mbps = rw_topo_ib_rate(root, name, 1);
	f->guid = rw_topo_ib_guid(root, name);
}

int rw_topo_nic_facts(const char *sysfs_root, const char *name, struct rw_topo_nic_facts *out)
{
	struct rw_topo_nic_facts f;
	char rel[64 + RW_TOPO_NAME_MAX], path[PATH_MAX];

	if (!name || !out || !name[0] || strlen(name) >= RW_TOPO_NAME_MAX || strchr(name, '/'))
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s", name);
	if (rw_sysfs_realpath(sysfs_root, rel, path, sizeof(path)) == 0)
		ibdev_facts(sysfs_root, name, &f);
	else
		netdev_facts(sysfs_root, name, &f);
	*out = f;
	return 0;
}

int rw_topo_ib_gid_roce(const char *sysfs_root, const char *ibdev, int port, int index)
{
	char rel[96 + RW_TOPO_NAME_MAX], buf[32];

	if (!ibdev)
		return 0;
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", ibdev,
		 port, index);
	if (rw_sysfs_read(sysfs_root, rel, buf, sizeof(buf)))
		return 0;
	return strcmp(buf, "RoCE v2") == 0 ? 2 : 1;
}

bool rw_topo_peermem_loaded(const char *sysfs_root, const char **evidence)
{
	static const char *const files[] = {
		"sys/kernel/mm/memory_peers/nv_mem/version",
		"sys/kernel/mm/memory_peers/nv_mem_nc/version",
		"sys/module/nvidia_peermem/version",
	};
	char buf[64];

	for (size_t i = 0; i < RW_ARRAY_SIZE(files); i++) {
		if (rw_sysfs_read(sysfs_root, files[i], buf, sizeof(buf)) == 0) {
			if (evidence)
				*evidence = files[i];
			return true;
		}
	}
	return false;
}

int rw_topo_net_props(const struct rw_topo *t, const char *name, struct rw_topo_net_props *out)
{
	int i = name ? rw_topo_nic_find(t, name) : -1;
	const struct rw_topo_nic *n;

	if (i < 0)
		return -ENOENT;
	n = &t->nics[i];
	memset(out, 0, sizeof(*out));
	snprintf(out->pci_path, sizeof(out->pci_path), "%s", n->pci_path);
	out->speed_mbps = n->speed_mbps;
	out->guid = n->guid;
	out->port = n->port;
	out->numa = n->numa;
	out->rail_id = (int16_t)n->rail_id;
	out->plane_id = (int16_t)n->plane_id;
	return 0;
}

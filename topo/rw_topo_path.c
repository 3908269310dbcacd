/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths between devices, classified as NCCL does (PIX, PXB, PHB, NODE, SYS,
 * NVL), with a bandwidth estimate: the narrowest PCIe link on the way, the
 * CPU interconnect for SYS, the NVLink bandwidth for NVL.
 *
 * A PCIe switch is an upstream port (a bridge under a bridge) with its
 * downstream ports; a root port (a bridge right under a host bridge) is part
 * of the CPU, as in NCCL.  Two devices share a switch when some switch is
 * above both; PIX when it is the nearest switch of each, PXB otherwise.
 */
#include "topo/rw_topo_int.h"

#include <errno.h>
#include <math.h>

#define PCI_BW_DEFAULT 12.0f /* PCIe Gen3 x16 in practice, when hwloc knows no speed */

static const char *const path_names[] = {
	[RW_TOPO_PATH_LOC] = "LOC", [RW_TOPO_PATH_NVL] = "NVL", [RW_TOPO_PATH_PIX] = "PIX",
	[RW_TOPO_PATH_PXB] = "PXB", [RW_TOPO_PATH_PHB] = "PHB", [RW_TOPO_PATH_NODE] = "NODE",
	[RW_TOPO_PATH_SYS] = "SYS",
};
_Static_assert(RW_ARRAY_SIZE(path_names) == RW_TOPO_PATH_COUNT, "one name per path type");

static const char *const path_descs[] = {
	[RW_TOPO_PATH_LOC] = "the same device",
	[RW_TOPO_PATH_NVL] = "NVLink",
	[RW_TOPO_PATH_PIX] = "same PCIe switch",
	[RW_TOPO_PATH_PXB] = "same PCIe switch tree (several switches)",
	[RW_TOPO_PATH_PHB] = "same PCIe host bridge (through the CPU)",
	[RW_TOPO_PATH_NODE] = "same NUMA node, across PCIe host bridges",
	[RW_TOPO_PATH_SYS] = "across NUMA nodes",
};
_Static_assert(RW_ARRAY_SIZE(path_descs) == RW_TOPO_PATH_COUNT, "one text per path type");

const char *rw_topo_path_name(enum rw_topo_path_type type)
{
	return (unsigned)type < RW_TOPO_PATH_COUNT ? path_names[type] : "?";
}

const char *rw_topo_path_desc(enum rw_topo_path_type type)
{
	return (unsigned)type < RW_TOPO_PATH_COUNT ? path_descs[type] : "?";
}

#define MAX_CHAIN 32

/* The switches above a device, nearest first (each named by its upstream port). */
static int switch_chain(const struct rw_topo *t, int dev, int *chain)
{
	int n = 0;

	for (int v = t->pci[dev].parent;
	     v >= 0 && t->pci[v].kind == RW_TOPO_PCI_BRIDGE && n < MAX_CHAIN;) {
		int up = t->pci[v].parent;

		if (up < 0 || t->pci[up].kind != RW_TOPO_PCI_BRIDGE)
			break;	 /* v is a root port */
		chain[n++] = up; /* v is a downstream port of the switch `up` */
		v = t->pci[up].parent;
	}
	return n;
}

static int hostbridge_of(const struct rw_topo *t, int v)
{
	while (t->pci[v].parent >= 0)
		v = t->pci[v].parent;
	return v;
}

enum rw_topo_path_type rw_topo_pci_path_type(const struct rw_topo *t, int a, int b)
{
	int ca[MAX_CHAIN], cb[MAX_CHAIN];
	int ha, hb, pa, pb, na, nb;

	if (a < 0 || b < 0)
		return RW_TOPO_PATH_SYS; /* not on PCI: assume the worst */
	if (a == b)
		return RW_TOPO_PATH_LOC;
	ha = hostbridge_of(t, a);
	hb = hostbridge_of(t, b);
	if (ha != hb) {
		na = t->pci[ha].numa;
		nb = t->pci[hb].numa;
		return na >= 0 && na == nb ? RW_TOPO_PATH_NODE : RW_TOPO_PATH_SYS;
	}
	pa = t->pci[a].parent;
	pb = t->pci[b].parent;
	if (pa == pb) /* functions of one card, or neighbours on one bus */
		return t->pci[pa].kind == RW_TOPO_PCI_HOSTBRIDGE ? RW_TOPO_PATH_PHB
								 : RW_TOPO_PATH_PIX;
	na = switch_chain(t, a, ca);
	nb = switch_chain(t, b, cb);
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			if (ca[i] == cb[j])
				return i == 0 && j == 0 ? RW_TOPO_PATH_PIX : RW_TOPO_PATH_PXB;
	return RW_TOPO_PATH_PHB;
}

float rw_topo_pci_path_bw(const struct rw_topo *t, int a, int b)
{
	float bw = INFINITY;
	int lca = -1;

	if (a < 0 || b < 0)
		return 0.0f;
	/* lowest common ancestor: the first of b's ancestors that is above a */
	for (int v = b; v >= 0 && lca < 0; v = t->pci[v].parent)
		for (int u = a; u >= 0; u = t->pci[u].parent)
			if (u == v) {
				lca = v;
				break;
			}
	/* every link below the meeting point is crossed: the devices' own
	 * links and each bridge's upstream link */
	for (int side = 0; side < 2; side++)
		for (int v = side ? b : a; v >= 0 && v != lca; v = t->pci[v].parent)
			if (t->pci[v].kind != RW_TOPO_PCI_HOSTBRIDGE && t->pci[v].link_gbps > 0)
				bw = fminf(bw, t->pci[v].link_gbps);
	if (rw_topo_pci_path_type(t, a, b) == RW_TOPO_PATH_SYS)
		bw = fminf(bw, t->sys_bw_gbps);
	return isinf(bw) ? PCI_BW_DEFAULT : bw;
}

static int dev_node(const struct rw_topo *t, struct rw_topo_dev d, int *node)
{
	if (d.kind == RW_TOPO_DEV_GPU && d.index >= 0 && d.index < t->ngpus)
		*node = t->gpu_pci[d.index];
	else if (d.kind == RW_TOPO_DEV_NIC && d.index >= 0 && d.index < t->nnics)
		*node = t->nic_pci[d.index];
	else
		return -EINVAL;
	return 0;
}

int rw_topo_path(const struct rw_topo *t, struct rw_topo_dev a, struct rw_topo_dev b,
		 struct rw_topo_path *out)
{
	int na, nb;

	if (dev_node(t, a, &na) || dev_node(t, b, &nb))
		return -EINVAL;
	if (a.kind == b.kind && a.index == b.index) {
		out->type = RW_TOPO_PATH_LOC;
		out->bw_gbps = 0.0f;
		return 0;
	}
	if (a.kind == RW_TOPO_DEV_GPU && b.kind == RW_TOPO_DEV_GPU) {
		float direct = t->nvl_bw[a.index * t->ngpus + b.index];
		float sw = fminf(t->nvs_bw[a.index], t->nvs_bw[b.index]);

		if (direct > 0 || sw > 0) {
			out->type = RW_TOPO_PATH_NVL;
			out->bw_gbps = fmaxf(direct, sw);
			return 0;
		}
	}
	out->type = rw_topo_pci_path_type(t, na, nb);
	out->bw_gbps = rw_topo_pci_path_bw(t, na, nb);
	return 0;
}

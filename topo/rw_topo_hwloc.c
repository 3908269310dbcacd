/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hwloc front-end: walks an hwloc topology (this machine, or an XML file)
 * into struct rw_topo.  Devices are found by PCI ids and OS device names
 * only, which XML keeps, so a recorded machine replays exactly; nothing here
 * depends on hwloc_topology_is_thissystem().
 */
#include "topo/rw_topo_int.h"

#include "common/rw_build.h"

#if RW_HAVE_HWLOC

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/distances.h>

#include "common/rw_log.h"

#define PCI_VENDOR_NVIDIA      0x10de
#define PCI_CLASS_BRIDGE_OTHER 0x0680 /* NVSwitch */

struct walk {
	struct rw_topo *t;
	hwloc_topology_t h;
	int nnuma;
};

static const char *info(hwloc_obj_t obj, const char *name)
{
	const char *v = hwloc_obj_get_info_by_name(obj, name);

	return v ? v : "";
}

static int numa_of(struct walk *w, hwloc_obj_t obj)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(w->h, obj);

	if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
		return hwloc_bitmap_first(anc->nodeset);
	if (w->nnuma == 1)
		return (int)hwloc_get_obj_by_type(w->h, HWLOC_OBJ_NUMANODE, 0)->os_index;
	return -1;
}

static void pci_busid(const struct hwloc_pcidev_attr_s *p, char *out, size_t len)
{
	snprintf(out, len, "%04x:%02x:%02x.%x", (unsigned)p->domain, (unsigned)p->bus,
		 (unsigned)p->dev, (unsigned)p->func);
}

static int add_hostbridge(struct walk *w, hwloc_obj_t obj, unsigned dom, unsigned bus)
{
	struct rw_topo_pci node = {
		.kind = RW_TOPO_PCI_HOSTBRIDGE,
		.parent = -1,
		.numa = numa_of(w, obj),
	};

	snprintf(node.busid, sizeof(node.busid), "pci%04x:%02x", dom, bus);
	for (int i = 0; i < w->t->npci; i++)
		if (w->t->pci[i].kind == RW_TOPO_PCI_HOSTBRIDGE &&
		    !strcmp(w->t->pci[i].busid, node.busid))
			return i;
	return rw_topo_add_pci(w->t, &node);
}

static uint64_t parse_guid(const char *s)
{
	uint64_t g = 0;
	int digits = 0;

	for (; *s; s++) {
		char c = *s;

		if (c == ':')
			continue;
		if (c >= '0' && c <= '9')
			g = g << 4 | (uint64_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			g = g << 4 | (uint64_t)((c | 0x20) - 'a' + 10);
		else
			return 0;
		if (++digits > 16)
			return 0; /* an IPoIB hardware address, not a GUID or MAC */
	}
	return g;
}

static void add_gpu(struct walk *w, hwloc_obj_t dev, int node)
{
	struct rw_topo_gpu gpu = {.numa = w->t->pci[node].numa};
	const char *model = info(dev, "PCIDevice");

	pci_busid(&dev->attr->pcidev, gpu.busid, sizeof(gpu.busid));
	for (hwloc_obj_t os = dev->io_first_child; os; os = os->next_sibling)
		if (os->type == HWLOC_OBJ_OS_DEVICE && *info(os, "GPUModel")) {
			model = info(os, "GPUModel");
			break;
		}
	if (*model)
		snprintf(gpu.model, sizeof(gpu.model), "%s", model);
	else
		snprintf(gpu.model, sizeof(gpu.model), "NVIDIA [10de:%04x]",
			 (unsigned)dev->attr->pcidev.device_id);
	if (rw_topo_add_gpu(w->t, &gpu, node))
		rw_topo_add_note(w->t, "out of memory: GPU %s left out", gpu.busid);
}

/* RDMA ports: "Port<N>State" infos (4 = ACTIVE), as hwloc records them. */
static void ib_ports(hwloc_obj_t os, struct rw_topo_nic *nic)
{
	char key[32];

	for (int p = 1; p <= 16; p++) {
		const char *st;

		snprintf(key, sizeof(key), "Port%dState", p);
		st = hwloc_obj_get_info_by_name(os, key);
		if (!st)
			break;
		nic->nports = p;
		if (rw_topo_ib_state(st) == RW_TOPO_LINK_UP && nic->state != RW_TOPO_LINK_UP) {
			nic->state = RW_TOPO_LINK_UP;
			nic->port = p;
		} else if (p == 1) {
			nic->state = rw_topo_ib_state(st);
		}
	}
}

static void add_nic(struct walk *w, hwloc_obj_t dev, int node)
{
	struct rw_topo_nic nic = {.numa = w->t->pci[node].numa};
	unsigned cls = dev->attr->pcidev.class_id;
	uint64_t mac = 0;

	pci_busid(&dev->attr->pcidev, nic.busid, sizeof(nic.busid));
	for (hwloc_obj_t os = dev->io_first_child; os; os = os->next_sibling) {
		if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name)
			continue;
		if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !nic.ibdev[0]) {
			snprintf(nic.ibdev, sizeof(nic.ibdev), "%s", os->name);
			nic.guid = parse_guid(info(os, "NodeGUID"));
			ib_ports(os, &nic);
		} else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !nic.netdev[0]) {
			snprintf(nic.netdev, sizeof(nic.netdev), "%s", os->name);
			mac = parse_guid(info(os, "Address"));
		}
	}
	if (!nic.ibdev[0] && !nic.netdev[0])
		return; /* a network controller without a driver: nothing can use it */
	snprintf(nic.name, sizeof(nic.name), "%s", nic.ibdev[0] ? nic.ibdev : nic.netdev);
	if (!nic.ibdev[0])
		nic.kind = RW_TOPO_NIC_ETH;
	else
		nic.kind = cls == 0x0207 ? RW_TOPO_NIC_IB : RW_TOPO_NIC_ROCE;
	if (!nic.guid)
		nic.guid = mac;
	if (rw_topo_add_nic(w->t, &nic, node))
		rw_topo_add_note(w->t, "out of memory: NIC %s left out", nic.name);
}

static int walk_io(struct walk *w, hwloc_obj_t obj, int parent)
{
	for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
		struct rw_topo_pci node = {.kind = RW_TOPO_PCI_BRIDGE, .parent = parent};
		const struct hwloc_pcidev_attr_s *p;
		int idx, rc, par = parent;

		if (c->type == HWLOC_OBJ_BRIDGE &&
		    c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
			idx = add_hostbridge(
				w, c, (unsigned)c->attr->bridge.downstream.pci.domain,
				(unsigned)c->attr->bridge.downstream.pci.secondary_bus);
			if (idx < 0)
				return idx;
			rc = walk_io(w, c, idx);
			if (rc)
				return rc;
			continue;
		}
		if (c->type != HWLOC_OBJ_BRIDGE && c->type != HWLOC_OBJ_PCI_DEVICE)
			continue;
		p = c->type == HWLOC_OBJ_BRIDGE ? &c->attr->bridge.upstream.pci : &c->attr->pcidev;
		if (par < 0) { /* no host bridge above it: make one for its bus */
			par = add_hostbridge(w, c, (unsigned)p->domain, (unsigned)p->bus);
			if (par < 0)
				return par;
			node.parent = par;
		}
		node.numa = w->t->pci[par].numa;
		pci_busid(p, node.busid, sizeof(node.busid));
		node.link_gbps = p->linkspeed;
		node.vendor = p->vendor_id;
		node.device = p->device_id;
		node.class_id = p->class_id;
		if (c->type == HWLOC_OBJ_PCI_DEVICE)
			node.kind = RW_TOPO_PCI_DEVICE;
		idx = rw_topo_add_pci(w->t, &node);
		if (idx < 0)
			return idx;
		if (c->type == HWLOC_OBJ_BRIDGE) {
			rc = walk_io(w, c, idx);
			if (rc)
				return rc;
		} else if (p->vendor_id == PCI_VENDOR_NVIDIA && (p->class_id >> 8) == 0x03) {
			add_gpu(w, c, idx);
		} else {
			add_nic(w, c, idx);
		}
	}
	return 0;
}

static int walk_normal(struct walk *w, hwloc_obj_t obj)
{
	int rc = walk_io(w, obj, -1);

	for (unsigned i = 0; !rc && i < obj->arity; i++)
		rc = walk_normal(w, obj->children[i]);
	return rc;
}

static int add_numa_nodes(struct walk *w)
{
	hwloc_obj_t n = NULL;

	while ((n = hwloc_get_next_obj_by_type(w->h, HWLOC_OBJ_NUMANODE, n))) {
		struct rw_topo_numa numa = {.os_index = (int)n->os_index};
		int len, rc;

		numa.ncores =
			hwloc_get_nbobjs_inside_cpuset_by_type(w->h, n->cpuset, HWLOC_OBJ_CORE);
		numa.npus = hwloc_get_nbobjs_inside_cpuset_by_type(w->h, n->cpuset, HWLOC_OBJ_PU);
		len = hwloc_bitmap_list_snprintf(numa.cpus, sizeof(numa.cpus), n->cpuset);
		if (len >= (int)sizeof(numa.cpus))
			memcpy(numa.cpus + sizeof(numa.cpus) - 4, "...", 4);
		rc = rw_topo_add_numa(w->t, &numa);
		if (rc)
			return rc;
	}
	return 0;
}

/* CPU interconnect estimates per socket pair, GB/s (NCCL's constants). */
static void machine_facts(struct walk *w)
{
	hwloc_obj_t root = hwloc_get_root_obj(w->h);
	hwloc_obj_t pkg = hwloc_get_obj_by_type(w->h, HWLOC_OBJ_PACKAGE, 0);
	struct rw_topo *t = w->t;

	snprintf(t->machine, sizeof(t->machine), "%s", info(root, "DMIProductName"));
	if (!pkg)
		return;
	snprintf(t->cpu_model, sizeof(t->cpu_model), "%s", info(pkg, "CPUModel"));
	snprintf(t->cpu_vendor, sizeof(t->cpu_vendor), "%s", info(pkg, "CPUVendor"));
	if (!strcmp(t->cpu_vendor, "AuthenticAMD")) {
		t->sys_bw_gbps = 16.0f;
	} else if (!strcmp(t->cpu_vendor, "GenuineIntel")) {
		long model = strtol(info(pkg, "CPUModelNumber"), NULL, 10);

		if (model == 143)
			t->sys_bw_gbps = 22.0f; /* Sapphire Rapids */
		else if (model == 207)
			t->sys_bw_gbps = 40.0f; /* Emerald Rapids */
		else if (model && model <= 79)
			t->sys_bw_gbps = 6.0f; /* Broadwell and older QPI */
		else
			t->sys_bw_gbps = 10.0f; /* Skylake-class UPI */
	}
}

/* GPU bus id of an NVLinkBandwidth object (an NVML/CUDA OS device or a PCI
 * GPU), 1 for an NVSwitch, 0 for anything else. */
static int nvlink_obj(hwloc_obj_t o, char *busid, size_t len)
{
	if (o->type == HWLOC_OBJ_OS_DEVICE)
		o = o->parent;
	if (!o || o->type != HWLOC_OBJ_PCI_DEVICE || o->attr->pcidev.vendor_id != PCI_VENDOR_NVIDIA)
		return 0;
	if (o->attr->pcidev.class_id == PCI_CLASS_BRIDGE_OTHER)
		return 1;
	pci_busid(&o->attr->pcidev, busid, len);
	return 2;
}

static void nvlinks_from_distances(struct walk *w)
{
	struct hwloc_distances_s *d;
	unsigned nr = 1, nlinks = 0;

	if (hwloc_distances_get_by_name(w->h, "NVLinkBandwidth", &nr, &d, 0) || !nr)
		return;
	for (unsigned i = 0; i < d->nbobjs; i++) {
		char a[RW_TOPO_BUSID_MAX], b[RW_TOPO_BUSID_MAX];
		float to_switch = 0;

		if (nvlink_obj(d->objs[i], a, sizeof(a)) != 2)
			continue;
		for (unsigned j = 0; j < d->nbobjs; j++) {
			float gbps = (float)d->values[i * d->nbobjs + j] / 1000.0f;
			int kind = nvlink_obj(d->objs[j], b, sizeof(b));

			if (i == j || gbps <= 0)
				continue;
			if (kind == 1)
				to_switch += gbps;
			else if (kind == 2 && !rw_topo_set_nvlink(w->t, a, b, gbps))
				nlinks++;
		}
		if (to_switch > 0 && !rw_topo_set_nvswitch(w->t, a, to_switch))
			nlinks++;
	}
	hwloc_distances_release(w->h, d);
	if (nlinks)
		rw_topo_add_note(w->t, "NVLink: from the topology's NVLinkBandwidth matrix");
}

static int build(struct rw_topo *t, hwloc_topology_t h)
{
	struct walk w = {.t = t, .h = h};
	int rc;

	w.nnuma = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
	machine_facts(&w);
	rc = add_numa_nodes(&w);
	if (!rc)
		rc = walk_normal(&w, hwloc_get_root_obj(h));
	if (!rc)
		rc = rw_topo_finish(t);
	if (!rc)
		nvlinks_from_distances(&w);
	return rc;
}

static const char *const skipped_components[] = {
	"pci", "cuda", "nvml", "opencl", "gl", "levelzero", "rsmi",
};

static int load(hwloc_topology_t *out, const char *xml)
{
	hwloc_topology_t h;

	if (hwloc_topology_init(&h))
		return -ENOMEM;
	/* keep every bridge, PCI device and OS device the file or system has */
	hwloc_topology_set_io_types_filter(h, xml ? HWLOC_TYPE_FILTER_KEEP_ALL
						  : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* Live discovery: the linux backend reads PCI from sysfs itself; the
	 * libpciaccess component adds nothing but leaks, and the GPU components
	 * would call CUDA/OpenCL/GL (topo/ never does; NVML is ours, dlopen'ed). */
	for (size_t i = 0; !xml && i < RW_ARRAY_SIZE(skipped_components); i++)
		hwloc_topology_set_components(h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
					      skipped_components[i]);
	if (xml && hwloc_topology_set_xml(h, xml)) {
		int err = errno;

		RW_WARN(RW_LOG_INIT,
			"topo: '%s' is not an hwloc XML topology "
			"(hwloc_topology_set_xml: %s)",
			xml, strerror(err));
		hwloc_topology_destroy(h);
		return -EINVAL;
	}
	if (hwloc_topology_load(h)) {
		int err = errno;

		if (xml)
			RW_WARN(RW_LOG_INIT,
				"topo: '%s' is not an hwloc XML topology "
				"(hwloc_topology_load: %s)",
				xml, strerror(err));
		else
			RW_WARN(RW_LOG_INIT,
				"topo: hwloc_topology_load() of this machine "
				"failed: %s",
				strerror(err));
		hwloc_topology_destroy(h);
		return xml ? -EINVAL : -EIO;
	}
	*out = h;
	return 0;
}

int rw_topo_hwloc_xml(struct rw_topo *t, const char *path)
{
	hwloc_topology_t h;
	int fd, rc;

	/* hwloc says little about a missing file: check first */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "topo: cannot open hwloc XML '%s': %s", path, strerror(-rc));
		return rc;
	}
	rw_close_fd(&fd);
	rc = load(&h, path);
	if (rc)
		return rc;
	if (hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU) <= 0) {
		RW_WARN(RW_LOG_INIT, "topo: hwloc XML '%s' has no processing unit", path);
		hwloc_topology_destroy(h);
		return -EINVAL;
	}
	rc = build(t, h);
	hwloc_topology_destroy(h);
	return rc;
}

int rw_topo_hwloc_live(struct rw_topo *t)
{
	hwloc_topology_t h;
	int rc = load(&h, NULL);

	if (rc)
		return rc;
	rc = build(t, h);
	hwloc_topology_destroy(h);
	return rc;
}

#endif /* RW_HAVE_HWLOC */

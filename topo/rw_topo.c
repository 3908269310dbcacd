/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct rw_topo, the model: the builders the front-ends use (hwloc, sysfs,
 * NVML), finishing (PCI order, rails), lifecycle and accessors.  What is
 * read live from this machine's sysfs is in rw_topo_live.c; what the net
 * plugin reports about a NIC in rw_topo_net.c.
 */
#include "topo/rw_topo_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "topo/rw_sysfs.h"

/* --- building ------------------------------------------------------------- */

struct rw_topo *rw_topo_alloc(const struct rw_config *cfg, const char *source)
{
	struct rw_topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->source, sizeof(t->source), "%s", source);
	snprintf(t->sysfs_root, sizeof(t->sysfs_root), "%s", cfg->sysfs_root);
	t->sys_bw_gbps = 10.0f;
	return t;
}

static int grow(void **arr, int *cap, int need, size_t elem)
{
	void *p;
	int ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int rw_topo_add_pci(struct rw_topo *t, const struct rw_topo_pci *node)
{
	int rc = grow((void **)&t->pci, &t->cap_pci, t->npci + 1, sizeof(*t->pci));

	if (rc)
		return rc;
	t->pci[t->npci] = *node;
	return t->npci++;
}

int rw_topo_add_gpu(struct rw_topo *t, const struct rw_topo_gpu *gpu, int pci)
{
	int cap = t->cap_gpus;
	int rc = grow((void **)&t->gpus, &t->cap_gpus, t->ngpus + 1, sizeof(*t->gpus));

	if (!rc) {
		t->cap_gpus = cap;
		rc = grow((void **)&t->gpu_pci, &t->cap_gpus, t->ngpus + 1, sizeof(int));
	}
	if (rc)
		return rc;
	t->gpus[t->ngpus] = *gpu;
	t->gpu_pci[t->ngpus++] = pci;
	return 0;
}

int rw_topo_add_nic(struct rw_topo *t, const struct rw_topo_nic *nic, int pci)
{
	int cap = t->cap_nics;
	int rc = grow((void **)&t->nics, &t->cap_nics, t->nnics + 1, sizeof(*t->nics));

	if (!rc) {
		t->cap_nics = cap;
		rc = grow((void **)&t->nic_pci, &t->cap_nics, t->nnics + 1, sizeof(int));
	}
	if (rc)
		return rc;
	t->nics[t->nnics] = *nic;
	t->nic_pci[t->nnics++] = pci;
	return 0;
}

int rw_topo_add_numa(struct rw_topo *t, const struct rw_topo_numa *numa)
{
	int rc = grow((void **)&t->numa, &t->cap_numa, t->nnuma + 1, sizeof(*t->numa));

	if (rc)
		return rc;
	t->numa[t->nnuma++] = *numa;
	return 0;
}

void rw_topo_add_note(struct rw_topo *t, const char *fmt, ...)
{
	va_list ap;

	if (t->nnotes >= RW_TOPO_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(t->notes[t->nnotes++], RW_TOPO_NOTE_MAX, fmt, ap);
	va_end(ap);
}

int rw_topo_busid_norm(const char *in, char *out, size_t len)
{
	unsigned dom = 0, bus, dev, fn;
	int colons = 0;
	int n;

	for (const char *p = in; *p; p++)
		colons += *p == ':';
	if (colons == 2)
		n = sscanf(in, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4;
	else if (colons == 1)
		n = sscanf(in, "%x:%x.%x", &bus, &dev, &fn) == 3;
	else
		n = 0;
	if (!n || dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	n = snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* --- finishing: PCI order, NIC facts, rails -------------------------------- */

static int cmp_busid(const char *a, const char *b)
{
	/* non-PCI ("") after every PCI device */
	if (!*a != !*b)
		return *a ? -1 : 1;
	return strcmp(a, b);
}

static int sort_gpus(struct rw_topo *t)
{
	/* insertion sort: a host has a handful of devices */
	for (int i = 1; i < t->ngpus; i++) {
		struct rw_topo_gpu g = t->gpus[i];
		int p = t->gpu_pci[i], j = i;

		for (; j > 0 && cmp_busid(t->gpus[j - 1].busid, g.busid) > 0; j--) {
			t->gpus[j] = t->gpus[j - 1];
			t->gpu_pci[j] = t->gpu_pci[j - 1];
		}
		t->gpus[j] = g;
		t->gpu_pci[j] = p;
	}
	return 0;
}

static int nic_cmp(const struct rw_topo_nic *a, const struct rw_topo_nic *b)
{
	int c = cmp_busid(a->busid, b->busid);

	return c ? c : strcmp(a->name, b->name);
}

static void sort_nics(struct rw_topo *t)
{
	for (int i = 1; i < t->nnics; i++) {
		struct rw_topo_nic n = t->nics[i];
		int p = t->nic_pci[i], j = i;

		for (; j > 0 && nic_cmp(&t->nics[j - 1], &n) > 0; j--) {
			t->nics[j] = t->nics[j - 1];
			t->nic_pci[j] = t->nic_pci[j - 1];
		}
		t->nics[j] = n;
		t->nic_pci[j] = p;
	}
}

/* "/sys/devices/pci0000:00/0000:00:01.1/.../0000:0c:00.0" from the tree. */
static void build_pci_path(const struct rw_topo *t, int node, char *out, size_t len)
{
	int chain[64], n = 0;
	size_t off;

	for (int v = node; v >= 0 && n < (int)RW_ARRAY_SIZE(chain); v = t->pci[v].parent)
		chain[n++] = v;
	off = (size_t)snprintf(out, len, "/sys/devices");
	for (int i = n - 1; i >= 0 && off < len; i--)
		off += (size_t)snprintf(out + off, len - off, "/%s", t->pci[chain[i]].busid);
}

static void finish_nic(struct rw_topo *t, int i)
{
	struct rw_topo_nic *nic = &t->nics[i];
	int pci = t->nic_pci[i];

	nic->rail_id = RW_TOPO_ID_UNDEF;
	nic->plane_id = RW_TOPO_ID_UNDEF;
	if (!nic->port)
		nic->port = 1;
	if (pci >= 0) {
		nic->numa = t->pci[pci].numa;
		build_pci_path(t, pci, nic->pci_path, sizeof(nic->pci_path));
	}
	if (t->read_sysfs)
		rw_topo_nic_read_live(t, nic, pci >= 0); /* rw_topo_live.c */
}

/*
 * Rails can be inferred when every usable RDMA NIC (at least two, all of one
 * speed) is the nearest NIC of some GPU through PCIe switches only: then NIC
 * k of this host sits where NIC k of an identical host does, and the cluster
 * is cabled so (one leaf switch per rail).  The rail is the NIC's rank among
 * all RDMA NICs, down ones included, so a dead port does not renumber the
 * others.  Planes: a port of a multi-plane HCA is on plane port-1.
 */
static void infer_rails(struct rw_topo *t)
{
	int served[64] = {0};
	int nrdma = 0, nup = 0, speed = -1;
	bool ok = true;

	for (int i = 0; i < t->nnics; i++) {
		const struct rw_topo_nic *n = &t->nics[i];

		if (n->kind == RW_TOPO_NIC_ETH)
			continue;
		nrdma++;
		if (n->state == RW_TOPO_LINK_DOWN)
			continue;
		nup++;
		if (speed >= 0 && n->speed_mbps != speed)
			ok = false;
		speed = n->speed_mbps;
	}
	if (nup < 2 || !t->ngpus || t->nnics > (int)RW_ARRAY_SIZE(served))
		return;
	for (int g = 0; g < t->ngpus; g++) {
		struct rw_topo_nic_choice c;

		if (!rw_topo_nic_for_gpu(t, g, &c) && c.nic >= 0 && c.path.type <= RW_TOPO_PATH_PXB)
			served[c.nic] = 1;
	}
	for (int i = 0; i < t->nnics; i++) {
		const struct rw_topo_nic *n = &t->nics[i];

		if (n->kind != RW_TOPO_NIC_ETH && n->state != RW_TOPO_LINK_DOWN && !served[i])
			ok = false;
	}
	if (!ok) {
		rw_topo_add_note(t, "rails: not inferred (RDMA NICs differ in speed, or some "
				    "are not a GPU's own NIC behind a PCIe switch)");
		return;
	}
	for (int i = 0, rail = 0; i < t->nnics; i++) {
		struct rw_topo_nic *n = &t->nics[i];

		if (n->kind == RW_TOPO_NIC_ETH)
			continue;
		n->rail_id = rail++;
		n->plane_id = n->port - 1;
	}
	rw_topo_add_note(t,
			 "rails: %d RDMA NICs, each a GPU group's own: rail = rank of the "
			 "NIC in PCI order",
			 nrdma);
}

int rw_topo_finish(struct rw_topo *t)
{
	size_t nn = (size_t)t->ngpus * (size_t)t->ngpus;

	sort_gpus(t);
	sort_nics(t);
	for (int i = 0; i < t->ngpus; i++)
		if (t->gpu_pci[i] >= 0)
			t->gpus[i].numa = t->pci[t->gpu_pci[i]].numa;
	for (int i = 0; i < t->nnics; i++)
		finish_nic(t, i);
	t->nvl_bw = calloc(nn ? nn : 1, sizeof(float));
	t->nvs_bw = calloc(t->ngpus ? (size_t)t->ngpus : 1, sizeof(float));
	if (!t->nvl_bw || !t->nvs_bw)
		return -ENOMEM;
	infer_rails(t);
	return 0;
}

int rw_topo_set_nvlink(struct rw_topo *t, const char *busid_a, const char *busid_b, float gbps)
{
	int a = rw_topo_gpu_find(t, busid_a), b = rw_topo_gpu_find(t, busid_b);

	if (a < 0 || b < 0 || a == b)
		return -ENOENT;
	t->nvl_bw[a * t->ngpus + b] = gbps;
	t->nvl_bw[b * t->ngpus + a] = gbps;
	return 0;
}

int rw_topo_set_nvswitch(struct rw_topo *t, const char *busid, float gbps)
{
	int a = rw_topo_gpu_find(t, busid);

	if (a < 0)
		return -ENOENT;
	t->nvs_bw[a] = gbps;
	return 0;
}

/* --- lifecycle -------------------------------------------------------------- */

void rw_topo_destroy(struct rw_topo *t)
{
	if (!t)
		return;
	free(t->pci);
	free(t->numa);
	free(t->gpus);
	free(t->gpu_pci);
	free(t->nics);
	free(t->nic_pci);
	free(t->nvl_bw);
	free(t->nvs_bw);
	free(t);
}

int rw_topo_create_from_xml(const struct rw_config *cfg, const char *path, struct rw_topo **out)
{
#if RW_HAVE_HWLOC
	char source[RW_TOPO_PATH_MAX + 16];
	struct rw_topo *t;
	int rc;

	snprintf(source, sizeof(source), "hwloc XML %s", path);
	t = rw_topo_alloc(cfg, source);
	if (!t)
		return -ENOMEM;
	/* a recorded machine never reads this machine's /sys */
	t->read_sysfs = cfg->sysfs_root[0] != '\0';
	rc = rw_topo_hwloc_xml(t, path);
	if (rc)
		goto err_destroy;
	*out = t;
	return 0;

err_destroy:
	rw_topo_destroy(t);
	return rc;
#else
	(void)cfg, (void)out;
	RW_WARN(RW_LOG_INIT,
		"topo: cannot load '%s': ringway was built without hwloc "
		"(RINGWAY_WITH_HWLOC=OFF or libhwloc-dev missing)",
		path);
	return -ENOTSUP;
#endif
}

int rw_topo_create(const struct rw_config *cfg, struct rw_topo **out)
{
	if (cfg->topo_xml[0])
		return rw_topo_create_from_xml(cfg, cfg->topo_xml, out);
	return rw_topo_create_live(cfg, out);
}

/* --- accessors --------------------------------------------------------------- */

const char *rw_topo_source(const struct rw_topo *t)
{
	return t->source;
}

const char *rw_topo_machine_name(const struct rw_topo *t)
{
	return t->machine;
}

const char *rw_topo_cpu_model(const struct rw_topo *t)
{
	return t->cpu_model;
}

int rw_topo_numa_count(const struct rw_topo *t)
{
	return t->nnuma;
}

int rw_topo_gpu_count(const struct rw_topo *t)
{
	return t->ngpus;
}

int rw_topo_nic_count(const struct rw_topo *t)
{
	return t->nnics;
}

const struct rw_topo_numa *rw_topo_numa_get(const struct rw_topo *t, int i)
{
	return i >= 0 && i < t->nnuma ? &t->numa[i] : NULL;
}

const struct rw_topo_gpu *rw_topo_gpu_get(const struct rw_topo *t, int i)
{
	return i >= 0 && i < t->ngpus ? &t->gpus[i] : NULL;
}

const struct rw_topo_nic *rw_topo_nic_get(const struct rw_topo *t, int i)
{
	return i >= 0 && i < t->nnics ? &t->nics[i] : NULL;
}

const char *rw_topo_note(const struct rw_topo *t, int i)
{
	return i >= 0 && i < t->nnotes ? t->notes[i] : NULL;
}

int rw_topo_gpu_find(const struct rw_topo *t, const char *busid)
{
	char norm[RW_TOPO_BUSID_MAX];

	if (rw_topo_busid_norm(busid, norm, sizeof(norm)))
		return -1;
	for (int i = 0; i < t->ngpus; i++)
		if (!strcmp(t->gpus[i].busid, norm))
			return i;
	return -1;
}

int rw_topo_nic_find(const struct rw_topo *t, const char *name)
{
	char norm[RW_TOPO_BUSID_MAX];
	bool bus = !rw_topo_busid_norm(name, norm, sizeof(norm));

	for (int i = 0; i < t->nnics; i++) {
		const struct rw_topo_nic *n = &t->nics[i];

		if (!strcmp(n->name, name) || (n->ibdev[0] && !strcmp(n->ibdev, name)) ||
		    (n->netdev[0] && !strcmp(n->netdev, name)) || (bus && !strcmp(n->busid, norm)))
			return i;
	}
	return -1;
}

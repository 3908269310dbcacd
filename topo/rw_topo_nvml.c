/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVLink from NVML, reached with dlopen so that ringway neither links nor
 * needs libnvidia-ml: a machine without it simply has no NVLink data.  The
 * few declarations below are ringway's own, matching NVML's C ABI (these
 * entry points have kept their signatures since the _v2/_v3 suffixes).
 * No CUDA call is made.
 */
#include "topo/rw_topo_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"

#define NVML_SUCCESS	     0
#define NVML_FEATURE_ENABLED 1
#define NVML_LINKS_MAX	     18 /* NVML_NVLINK_MAX_LINKS in current NVML */

typedef struct rw_nvml_device *rw_nvml_device_t;

/* nvmlPciInfo_t */
struct rw_nvml_pci_info {
	char bus_id_legacy[16];
	unsigned domain;
	unsigned bus;
	unsigned device;
	unsigned pci_device_id;
	unsigned pci_subsystem_id;
	char bus_id[32]; /* "00000000:07:00.0" */
};

struct rw_nvml_fns {
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error_string)(int);
	int (*device_count)(unsigned *count);
	int (*device_by_index)(unsigned index, rw_nvml_device_t *dev);
	int (*pci_info)(rw_nvml_device_t dev, struct rw_nvml_pci_info *pci);
	int (*link_state)(rw_nvml_device_t dev, unsigned link, int *active);
	int (*link_remote_pci)(rw_nvml_device_t dev, unsigned link, struct rw_nvml_pci_info *pci);
	int (*link_version)(rw_nvml_device_t dev, unsigned link, unsigned *version);
};

static int sym(void *lib, const char *name, void *fn, size_t size)
{
	void *p = dlsym(lib, name);

	if (!p || size != sizeof(p))
		return -ENOSYS;
	memcpy(fn, &p, sizeof(p)); /* POSIX: dlsym's result is a function's address */
	return 0;
}

#define SYM(lib, fns, field, name) sym((lib), (name), &(fns)->field, sizeof((fns)->field))

static int load_fns(void *lib, struct rw_nvml_fns *f, const char **missing)
{
	static const char *const names[] = {
		"nvmlInit_v2",
		"nvmlShutdown",
		"nvmlErrorString",
		"nvmlDeviceGetCount_v2",
		"nvmlDeviceGetHandleByIndex_v2",
		"nvmlDeviceGetPciInfo_v3",
		"nvmlDeviceGetNvLinkState",
		"nvmlDeviceGetNvLinkRemotePciInfo_v2",
	};
	int rc[] = {
		SYM(lib, f, init, names[0]),
		SYM(lib, f, shutdown, names[1]),
		SYM(lib, f, error_string, names[2]),
		SYM(lib, f, device_count, names[3]),
		SYM(lib, f, device_by_index, names[4]),
		SYM(lib, f, pci_info, names[5]),
		SYM(lib, f, link_state, names[6]),
		SYM(lib, f, link_remote_pci, names[7]),
	};

	_Static_assert(RW_ARRAY_SIZE(names) == RW_ARRAY_SIZE(rc), "one name per symbol");
	for (size_t i = 0; i < RW_ARRAY_SIZE(rc); i++)
		if (rc[i]) {
			*missing = names[i];
			return rc[i];
		}
	if (SYM(lib, f, link_version, "nvmlDeviceGetNvLinkVersion"))
		f->link_version = NULL; /* optional: bandwidth per link then assumed */
	return 0;
}

/* Usable GB/s of one link of an NVLink generation (NCCL's figures). */
static float link_gbps(unsigned version)
{
	static const float bw[] = {[1] = 18.0f, [2] = 20.0f, [3] = 20.0f, [4] = 20.6f, [5] = 40.1f};

	return version < RW_ARRAY_SIZE(bw) && bw[version] > 0 ? bw[version] : 20.0f;
}

static const char *errstr(const struct rw_nvml_fns *f, int ret)
{
	const char *s = f->error_string ? f->error_string(ret) : NULL;

	return s ? s : "unknown error";
}

/* Links of one device: into links[] (GPU peers) and *to_switch. */
static int scan_device(struct rw_topo *t, const struct rw_nvml_fns *f, unsigned i, float *links,
		       float *to_switch, int *gpu)
{
	struct rw_nvml_pci_info pci;
	char busid[RW_TOPO_BUSID_MAX];
	rw_nvml_device_t dev;
	int ret;

	ret = f->device_by_index(i, &dev);
	if (ret == NVML_SUCCESS)
		ret = f->pci_info(dev, &pci);
	if (ret != NVML_SUCCESS) {
		rw_topo_add_note(t, "NVML: device %u: %s; its links are left out", i,
				 errstr(f, ret));
		return 0;
	}
	if (rw_topo_busid_norm(pci.bus_id, busid, sizeof(busid)) ||
	    (*gpu = rw_topo_gpu_find(t, busid)) < 0)
		return 0; /* a GPU the topology does not know (hidden from hwloc) */
	for (unsigned l = 0; l < NVML_LINKS_MAX; l++) {
		struct rw_nvml_pci_info remote;
		unsigned version = 0;
		int active = 0, peer;

		if (f->link_state(dev, l, &active) != NVML_SUCCESS ||
		    active != NVML_FEATURE_ENABLED)
			continue;
		if (f->link_remote_pci(dev, l, &remote) != NVML_SUCCESS)
			continue;
		if (f->link_version && f->link_version(dev, l, &version) != NVML_SUCCESS)
			version = 0;
		peer = rw_topo_busid_norm(remote.bus_id, busid, sizeof(busid))
			       ? -1
			       : rw_topo_gpu_find(t, busid);
		if (peer >= 0 && peer != *gpu)
			links[peer] += link_gbps(version);
		else if (peer < 0)
			*to_switch += link_gbps(version); /* an NVSwitch (or a CPU) */
	}
	return 1;
}

int rw_topo_load_nvml(struct rw_topo *t, const char *libname)
{
	struct rw_nvml_fns f = {0};
	const char *missing = NULL;
	float *links;
	unsigned count = 0;
	int ret, rc, nlinks = 0;
	void *lib;

	lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		RW_INFO(RW_LOG_INIT, "topo: NVML not loaded (%s): no NVLink data", dlerror());
		rw_topo_add_note(t, "NVML absent (%s not found): no NVLink data", libname);
		return -ENOENT;
	}
	rc = load_fns(lib, &f, &missing);
	if (rc) {
		RW_INFO(RW_LOG_INIT, "topo: %s lacks %s: no NVLink data", libname, missing);
		rw_topo_add_note(t, "NVML unusable (%s lacks %s): no NVLink data", libname,
				 missing);
		goto out_close;
	}
	ret = f.init();
	if (ret != NVML_SUCCESS) {
		RW_INFO(RW_LOG_INIT, "topo: nvmlInit_v2() failed: %s (%d): no NVLink data",
			errstr(&f, ret), ret);
		rw_topo_add_note(t, "NVML failed (nvmlInit_v2: %s): no NVLink data",
				 errstr(&f, ret));
		rc = -EIO;
		goto out_close;
	}
	ret = f.device_count(&count);
	if (ret != NVML_SUCCESS) {
		RW_INFO(RW_LOG_INIT, "topo: nvmlDeviceGetCount_v2() failed: %s (%d)",
			errstr(&f, ret), ret);
		rw_topo_add_note(t, "NVML failed (nvmlDeviceGetCount_v2: %s): no NVLink data",
				 errstr(&f, ret));
		rc = -EIO;
		goto out_shutdown;
	}
	links = calloc((size_t)t->ngpus + 1, sizeof(float));
	if (!links) {
		rc = -ENOMEM;
		goto out_shutdown;
	}
	for (unsigned i = 0; i < count; i++) {
		float to_switch = 0;
		int gpu = -1;

		memset(links, 0, ((size_t)t->ngpus + 1) * sizeof(float));
		if (!scan_device(t, &f, i, links, &to_switch, &gpu))
			continue;
		for (int p = 0; p < t->ngpus; p++)
			if (links[p] > 0) {
				t->nvl_bw[gpu * t->ngpus + p] = links[p];
				nlinks++;
			}
		if (to_switch > 0) {
			t->nvs_bw[gpu] = to_switch;
			nlinks++;
		}
	}
	free(links);
	rw_topo_add_note(t, "NVLink: NVML (%s) reports %d GPU%s, %s", libname, (int)count,
			 count == 1 ? "" : "s", nlinks ? "with NVLink" : "no active NVLink");
	rc = 0;
out_shutdown:
	f.shutdown();
out_close:
	dlclose(lib);
	return rc;
}

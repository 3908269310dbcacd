/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside topo/: the graph behind struct rw_topo and the helpers its
 * front-ends (hwloc, sysfs, NVML) fill it with.  Not for other modules.
 *
 * Building: a front-end calls rw_topo_alloc(), adds PCI nodes parent first
 * (rw_topo_add_pci), GPUs and NICs on their nodes, NUMA nodes and notes,
 * then rw_topo_finish() sorts devices into PCI order, reads NIC speed and
 * state from sysfs and infers rails.  NVML adds NVLinks afterwards.
 */
#ifndef RW_TOPO_INT_H
#define RW_TOPO_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/rw_common.h"
#include "topo/rw_topo.h"

#define RW_TOPO_MAX_NOTES 16
#define RW_TOPO_NOTE_MAX  192

enum rw_topo_pci_kind {
	RW_TOPO_PCI_HOSTBRIDGE, /**< a PCI root: the CPU side */
	RW_TOPO_PCI_BRIDGE,	/**< root port, switch port or other bridge */
	RW_TOPO_PCI_DEVICE,
};

/** One element of the PCIe tree. */
struct rw_topo_pci {
	enum rw_topo_pci_kind kind;
	int parent;		       /**< index; -1 for a host bridge */
	int numa;		       /**< NUMA os_index of its host bridge, -1 unknown */
	char busid[RW_TOPO_BUSID_MAX]; /**< host bridge: "pci0000:00" */
	float link_gbps;	       /**< its upstream PCIe link, GB/s; 0 unknown */
	unsigned vendor, device, class_id;
};

struct rw_topo {
	char source[RW_TOPO_PATH_MAX + 32];
	char machine[64];
	char cpu_model[96];
	char cpu_vendor[32];
	char sysfs_root[RW_PARAM_STR_MAX];
	bool read_sysfs;   /**< NIC speed/state from sysfs (live, or a fixture root) */
	float sys_bw_gbps; /**< CPU interconnect estimate, for SYS paths */

	struct rw_topo_pci *pci;
	int npci, cap_pci;
	struct rw_topo_numa *numa;
	int nnuma, cap_numa;
	struct rw_topo_gpu *gpus;
	int *gpu_pci; /**< PCI node of each GPU */
	int ngpus, cap_gpus;
	struct rw_topo_nic *nics;
	int *nic_pci; /**< PCI node of each NIC, -1 when not on PCI */
	int nnics, cap_nics;

	/* NVLink: ngpus x ngpus matrix of GB/s (0: no link), and each GPU's
	 * bandwidth into an NVSwitch fabric (GPUs on it all reach each other). */
	float *nvl_bw;
	float *nvs_bw;

	char notes[RW_TOPO_MAX_NOTES][RW_TOPO_NOTE_MAX];
	int nnotes;
};

/** Zeroed topology with the config's sysfs root.  NULL when out of memory. */
struct rw_topo *rw_topo_alloc(const struct rw_config *cfg, const char *source);

/** Append a PCI node; its index, or -ENOMEM. */
int rw_topo_add_pci(struct rw_topo *t, const struct rw_topo_pci *node);
/** Append a GPU / NIC on PCI node `pci` (-1: not on PCI); 0 or -ENOMEM. */
int rw_topo_add_gpu(struct rw_topo *t, const struct rw_topo_gpu *gpu, int pci);
int rw_topo_add_nic(struct rw_topo *t, const struct rw_topo_nic *nic, int pci);
int rw_topo_add_numa(struct rw_topo *t, const struct rw_topo_numa *numa);

/** Record a note (also logged at INFO by the caller when it matters). */
void rw_topo_add_note(struct rw_topo *t, const char *fmt, ...) RW_PRINTF(2, 3);

/**
 * Sort GPUs and NICs into PCI order, read NIC speed/state/port from sysfs
 * when allowed, build PCI paths, size the NVLink matrices, infer rails.
 * \return 0 or -ENOMEM.
 */
int rw_topo_finish(struct rw_topo *t);

/** NVLink between two GPUs / from a GPU into an NVSwitch fabric, by bus id,
 *  after rw_topo_finish().  Unknown bus ids are ignored (0 or -ENOENT). */
int rw_topo_set_nvlink(struct rw_topo *t, const char *busid_a, const char *busid_b, float gbps);
int rw_topo_set_nvswitch(struct rw_topo *t, const char *busid, float gbps);

/** Normalise "0000:1B:00.0" / "00000000:1b:00.0" to "0000:1b:00.0". */
int rw_topo_busid_norm(const char *in, char *out, size_t len);

/** Parse an RDMA port state ("4: ACTIVE" or "4"). */
enum rw_topo_link_state rw_topo_ib_state(const char *s);
/** Read a NIC's facts from sysfs into the model (rw_topo_live.c): the PCI
 *  path as the kernel resolves it (else the model's stays), port state,
 *  speed, GUID.  Called by rw_topo_finish when t->read_sysfs. */
void rw_topo_nic_read_live(struct rw_topo *t, struct rw_topo_nic *nic, bool on_pci);
/** A GUID as sysfs prints it ("b8ce:f603:00a1:2b43"): its hex digits in order. */
uint64_t rw_topo_guid_parse(const char *s);
/** One NIC's sysfs files under root (rw_topo_live.c); 0 when absent or
 *  meaningless.  Port p's rate in Mb/s; the node GUID; a netdev's speed. */
int rw_topo_ib_rate(const char *root, const char *ibdev, int port);
uint64_t rw_topo_ib_guid(const char *root, const char *ibdev);
int rw_topo_netdev_speed(const char *root, const char *netdev);

/** Path between PCI nodes (either may be -1: not on PCI). */
enum rw_topo_path_type rw_topo_pci_path_type(const struct rw_topo *t, int a, int b);
float rw_topo_pci_path_bw(const struct rw_topo *t, int a, int b);

/* Front-ends.  Each returns 0 or -errno and logs its own failure once. */
int rw_topo_hwloc_live(struct rw_topo *t);
int rw_topo_hwloc_xml(struct rw_topo *t, const char *path);
int rw_topo_sysfs_live(struct rw_topo *t);

#endif /* RW_TOPO_INT_H */

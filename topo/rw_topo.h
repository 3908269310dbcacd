/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo: what the machine is, and the decisions ringway takes from it.
 *
 * A struct rw_topo is a small graph built once from hwloc (this machine, or
 * an hwloc XML file that replays another one), from sysfs when ringway was
 * built without hwloc, and from NVML for NVLink when libnvidia-ml.so.1 can be
 * dlopen'ed.  It holds NUMA nodes, the PCIe tree (host bridges, switches),
 * GPUs (NVIDIA, class 0x03xx) and NICs (InfiniBand/RoCE HCAs and Ethernet).
 *
 * Everything after creation is a pure function of that graph: the path
 * between two devices (classified as NCCL does), the NIC that serves each GPU
 * (with the reason), the order of a host's GPUs in a ring, the channels and
 * the ring through several hosts.  So every decision can be tested from an
 * XML file, without the hardware.
 *
 * Indexes: GPUs and NICs are numbered in PCI bus id order ("GPU 0" is the
 * lowest bus id, as with CUDA_DEVICE_ORDER=PCI_BUS_ID); NICs without a PCI
 * location come last.
 *
 * Lifecycle: create (blocks for discovery: hwloc, sysfs, NVML; typically
 * tens of milliseconds) -> read-only queries -> destroy.  Queries never
 * block, never allocate a result the caller must free, and may run from
 * several threads at once.  Pointers returned by accessors live until
 * rw_topo_destroy().
 */
#ifndef RW_TOPO_H
#define RW_TOPO_H

#include <stdint.h>
#include <stdio.h>

#include "common/rw_params.h"

#define RW_TOPO_NAME_MAX     32
#define RW_TOPO_BUSID_MAX    16 /* "0000:1b:00.0" */
#define RW_TOPO_PATH_MAX     256
#define RW_TOPO_REASON_MAX   192
#define RW_TOPO_MAX_CHANNELS 32
#define RW_TOPO_ID_UNDEF     (-1) /* rail_id / plane_id not inferred */

struct rw_topo;

/** One NUMA node (usually one CPU socket). */
struct rw_topo_numa {
	int os_index;
	int ncores;
	int npus;
	char cpus[64]; /**< PU list, "0-63,128-191" (cut with "..." when long) */
};

struct rw_topo_gpu {
	char busid[RW_TOPO_BUSID_MAX];
	char model[64];
	int numa; /**< os_index of its NUMA node, -1 when unknown */
};

enum rw_topo_nic_kind {
	RW_TOPO_NIC_IB,	  /**< InfiniBand HCA (verbs) */
	RW_TOPO_NIC_ROCE, /**< Ethernet with an RDMA device (RoCE) */
	RW_TOPO_NIC_ETH,  /**< Ethernet without RDMA (sockets only) */
};

enum rw_topo_link_state {
	RW_TOPO_LINK_UNKNOWN,
	RW_TOPO_LINK_UP,
	RW_TOPO_LINK_DOWN,
};

struct rw_topo_nic {
	char name[RW_TOPO_NAME_MAX];	 /**< RDMA device ("mlx5_0"), else the netdev */
	char ibdev[RW_TOPO_NAME_MAX];	 /**< "" when the NIC has no RDMA device */
	char netdev[RW_TOPO_NAME_MAX];	 /**< "" when it has no netdev */
	char busid[RW_TOPO_BUSID_MAX];	 /**< "" when not on PCI */
	char pci_path[RW_TOPO_PATH_MAX]; /**< "/sys/devices/pci0000:00/.../0000:0c:00.0" */
	enum rw_topo_nic_kind kind;
	enum rw_topo_link_state state;
	int port; /**< first active port (1-based), 1 when none is known */
	int nports;
	int speed_mbps; /**< 0 when unknown */
	uint64_t guid;	/**< NodeGUID (RDMA) or MAC (Ethernet); 0 when unknown */
	int numa;
	int rail_id; /**< RW_TOPO_ID_UNDEF unless rails could be inferred */
	int plane_id;
};

/** Path types, closest first, with NCCL's meaning. */
enum rw_topo_path_type {
	RW_TOPO_PATH_LOC,  /**< the same device */
	RW_TOPO_PATH_NVL,  /**< NVLink (direct or through NVSwitch) */
	RW_TOPO_PATH_PIX,  /**< at most one PCIe switch */
	RW_TOPO_PATH_PXB,  /**< several PCIe switches, no host bridge */
	RW_TOPO_PATH_PHB,  /**< through a PCIe host bridge (the CPU) */
	RW_TOPO_PATH_NODE, /**< across host bridges inside one NUMA node */
	RW_TOPO_PATH_SYS,  /**< across NUMA nodes (the CPU interconnect) */
	RW_TOPO_PATH_COUNT
};

struct rw_topo_path {
	enum rw_topo_path_type type;
	float bw_gbps; /**< estimate: the narrowest link on the way, GB/s */
};

enum rw_topo_dev_kind {
	RW_TOPO_DEV_GPU,
	RW_TOPO_DEV_NIC,
};

/** A device of a topology: a GPU or a NIC by index. */
struct rw_topo_dev {
	enum rw_topo_dev_kind kind;
	int index;
};

#define RW_TOPO_GPU(i) ((struct rw_topo_dev){.kind = RW_TOPO_DEV_GPU, .index = (i)})
#define RW_TOPO_NIC(i) ((struct rw_topo_dev){.kind = RW_TOPO_DEV_NIC, .index = (i)})

/** Which NIC serves a GPU, and why. */
struct rw_topo_nic_choice {
	int nic; /**< NIC index, -1 when the host has none */
	struct rw_topo_path path;
	char reason[RW_TOPO_REASON_MAX]; /**< "same PCIe switch (PIX, 31.5 GB/s)" */
};

/**
 * One channel of a host: where the ring enters and leaves it.  Channel c
 * visits the host's GPUs in ring order starting at position `first`; the
 * intra-host hop it cuts (the one before `first`) is replaced by the network.
 */
struct rw_topo_channel {
	int first;   /**< position in rw_topo_ring_order() where the host is entered */
	int gpu_in;  /**< GPU entered first, -1 on a host without GPU */
	int gpu_out; /**< GPU the ring leaves from, -1 on a host without GPU */
	int nic_in;  /**< NIC nearest gpu_in: receives from the previous host */
	int nic_out; /**< NIC nearest gpu_out: sends to the next host */
	enum rw_topo_path_type cut; /**< type of the intra-host hop replaced */
};

/** One stop of a ring through several hosts. */
struct rw_topo_hop {
	int host;    /**< index into the hosts array */
	int gpu;     /**< GPU index on that host, -1 on a host without GPU */
	int nic_in;  /**< >= 0 on a host's first stop: the NIC it is entered by */
	int nic_out; /**< >= 0 on a host's last stop: the NIC it leaves by */
};

/** Values for the plugin's getProperties, for one NIC. */
struct rw_topo_net_props {
	char pci_path[RW_TOPO_PATH_MAX]; /**< "" when the NIC is not on PCI */
	int speed_mbps;			 /**< 0 when unknown */
	uint64_t guid;
	int port;
	int numa;
	int16_t rail_id; /**< RW_TOPO_ID_UNDEF when not inferred */
	int16_t plane_id;
};

/* --- lifecycle ------------------------------------------------------------ */

/**
 * Discover this machine, or load cfg->topo_xml (RINGWAY_TOPO_XML) when set.
 * sysfs is read under cfg->sysfs_root (RINGWAY_SYSFS_ROOT).
 * \param[out] out the new topology, for rw_topo_destroy().
 * \return 0, or -errno (see the two functions below).  A machine without
 *         GPU or NIC is not an error.  Nothing is allocated on failure.
 * \note blocks for discovery.
 */
int rw_topo_create(const struct rw_config *cfg, struct rw_topo **out);

/**
 * This machine: hwloc (or sysfs when built without hwloc), then NVLink from
 * NVML when libnvidia-ml.so.1 loads (its absence is an INFO, not an error).
 * \return 0, or -ENOMEM; -EIO when hwloc cannot discover anything.
 */
int rw_topo_create_live(const struct rw_config *cfg, struct rw_topo **out);

/**
 * Replay a machine from an hwloc XML file (lstopo --of xml).  NVLink comes
 * from the file's "NVLinkBandwidth" matrix, never from this machine's NVML.
 * sysfs (NIC speed and port state) is read only when cfg->sysfs_root is set,
 * so a recorded machine never picks up this machine's NICs.
 * \return 0; -ENOENT (no such file), -EINVAL (not an hwloc XML topology),
 *         -ENOTSUP (built without hwloc).  Each failure is logged once.
 */
int rw_topo_create_from_xml(const struct rw_config *cfg, const char *path, struct rw_topo **out);

/**
 * Discovery from sysfs alone, under cfg->sysfs_root ("" = this machine): what
 * rw_topo_create_live() does when ringway is built without hwloc.  PCIe
 * switches come from each device's sysfs path; no NVML is read.
 * \return 0; -EIO (nothing found under the root), -ENOMEM.
 */
int rw_topo_create_from_sysfs(const struct rw_config *cfg, struct rw_topo **out);

/** Free a topology; NULL is a no-op. */
void rw_topo_destroy(struct rw_topo *topo);

/**
 * Add NVLink connections reported by an NVML library, matched to GPUs by PCI
 * bus id.  Called by rw_topo_create_live() with "libnvidia-ml.so.1"; tests
 * give a stand-in library.  No CUDA call is made.
 * \return 0 (links added, possibly none); -ENOENT (library not found),
 *         -ENOSYS (a needed symbol is missing), -EIO (NVML call failed).
 *         On failure the topology is unchanged and a note says why.
 */
int rw_topo_load_nvml(struct rw_topo *topo, const char *lib);

/* --- what was found ------------------------------------------------------- */

/**
 * The size of the last-level cache of CPU cpu (-1: the CPU this thread runs
 * on), from sysfs under cfg->sysfs_root: the data or unified cache of the
 * highest level among sys/devices/system/cpu/cpuN/cache/index*.  Needs no
 * topology; reads a few small files.
 * \return 0, or -errno: -ENOENT when sysfs describes no such cache, or
 *         what listing the CPU's cache directory gave (-EACCES, -ENOMEM,
 *         ...).  *out is untouched on failure.
 */
int rw_topo_cache_bytes(const struct rw_config *cfg, int cpu, size_t *out);

/** "hwloc, this machine", "hwloc XML file.xml", "sysfs, this machine". */
const char *rw_topo_source(const struct rw_topo *topo);
/** Machine name (DMI product) and CPU model, "" when unknown. */
const char *rw_topo_machine_name(const struct rw_topo *topo);
const char *rw_topo_cpu_model(const struct rw_topo *topo);

int rw_topo_numa_count(const struct rw_topo *topo);
int rw_topo_gpu_count(const struct rw_topo *topo);
int rw_topo_nic_count(const struct rw_topo *topo);
/** The i-th element, or NULL when i is out of range. */
const struct rw_topo_numa *rw_topo_numa_get(const struct rw_topo *topo, int i);
const struct rw_topo_gpu *rw_topo_gpu_get(const struct rw_topo *topo, int i);
const struct rw_topo_nic *rw_topo_nic_get(const struct rw_topo *topo, int i);

/** Index of the GPU with this PCI bus id ("0000:1b:00.0", any case), or -1. */
int rw_topo_gpu_find(const struct rw_topo *topo, const char *busid);
/** Index of the NIC with this RDMA device, netdev or bus id, or -1. */
int rw_topo_nic_find(const struct rw_topo *topo, const char *name);

/**
 * Notes gathered during discovery (NVML absent, a NIC without speed...),
 * one line each, for tools and reports.  NULL when i is out of range.
 */
const char *rw_topo_note(const struct rw_topo *topo, int i);

/* --- decisions ------------------------------------------------------------ */

/** "PIX" ... and "same PCIe switch" ... for a path type. */
const char *rw_topo_path_name(enum rw_topo_path_type type);
const char *rw_topo_path_desc(enum rw_topo_path_type type);

/**
 * Classify the path between two devices and estimate its bandwidth.
 * \return 0 or -EINVAL (bad index).
 */
int rw_topo_path(const struct rw_topo *topo, struct rw_topo_dev a, struct rw_topo_dev b,
		 struct rw_topo_path *out);

/**
 * The NIC that serves a GPU: the closest usable one (RDMA NICs before plain
 * Ethernet, ports that are up before ports that are down); GPUs tied between
 * several NICs are spread over them in GPU order.
 * \return 0 (out->nic == -1 with a reason when the host has no NIC), or
 *         -EINVAL (bad index).
 */
int rw_topo_nic_for_gpu(const struct rw_topo *topo, int gpu, struct rw_topo_nic_choice *out);

/**
 * The order of this host's GPUs in a ring: NVLink neighbours adjacent,
 * otherwise PCIe switch order (closest hops first, fewest slow hops).
 * \param[out] order GPU indexes, max entries at least.
 * \param[out] n number written (rw_topo_gpu_count(); 0 on a host without GPU).
 * \return 0 or -ENOSPC (max too small).
 */
int rw_topo_ring_order(const struct rw_topo *topo, int *order, int max, int *n);

/**
 * Channels of this host, each entering and leaving through NICs no other
 * channel uses while there are unused NICs left; channel 0 cuts the slowest
 * intra-host hop.  A host without GPU gets one channel per usable NIC of the
 * best kind.
 * \return 0; -ENODEV when the host has no NIC (nothing leaves the host);
 *         -EINVAL on bad arguments.
 */
int rw_topo_channels(const struct rw_topo *topo, struct rw_topo_channel *ch, int max, int *n);

/**
 * The ring through hosts[0..nhosts-1] for one channel: each host's GPUs
 * contiguous in its ring order, entered and left through the NICs nearest
 * the GPUs at the ends (a host with fewer channels uses channel % its count).
 * \param[out] hops max entries; *n receives the number of stops.
 * \return 0; -ENODEV (a host has no NIC), -ENOSPC, -EINVAL.
 */
int rw_topo_multihost_ring(const struct rw_topo *const *hosts, int nhosts, int channel,
			   struct rw_topo_hop *hops, int max, int *n);

/**
 * The NIC channel `channel` of a rank on `gpu` uses (-1: the rank has no
 * GPU): the one rw_topo_nic_for_gpu() names, with its reason, for channel
 * 0; channels spread over the NICs exactly as near (same path type and
 * bandwidth) in turn, starting from that one, and then say so ("...;
 * spread: channel 1 on NIC 2 of 2 equally near").  Without GPU: the host's
 * usable NICs in turn, fastest first.  out->nic is -1 (with a reason) on a
 * host without NIC.
 * \return 0, -EINVAL (bad gpu or channel), -ENOMEM.
 */
int rw_topo_channel_nic(const struct rw_topo *topo, int gpu, int channel,
			struct rw_topo_nic_choice *out);

/**
 * Where a GPU stands in its host's ring: its position in
 * rw_topo_ring_order(), counted from where channel 0 enters the host (so
 * the host's last GPU is where channel 0 leaves it).  Ranks of one host
 * sorted by it form the host's part of the ring.
 * \param[out] out the position, -1 when gpu is -1.  \return 0, -EINVAL,
 * -ENOMEM.
 */
int rw_topo_ring_rank(const struct rw_topo *topo, int gpu, int *out);

/**
 * What the net plugin reports for a device: name is an RDMA device, a netdev
 * or a PCI bus id.
 * \return 0 or -ENOENT (no such NIC).
 */
int rw_topo_net_props(const struct rw_topo *topo, const char *name, struct rw_topo_net_props *out);

/** What sysfs says about one NIC, read live (no model needed). */
struct rw_topo_nic_facts {
	char pci_path[RW_TOPO_PATH_MAX]; /**< its PCI function's directory; "" when not PCI */
	int speed_mbps;			 /**< 0 when sysfs does not know (virtual, loopback) */
	uint64_t guid;			 /**< NodeGUID (RDMA device) or MAC (netdev); 0: none */
	int ifindex;			 /**< a netdev's; 0 for RDMA devices or when unknown */
};

/**
 * The one reader of a NIC's PCI path, speed and GUID for the transports'
 * getProperties.  name is an RDMA device ("mlx5_0", looked up under
 * sys/class/infiniband) or else a netdev ("eth0", sys/class/net).  The PCI
 * path is the device link resolved and cut after its last PCI address
 * (virtio NICs resolve to .../0000:00:03.0/virtio2).  RDMA speed is port
 * 1's rate.  sysfs_root as for rw_sysfs_read ("" is the real /).  What
 * sysfs does not know stays 0 or "".  Never blocks.
 * \return 0, or -EINVAL (NULL or over-long name).
 */
int rw_topo_nic_facts(const char *sysfs_root, const char *name, struct rw_topo_nic_facts *out);

/**
 * The RoCE version sysfs gives GID `index` of port `port` of an RDMA device
 * (for verbs libraries without ibv_query_gid_ex): 2 for "RoCE v2", 1 for
 * another type ("IB/RoCE v1"), 0 when sysfs has no entry.
 */
int rw_topo_ib_gid_roce(const char *sysfs_root, const char *ibdev, int port, int index);

/**
 * Is a GPUDirect peer-memory module loaded (nvidia_peermem, or the older
 * nv_peer_mem)?  \param[out] evidence  the file that says so (may be NULL).
 */
bool rw_topo_peermem_loaded(const char *sysfs_root, const char **evidence);

/* --- pictures --------------------------------------------------------------- */

/**
 * The report ringway-topo prints: machine, devices, GPU -> NIC table with
 * reasons, ring order, channels and the ring through nhosts copies of this
 * host (nhosts < 2: left out).
 * \return 0 or -EIO (write failed).
 */
int rw_topo_write_report(const struct rw_topo *topo, int nhosts, FILE *f);

/**
 * A Graphviz (dot) picture: NUMA nodes and PCIe switches as clusters, GPUs
 * and NICs as nodes, NVLinks, GPU -> NIC choices and the ring (channel 0) as
 * edges.  \return 0 or -EIO.
 */
int rw_topo_write_dot(const struct rw_topo *topo, FILE *f);

#endif /* RW_TOPO_H */

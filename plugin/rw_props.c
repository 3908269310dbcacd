/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct rw_net_props -> ncclNetProperties_vN_t, one converter per struct
 * version.  NCCL hands getProperties an uninitialized struct, so every
 * converter writes every field.  The input is already fixed up by the
 * plugin (rw_plugin.c: load_props): names set, limits in NCCL's ranges.
 *
 * NCCL declares the strings `char *` but never writes through them; the
 * transport owns them until the plugin is destroyed.
 */
#include "plugin/rw_plugin.h"

#include "common/rw_log.h"

static char *abi_str(const char *s)
{
	return (char *)s;
}

/* vProps of v9..v11 hold 4 devices; a wider virtual device is cut. */
static int vdev_count(const struct rw_net_props *in, int max)
{
	if (in->vdev_ndevs > max) {
		RW_WARN_ONCE(RW_LOG_NET, "device %s fuses %d devices; this ABI version reports %d",
			     in->name, in->vdev_ndevs, max);
		return max;
	}
	return in->vdev_ndevs;
}

void rw_props_to_v6(const struct rw_net_props *in, ncclNetProperties_v6_t *out)
{
	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
}

void rw_props_to_v7(const struct rw_net_props *in, ncclNetProperties_v7_t *out)
{
	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
	out->netDeviceType = NCCL_NET_DEVICE_HOST;
	out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
}

void rw_props_to_v8(const struct rw_net_props *in, ncclNetProperties_v8_t *out)
{
	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->regIsGlobal = in->reg_is_global;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
	out->netDeviceType = NCCL_NET_DEVICE_HOST;
	out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
}

void rw_props_to_v9(const struct rw_net_props *in, ncclNetProperties_v9_t *out)
{
	int nv = vdev_count(in, NCCL_NET_MAX_DEVS_PER_NIC_V9);

	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->regIsGlobal = in->reg_is_global;
	out->forceFlush = in->force_flush;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
	out->netDeviceType = NCCL_NET_DEVICE_HOST;
	out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
	out->vProps.ndevs = nv;
	for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V9; i++)
		out->vProps.devs[i] = i < nv ? in->vdev_devs[i] : -1;
	out->maxP2pBytes = in->max_p2p_bytes;
	out->maxCollBytes = in->max_coll_bytes;
}

void rw_props_to_v11(const struct rw_net_props *in, ncclNetProperties_v11_t *out)
{
	int nv = vdev_count(in, NCCL_NET_MAX_DEVS_PER_NIC_V11);

	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->regIsGlobal = in->reg_is_global;
	out->forceFlush = in->force_flush;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
	out->netDeviceType = NCCL_NET_DEVICE_HOST;
	out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
	out->vProps.ndevs = nv;
	for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V11; i++)
		out->vProps.devs[i] = i < nv ? in->vdev_devs[i] : -1;
	out->maxP2pBytes = in->max_p2p_bytes;
	out->maxCollBytes = in->max_coll_bytes;
	out->maxMultiRequestSize = in->max_multi_request_size;
}

void rw_props_to_v12(const struct rw_net_props *in, ncclNetProperties_v12_t *out)
{
	int nv = vdev_count(in, NCCL_NET_MAX_DEVS_PER_NIC_V12);

	static_assert(RW_NET_MAX_DEVS_PER_NIC == NCCL_NET_MAX_DEVS_PER_NIC_V12,
		      "rw_net_props.vdev_devs must hold v12's vProps");
	out->name = abi_str(in->name);
	out->pciPath = abi_str(in->pci_path);
	out->guid = in->guid;
	out->ptrSupport = in->ptr_support;
	out->regIsGlobal = in->reg_is_global;
	out->forceFlush = in->force_flush;
	out->speed = in->speed_mbps;
	out->port = in->port;
	out->latency = in->latency_us;
	out->maxComms = in->max_comms;
	out->maxRecvs = in->max_recvs;
	out->netDeviceType = NCCL_NET_DEVICE_HOST;
	out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
	out->vProps.ndevs = nv;
	for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC_V12; i++)
		out->vProps.devs[i] = i < nv ? in->vdev_devs[i] : -1;
	out->maxP2pBytes = in->max_p2p_bytes;
	out->maxCollBytes = in->max_coll_bytes;
	out->maxMultiRequestSize = in->max_multi_request_size;
	out->railId = in->rail_id;
	out->planeId = in->plane_id;
}

/* --- getProperties of every version ---------------------------------------------------- */

/* The net and the CollNet tables of a version share these: NCCL requires
 * CollNet device i to be net device i. */
static int props_get(int dev, const void *props, struct rw_net_props *p)
{
	return props ? rw_plugin_props(dev, p)
		     : rw_plugin_bad_arg("getProperties", "props is NULL");
}

/* rw_abi_get_properties_vN: the common answer in version N's struct. */
#define RW_GET_PROPERTIES(v)                                                                       \
	ncclResult_t rw_abi_get_properties_v##v(int dev, ncclNetProperties_v##v##_t *props)        \
	{                                                                                          \
		struct rw_net_props p;                                                             \
		int rc = props_get(dev, props, &p);                                                \
                                                                                                   \
		if (rc == 0)                                                                       \
			rw_props_to_v##v(&p, props);                                               \
		return rw_status_to_nccl(rc);                                                      \
	}
RW_GET_PROPERTIES(6)
RW_GET_PROPERTIES(7)
RW_GET_PROPERTIES(8)
RW_GET_PROPERTIES(9)
RW_GET_PROPERTIES(11)
RW_GET_PROPERTIES(12)
#undef RW_GET_PROPERTIES

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every net / CollNet ABI version shares: constants, the device type,
 * and the device-offload handle (v7+).  Per-version structs live in
 * abi/nccl_net_vN.h; abi/nccl_net.h includes them all.
 */
#ifndef RW_ABI_NCCL_NET_COMMON_H
#define RW_ABI_NCCL_NET_COMMON_H

#include "abi/nccl_common.h"

/* Memory types: regMr's `type`, and the props.ptrSupport bitmask. */
#define NCCL_PTR_HOST	0x1
#define NCCL_PTR_CUDA	0x2
#define NCCL_PTR_DMABUF 0x4 /* v6+ */

/* Bytes of the opaque listen handle NCCL ships to the peer (v5+). */
#define NCCL_NET_HANDLE_MAXSIZE	   128
#define NCCL_NET_HANDLE_MAXSIZE_V4 64

/* Requests each send/recv comm must accept in flight. */
#define NCCL_NET_MAX_REQUESTS	 32 /* v7+ */
#define NCCL_NET_MAX_REQUESTS_V6 8

/*
 * Not a flag but a request pointer value (v9+): for LL/LL128 receives NCCL
 * stores it into *request before irecv.  The plugin must still overwrite
 * *request with a real request or NULL.
 */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_MULTI_REQUEST		  0x2 /* 2.28, unused by the 2.28.9 core */

/* Upper bound NCCL accepts for props.maxP2pBytes / maxCollBytes (1 TiB). */
#define NCCL_MAX_NET_SIZE_BYTES (1ull << 40)
/* What NCCL's <= v8 shims assume for maxP2pBytes / maxCollBytes. */
#define MAX_NET_SIZE	 (1ull << 30)
#define MAX_COLLNET_SIZE (1ull << 29)

#define NCCL_NET_MAX_PLUGINS	     16
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)     /* v10+ */
#define NCCL_NET_ATTR_UNDEF	     (-1)     /* v11+ */
#define NCCL_NET_ID_UNDEF	     (-1)     /* v12 railId / planeId */
#define NCCL_NET_MR_FLAG_FORCE_SO    (1 << 0) /* GIN only */

/* --- device offload (v7+) ----------------------------------------------- */

typedef enum {
	NCCL_NET_DEVICE_HOST = 0,   /* host-driven plugin: ringway */
	NCCL_NET_DEVICE_UNPACK = 1, /* device-side unpack (TCPX style) */
	NCCL_NET_DEVICE_GIN_PROXY = 2,
	NCCL_NET_DEVICE_GIN_GDAKI = 3
} ncclNetDeviceType;

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0 /* the version to report with HOST */
#define NCCL_NET_DEVICE_UNPACK_VERSION	0x7
#define NCCL_NET_MTU_SIZE		4096

/* Written by a device-offload plugin in connect/accept; a HOST plugin
 * leaves NCCL's (NULL) pointer alone.  Same layout in v7..v12. */
typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;

RW_ABI_SIZE(ncclNetDeviceType, 4);
RW_ABI_SIZE(ncclNetDeviceHandle_v7_t, 32);
RW_ABI_OFFSET(ncclNetDeviceHandle_v7_t, netDeviceType, 0);
RW_ABI_OFFSET(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
RW_ABI_OFFSET(ncclNetDeviceHandle_v7_t, handle, 8);
RW_ABI_OFFSET(ncclNetDeviceHandle_v7_t, size, 16);
RW_ABI_OFFSET(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);

#endif /* RW_ABI_NCCL_NET_COMMON_H */

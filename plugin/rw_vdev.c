/* SPDX-License-Identifier: Apache-2.0 */
/*
 * makeVDevice of the v9..v12 tables: NCCL (src/graph/topo.cc) asks the
 * plugin to fuse NICs closer than NCCL_NET_MERGE_LEVEL, or those
 * NCCL_NET_FORCE_MERGE names, into one virtual device; the returned index
 * follows every physical device (and earlier virtual one), and devices()
 * and getProperties() count it from then on, with vProps listing the
 * physical devices.  A refusal (ncclInvalidUsage, logged naming the value)
 * makes NCCL keep the NICs apart.  The plugin's transport sits behind the
 * fuse transport (transport/fuse/) from creation on, so a physical
 * device's calls pass straight through.
 */
#include "plugin/rw_vdev.h"

#include <errno.h>

#include "common/rw_log.h"
#include "plugin/rw_plugin.h"
#include "transport/fuse/fuse.h"

int rw_vdev_attach(struct rw_plugin *p)
{
	struct rw_net *f = NULL;
	int rc = rw_fuse_create(&p->cfg, &p->net, 1, &f);

	p->net = rc ? NULL : f;
	return rc;
}

static int make(int *d, int ndevs, const int *devs, int max)
{
	if (!d || !devs)
		return rw_plugin_bad_arg("makeVDevice", "d or props is NULL");
	if (ndevs < 1 || ndevs > max) {
		RW_WARN(RW_LOG_NET, "NET/%s makeVDevice(ndevs=%d): this ABI version fuses 1 to %d",
			RW_PLUGIN_NAME, ndevs, max);
		return -EINVAL;
	}
	return rw_plugin_make_vdev(ndevs, devs, d);
}

ncclResult_t rw_abi_make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *props)
{
	return rw_status_to_nccl(make(d, props ? props->ndevs : 0, props ? props->devs : NULL,
				      NCCL_NET_MAX_DEVS_PER_NIC_V9));
}

ncclResult_t rw_abi_make_vdevice_v11(int *d, ncclNetVDeviceProps_v11_t *props)
{
	return rw_status_to_nccl(make(d, props ? props->ndevs : 0, props ? props->devs : NULL,
				      NCCL_NET_MAX_DEVS_PER_NIC_V11));
}

ncclResult_t rw_abi_make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *props)
{
	return rw_status_to_nccl(make(d, props ? props->ndevs : 0, props ? props->devs : NULL,
				      NCCL_NET_MAX_DEVS_PER_NIC_V12));
}

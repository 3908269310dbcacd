/* SPDX-License-Identifier: Apache-2.0 */
/*
 * makeVDevice (NIC fusion, net ABI v9+): the ABI-typed entry points of
 * rw_vdev.c and the plugin hooks they use.  The work is transport/fuse/'s.
 */
#ifndef RW_VDEV_H
#define RW_VDEV_H

#include "abi/nccl_net.h"

struct rw_plugin;

/** At plugin creation: put the fuse transport in front of p->net (taken
 *  over; on failure it is destroyed and p->net is NULL). */
int rw_vdev_attach(struct rw_plugin *p);

/** Under the plugin lock (rw_plugin.c): make the virtual device, load its
 *  properties, count it.  \param[out] d set only on success. */
int rw_plugin_make_vdev(int ndevs, const int *devs, int *d);

ncclResult_t rw_abi_make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *props); /* and v10 */
ncclResult_t rw_abi_make_vdevice_v11(int *d, ncclNetVDeviceProps_v11_t *props);
ncclResult_t rw_abi_make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *props);

#endif /* RW_VDEV_H */

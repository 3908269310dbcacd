/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v10 (native in NCCL 2.26-2.27).
 * New against v9: init takes the profiler callback; connect takes a
 * per-connection config (traffic class); isend/irecv take profiler handles.
 * Props keep the v9 layout.
 */
#ifndef RW_ABI_NCCL_NET_V10_H
#define RW_ABI_NCCL_NET_V10_H

#include "abi/nccl_net_common.h"
#include "abi/nccl_net_v9.h"

#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;

/* Unchanged since v9 (same layout): the same types, so one getProperties
 * serves both tables. */
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v10_t;

typedef struct {
	int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF unless the app set it */
} ncclNetCommConfig_v10_t;

typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;

/* Unchanged since v9: the same type, so one function serves every table. */
typedef ncclNetSGE_v9_t ncclNetSGE_v10_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v10_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			      void *phandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			      void **mhandles, void **phandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclNet_v10_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
				void **collComm);
	ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
	ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *collComm, void *mhandle);
	ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, size_t count,
				   ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
				   void *recvMhandle, void **request);
	ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
				   ncclNetSGE_v10_t *recvParts, size_t bytesPerRank,
				   size_t windowOffset, size_t windowBytes, void *sendMhandle,
				   void **request);
	ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v10_t *sendParts,
				       void *recvData, size_t bytesPerRank, size_t windowOffset,
				       size_t windowBytes, ncclDataType_t dataType,
				       ncclRedOp_t redOp, void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclCollNet_v10_t;

RW_ABI_SIZE(ncclNetVDeviceProps_v10_t, 20);
RW_ABI_SIZE(ncclNetCommConfig_v10_t, 4);
RW_ABI_SIZE(ncclNetSGE_v10_t, 24);

RW_ABI_SIZE(ncclNetProperties_v10_t, 104);
RW_ABI_OFFSET(ncclNetProperties_v10_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v10_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v10_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v10_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v10_t, regIsGlobal, 28);
RW_ABI_OFFSET(ncclNetProperties_v10_t, forceFlush, 32);
RW_ABI_OFFSET(ncclNetProperties_v10_t, speed, 36);
RW_ABI_OFFSET(ncclNetProperties_v10_t, port, 40);
RW_ABI_OFFSET(ncclNetProperties_v10_t, latency, 44);
RW_ABI_OFFSET(ncclNetProperties_v10_t, maxComms, 48);
RW_ABI_OFFSET(ncclNetProperties_v10_t, maxRecvs, 52);
RW_ABI_OFFSET(ncclNetProperties_v10_t, netDeviceType, 56);
RW_ABI_OFFSET(ncclNetProperties_v10_t, netDeviceVersion, 60);
RW_ABI_OFFSET(ncclNetProperties_v10_t, vProps, 64);
RW_ABI_OFFSET(ncclNetProperties_v10_t, maxP2pBytes, 88);
RW_ABI_OFFSET(ncclNetProperties_v10_t, maxCollBytes, 96);

RW_ABI_SIZE(ncclNet_v10_t, 160);
RW_ABI_SLOT(ncclNet_v10_t, name, 0);
RW_ABI_SLOT(ncclNet_v10_t, init, 1);
RW_ABI_SLOT(ncclNet_v10_t, devices, 2);
RW_ABI_SLOT(ncclNet_v10_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v10_t, listen, 4);
RW_ABI_SLOT(ncclNet_v10_t, connect, 5);
RW_ABI_SLOT(ncclNet_v10_t, accept, 6);
RW_ABI_SLOT(ncclNet_v10_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v10_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v10_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v10_t, isend, 10);
RW_ABI_SLOT(ncclNet_v10_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v10_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v10_t, test, 13);
RW_ABI_SLOT(ncclNet_v10_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v10_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v10_t, closeListen, 16);
RW_ABI_SLOT(ncclNet_v10_t, getDeviceMr, 17);
RW_ABI_SLOT(ncclNet_v10_t, irecvConsumed, 18);
RW_ABI_SLOT(ncclNet_v10_t, makeVDevice, 19);

RW_ABI_SIZE(ncclCollNet_v10_t, 144);
RW_ABI_SLOT(ncclCollNet_v10_t, iallreduce, 10);
RW_ABI_SLOT(ncclCollNet_v10_t, iflush, 13);
RW_ABI_SLOT(ncclCollNet_v10_t, closeListen, 16);
RW_ABI_SLOT(ncclCollNet_v10_t, makeVDevice, 17);

#endif /* RW_ABI_NCCL_NET_V10_H */

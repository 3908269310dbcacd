/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v7 (native in NCCL 2.19).
 * New against v6: device-offload handle out-arguments on connect/accept,
 * getDeviceMr, irecvConsumed; props gain netDeviceType/netDeviceVersion;
 * NCCL_NET_MAX_REQUESTS 8 -> 32.
 */
#ifndef RW_ABI_NCCL_NET_V7_H
#define RW_ABI_NCCL_NET_V7_H

#include "abi/nccl_net_common.h"

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v7_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v7_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v7_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v7_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
				void **collComm);
	ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
	ncclResult_t (*regMr)(void *collComm, void *data, int size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *collComm, void *mhandle);
	ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, int count,
				   ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
				   void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
} ncclCollNet_v7_t;

RW_ABI_SIZE(ncclNetProperties_v7_t, 56);
RW_ABI_OFFSET(ncclNetProperties_v7_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v7_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v7_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v7_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v7_t, speed, 28);
RW_ABI_OFFSET(ncclNetProperties_v7_t, port, 32);
RW_ABI_OFFSET(ncclNetProperties_v7_t, latency, 36);
RW_ABI_OFFSET(ncclNetProperties_v7_t, maxComms, 40);
RW_ABI_OFFSET(ncclNetProperties_v7_t, maxRecvs, 44);
RW_ABI_OFFSET(ncclNetProperties_v7_t, netDeviceType, 48);
RW_ABI_OFFSET(ncclNetProperties_v7_t, netDeviceVersion, 52);

RW_ABI_SIZE(ncclNet_v7_t, 152);
RW_ABI_SLOT(ncclNet_v7_t, name, 0);
RW_ABI_SLOT(ncclNet_v7_t, init, 1);
RW_ABI_SLOT(ncclNet_v7_t, devices, 2);
RW_ABI_SLOT(ncclNet_v7_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v7_t, listen, 4);
RW_ABI_SLOT(ncclNet_v7_t, connect, 5);
RW_ABI_SLOT(ncclNet_v7_t, accept, 6);
RW_ABI_SLOT(ncclNet_v7_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v7_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v7_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v7_t, isend, 10);
RW_ABI_SLOT(ncclNet_v7_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v7_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v7_t, test, 13);
RW_ABI_SLOT(ncclNet_v7_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v7_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v7_t, closeListen, 16);
RW_ABI_SLOT(ncclNet_v7_t, getDeviceMr, 17);
RW_ABI_SLOT(ncclNet_v7_t, irecvConsumed, 18);

RW_ABI_SIZE(ncclCollNet_v7_t, 120);
RW_ABI_SLOT(ncclCollNet_v7_t, reduceSupport, 6);
RW_ABI_SLOT(ncclCollNet_v7_t, iallreduce, 10);
RW_ABI_SLOT(ncclCollNet_v7_t, closeListen, 14);

#endif /* RW_ABI_NCCL_NET_V7_H */

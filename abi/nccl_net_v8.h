/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v8 (native in NCCL 2.20-2.23).
 * New against v7: regMr size is size_t; props gain regIsGlobal; CollNet
 * gains iallgather / ireducescatter over scatter-gather lists.
 */
#ifndef RW_ABI_NCCL_NET_V8_H
#define RW_ABI_NCCL_NET_V8_H

#include "abi/nccl_net_common.h"

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal; /* a registration is usable by any comm */
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v8_t;

/* One piece of a CollNet scatter-gather list. */
typedef struct {
	void *mhandle;
	void *address;
	uint32_t size;
} ncclNetSGE_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v8_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v8_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
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
} ncclNet_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
				void **collComm);
	ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
	ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *collComm, void *mhandle);
	ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, int count,
				   ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
				   void *recvMhandle, void **request);
	ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
				   ncclNetSGE_v8_t *recvParts, size_t bytesPerRank,
				   size_t windowOffset, size_t windowBytes, void *sendMhandle,
				   void **request);
	ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v8_t *sendParts,
				       void *recvData, size_t bytesPerRank, size_t windowOffset,
				       size_t windowBytes, ncclDataType_t dataType,
				       ncclRedOp_t redOp, void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
} ncclCollNet_v8_t;

RW_ABI_SIZE(ncclNetSGE_v8_t, 24);

RW_ABI_SIZE(ncclNetProperties_v8_t, 64);
RW_ABI_OFFSET(ncclNetProperties_v8_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v8_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v8_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v8_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v8_t, regIsGlobal, 28);
RW_ABI_OFFSET(ncclNetProperties_v8_t, speed, 32);
RW_ABI_OFFSET(ncclNetProperties_v8_t, port, 36);
RW_ABI_OFFSET(ncclNetProperties_v8_t, latency, 40);
RW_ABI_OFFSET(ncclNetProperties_v8_t, maxComms, 44);
RW_ABI_OFFSET(ncclNetProperties_v8_t, maxRecvs, 48);
RW_ABI_OFFSET(ncclNetProperties_v8_t, netDeviceType, 52);
RW_ABI_OFFSET(ncclNetProperties_v8_t, netDeviceVersion, 56);

RW_ABI_SIZE(ncclNet_v8_t, 152);
RW_ABI_SLOT(ncclNet_v8_t, name, 0);
RW_ABI_SLOT(ncclNet_v8_t, init, 1);
RW_ABI_SLOT(ncclNet_v8_t, devices, 2);
RW_ABI_SLOT(ncclNet_v8_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v8_t, listen, 4);
RW_ABI_SLOT(ncclNet_v8_t, connect, 5);
RW_ABI_SLOT(ncclNet_v8_t, accept, 6);
RW_ABI_SLOT(ncclNet_v8_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v8_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v8_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v8_t, isend, 10);
RW_ABI_SLOT(ncclNet_v8_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v8_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v8_t, test, 13);
RW_ABI_SLOT(ncclNet_v8_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v8_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v8_t, closeListen, 16);
RW_ABI_SLOT(ncclNet_v8_t, getDeviceMr, 17);
RW_ABI_SLOT(ncclNet_v8_t, irecvConsumed, 18);

RW_ABI_SIZE(ncclCollNet_v8_t, 136);
RW_ABI_SLOT(ncclCollNet_v8_t, iallreduce, 10);
RW_ABI_SLOT(ncclCollNet_v8_t, iallgather, 11);
RW_ABI_SLOT(ncclCollNet_v8_t, ireducescatter, 12);
RW_ABI_SLOT(ncclCollNet_v8_t, iflush, 13);
RW_ABI_SLOT(ncclCollNet_v8_t, test, 14);
RW_ABI_SLOT(ncclCollNet_v8_t, closeColl, 15);
RW_ABI_SLOT(ncclCollNet_v8_t, closeListen, 16);

#endif /* RW_ABI_NCCL_NET_V8_H */

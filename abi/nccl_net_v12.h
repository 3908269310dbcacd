/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v12 (NCCL 2.30).  The function tables are v11's with
 * _v12_t types.  Props: vProps.devs grows 4 -> 8, which moves every field
 * after it (v12 props are not an extension of v11's), and railId/planeId
 * (int16, NCCL_NET_ID_UNDEF when unknown) are appended.
 */
#ifndef RW_ABI_NCCL_NET_V12_H
#define RW_ABI_NCCL_NET_V12_H

#include "abi/nccl_net_common.h"
#include "abi/nccl_net_v9.h"

#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef struct {
	int trafficClass;
} ncclNetCommConfig_v12_t;

typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_v12_t;

typedef struct {
	ncclNetCommAttr_v12_t sendCommAttr;
	ncclNetCommAttr_v12_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} ncclNetAttr_v12_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	ncclNetVDeviceProps_v12_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId;	 /* NCCL_NET_ID_UNDEF if unknown */
	int16_t planeId; /* NCCL_NET_ID_UNDEF if unknown */
} ncclNetProperties_v12_t;

/* Unchanged since v9: the same type, so one function serves every table. */
typedef ncclNetSGE_v9_t ncclNetSGE_v12_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v12_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v12_t **recvDevComm);
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
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
	ncclResult_t (*finalize)(void *ctx);
	ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v12_t *netAttr);
} ncclNet_v12_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
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
				   ncclNetSGE_v12_t *recvParts, size_t bytesPerRank,
				   size_t windowOffset, size_t windowBytes, void *sendMhandle,
				   void **request);
	ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v12_t *sendParts,
				       void *recvData, size_t bytesPerRank, size_t windowOffset,
				       size_t windowBytes, ncclDataType_t dataType,
				       ncclRedOp_t redOp, void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
	ncclResult_t (*finalize)(void *ctx);
} ncclCollNet_v12_t;

RW_ABI_SIZE(ncclNetVDeviceProps_v12_t, 36);
RW_ABI_SIZE(ncclNetCommConfig_v12_t, 4);
RW_ABI_SIZE(ncclNetSGE_v12_t, 24);
RW_ABI_SIZE(ncclNetCommAttr_v12_t, 16);
RW_ABI_SIZE(ncclNetAttr_v12_t, 44);
RW_ABI_OFFSET(ncclNetAttr_v12_t, sendCommAttr, 0);
RW_ABI_OFFSET(ncclNetAttr_v12_t, recvCommAttr, 16);
RW_ABI_OFFSET(ncclNetAttr_v12_t, op, 32);
RW_ABI_OFFSET(ncclNetAttr_v12_t, algo, 36);
RW_ABI_OFFSET(ncclNetAttr_v12_t, proto, 40);

RW_ABI_SIZE(ncclNetProperties_v12_t, 128);
RW_ABI_OFFSET(ncclNetProperties_v12_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v12_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v12_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v12_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v12_t, regIsGlobal, 28);
RW_ABI_OFFSET(ncclNetProperties_v12_t, forceFlush, 32);
RW_ABI_OFFSET(ncclNetProperties_v12_t, speed, 36);
RW_ABI_OFFSET(ncclNetProperties_v12_t, port, 40);
RW_ABI_OFFSET(ncclNetProperties_v12_t, latency, 44);
RW_ABI_OFFSET(ncclNetProperties_v12_t, maxComms, 48);
RW_ABI_OFFSET(ncclNetProperties_v12_t, maxRecvs, 52);
RW_ABI_OFFSET(ncclNetProperties_v12_t, netDeviceType, 56);
RW_ABI_OFFSET(ncclNetProperties_v12_t, netDeviceVersion, 60);
RW_ABI_OFFSET(ncclNetProperties_v12_t, vProps, 64);
RW_ABI_OFFSET(ncclNetProperties_v12_t, maxP2pBytes, 104);
RW_ABI_OFFSET(ncclNetProperties_v12_t, maxCollBytes, 112);
RW_ABI_OFFSET(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
RW_ABI_OFFSET(ncclNetProperties_v12_t, railId, 124);
RW_ABI_OFFSET(ncclNetProperties_v12_t, planeId, 126);

RW_ABI_SIZE(ncclNet_v12_t, 176);
RW_ABI_SLOT(ncclNet_v12_t, name, 0);
RW_ABI_SLOT(ncclNet_v12_t, init, 1);
RW_ABI_SLOT(ncclNet_v12_t, devices, 2);
RW_ABI_SLOT(ncclNet_v12_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v12_t, listen, 4);
RW_ABI_SLOT(ncclNet_v12_t, connect, 5);
RW_ABI_SLOT(ncclNet_v12_t, accept, 6);
RW_ABI_SLOT(ncclNet_v12_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v12_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v12_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v12_t, isend, 10);
RW_ABI_SLOT(ncclNet_v12_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v12_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v12_t, test, 13);
RW_ABI_SLOT(ncclNet_v12_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v12_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v12_t, closeListen, 16);
RW_ABI_SLOT(ncclNet_v12_t, getDeviceMr, 17);
RW_ABI_SLOT(ncclNet_v12_t, irecvConsumed, 18);
RW_ABI_SLOT(ncclNet_v12_t, makeVDevice, 19);
RW_ABI_OFFSET(ncclNet_v12_t, finalize, 160);
RW_ABI_OFFSET(ncclNet_v12_t, setNetAttr, 168);

RW_ABI_SIZE(ncclCollNet_v12_t, 152);
RW_ABI_SLOT(ncclCollNet_v12_t, reduceSupport, 6);
RW_ABI_OFFSET(ncclCollNet_v12_t, iallreduce, 80);
RW_ABI_SLOT(ncclCollNet_v12_t, iallgather, 11);
RW_ABI_SLOT(ncclCollNet_v12_t, ireducescatter, 12);
RW_ABI_SLOT(ncclCollNet_v12_t, iflush, 13);
RW_ABI_SLOT(ncclCollNet_v12_t, test, 14);
RW_ABI_SLOT(ncclCollNet_v12_t, closeColl, 15);
RW_ABI_SLOT(ncclCollNet_v12_t, closeListen, 16);
RW_ABI_SLOT(ncclCollNet_v12_t, makeVDevice, 17);
RW_ABI_OFFSET(ncclCollNet_v12_t, finalize, 144);

#endif /* RW_ABI_NCCL_NET_V12_H */

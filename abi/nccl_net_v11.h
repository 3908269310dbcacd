/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v11 (native in NCCL 2.28-2.29: the newest version
 * the installed NCCL 2.28.9 loads).
 * New against v10: init is called once per communicator and returns a
 * context (listen/connect/setNetAttr/finalize take it); the connect config
 * moved to init; finalize(ctx) is mandatory (2.28.9 may call it after a
 * failed init, with NULL); setNetAttr; props gain maxMultiRequestSize.
 */
#ifndef RW_ABI_NCCL_NET_V11_H
#define RW_ABI_NCCL_NET_V11_H

#include "abi/nccl_net_common.h"
#include "abi/nccl_net_v9.h"

#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V11];
} ncclNetVDeviceProps_v11_t;

/* Points to a stack variable of NCCL: copy, never keep the pointer. */
typedef struct {
	int trafficClass;
} ncclNetCommConfig_v11_t;

/* setNetAttr hints; every field is NCCL_NET_ATTR_UNDEF when unknown. */
typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
	ncclNetCommAttr_v11_t sendCommAttr;
	ncclNetCommAttr_v11_t recvCommAttr;
	uint32_t op;	/* bitmask of 1 << ncclFunc_t */
	uint32_t algo;	/* bitmask of 1 << NCCL_ALGO_* */
	uint32_t proto; /* bitmask of 1 << NCCL_PROTO_* */
} ncclNetAttr_v11_t;

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
	ncclNetVDeviceProps_v11_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
} ncclNetProperties_v11_t;

/* Unchanged since v9: the same type, so one function serves every table. */
typedef ncclNetSGE_v9_t ncclNetSGE_v11_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v11_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v11_t **recvDevComm);
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
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v11_t *props);
	ncclResult_t (*finalize)(void *ctx);
	ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v11_t *netAttr);
} ncclNet_v11_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
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
				   ncclNetSGE_v11_t *recvParts, size_t bytesPerRank,
				   size_t windowOffset, size_t windowBytes, void *sendMhandle,
				   void **request);
	ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v11_t *sendParts,
				       void *recvData, size_t bytesPerRank, size_t windowOffset,
				       size_t windowBytes, ncclDataType_t dataType,
				       ncclRedOp_t redOp, void *recvMhandle, void **request);
	ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
	ncclResult_t (*test)(void *request, int *done, int *size);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v11_t *props);
	ncclResult_t (*finalize)(void *ctx);
} ncclCollNet_v11_t;

RW_ABI_SIZE(ncclNetVDeviceProps_v11_t, 20);
RW_ABI_SIZE(ncclNetCommConfig_v11_t, 4);
RW_ABI_SIZE(ncclNetSGE_v11_t, 24);
RW_ABI_SIZE(ncclNetCommAttr_v11_t, 16);
RW_ABI_SIZE(ncclNetAttr_v11_t, 44);
RW_ABI_OFFSET(ncclNetAttr_v11_t, sendCommAttr, 0);
RW_ABI_OFFSET(ncclNetAttr_v11_t, recvCommAttr, 16);
RW_ABI_OFFSET(ncclNetAttr_v11_t, op, 32);
RW_ABI_OFFSET(ncclNetAttr_v11_t, algo, 36);
RW_ABI_OFFSET(ncclNetAttr_v11_t, proto, 40);

RW_ABI_SIZE(ncclNetProperties_v11_t, 112);
RW_ABI_OFFSET(ncclNetProperties_v11_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v11_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v11_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v11_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v11_t, regIsGlobal, 28);
RW_ABI_OFFSET(ncclNetProperties_v11_t, forceFlush, 32);
RW_ABI_OFFSET(ncclNetProperties_v11_t, speed, 36);
RW_ABI_OFFSET(ncclNetProperties_v11_t, port, 40);
RW_ABI_OFFSET(ncclNetProperties_v11_t, latency, 44);
RW_ABI_OFFSET(ncclNetProperties_v11_t, maxComms, 48);
RW_ABI_OFFSET(ncclNetProperties_v11_t, maxRecvs, 52);
RW_ABI_OFFSET(ncclNetProperties_v11_t, netDeviceType, 56);
RW_ABI_OFFSET(ncclNetProperties_v11_t, netDeviceVersion, 60);
RW_ABI_OFFSET(ncclNetProperties_v11_t, vProps, 64);
RW_ABI_OFFSET(ncclNetProperties_v11_t, maxP2pBytes, 88);
RW_ABI_OFFSET(ncclNetProperties_v11_t, maxCollBytes, 96);
RW_ABI_OFFSET(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

RW_ABI_SIZE(ncclNet_v11_t, 176);
RW_ABI_SLOT(ncclNet_v11_t, name, 0);
RW_ABI_SLOT(ncclNet_v11_t, init, 1);
RW_ABI_SLOT(ncclNet_v11_t, devices, 2);
RW_ABI_SLOT(ncclNet_v11_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v11_t, listen, 4);
RW_ABI_SLOT(ncclNet_v11_t, connect, 5);
RW_ABI_SLOT(ncclNet_v11_t, accept, 6);
RW_ABI_SLOT(ncclNet_v11_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v11_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v11_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v11_t, isend, 10);
RW_ABI_SLOT(ncclNet_v11_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v11_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v11_t, test, 13);
RW_ABI_SLOT(ncclNet_v11_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v11_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v11_t, closeListen, 16);
RW_ABI_SLOT(ncclNet_v11_t, getDeviceMr, 17);
RW_ABI_SLOT(ncclNet_v11_t, irecvConsumed, 18);
RW_ABI_SLOT(ncclNet_v11_t, makeVDevice, 19);
RW_ABI_OFFSET(ncclNet_v11_t, finalize, 160);
RW_ABI_OFFSET(ncclNet_v11_t, setNetAttr, 168);

RW_ABI_SIZE(ncclCollNet_v11_t, 152);
RW_ABI_SLOT(ncclCollNet_v11_t, name, 0);
RW_ABI_SLOT(ncclCollNet_v11_t, init, 1);
RW_ABI_SLOT(ncclCollNet_v11_t, devices, 2);
RW_ABI_SLOT(ncclCollNet_v11_t, getProperties, 3);
RW_ABI_SLOT(ncclCollNet_v11_t, listen, 4);
RW_ABI_SLOT(ncclCollNet_v11_t, connect, 5);
RW_ABI_SLOT(ncclCollNet_v11_t, reduceSupport, 6);
RW_ABI_SLOT(ncclCollNet_v11_t, regMr, 7);
RW_ABI_SLOT(ncclCollNet_v11_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclCollNet_v11_t, deregMr, 9);
RW_ABI_OFFSET(ncclCollNet_v11_t, iallreduce, 80);
RW_ABI_SLOT(ncclCollNet_v11_t, iallgather, 11);
RW_ABI_SLOT(ncclCollNet_v11_t, ireducescatter, 12);
RW_ABI_SLOT(ncclCollNet_v11_t, iflush, 13);
RW_ABI_SLOT(ncclCollNet_v11_t, test, 14);
RW_ABI_SLOT(ncclCollNet_v11_t, closeColl, 15);
RW_ABI_SLOT(ncclCollNet_v11_t, closeListen, 16);
RW_ABI_SLOT(ncclCollNet_v11_t, makeVDevice, 17);
RW_ABI_OFFSET(ncclCollNet_v11_t, finalize, 144);

#endif /* RW_ABI_NCCL_NET_V11_H */

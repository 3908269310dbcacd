/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Net and CollNet ABI v6 (native in NCCL 2.13-2.18; loaded by 2.13-2.30).
 * New against v5: regMrDmaBuf, NCCL_PTR_DMABUF.  Sizes are int.
 */
#ifndef RW_ABI_NCCL_NET_V6_H
#define RW_ABI_NCCL_NET_V6_H

#include "abi/nccl_net_common.h"

typedef struct {
	char *name;    /* unique per device; key of NCCL's topology node */
	char *pciPath; /* sysfs PCI directory, or NULL */
	uint64_t guid;
	int ptrSupport; /* NCCL_PTR_* mask */
	int speed;	/* Mbps */
	int port;
	float latency; /* us */
	int maxComms;
	int maxRecvs; /* most buffers one irecv takes */
} ncclNetProperties_v6_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm);
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
} ncclNet_v6_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	/* Collective over the heads of every node: handles[i] is node i's
	 * listen handle.  Expected to finish, not polled. */
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
} ncclCollNet_v6_t;

RW_ABI_SIZE(ncclNetProperties_v6_t, 48);
RW_ABI_OFFSET(ncclNetProperties_v6_t, name, 0);
RW_ABI_OFFSET(ncclNetProperties_v6_t, pciPath, 8);
RW_ABI_OFFSET(ncclNetProperties_v6_t, guid, 16);
RW_ABI_OFFSET(ncclNetProperties_v6_t, ptrSupport, 24);
RW_ABI_OFFSET(ncclNetProperties_v6_t, speed, 28);
RW_ABI_OFFSET(ncclNetProperties_v6_t, port, 32);
RW_ABI_OFFSET(ncclNetProperties_v6_t, latency, 36);
RW_ABI_OFFSET(ncclNetProperties_v6_t, maxComms, 40);
RW_ABI_OFFSET(ncclNetProperties_v6_t, maxRecvs, 44);

RW_ABI_SIZE(ncclNet_v6_t, 136);
RW_ABI_SLOT(ncclNet_v6_t, name, 0);
RW_ABI_SLOT(ncclNet_v6_t, init, 1);
RW_ABI_SLOT(ncclNet_v6_t, devices, 2);
RW_ABI_SLOT(ncclNet_v6_t, getProperties, 3);
RW_ABI_SLOT(ncclNet_v6_t, listen, 4);
RW_ABI_SLOT(ncclNet_v6_t, connect, 5);
RW_ABI_SLOT(ncclNet_v6_t, accept, 6);
RW_ABI_SLOT(ncclNet_v6_t, regMr, 7);
RW_ABI_SLOT(ncclNet_v6_t, regMrDmaBuf, 8);
RW_ABI_SLOT(ncclNet_v6_t, deregMr, 9);
RW_ABI_SLOT(ncclNet_v6_t, isend, 10);
RW_ABI_SLOT(ncclNet_v6_t, irecv, 11);
RW_ABI_SLOT(ncclNet_v6_t, iflush, 12);
RW_ABI_SLOT(ncclNet_v6_t, test, 13);
RW_ABI_SLOT(ncclNet_v6_t, closeSend, 14);
RW_ABI_SLOT(ncclNet_v6_t, closeRecv, 15);
RW_ABI_SLOT(ncclNet_v6_t, closeListen, 16);

RW_ABI_SIZE(ncclCollNet_v6_t, 120);
RW_ABI_SLOT(ncclCollNet_v6_t, connect, 5);
RW_ABI_SLOT(ncclCollNet_v6_t, reduceSupport, 6);
RW_ABI_SLOT(ncclCollNet_v6_t, regMr, 7);
RW_ABI_SLOT(ncclCollNet_v6_t, iallreduce, 10);
RW_ABI_SLOT(ncclCollNet_v6_t, iflush, 11);
RW_ABI_SLOT(ncclCollNet_v6_t, test, 12);
RW_ABI_SLOT(ncclCollNet_v6_t, closeColl, 13);
RW_ABI_SLOT(ncclCollNet_v6_t, closeListen, 14);

#endif /* RW_ABI_NCCL_NET_V6_H */

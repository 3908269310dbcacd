/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same-host transport behind rw_net (created by rw_shm_create(),
 * declared in transport/rw_net.h).  This header holds what the composite
 * transport, tests and tools use besides the rw_net ops: the host identity,
 * the handle helpers and the live-object counters.  Layouts are in
 * transport/shm_layout.h.
 *
 * Design in short:
 *  - one device, "shm"; a listener is an abstract AF_UNIX socket, a
 *    connection is one shared segment (sealed memfd, mode 0600) holding a
 *    ring of slots from the connecting side (sender) to the accepting side;
 *  - a message that fits a slot is copied in and out of it; a larger host
 *    message is copied once, by process_vm_readv in the receiver and
 *    process_vm_writev in the sender working on the same message from a
 *    shared chunk counter (cross-memory attach, when the kernel permits it
 *    and RINGWAY_SHM_CMA=1), else pipelined through the slots; a device
 *    buffer goes by CUDA IPC (kernels/rw_cuda_ipc.h);
 *  - matching is NCCL's IB rule: irecv writes its buffers' tags and sizes
 *    to a post ring in the segment, and isend takes a send only when the
 *    oldest posted receive with a free buffer has one with the send's tag
 *    (else *req NULL, retried); a send larger than its buffer fails at
 *    once, and the connection with it on both sides;
 *  - a comm that fails (truncation, protocol error, the peer's close or
 *    death, a timeout) answers every later call with the error at once, and
 *    tells its peer through the segment, which fails at once too;
 *  - test() polls; after RINGWAY_SHM_SPIN_US without progress in the whole
 *    transport it sleeps (at most 1 ms per call, 100 us under the auto
 *    composite) on a futex in its doorbell page, which every peer rings when
 *    it publishes something;
 *  - a dead peer is seen by pidfd (else kill(pid, 0) and its heartbeat) and
 *    fails pending requests at once; a peer that stalls mid-message fails
 *    them after RINGWAY_TIMEOUT_MS.
 */
#ifndef RW_SHM_H
#define RW_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "transport/shm/shm_layout.h"

/**
 * This process's host identity: boot id, hostname hash, network namespace.
 * \return 0, or -errno when the boot id cannot be read.
 */
int rw_shm_host_id_get(struct rw_shm_host_id *out);

/**
 * Tell an shm instance that the threads calling its test() also drive
 * another transport (the auto composite): a futex sleep then lasts at most
 * 100 us instead of 1 ms, since the other transport's progress cannot ring
 * the doorbell.  Call before the instance is used.
 */
void rw_shm_share_thread(struct rw_net *shm);

/** True when both identities name one kernel and one network namespace. */
bool rw_shm_host_id_equal(const struct rw_shm_host_id *a, const struct rw_shm_host_id *b);

/**
 * Check that handle is an shm listen handle of this version.
 * \return 0, or -EINVAL (not an shm handle) / -EPROTO (other version).
 */
int rw_shm_handle_check(const void *handle);

/**
 * The rendezvous address of a listen handle (tests knock on it).
 * \return 0, or the error of rw_shm_handle_check().
 */
int rw_shm_handle_addr(const void *handle, struct sockaddr_un *addr, socklen_t *len);

/** Objects alive right now, process-wide (all rw_shm instances). */
struct rw_shm_live {
	long nets;	/**< transport instances */
	long listeners; /**< open listeners */
	long comms;	/**< open comms */
	long reqs;	/**< requests handed out and not yet completed */
	long mrs;	/**< registrations */
	long maps;	/**< segment and doorbell mappings */
	long fds;	/**< descriptors this transport holds */
};

/** Snapshot the counters (relaxed reads; exact once the transport is idle). */
void rw_shm_live_objects(struct rw_shm_live *out);

/** Sum of all counters: 0 when everything was freed. */
long rw_shm_live_total(void);

/** Closed comm shells kept, process-wide (at most 64 per instance; not in
 * the total above, freed by rw_net_destroy()). */
long rw_shm_live_shells(void);

/**
 * The sender's CUDA allocations a receive comm keeps open at most (CUDA
 * IPC, least recently used closed first).  Enough for a training job's
 * buffers, which a smaller bound would close and reopen every step when
 * they outnumber it; a bound all the same, on what allocations the sender
 * freed keep alive here.
 */
#define RW_SHM_IPC_KEPT 256

/** What went which way, process-wide since start (tests, tools). */
struct rw_shm_stats {
	long msgs_inline;    /**< messages sent in one slot */
	long msgs_frag;	     /**< messages pipelined through slots */
	long msgs_cma;	     /**< messages sent by cross-memory attach */
	long msgs_cuda;	     /**< messages sent by CUDA IPC */
	long cma_read;	     /**< bytes this process read from peers (readv) */
	long cma_written;    /**< bytes this process wrote into peers (writev) */
	long sleeps;	     /**< futex sleeps in test() */
	long sleep_timeouts; /**< ... that ran to their end: nothing rang meanwhile */
	long ipc_evicted;    /**< peers' CUDA allocations closed for newer ones (RW_SHM_IPC_KEPT) */
};

/** Snapshot the statistics (relaxed reads). */
void rw_shm_stats_get(struct rw_shm_stats *out);

#endif /* RW_SHM_H */

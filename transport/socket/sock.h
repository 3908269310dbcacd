/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP socket transport behind rw_net (created by rw_sock_create(),
 * declared in transport/rw_net.h).  This header holds what tests and tools
 * may use besides the rw_net ops: the pure interface-selection function, the
 * handle decoder, and the live-object counters.
 *
 * Design in short (details in sock_internal.h and sock_proto.h):
 *  - a device is a network interface chosen by RINGWAY_SOCKET_IFNAME;
 *  - a comm is RINGWAY_SOCKET_NSTREAMS TCP streams.  Stream 0 belongs to
 *    the calling thread, which moves every header, every message smaller
 *    than RINGWAY_SOCKET_MIN_STRIPE, and slice 0 of larger ones with
 *    non-blocking calls from isend/irecv/test.  Larger messages are striped
 *    over all streams; stream j > 0 is driven by its own helper thread,
 *    started with the first striped message, sleeping when idle;
 *  - matching follows NCCL's IB transport: irecv posts the receive to the
 *    sender, and isend takes a message only when the oldest receive not yet
 *    filled has a free buffer with its tag (else *req == NULL: try again);
 *    receives fill in posting order.  A message larger than its buffer is
 *    refused by the sender and both sides fail with -EMSGSIZE;
 *  - a failed comm (peer gone, refused message, protocol or stream error)
 *    answers every later call at once with its first error;
 *  - every wait on the peer is bounded by RINGWAY_TIMEOUT_MS: a request
 *    pending that long with no byte moving on its comm fails -ETIMEDOUT, and
 *    so does isend when it found nothing to match for that long.
 */
#ifndef RW_SOCK_H
#define RW_SOCK_H

#include <net/if.h>
#include <stddef.h>
#include <sys/socket.h>

/* Interface selection is the TCP toolbox's (transport/tcp/rw_tcp.h). */

/* --- handles --------------------------------------------------------- */

/**
 * The address a socket-transport listen handle points at (tests use it to
 * knock on the listener's port).  \return 0, or -EINVAL when the handle is
 * not a socket-transport handle of this version.
 */
int rw_sock_handle_addr(const void *handle, struct sockaddr_storage *out);

/* --- leak checks ----------------------------------------------------- */

/** Objects alive right now, process-wide (all rw_sock instances). */
struct rw_sock_live {
	long nets;	/**< transport instances */
	long listeners; /**< open listeners */
	long comms;	/**< open or connecting comms */
	long reqs;	/**< requests handed out and not yet completed */
	long mrs;	/**< registrations */
	long threads;	/**< helper threads */
	long fds;	/**< sockets this transport opened */
};

/** Snapshot the counters (relaxed reads; exact once the transport is idle). */
void rw_sock_live_objects(struct rw_sock_live *out);

/** Sum of all counters: 0 when everything was freed. */
long rw_sock_live_total(void);

/** Closed comm shells kept, process-wide (at most 64 per instance; not in
 * the total above, freed by rw_net_destroy()). */
long rw_sock_live_shells(void);

#endif /* RW_SOCK_H */

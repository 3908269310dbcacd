/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the rw_net conformance suite: what net_conformance.c (helpers,
 * setup, the basic cases, conf_run()) shares with net_conformance_faults.c
 * (closing with work outstanding, threads, a second process, strangers on
 * the listen port, misuse).
 * Backends use net_conformance.h only.
 */
#ifndef RW_NET_CONFORMANCE_INT_H
#define RW_NET_CONFORMANCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net_conformance.h"

#define WAIT_MS 20000       /* bound on a wait that should succeed */
#define CALL_MS 1000        /* no single call may take this long */
#define MIB (1024 * 1024)

/* Set by conf_run() and setup(); a case runs between setup and teardown. */
extern const struct conf_backend *conf_be;
extern struct rw_config conf_cfg;
extern struct rw_net *conf_net;
extern struct rw_net_props conf_props;

struct pair {
	struct rw_net_comm *s, *r;
};

struct op {
	struct rw_net_req *req;
	bool done;
	int rc;
	size_t sizes[RW_NET_MAX_RECVS];
};

struct buf {
	char *p;
	size_t len;
	struct rw_net_mr *mr;
};

/* Usable in both processes (no cmocka asserts); 0 or -errno, -ETIMEDOUT
 * past WAIT_MS. */

/** Listen on dev 0, then poll connect and accept until both are there. */
int conf_pair_open(struct rw_net *n, struct pair *pr);
/** Poll connect to handle on dev 0 until it gives a comm. */
int conf_wait_connect(struct rw_net *n, const void *handle, struct rw_net_comm **s);
/** Poll accept on l until it gives a comm. */
int conf_wait_accept(struct rw_net_listen *l, struct rw_net_comm **r);
/** malloc len bytes and register them with c (host memory). */
int conf_buf_get(struct rw_net_comm *c, struct buf *b, size_t len);
/** Deregister and free b; zeroes it. */
void conf_buf_put(struct rw_net_comm *c, struct buf *b);
/** isend, retried while the transport has no room. */
int conf_send_post(struct rw_net_comm *s, void *data, size_t size, int tag,
		   struct rw_net_mr *mr, struct op *op);
/** irecv of one buffer (b, size bytes, tag), retried while there is no room. */
int conf_recv1_post(struct rw_net_comm *r, struct buf *b, size_t size, int tag,
		    struct op *op);
/** Test every unfinished op until all finished; -ETIMEDOUT past limit_ms. */
int conf_drive(struct op *ops, int n, int64_t limit_ms);

/* Parent only (cmocka asserts). */

/** One message of size bytes from pr->s to pr->r, checked. */
void conf_one_message(struct pair *pr, size_t size, int tag);
/** Close both ends of pr. */
void conf_pair_close(struct pair *pr);
/** One connect call on conf_net's dev 0; it must return at once. */
void conf_timed_connect(const void *handle, struct rw_net_comm **s);
/** One accept call on l; it must return at once. */
void conf_timed_accept(struct rw_net_listen *l, struct rw_net_comm **r);

/* Cases in net_conformance_faults.c, listed by conf_run(). */
void close_with_requests_outstanding(void **state);
void comms_used_from_several_threads(void **state);
void peer_killed_while_sending(void **state);
void peer_killed_while_receiving(void **state);
void silent_sender_times_out(void **state);
void silent_receiver_times_out(void **state);
void strangers_are_dropped_real_peer_accepted(void **state);
void bad_arguments(void **state);

#endif /* RW_NET_CONFORMANCE_INT_H */

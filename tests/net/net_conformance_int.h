/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the rw_net conformance suite: what net_conformance.c (helpers,
 * setup, the basic cases, conf_run()) shares with net_conformance_faults.c
 * (closing with work outstanding, threads, a second process, strangers on
 * the listen port, misuse) and net_conformance_match.c (NCCL's matching
 * rules: a send is taken only when a posted receive takes it; failed comms
 * and limits).
 * Backends use net_conformance.h only.
 */
#ifndef RW_NET_CONFORMANCE_INT_H
#define RW_NET_CONFORMANCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "net/net_conformance.h"

#define WAIT_MS 20000 /* bound on a wait that should succeed */
#define CALL_MS 1000  /* no single call may take this long */
#define MIB	(1024 * 1024)

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
int conf_send_post(struct rw_net_comm *s, void *data, size_t size, int tag, struct rw_net_mr *mr,
		   struct op *op);
/** irecv of n buffers, retried while there is no room. */
int conf_recv_post(struct rw_net_comm *r, int n, void **data, const size_t *sizes, const int *tags,
		   struct rw_net_mr **mrs, struct op *op);
/** irecv of one buffer (b, size bytes, tag), retried while there is no room. */
int conf_recv1_post(struct rw_net_comm *r, struct buf *b, size_t size, int tag, struct op *op);
/** Test every unfinished op until all finished; -ETIMEDOUT past limit_ms. */
int conf_drive(struct op *ops, int n, int64_t limit_ms);

/* Parent only (cmocka asserts). */

/** Drive a send (ops[0]) and the receive (ops[1]) that takes it to the end:
 *  both succeed, and the size bytes at sent arrived whole at got. */
void conf_delivered(struct op *ops, const void *sent, const void *got, size_t size);
/** One message of size bytes from pr->s to pr->r, checked. */
void conf_one_message(struct pair *pr, size_t size, int tag);
/** Close both ends of pr. */
void conf_pair_close(struct pair *pr);
/** One connect call on conf_net's dev 0; it must return at once. */
void conf_timed_connect(const void *handle, struct rw_net_comm **s);
/** One accept call on l; it must return at once. */
void conf_timed_accept(struct rw_net_listen *l, struct rw_net_comm **r);

/* A forked peer (net_conformance_faults.c): pipes carry handles and "ready"
 * bytes; the child _exits and never returns into cmocka. */
struct child {
	pid_t pid;
	int to[2], from[2]; /* parent -> child, child -> parent */
	char handle[RW_NET_HANDLE_MAXSIZE];
};

#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child %d: %s:%d: %s failed\n", (int)getpid(), __FILE__,   \
				__LINE__, #cond);                                                  \
			_exit(3);                                                                  \
		}                                                                                  \
	} while (0)

/** Parent: fork a child running fn (which must _exit). */
void child_start(struct child *k, void (*fn)(struct child *k));
/** Parent: wait (bounded) for n bytes from the child. */
void from_child(struct child *k, void *buf, size_t n);
/** Parent: reap the child (SIGKILL first when killed); it must have exited
 *  with status 0 unless killed. */
void child_reap(struct child *k, bool killed);
/** Child: n bytes to the parent. */
void child_write(struct child *k, const void *buf, size_t n);
/** Child: a transport instance of its own, as the parent's. */
struct rw_net *child_net(void);
/** Either process: a transport instance as conf_net, but with its own
 *  RINGWAY_TIMEOUT_MS (long, for messages between live processes that a
 *  loaded host must not fail); NULL if it cannot be created. */
struct rw_net *conf_net_timeout(int64_t timeout_ms);
/** A connection error: -ECONNRESET, -EPIPE or -ETIMEDOUT. */
bool connection_error(int rc);

/* Cases in net_conformance_faults.c, listed by conf_run(). */
void close_with_requests_outstanding(void **state);
void comms_used_from_several_threads(void **state);
void peer_killed_while_sending(void **state);
void peer_killed_while_receiving(void **state);
void silent_sender_times_out(void **state);
void silent_receiver_times_out(void **state);
void strangers_are_dropped_real_peer_accepted(void **state);
void bad_arguments(void **state);

/* Cases in net_conformance_match.c, listed by conf_run(). */
void unmatched_tag_is_never_taken(void **state);
void send_before_receive_waits(void **state);
void tag_of_a_later_receive_waits(void **state);
void grouped_random_tag_orders(void **state);
void grouped_random_tag_orders_two_processes(void **state);
void failed_comm_answers_at_once(void **state);
void oversize_refused_before_anything_moves(void **state);
void peer_close_fails_outstanding_requests(void **state);
void patient_receive_outlasts_the_timeout(void **state);

#endif /* RW_NET_CONFORMANCE_INT_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rw_net conformance suite, written once against transport/rw_net.h and
 * run for every transport.  A transport registers itself with a small
 * file holding a struct conf_backend and a main() calling conf_run()
 * (conf_sock.c is the socket transport's).
 */
#ifndef RW_NET_CONFORMANCE_H
#define RW_NET_CONFORMANCE_H

#include <sys/socket.h>

#include "transport/rw_net.h"

struct conf_backend {
	const char *name;
	/** The transport's create function. */
	int (*create)(const struct rw_config *cfg, struct rw_net **out);
	/** Configuration: "RINGWAY_X", "value", ..., NULL.  Keep
	 *  RINGWAY_TIMEOUT_MS small (a few seconds): the fault cases wait
	 *  for it. */
	const char *const *env;
	/** Objects the transport still holds, process-wide: 0 once every
	 *  instance was destroyed. */
	long (*live_objects)(void);
	/** A substring the transport's warnings about a peer contain (its
	 *  address), so the fault cases can check the peer was named. */
	const char *peer_hint;
	/** The TCP address a listen handle points at, for the hostile-client
	 *  cases; NULL when the transport listens on no TCP port (those
	 *  cases are skipped). */
	int (*handle_addr)(const void *handle, struct sockaddr_storage *out);
	/** What the transport's warning says when it drops such a client. */
	const char *drop_warning;
};

/** Run every case against b; returns cmocka's result (0: all passed). */
int conf_run(const struct conf_backend *b);

#endif /* RW_NET_CONFORMANCE_H */

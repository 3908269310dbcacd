/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The listen handle of the auto transport (net_auto.c), versioned and
 * pinned.  It carries a socket listener's handle and the shm listener's
 * rendezvous handle side by side; the connecting side picks one.
 *
 * Version history (RW_AUTO_VERSION):
 *   1  flags, socket handle (<= 56 bytes), shm handle (56 bytes).
 *
 * Both parts are opaque here beyond their sizes: each transport checks its
 * own part (magic, version, nonce).  Every process of a job must run with
 * the same RINGWAY_TRANSPORT, as every handle must be of the same kind.
 */
#ifndef RW_NET_AUTO_PROTO_H
#define RW_NET_AUTO_PROTO_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/shm/shm_layout.h"
#include "transport/socket/sock_proto.h"

#define RW_AUTO_VERSION	   1
#define RW_AUTO_MAGIC	   0x4f545541u /* "AUTO" as a little-endian word */
#define RW_AUTO_SOCK_BYTES 56

/* rw_auto_handle.flags */
#define RW_AUTO_HAS_SOCK 0x1u /* sock holds the network transport's listen handle */
#define RW_AUTO_HAS_SHM	 0x2u /* shm holds an shm listen handle */

struct rw_auto_handle {
	uint32_t magic;			  /*  0: RW_AUTO_MAGIC */
	uint8_t version;		  /*  4: RW_AUTO_VERSION */
	uint8_t flags;			  /*  5: RW_AUTO_HAS_* */
	uint16_t rsvd;			  /*  6: zero */
	uint8_t sock[RW_AUTO_SOCK_BYTES]; /*  8: the network transport's handle (socket or ib) */
	struct rw_shm_handle shm;	  /* 64 */
};

static_assert(sizeof(struct rw_sock_handle) <= RW_AUTO_SOCK_BYTES, "socket handle grew");
static_assert(offsetof(struct rw_auto_handle, sock) == 8, "auto handle layout");
static_assert(offsetof(struct rw_auto_handle, shm) == 64, "auto handle layout");
static_assert(sizeof(struct rw_auto_handle) == 120, "auto handle layout");
static_assert(sizeof(struct rw_auto_handle) <= 128, "RW_NET_HANDLE_MAXSIZE");

#endif /* RW_NET_AUTO_PROTO_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wire layouts of the TCP socket transport, in one place and versioned.
 *
 * Version history (RW_SOCK_PROTO_VERSION):
 *   1  handle, hello, message header (eager/striped), nack.
 *
 * A connection ("comm") is 1..RW_SOCK_MAX_STREAMS TCP streams from one
 * connect to one listener.  Every stream starts with a struct rw_sock_hello
 * from the connecting side; the accepting side drops any stream whose hello
 * is not complete and correct within the timeout.  After that:
 *
 *   sender -> receiver, stream 0:  rw_sock_msg_hdr, then for an EAGER message
 *                                  its payload; for a STRIPED message slice 0.
 *   sender -> receiver, stream j:  slice j of each STRIPED message, in order.
 *   receiver -> sender, stream 0:  an rw_sock_nack for each message the
 *                                  receiver dropped; nothing otherwise.
 *
 * The sender sends eagerly.  The receiver matches each message to the oldest
 * posted receive (the tag picks the buffer of a grouped receive), checks its
 * size against that buffer, and drops one that does not fit (or whose tag
 * no buffer takes): its receive fails and it tells the sender, whose send
 * comm then fails with the same error.  Messages are numbered from 0 in
 * sending order on both ends; a nack names the message by that number.
 *
 * Integers are in host byte order (both ends run the same build, as NCCL
 * assumes); the magic and the markers read back wrong on a peer of the other
 * endianness, which rejects it.  The port in the handle is in network order.
 * All structs use natural alignment and no padding (checked below), so they
 * can be sent with one write and read into place.
 */
#ifndef RW_SOCK_PROTO_H
#define RW_SOCK_PROTO_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rw_common.h"

#define RW_SOCK_PROTO_VERSION 1
#define RW_SOCK_MAGIC 0x52574e53u      /* "RWNS" as a little-endian word */
#define RW_SOCK_MAX_STREAMS 16
#define RW_SOCK_MAX_RECVS 8           /* == RW_NET_MAX_RECVS */
#define RW_SOCK_STRIPE_ALIGN 4096     /* slices start on page multiples */

/* rw_sock_handle.family */
enum rw_sock_family_code {
	RW_SOCK_FAMILY_IPV4 = 4,
	RW_SOCK_FAMILY_IPV6 = 6,
};

/**
 * The listen handle (opaque to NCCL, copied by its bootstrap, at most
 * RW_NET_HANDLE_MAXSIZE bytes).  40 bytes, 8-byte aligned.
 */
struct rw_sock_handle {
	uint32_t magic;    /*  0: RW_SOCK_MAGIC */
	uint8_t version;   /*  4: RW_SOCK_PROTO_VERSION */
	uint8_t family;    /*  5: enum rw_sock_family_code */
	uint16_t port;     /*  6: listening port, network byte order */
	uint8_t addr[16];  /*  8: IPv4 in addr[0..3], or the IPv6 address */
	uint32_t scope_id; /* 24: IPv6 scope id, 0 for global addresses */
	uint32_t rsvd;     /* 28: zero */
	uint64_t nonce;    /* 32: random per listener; proves the peer saw it */
};

static_assert(sizeof(struct rw_sock_handle) == 40, "handle layout");
static_assert(sizeof(struct rw_sock_handle) <= 128, "RW_NET_HANDLE_MAXSIZE");
static_assert(offsetof(struct rw_sock_handle, version) == 4, "handle layout");
static_assert(offsetof(struct rw_sock_handle, addr) == 8, "handle layout");
static_assert(offsetof(struct rw_sock_handle, nonce) == 32, "handle layout");

/** First bytes on every stream, connecting side -> accepting side. */
struct rw_sock_hello {
	uint32_t magic;    /*  0: RW_SOCK_MAGIC */
	uint8_t version;   /*  4: RW_SOCK_PROTO_VERSION */
	uint8_t stream;    /*  5: index of this stream, < nstreams */
	uint8_t nstreams;  /*  6: streams of this connection, 1..MAX_STREAMS */
	uint8_t rsvd;      /*  7: zero */
	uint64_t nonce;    /*  8: the handle's nonce */
	uint64_t conn_id;  /* 16: random per connect; groups the streams */
};

static_assert(sizeof(struct rw_sock_hello) == 24, "hello layout");
static_assert(offsetof(struct rw_sock_hello, nonce) == 8, "hello layout");
static_assert(offsetof(struct rw_sock_hello, conn_id) == 16, "hello layout");

#define RW_SOCK_MSG_MARKER 0x5257u /* "RW": catches a desynchronised stream */

enum rw_sock_msg_kind {
	RW_SOCK_MSG_EAGER = 1,   /* payload follows on stream 0 */
	RW_SOCK_MSG_STRIPED = 2, /* slice j on stream j (rw_sock_stripe()) */
	RW_SOCK_MSG_NACK = 3,    /* receiver -> sender: a message was dropped */
};

/** Before every message, on stream 0.  16 bytes. */
struct rw_sock_msg_hdr {
	uint16_t marker;   /*  0: RW_SOCK_MSG_MARKER */
	uint8_t kind;      /*  2: RW_SOCK_MSG_EAGER or _STRIPED */
	uint8_t rsvd;      /*  3: zero */
	int32_t tag;       /*  4: the sender's tag */
	uint64_t size;     /*  8: payload bytes */
};

static_assert(sizeof(struct rw_sock_msg_hdr) == 16, "message header layout");
static_assert(offsetof(struct rw_sock_msg_hdr, tag) == 4, "message header layout");
static_assert(offsetof(struct rw_sock_msg_hdr, size) == 8, "message header layout");

/* rw_sock_nack.reason */
enum rw_sock_nack_reason {
	RW_SOCK_NACK_TOO_BIG = 1, /* larger than the buffer its tag picked */
	RW_SOCK_NACK_NO_TAG = 2,  /* no free buffer of the receive has its tag */
};

/** Receiver -> sender, stream 0: message `seq` was dropped.  32 bytes. */
struct rw_sock_nack {
	uint16_t marker;   /*  0: RW_SOCK_MSG_MARKER */
	uint8_t kind;      /*  2: RW_SOCK_MSG_NACK */
	uint8_t reason;    /*  3: enum rw_sock_nack_reason */
	uint32_t seq;      /*  4: number of the message (wraps) */
	int32_t tag;       /*  8: its tag */
	uint32_t recv;     /* 12: number of the receive it met (wraps) */
	uint64_t size;     /* 16: its size */
	uint64_t cap;      /* 24: the buffer's size (TOO_BIG), else 0 */
};

static_assert(sizeof(struct rw_sock_nack) == 32, "nack layout");
static_assert(offsetof(struct rw_sock_nack, size) == 16, "nack layout");

/**
 * Slice j of a STRIPED message of size bytes over n streams: slices are
 * contiguous, equal up to rounding to RW_SOCK_STRIPE_ALIGN, the last ones
 * possibly shorter or empty.  Both ends must compute the same slices, so this
 * is part of the protocol.
 */
static inline void rw_sock_stripe(uint64_t size, unsigned n, unsigned j,
				  uint64_t *off, uint64_t *len)
{
	uint64_t chunk = RW_DIV_UP(size, n);
	uint64_t o;

	chunk = (chunk + RW_SOCK_STRIPE_ALIGN - 1) &
		~(uint64_t)(RW_SOCK_STRIPE_ALIGN - 1);
	o = RW_MIN(size, chunk * j);
	*off = o;
	*len = RW_MIN(size - o, chunk);
}

#endif /* RW_SOCK_PROTO_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wire layouts of the TCP socket transport, in one place and versioned.
 *
 * Version history (RW_SOCK_PROTO_VERSION):
 *   1  handle, hello, message header (eager/striped), nack.
 *   2  the receiver posts its receives to the sender (rw_sock_post); a
 *      message header names the receive and buffer it fills; no nacks:
 *      a message too large for its buffer is refused by the sender
 *      (RW_SOCK_MSG_TRUNC).
 *
 * A connection ("comm") is 1..RW_SOCK_MAX_STREAMS TCP streams from one
 * connect to one listener.  Every stream starts with a struct rw_sock_hello
 * from the connecting side; the accepting side drops any stream whose hello
 * is not complete and correct within the timeout.  After that:
 *
 *   receiver -> sender, stream 0:  an rw_sock_post for each receive posted
 *                                  (irecv), in posting order.
 *   sender -> receiver, stream 0:  rw_sock_msg_hdr, then for an EAGER message
 *                                  its payload; for a STRIPED message slice 0;
 *                                  for a TRUNC one nothing.
 *   sender -> receiver, stream j:  slice j of each STRIPED message, in order.
 *
 * Matching is the sender's, as in NCCL's IB transport: a send is taken only
 * when the oldest receive not yet filled has a free buffer with its tag (the
 * first such buffer); until then isend answers "not now".  Receives fill in
 * posting order, never out of order.  The header names the receive and the
 * buffer, and the receiver checks that this is the match it expects.  A
 * message larger than its buffer is not sent: the header goes alone as
 * RW_SOCK_MSG_TRUNC, and both ends fail the connection with -EMSGSIZE.
 * Messages and receives are numbered from 0 on both ends (wrapping).
 *
 * Sending ahead (rw_net_ahead, both ends set before the first message;
 * receives of one buffer): the receiver posts nothing, and message k goes
 * out at once, EAGER or STRIPED as its size says, naming receive k,
 * buffer 0.  The receiver reads nothing of it until that receive is
 * posted, and fails the connection if the receive does not take it
 * (-EMSGSIZE when it is too large, -EPROTO for another tag).  A post
 * reaching a sender set so is a protocol error, found when the sender next
 * reads stream 0 (testing a send still under way).  The headers are the
 * same, so the version stays; the ring engine's hello (HELLO_VERSION 5)
 * keeps builds that post from meeting builds that do not.
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

#define RW_SOCK_PROTO_VERSION 2
#define RW_SOCK_MAGIC	      0x52574e53u /* "RWNS" as a little-endian word */
#define RW_SOCK_MAX_STREAMS   16
#define RW_SOCK_MAX_RECVS     8	   /* == RW_NET_MAX_RECVS */
#define RW_SOCK_STRIPE_ALIGN  4096 /* slices start on page multiples */

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
	uint32_t magic;	   /*  0: RW_SOCK_MAGIC */
	uint8_t version;   /*  4: RW_SOCK_PROTO_VERSION */
	uint8_t family;	   /*  5: enum rw_sock_family_code */
	uint16_t port;	   /*  6: listening port, network byte order */
	uint8_t addr[16];  /*  8: IPv4 in addr[0..3], or the IPv6 address */
	uint32_t scope_id; /* 24: IPv6 scope id, 0 for global addresses */
	uint32_t rsvd;	   /* 28: zero */
	uint64_t nonce;	   /* 32: random per listener; proves the peer saw it */
};

static_assert(sizeof(struct rw_sock_handle) == 40, "handle layout");
static_assert(sizeof(struct rw_sock_handle) <= 128, "RW_NET_HANDLE_MAXSIZE");
static_assert(offsetof(struct rw_sock_handle, version) == 4, "handle layout");
static_assert(offsetof(struct rw_sock_handle, addr) == 8, "handle layout");
static_assert(offsetof(struct rw_sock_handle, nonce) == 32, "handle layout");

/** First bytes on every stream, connecting side -> accepting side. */
struct rw_sock_hello {
	uint32_t magic;	  /*  0: RW_SOCK_MAGIC */
	uint8_t version;  /*  4: RW_SOCK_PROTO_VERSION */
	uint8_t stream;	  /*  5: index of this stream, < nstreams */
	uint8_t nstreams; /*  6: streams of this connection, 1..MAX_STREAMS */
	uint8_t rsvd;	  /*  7: zero */
	uint64_t nonce;	  /*  8: the handle's nonce */
	uint64_t conn_id; /* 16: random per connect; groups the streams */
};

static_assert(sizeof(struct rw_sock_hello) == 24, "hello layout");
static_assert(offsetof(struct rw_sock_hello, nonce) == 8, "hello layout");
static_assert(offsetof(struct rw_sock_hello, conn_id) == 16, "hello layout");

#define RW_SOCK_MSG_MARKER 0x5257u /* "RW": catches a desynchronised stream */

enum rw_sock_msg_kind {
	RW_SOCK_MSG_EAGER = 1,	 /* payload follows on stream 0 */
	RW_SOCK_MSG_STRIPED = 2, /* slice j on stream j (rw_sock_stripe()) */
	RW_SOCK_MSG_TRUNC = 3,	 /* larger than its buffer: no payload, both fail */
	RW_SOCK_MSG_POST = 4,	 /* receiver -> sender: a receive was posted */
};

/** Before every message, on stream 0.  24 bytes. */
struct rw_sock_msg_hdr {
	uint16_t marker; /*  0: RW_SOCK_MSG_MARKER */
	uint8_t kind;	 /*  2: RW_SOCK_MSG_EAGER, _STRIPED or _TRUNC */
	uint8_t index;	 /*  3: the buffer of the receive it fills */
	int32_t tag;	 /*  4: the sender's tag */
	uint64_t size;	 /*  8: payload bytes (TRUNC: what the send had) */
	uint32_t recv;	 /* 16: number of the receive it fills (wraps) */
	uint32_t rsvd;	 /* 20: zero */
};

static_assert(sizeof(struct rw_sock_msg_hdr) == 24, "message header layout");
static_assert(offsetof(struct rw_sock_msg_hdr, tag) == 4, "message header layout");
static_assert(offsetof(struct rw_sock_msg_hdr, size) == 8, "message header layout");
static_assert(offsetof(struct rw_sock_msg_hdr, recv) == 16, "message header layout");

/**
 * Receiver -> sender, stream 0: receive `seq` was posted with n buffers.
 * Entries n..RW_SOCK_MAX_RECVS-1 are zero.  104 bytes.
 */
struct rw_sock_post {
	uint16_t marker;		   /*  0: RW_SOCK_MSG_MARKER */
	uint8_t kind;			   /*  2: RW_SOCK_MSG_POST */
	uint8_t n;			   /*  3: buffers, 1..RW_SOCK_MAX_RECVS */
	uint32_t seq;			   /*  4: number of the receive (wraps) */
	int32_t tags[RW_SOCK_MAX_RECVS];   /*  8: tag of each buffer */
	uint64_t sizes[RW_SOCK_MAX_RECVS]; /* 40: size of each buffer */
};

static_assert(sizeof(struct rw_sock_post) == 104, "post layout");
static_assert(offsetof(struct rw_sock_post, tags) == 8, "post layout");
static_assert(offsetof(struct rw_sock_post, sizes) == 40, "post layout");

/**
 * Slice j of a STRIPED message of size bytes over n streams: slices are
 * contiguous, equal up to rounding to RW_SOCK_STRIPE_ALIGN, the last ones
 * possibly shorter or empty.  Both ends must compute the same slices, so this
 * is part of the protocol.
 */
static inline void rw_sock_stripe(uint64_t size, unsigned n, unsigned j, uint64_t *off,
				  uint64_t *len)
{
	uint64_t chunk = RW_DIV_UP(size, n);
	uint64_t o;

	chunk = (chunk + RW_SOCK_STRIPE_ALIGN - 1) & ~(uint64_t)(RW_SOCK_STRIPE_ALIGN - 1);
	o = RW_MIN(size, chunk * j);
	*off = o;
	*len = RW_MIN(size - o, chunk);
}

#endif /* RW_SOCK_PROTO_H */

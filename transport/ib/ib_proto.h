/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The InfiniBand/RoCE transport's wire formats, versioned and pinned:
 * the listen handle, the connection record exchanged over TCP at set-up,
 * the clear-to-send (CTS) entry the receiver writes into the sender's FIFO,
 * and the immediate data of the data writes.  All fields are little-endian
 * (every supported host is), except where a verb wants network order.
 *
 * Protocol, per connection (one send comm -> one recv comm):
 *   set-up   TCP to the listener: the sender sends its record (QPNs, GID,
 *            LID, PSN, MTU, its FIFO's address and rkey), the receiver
 *            answers with its own, both move their QPs to RTS, the sender
 *            sends RW_IB_READY.  The TCP connection stays open: its end
 *            tells either side that the peer process is gone.
 *   irecv    request seq s (1, 2, ...) of n buffers: the receiver RDMA
 *            WRITEs n CTS entries (address, size, rkey, tag) into FIFO
 *            slot s % RW_IB_FIFO_SLOTS of the sender.
 *   isend    NCCL's rule (p2p.cc, ncclIbIsend): a send may take only an
 *            unused entry with its tag of the oldest CTS slot not yet fully
 *            taken; when there is none (slot not arrived, or its entries
 *            with that tag taken) isend answers "not now" and the caller
 *            retries, so slots are taken in order and nothing is sent that
 *            no receive takes.  The data goes by RDMA WRITE WITH IMMEDIATE
 *            straight into the receive buffer, split into pieces over the
 *            connection's QPs; each piece's immediate names the request,
 *            the entry and the number of pieces, and each piece's byte_len
 *            counts toward the received size.
 *   errors   a send larger than its entry fails, and the connection with
 *            it; the sender tells the receiver with a zero-length write
 *            whose immediate carries the error code (RW_IB_IMM_ERR_SIZE).
 *            RW_IB_IMM_ERR_TAG is never sent any more (a send is taken only
 *            by an entry with its tag); a receiver still fails on it.
 *
 * Version history (RW_IB_VERSION):
 *   1  handle, connection record, CTS entry and immediate as below.
 */
#ifndef RW_IB_PROTO_H
#define RW_IB_PROTO_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/rw_net.h"

#define RW_IB_MAGIC   0x42495752u /* "RWIB" as a little-endian word */
#define RW_IB_VERSION 1
#define RW_IB_READY   0x52 /* the sender's last set-up byte */

#define RW_IB_MAX_QPS 16 /* RINGWAY_IB_QPS_PER_CONN upper bound */
/* CTS slots: one per receive request the receiver may have in flight. */
#define RW_IB_FIFO_SLOTS (RW_NET_MAX_REQUESTS * RW_NET_MAX_RECVS)

/* --- the listen handle (opaque to NCCL, 128 bytes at most) ------------------ */

/** Where the listener's TCP set-up port is.  Fits the auto transport's
 *  56-byte slot (transport/net_auto_proto.h). */
struct rw_ib_handle {
	uint32_t magic;	   /*  0: RW_IB_MAGIC */
	uint8_t version;   /*  4: RW_IB_VERSION */
	uint8_t family;	   /*  5: 4 or 6 */
	uint16_t port;	   /*  6: TCP port, network order */
	uint8_t addr[16];  /*  8: IPv4 in the first 4 bytes, or IPv6 */
	uint32_t scope_id; /* 24: IPv6 link-local scope */
	uint32_t rsvd;	   /* 28 */
	uint64_t nonce;	   /* 32: names this listener; echoed by connect */
};
static_assert(sizeof(struct rw_ib_handle) == 40, "ib handle layout");
static_assert(sizeof(struct rw_ib_handle) <= 56, "fits the auto handle's slot");
static_assert(sizeof(struct rw_ib_handle) <= RW_NET_HANDLE_MAXSIZE, "NCCL handle");

/* --- the connection record (both directions, fixed size) ------------------ */

struct rw_ib_conn_info {
	uint32_t magic;	    /*   0: RW_IB_MAGIC */
	uint8_t version;    /*   4: RW_IB_VERSION */
	uint8_t link_layer; /*   5: IBV_LINK_LAYER_INFINIBAND / _ETHERNET */
	uint8_t nqps;	    /*   6: QPs of the connection (the sender's choice) */
	uint8_t mtu;	    /*   7: active MTU (enum ibv_mtu) */
	uint64_t nonce;	    /*   8: the listener's nonce (sender), echoed back */
	uint8_t gid[16];    /*  16: the GID this side's QPs use */
	uint16_t lid;	    /*  32: port LID (InfiniBand) */
	uint8_t tc;	    /*  34: sender: the connection's traffic class (both ends use it) */
	uint8_t rsvd0;	    /*  35 */
	uint32_t psn;	    /*  36: first packet sequence number */
	uint32_t qpn[RW_IB_MAX_QPS]; /* 40 */
	uint64_t fifo_addr;	     /* 104: sender: its CTS FIFO; receiver: 0 */
	uint32_t fifo_rkey;	     /* 112 */
	uint32_t rsvd1;		     /* 116 */
};
static_assert(sizeof(struct rw_ib_conn_info) == 120, "connection record layout");
static_assert(offsetof(struct rw_ib_conn_info, fifo_addr) == 104, "connection record");

/* --- the clear-to-send entry ------------------------------------------------ */

/*
 * One receive buffer, written by the receiver into the sender's FIFO with
 * one RDMA WRITE per request (n entries, RW_NET_MAX_RECVS per slot).  An
 * entry is one cache line.  The sender polls `seq` and trusts an entry only
 * when `check` matches its other fields, so an entry caught half written
 * (the NIC may place a write in any order) is read again later.
 */
struct rw_ib_cts {
	uint64_t addr;	 /*  0: receive buffer (its MR's iova space) */
	uint64_t size;	 /*  8: its size, an upper bound */
	uint32_t rkey;	 /* 16 */
	int32_t tag;	 /* 20 */
	uint8_t nreqs;	 /* 24: entries in this request (1..RW_NET_MAX_RECVS) */
	uint8_t idx;	 /* 25: this entry's index */
	uint16_t rsvd;	 /* 26 */
	uint32_t seq;	 /* 28: request sequence number (low 32 bits, never 0) */
	uint32_t check;	 /* 32: rw_ib_cts_check() of the above */
	uint8_t pad[28]; /* 36 */
};
static_assert(sizeof(struct rw_ib_cts) == 64, "CTS entry: one cache line");

/** The checksum an entry carries (never 0 for a written entry). */
static inline uint32_t rw_ib_cts_check(const struct rw_ib_cts *c)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ c->addr;

	h = (h ^ c->size) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ ((uint64_t)c->rkey << 32 | (uint32_t)c->tag)) * 0x94d049bb133111ebull;
	h = (h ^ ((uint64_t)c->nreqs << 40 | (uint64_t)c->idx << 32 | c->seq)) *
	    0xbf58476d1ce4e5b9ull;
	h ^= h >> 31;
	return (uint32_t)h | 1u;
}

/* --- immediate data ---------------------------------------------------------- */

/*
 *   bits  0..2   entry index within the request (0..7)
 *   bits  3..7   pieces the send was cut into (1..30), or an error code:
 *                RW_IB_IMM_ERR_TAG (0) no entry takes the send's tag,
 *                RW_IB_IMM_ERR_SIZE (31) the send is larger than the entry
 *   bits  8..31  request sequence number, low 24 bits
 * Carried in network byte order in the work request and completion.
 */
#define RW_IB_IMM_ERR_TAG  0u
#define RW_IB_IMM_ERR_SIZE 31u
#define RW_IB_MAX_PIECES   30u

static_assert(RW_NET_MAX_RECVS <= 8, "3 bits of entry index");
static_assert(RW_IB_FIFO_SLOTS < (1u << 24), "sequence numbers stay unambiguous");

static inline uint32_t rw_ib_imm(uint32_t seq, unsigned int idx, unsigned int pieces)
{
	return (seq & 0xffffffu) << 8 | (pieces & 31u) << 3 | (idx & 7u);
}

static inline uint32_t rw_ib_imm_seq(uint32_t imm)
{
	return imm >> 8;
}

static inline unsigned int rw_ib_imm_idx(uint32_t imm)
{
	return imm & 7u;
}

static inline unsigned int rw_ib_imm_pieces(uint32_t imm)
{
	return (imm >> 3) & 31u;
}

#endif /* RW_IB_PROTO_H */

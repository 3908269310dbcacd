/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layouts of the same-host transport, in one place and versioned: the listen
 * handle, the two rendezvous messages, the per-connection segment and the
 * per-process doorbell page.
 *
 * Version history (RW_SHM_VERSION):
 *   1  handle, hello/reply, segment (slot ring, in-order acks, CMA job),
 *      doorbell (futex word, sleepers).
 *   2  the sender matches at isend (a message is published only into a
 *      posted receive that takes it: NCCL's IB rule); each side's line
 *      carries a failure word (failed, and the sender's failed_seq), so a
 *      comm that fails tells its peer at once.
 *   3  a slot and a post entry carry a stamp, stored last with release
 *      order: the reader polls the entry itself (one cache line) instead of
 *      a counter line, then the entry; an INLINE message's payload starts
 *      in the slot header's line when it is at most 2 KiB
 *      (rw_shm_inline_off()), so a message of up to 24 bytes is one line;
 *      each side's line is two, the counters the peer polls and the rarely
 *      written words (closed, failed), so a
 *      failure check does not miss on every message.
 *   4  a window of RW_SHM_WIN_BYTES between the post ring and the slots:
 *      the sender writes it, the receiver reads it, and what it holds is
 *      the user's protocol (rw_net's window(); the engine's small
 *      collectives, coll/small_win.c); the transport never touches it.
 *   5  a post entry's n carries flags above its count: RW_SHM_POST_SLOTS,
 *      a receive that consumes its message where it lies (a sink, rw_net's
 *      irecv_sink) asks for the slots, never cross-memory attach.
 *
 * Rendezvous.  A listener binds an AF_UNIX SOCK_SEQPACKET socket to the
 * abstract name RW_SHM_SOCK_PREFIX "<nonce as 16 hex digits>"; the handle
 * carries the nonce and the host identity (boot id, hostname hash, network
 * namespace, since abstract names live in one).  The connecting side checks
 * the listener's SO_PEERCRED uid, creates the segment (a sealed memfd, mode
 * 0600: it never appears in /dev/shm and dies with the last mapping) and
 * sends struct rw_shm_hello with two descriptors, the segment and its
 * doorbell.  The accepting side checks its peer's uid, the nonce, the
 * version, the owner, mode, seals and size of both memfds, and the segment
 * header, then answers struct rw_shm_reply with its own doorbell.  Anything
 * wrong is refused with a reply whose status is negative, and a close.
 *
 * Segment (one per connection; sender = connecting side, receiver =
 * accepting side).  A 4 KiB control page, the ring of posted receives
 * (RW_SHM_POST_RING entries), the window (RW_SHM_WIN_BYTES), then nslots
 * slots of slot_bytes:
 *
 *   line 0  rw_shm_seg_hdr     written once by the creator
 *   1, 2    sender lines       tail (slots published), replayed (posted
 *                              receives the sender is done with); then
 *                              closed, failed, failed_seq: sender only
 *   3, 4    receiver lines     head (slots consumed), acked (messages
 *                              finished), posted (receives posted); then
 *                              closed, accepted, failed: receiver only
 *   line 5  CMA job            claim word, addresses, size: both sides
 *   line 6  CMA progress       bytes done, error: both sides
 *   7..38   ack status ring    receiver only
 *
 * Posted receives.  irecv writes its buffers' tags and sizes to the post
 * ring, then the entry's stamp (release), then counts it in rx.posted; the
 * sender takes an entry whose stamp is its number + 1 (32 bits) as posted.
 * isend matches against them the way NCCL's IB transport does: a send is
 * taken only when the oldest posted
 * receive that still has a free buffer has one with the send's tag (else
 * isend answers "not now" and the caller retries); the sender counts that
 * receive done in tx.replayed once all its buffers are taken.  So every
 * message in the ring has its receive and buffer known to both sides, in
 * the same order: the receiver takes messages in sequence, each to the
 * oldest receive with a free buffer of its tag.  A message that fits a
 * slot, or goes through the slots, completes once it is out; one copied
 * from the sender's buffer (CMA, CUDA) completes when acked.
 *
 * Failure.  A side whose comm fails (a send larger than its buffer, a
 * protocol error, a copy error) writes -errno into its line's failed word
 * and rings.  The sender also writes failed_seq, the first message it did
 * not publish whole: the receiver still takes the messages before it, then
 * fails.  A close writes closed instead (the peer fails with ECONNRESET).

 * Each counter sits on its own 64-byte line with one writer, so a spinning
 * reader only misses when the line really changed (no false sharing).
 * Slot s of the ring is slot (s % nslots); a slot starts with a 64-byte
 * rw_shm_slot header followed by its payload (an INLINE message of at
 * most RW_SHM_INLINE_ODD_MAX bytes: from offset RW_SHM_SLOT_INLINE_OFF,
 * inside the header's line; a larger one line-aligned at
 * RW_SHM_SLOT_HDR_BYTES).  The sender writes
 * the slot, then its stamp (s + 1 in 32 bits, release): the receiver polls
 * the stamp of slot head, so a small message costs the reader one line.
 * tx.tail follows the stamps (peer checks, debugging), nobody polls it.
 *
 * Doorbell (one per process and transport instance).  A peer that publishes
 * something bumps seq and FUTEX_WAKEs it when sleepers is non-zero.
 *
 * Integers are in host byte order: both ends run on one host.
 */
#ifndef RW_SHM_LAYOUT_H
#define RW_SHM_LAYOUT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define RW_SHM_VERSION	      5
#define RW_SHM_MAGIC	      0x4d485352u /* "RSHM" as a little-endian word */
#define RW_SHM_SEG_MAGIC      0x47455352u /* "RSEG" */
#define RW_SHM_DB_MAGIC	      0x4c425752u /* "RWBL" */
#define RW_SHM_SOCK_PREFIX    "ringway-shm."
#define RW_SHM_CACHELINE      64
#define RW_SHM_CTRL_BYTES     4096		       /* control page */
#define RW_SHM_POST_RING      512		       /* posted receives in flight */
#define RW_SHM_POST_BYTES     (RW_SHM_POST_RING * 128) /* after the control page */
#define RW_SHM_WIN_OFFSET     (RW_SHM_CTRL_BYTES + RW_SHM_POST_BYTES)
#define RW_SHM_WIN_BYTES      (64 << 10) /* the window (version 4) */
#define RW_SHM_SLOTS_OFFSET   (RW_SHM_WIN_OFFSET + RW_SHM_WIN_BYTES)
#define RW_SHM_DB_BYTES	      4096 /* doorbell page */
#define RW_SHM_ACK_RING	      512  /* > sends in flight per connection (256) */
#define RW_SHM_SLOT_HDR_BYTES 64
#define RW_SHM_MAX_SEG_BYTES  (1ull << 32) /* refuse larger segments */

/* --- handle ---------------------------------------------------------- */

/** Where a process runs: equal identities mean one kernel and one network
 *  namespace (abstract socket names are per namespace). */
struct rw_shm_host_id {
	uint8_t boot_id[16]; /*  0: /proc/sys/kernel/random/boot_id */
	uint64_t host_hash;  /* 16: FNV-1a of the hostname */
	uint64_t netns;	     /* 24: inode of /proc/self/ns/net, 0 if unknown */
};

static_assert(sizeof(struct rw_shm_host_id) == 32, "host id layout");

/** The listen handle.  56 bytes (it also rides in the auto transport's
 *  handle, net_auto_proto.h); RW_NET_HANDLE_MAXSIZE is 128. */
struct rw_shm_handle {
	uint32_t magic;		    /*  0: RW_SHM_MAGIC */
	uint8_t version;	    /*  4: RW_SHM_VERSION */
	uint8_t rsvd0[3];	    /*  5: zero */
	uint64_t nonce;		    /*  8: random per listener; names its socket */
	struct rw_shm_host_id host; /* 16 */
	uint32_t uid;		    /* 48: the listener's effective uid */
	int32_t pid;		    /* 52: the listener's pid (its namespace) */
};

static_assert(sizeof(struct rw_shm_handle) == 56, "handle layout");
static_assert(sizeof(struct rw_shm_handle) <= 128, "RW_NET_HANDLE_MAXSIZE");
static_assert(offsetof(struct rw_shm_handle, version) == 4, "handle layout");
static_assert(offsetof(struct rw_shm_handle, nonce) == 8, "handle layout");
static_assert(offsetof(struct rw_shm_handle, host) == 16, "handle layout");
static_assert(offsetof(struct rw_shm_handle, uid) == 48, "handle layout");

/* --- rendezvous messages ----------------------------------------------- */

enum rw_shm_msg_kind {
	RW_SHM_MSG_HELLO = 1, /* connect -> accept, fds: segment, doorbell */
	RW_SHM_MSG_REPLY = 2, /* accept -> connect, fds: doorbell (status 0) */
};

/* rw_shm_hello.flags / rw_shm_reply.flags */
#define RW_SHM_FLAG_CMA 0x1u /* the sender may read/write the peer's memory */

/** Connecting side -> accepting side, with two SCM_RIGHTS descriptors. */
struct rw_shm_hello {
	uint32_t magic;	     /*  0: RW_SHM_MAGIC */
	uint8_t version;     /*  4: RW_SHM_VERSION */
	uint8_t kind;	     /*  5: RW_SHM_MSG_HELLO */
	uint16_t rsvd0;	     /*  6: zero */
	uint64_t nonce;	     /*  8: the handle's nonce */
	uint64_t conn_id;    /* 16: random per connect, also in the segment */
	uint64_t seg_bytes;  /* 24: size of the segment memfd */
	uint64_t probe_addr; /* 32: address of an 8-byte word in the sender... */
	uint64_t probe_val;  /* 40: ...holding this value (CMA probe) */
	uint32_t flags;	     /* 48: RW_SHM_FLAG_* the sender allows */
	uint32_t rsvd1;	     /* 52: zero */
	uint64_t rsvd2;	     /* 56: zero */
};

static_assert(sizeof(struct rw_shm_hello) == 64, "hello layout");
static_assert(offsetof(struct rw_shm_hello, conn_id) == 16, "hello layout");
static_assert(offsetof(struct rw_shm_hello, probe_addr) == 32, "hello layout");

/** Accepting side -> connecting side, with one descriptor when status == 0. */
struct rw_shm_reply {
	uint32_t magic;	     /*  0: RW_SHM_MAGIC */
	uint8_t version;     /*  4: RW_SHM_VERSION */
	uint8_t kind;	     /*  5: RW_SHM_MSG_REPLY */
	uint16_t rsvd0;	     /*  6: zero */
	uint64_t conn_id;    /*  8: the hello's conn_id */
	int32_t status;	     /* 16: 0 accepted, or -errno: why it was refused */
	uint32_t flags;	     /* 20: RW_SHM_FLAG_CMA: receiver reads sender memory */
	uint64_t probe_addr; /* 24: a word in the receiver (sender's CMA probe) */
	uint64_t probe_val;  /* 32 */
	uint64_t rsvd1;	     /* 40: zero */
};

static_assert(sizeof(struct rw_shm_reply) == 48, "reply layout");
static_assert(offsetof(struct rw_shm_reply, status) == 16, "reply layout");

/* --- segment ------------------------------------------------------------ */

/** Line 0 of the segment; the creator writes it before the hello. */
struct rw_shm_seg_hdr {
	uint32_t magic;	      /*  0: RW_SHM_SEG_MAGIC */
	uint16_t version;     /*  4: RW_SHM_VERSION */
	uint16_t ctrl_bytes;  /*  6: RW_SHM_CTRL_BYTES */
	uint64_t nonce;	      /*  8: the listener's nonce */
	uint64_t conn_id;     /* 16: the hello's conn_id */
	uint32_t creator_uid; /* 24 */
	int32_t creator_pid;  /* 28: in the creator's namespace */
	uint32_t nslots;      /* 32 */
	uint32_t slot_bytes;  /* 36: multiple of 4096, header included */
	uint64_t seg_bytes;   /* 40: RW_SHM_SLOTS_OFFSET + nslots * slot_bytes */
	uint64_t rsvd[2];     /* 48: zero */
};

static_assert(sizeof(struct rw_shm_seg_hdr) == RW_SHM_CACHELINE, "segment header");

/** Sender's lines: only the sender writes them.  The second holds what
 *  changes once per connection, so the receiver's check of it stays a hit. */
struct rw_shm_seg_tx {
	uint64_t tail;	     /*  0: slots published (monotonic) */
	uint64_t replayed;   /*  8: posted receives the sender is done with */
	uint64_t pad0[6];    /* 16 */
	uint32_t closed;     /* 64: 1 once the sender closed its side */
	int32_t failed;	     /* 68: -errno once the sender's comm failed, else 0 */
	uint64_t failed_seq; /* 72: first message not published whole (failed != 0) */
	uint64_t pad1[6];    /* 80 */
};

/** Receiver's lines: only the receiver writes them (the second rarely). */
struct rw_shm_seg_rx {
	uint64_t head;	   /*  0: slots consumed (monotonic) */
	uint64_t acked;	   /*  8: messages finished; status in ack[] */
	uint64_t posted;   /* 16: receives posted; entries in the post ring */
	uint64_t pad0[5];  /* 24 */
	uint32_t closed;   /* 64: 1 once the receiver closed its side */
	uint32_t accepted; /* 68: 1 once the receiver validated everything */
	int32_t failed;	   /* 72: -errno once the receiver's comm failed, else 0 */
	uint32_t rsvd;	   /* 76 */
	uint64_t pad1[6];  /* 80 */
};

/*
 * The large message being copied by cross-memory attach (one at a time per
 * connection, in order).  The receiver installs a job with release order on
 * claim; both sides then take chunk indices by compare-and-swap on claim,
 * copy them (receiver: process_vm_readv, sender: process_vm_writev) and add
 * the bytes to done.  The generation in claim's top bits makes a stale claim
 * fail, so a job cannot be replaced while one of its chunks is in flight.
 */
#define RW_SHM_CLAIM_IDX_BITS  24
#define RW_SHM_CLAIM_IDX_MASK  ((1ull << RW_SHM_CLAIM_IDX_BITS) - 1)
#define RW_SHM_CLAIM(gen, idx) (((uint64_t)(gen) << RW_SHM_CLAIM_IDX_BITS) | (idx))
#define RW_SHM_CLAIM_GEN(w)    ((w) >> RW_SHM_CLAIM_IDX_BITS)

/* rw_shm_seg_job.flags */
#define RW_SHM_JOB_COOP 0x1u /* the sender may help (host destination) */

struct rw_shm_seg_job {
	uint64_t claim; /* generation << 24 | next chunk index; 0: none yet */
	uint64_t seq;	/* message number */
	uint64_t src;	/* sender address */
	uint64_t dst;	/* receiver address */
	uint64_t size;	/* bytes */
	uint32_t chunk; /* bytes per chunk */
	uint32_t flags; /* RW_SHM_JOB_* */
	uint64_t pad[2];
};

struct rw_shm_seg_prog {
	uint64_t done; /* bytes of the current job copied, by either side */
	int32_t err;   /* first copy error (-errno), 0 if none */
	uint32_t rsvd;
	uint64_t pad[6];
};

/** The control page. */
struct rw_shm_seg {
	struct rw_shm_seg_hdr hdr;    /*   0 */
	struct rw_shm_seg_tx tx;      /*  64 */
	struct rw_shm_seg_rx rx;      /* 192 */
	struct rw_shm_seg_job job;    /* 320 */
	struct rw_shm_seg_prog prog;  /* 384 */
	int32_t ack[RW_SHM_ACK_RING]; /* 448: status of message seq % ACK_RING */
};

static_assert(sizeof(struct rw_shm_seg_tx) == 2 * RW_SHM_CACHELINE, "tx lines");
static_assert(sizeof(struct rw_shm_seg_rx) == 2 * RW_SHM_CACHELINE, "rx lines");
static_assert(offsetof(struct rw_shm_seg_tx, closed) == RW_SHM_CACHELINE, "tx lines");
static_assert(offsetof(struct rw_shm_seg_rx, closed) == RW_SHM_CACHELINE, "rx lines");
static_assert(sizeof(struct rw_shm_seg_job) == RW_SHM_CACHELINE, "job line");
static_assert(sizeof(struct rw_shm_seg_prog) == RW_SHM_CACHELINE, "progress line");
static_assert(offsetof(struct rw_shm_seg, tx) == 64, "segment layout");
static_assert(offsetof(struct rw_shm_seg, rx) == 192, "segment layout");
static_assert(offsetof(struct rw_shm_seg, job) == 320, "segment layout");
static_assert(offsetof(struct rw_shm_seg, prog) == 384, "segment layout");
static_assert(offsetof(struct rw_shm_seg, ack) == 448, "segment layout");
static_assert(sizeof(struct rw_shm_seg) <= RW_SHM_CTRL_BYTES, "control page");

/** One posted receive (irecv), in the post ring at RW_SHM_CTRL_BYTES. */
struct rw_shm_post {
	uint32_t n;	  /*   0: buffers, 1..RW_SHM_MAX_RECVS, | RW_SHM_POST_* flags */
	uint32_t stamp;	  /*   4: seq + 1 (32 bits) once the entry is whole */
	uint64_t seq;	  /*   8: number of the receive on this connection */
	int32_t tag[8];	  /*  16: each buffer's tag */
	uint64_t size[8]; /*  48: each buffer's size */
	uint64_t pad[2];  /* 112 */
};

#define RW_SHM_MAX_RECVS   8 /* == RW_NET_MAX_RECVS */
#define RW_SHM_POST_N_MASK 0xffu
/* rw_shm_post.n: the receiver takes the message from the slots as it
 * arrives (a sink): send it through them, not by cross-memory attach,
 * whose copy into the buffer the receiver would then read again */
#define RW_SHM_POST_SLOTS (1u << 8)
static_assert(sizeof(struct rw_shm_post) == 128, "post entry layout");
static_assert(offsetof(struct rw_shm_post, size[2]) == 64, "n <= 2: the first line is enough");
static_assert(RW_SHM_POST_BYTES % 4096 == 0, "slots start on a page");

/* rw_shm_slot.kind */
enum rw_shm_slot_kind {
	RW_SHM_SLOT_INLINE = 1, /* the whole message is in this slot (rw_shm_inline_off) */
	RW_SHM_SLOT_FRAG = 2,	/* one piece of a message spread over slots */
	RW_SHM_SLOT_CMA = 3,	/* descriptor: receiver copies from addr */
	RW_SHM_SLOT_CUDA = 4,	/* descriptor: rw_shm_cuda_desc in the payload */
};

/** Head of every slot; the payload follows at RW_SHM_SLOT_HDR_BYTES. */
struct rw_shm_slot {
	uint32_t kind;	   /*  0: enum rw_shm_slot_kind */
	int32_t tag;	   /*  4: the sender's tag */
	uint64_t size;	   /*  8: message bytes */
	uint64_t seq;	   /* 16: message number on this connection */
	uint64_t offset;   /* 24: FRAG: where this piece goes in the message */
	uint32_t len;	   /* 32: payload bytes in this slot */
	uint32_t stamp;	   /* 36: slot number + 1 (32 bits), stored last */
	uint64_t addr;	   /* 40: CMA: the sender's address of the message; */
	uint64_t rsvd1[2]; /* 48:   INLINE: the payload starts at 40 */
};

#define RW_SHM_SLOT_INLINE_OFF 40   /* a small INLINE message's payload: in line 0 */
#define RW_SHM_INLINE_ODD_MAX  2048 /* ... up to this size */

/** Where an INLINE message of size bytes starts in its slot: a small one
 *  in the header's line, a larger one line-aligned (copies at an odd offset
 *  cost more than the line saved: 2 ranks allreduce, 8 KiB 3.1 -> 3.9 us,
 *  32 KiB 8.0 -> 9.3; at 2 KiB the odd offset still wins, 1.82 -> 1.70). */
static inline uint64_t rw_shm_inline_off(uint64_t size)
{
	return size <= RW_SHM_INLINE_ODD_MAX ? RW_SHM_SLOT_INLINE_OFF : RW_SHM_SLOT_HDR_BYTES;
}
static_assert(sizeof(struct rw_shm_slot) == RW_SHM_SLOT_HDR_BYTES, "slot header");
static_assert(offsetof(struct rw_shm_slot, stamp) == 36, "slot header");
static_assert(offsetof(struct rw_shm_slot, addr) == RW_SHM_SLOT_INLINE_OFF, "slot header");
static_assert(offsetof(struct rw_shm_slot, seq) == 16, "slot header");
static_assert(offsetof(struct rw_shm_slot, addr) == 40, "slot header");

#define RW_SHM_CUDA_HANDLE_BYTES 64 /* CUipcMemHandle */

/** Payload of a RW_SHM_SLOT_CUDA slot. */
struct rw_shm_cuda_desc {
	uint8_t handle[RW_SHM_CUDA_HANDLE_BYTES]; /*  0: IPC handle of the allocation */
	uint64_t offset;			  /* 64: message start in it */
	uint64_t rsvd;				  /* 72 */
};

static_assert(sizeof(struct rw_shm_cuda_desc) == 80, "CUDA descriptor");

/* --- doorbell ---------------------------------------------------------- */

struct rw_shm_doorbell {
	uint32_t magic;	  /*   0: RW_SHM_DB_MAGIC */
	uint16_t version; /*   4: RW_SHM_VERSION */
	uint16_t rsvd0;
	uint32_t owner_uid; /*   8 */
	int32_t owner_pid;  /*  12 */
	uint64_t pad0[6];
	uint32_t seq; /*  64: futex word, bumped by a peer that rings */
	uint32_t pad1[15];
	uint32_t sleepers; /* 128: owner threads about to sleep or asleep */
	uint32_t pad2[15];
};

static_assert(offsetof(struct rw_shm_doorbell, seq) == 64, "doorbell layout");
static_assert(offsetof(struct rw_shm_doorbell, sleepers) == 128, "doorbell layout");
static_assert(sizeof(struct rw_shm_doorbell) <= RW_SHM_DB_BYTES, "doorbell page");

#endif /* RW_SHM_LAYOUT_H */

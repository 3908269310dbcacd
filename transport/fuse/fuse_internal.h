/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fuse transport's objects, shared by fuse_net.c (devices, set-up,
 * handles) and fuse_data.c (registration, the striping data path).
 */
#ifndef RW_FUSE_INTERNAL_H
#define RW_FUSE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/base/rw_base.h"
#include "transport/fuse/fuse.h"

#define FUSE_SUBS (RW_FUSE_MAX_MEMBERS + 1) /* control + one per member */

#define FUSE_LISTEN_KIND 0x4c465752u /* struct rw_obj kinds */
#define FUSE_SEND_KIND	 0x53465752u
#define FUSE_RECV_KIND	 0x52465752u
#define FUSE_MR_KIND	 0x4d465752u
#define FUSE_REQ_KIND	 0x51465752u

/*
 * Protocol constants (both sides must agree: they are part of the wire
 * format, RW_FUSE_VERSION).
 */
#define RW_FUSE_MAGIC	0x45535546u /* "FUSE" */
#define RW_FUSE_VERSION 1
#define FUSE_PIECE0	(64u * 1024) /* a message's first piece, on the control connection */
#define FUSE_PIECE_MIN	(64u * 1024) /* the other pieces: at least */
#define FUSE_PIECE_MAX	(4u << 20)   /* and at most (unless the message needs more) */
#define FUSE_MAX_PIECES 32767	     /* per message (15 bits of the piece tag) */
#define FUSE_TAG_PIECE	0x40000000   /* piece tags; caller tags stay below */
#define FUSE_WINDOW	4	     /* receives posted per data connection */
#define FUSE_MAX_REQS	12	     /* fused requests in flight per comm */
#define FUSE_MAX_SREQS	(FUSE_MAX_REQS * 2 + FUSE_SUBS * FUSE_WINDOW)

/** The header that opens every message on the control connection. */
struct rw_fuse_hdr {
	uint32_t magic;	  /*  0: RW_FUSE_MAGIC */
	uint32_t seq;	  /*  4: message number on this comm, from 0 */
	uint64_t size;	  /*  8: bytes in the message */
	uint32_t piece;	  /* 16: bytes per piece after the first */
	uint32_t npieces; /* 20: pieces, the first included */
};
_Static_assert(sizeof(struct rw_fuse_hdr) == 24, "fuse header layout");

/** A physical device: which base, its index there, its transport. */
struct fuse_phys {
	int base;
	int local;
	struct rw_net *wire; /* where member connections on it are made; NULL: none */
	char name[64];	     /* the device's name, for messages */
};

struct fuse_vdev {
	int n;
	int members[RW_FUSE_MAX_MEMBERS]; /* physical device indices */
	char name[256];			  /* "eth0+eth1", as NCCL's IB names its merged devices */
	struct rw_net_props props;
};

struct fuse_pconn; /* a connect in progress (fuse_net.c) */

struct rw_fuse_net {
	struct rw_net base;
	int nbases;
	struct rw_net *bases[RW_FUSE_MAX_BASES];
	int nphys;
	struct fuse_phys *phys;
	pthread_mutex_t lock; /* nvdev, vdevs, pconns */
	_Atomic int nvdev;
	struct fuse_vdev vdevs[RW_FUSE_MAX_VDEVS];
	struct fuse_pconn *pconns;
};

struct rw_fuse_listen {
	struct rw_net_listen base;
	struct rw_obj obj;
	int vdev;
	int nsubs; /* control + members */
	struct rw_net_listen *subl[FUSE_SUBS];
	struct rw_net_comm *subc[FUSE_SUBS]; /* accepted so far */
};

/** One member connection of a fused comm. */
struct fuse_sub {
	struct rw_net_comm *c;
	char nic[64];
	int inflight; /* pieces posted (receive) or taken (send), not done */
	uint64_t bytes, pieces;
};

enum fuse_sreq_kind { FUSE_SR_HDR, FUSE_SR_PIECE, FUSE_SR_GROUP, FUSE_SR_FLUSH };

/** A request on a member connection. */
struct fuse_sreq {
	struct rw_net_req *r; /* NULL: slot free */
	struct fuse_req *msg;
	int sub;
	int piece;
	size_t len;
	enum fuse_sreq_kind kind;
	uint64_t id; /* order of posting: each connection's oldest is tested first */
};

enum fuse_req_kind { FUSE_REQ_SEND = 1, FUSE_REQ_RECV, FUSE_REQ_FLUSH };

struct fuse_req {
	struct rw_net_req base;
	struct rw_obj obj;
	enum fuse_req_kind kind;
	uint32_t seq;
	char *data;
	size_t cap;  /* receive: the buffer's size */
	size_t size; /* send: the message; receive: known from the header */
	int tag;
	struct rw_fuse_mr *mr;
	size_t piece;	/* bytes per piece after the first */
	int npieces;	/* 0 on a receive until the header came */
	int next;	/* receive: next piece to post; send: lowest piece not taken */
	int done;	/* pieces (and header) completed */
	int need;	/* what done must reach */
	uint8_t *taken; /* send: which pieces a connection took */
	bool complete;
};

struct rw_fuse_mr {
	struct rw_net_mr base;
	struct rw_obj obj;
	struct rw_list link; /* in its comm's mrs */
	int type;
	struct rw_net_mr *sub[FUSE_SUBS];
};

struct rw_fuse_comm {
	struct rw_net_comm base;
	struct rw_obj obj;
	bool send;
	int nsubs;
	struct fuse_sub sub[FUSE_SUBS];
	char vname[256]; /* the virtual device's name */
	int failed;	 /* -errno once failed; every later call answers it */
	int timeout_ms;
	uint64_t moved_ms;	  /* last time anything moved */
	uint32_t seq;		  /* messages taken (send) or posted (receive) */
	unsigned turn;		  /* receive: where ties between data connections start */
	uint64_t sreq_ids;	  /* member requests posted so far */
	struct rw_fuse_hdr *ctrl; /* FUSE_MAX_REQS headers, registered on the control connection */
	struct rw_net_mr *ctrl_mr;
	struct rw_list mrs; /* the user's registrations: a close frees what is left */
	struct fuse_req reqs[FUSE_MAX_REQS];
	struct fuse_req *queue[FUSE_MAX_REQS]; /* messages in order, oldest first */
	int nqueue;
	struct fuse_sreq sreqs[FUSE_MAX_SREQS];
};

static inline struct rw_fuse_net *fuse_net_from(struct rw_net *n)
{
	return rw_container_of(n, struct rw_fuse_net, base);
}

static inline struct rw_fuse_comm *rw_fuse_comm_of(struct rw_net_comm *base)
{
	return rw_container_of(base, struct rw_fuse_comm, base);
}

/* fuse_comm.c: a comm's life and its registrations */
/** c of base if it is an open fused comm (want_send: 1 send, 0 receive, -1
 *  either); else one warning naming call, and -EINVAL/-EBADF. */
int rw_fuse_comm_check(struct rw_net_comm *base, const char *call, int want_send,
		       struct rw_fuse_comm **out);
/** A fused comm over nsubs connected member comms (taken over; closed on failure). */
int rw_fuse_comm_new(struct rw_fuse_net *f, int vdev, bool send, int nsubs,
		     struct rw_net_comm *const *subs, struct rw_net_comm **out);
int rw_fuse_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		   struct rw_net_mr **mr);
int rw_fuse_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
			  uint64_t offset, int fd, struct rw_net_mr **mr);
int rw_fuse_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr);
/** m of base if it is a registration of c (NULL base: *out NULL, 0); else one
 *  warning naming call, and -EINVAL. */
int rw_fuse_mr_check(struct rw_fuse_comm *c, struct rw_net_mr *base, const char *call,
		     struct rw_fuse_mr **out);
/* fuse_data.c: the striping data path */
int rw_fuse_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		  struct rw_net_req **req);
int rw_fuse_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		  const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_fuse_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		   struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_fuse_test(struct rw_net_req *req, int *done, size_t *sizes);
int rw_fuse_close_comm(struct rw_net_comm *comm);

#endif /* RW_FUSE_INTERNAL_H */

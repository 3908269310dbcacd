/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP rendezvous behind rw_comm_init(): rank 0 listens on "host:port",
 * every other rank connects to it, and the star of connections carries the
 * little the ranks must agree on before the ring exists (each rank's rw_net
 * listen handle) and the barriers of init and destroy.  Control plane only:
 * no collective data goes through here.
 *
 * Every call blocks, bounded by the timeout given at create (a peer that
 * stays silent, dies or speaks garbage fails the call: -ETIMEDOUT,
 * -ECONNRESET or -EPROTO, logged once here with the peer's rank and
 * address).  The object is used by one thread at a time.
 *
 * Who may join.  Rank 0 listens on the address the rendezvous names (every
 * address of the port only when that name is not one of this host's
 * addresses, or resolves to loopback while not being a loopback name).
 * It serves every connection it has accepted at once (poll), so nobody can
 * stall it: a connection must prove itself within RW_BOOT_HELLO_MS (or
 * RINGWAY_TIMEOUT_MS when shorter) or is dropped, and when
 * RW_BOOT_PENDING_MAX connections are unproven the oldest is dropped for
 * the next.  A rank rank 0 dropped before welcoming it knocks again.
 *
 * With a job secret (the "#key" of "host:port#key", else RINGWAY_SECRET)
 * rank 0 sends each connection a fresh nonce and a rank joins only with
 * a keyed hash (SipHash-2-4) over that nonce, its own nonce, its rank and
 * nranks; rank 0 answers with a hash under another label, so each side
 * proves the secret to the other and the secret never crosses the wire.
 * Without one, anyone who reaches the port can take a free rank (first
 * claim wins), but not stall rank 0 or make it fail: a hello with another
 * nranks, a rank out of range or one already taken is refused on its own
 * connection.  A hello that proved the secret and still disagrees on
 * nranks is a broken job and fails rank 0 at once (-EPROTO).  The secret
 * authenticates who joins; it neither encrypts nor protects the
 * connections afterwards against someone on the path.
 */
#ifndef RW_BOOTSTRAP_H
#define RW_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

struct rw_bootstrap;

/** How long an accepted connection has to prove itself, ms. */
#define RW_BOOT_HELLO_MS 5000
/** Unproven connections rank 0 holds at once; the oldest goes first. */
#define RW_BOOT_PENDING_MAX 64

/**
 * Split "host:port", "[v6addr]:port", each optionally followed by "#key"
 * (ignored here: see rw_bootstrap_key()).
 * \param[out] host room for hostlen bytes.  \param[out] port 1..65535.
 * \return 0 or -EINVAL.
 */
int rw_bootstrap_parse(const char *hostport, char *host, size_t hostlen, int *port);

/** The length of hostport without its "#key": what may be printed (0 for NULL). */
int rw_boot_shown(const char *hostport);

/**
 * Join the rendezvous.  Rank 0 binds the port of root (or uses listen_fd,
 * an already listening socket it then owns, when listen_fd >= 0: tests and
 * --local pass one so no port is raced for) and waits for nranks - 1
 * peers; the others connect to root, retrying while rank 0 is not up yet.
 * All ranks must pass the same nranks (at most RW_MAX_RANKS) and secret.
 * \param secret the job secret when root has no "#key"; NULL or "" for
 *   none.
 * \param[out] out set only on success.
 * \return 0, -EINVAL (bad arguments, an empty "#key"), -EADDRINUSE,
 * -ETIMEDOUT, -EPROTO (rank 0 refused this rank: another nranks, its rank
 * already joined; or a proven peer with another nranks), -EACCES (the
 * secrets differ, or one side has none), or another -errno.
 * On failure listen_fd is closed and nothing else is touched.
 */
int rw_bootstrap_create(const char *root, int listen_fd, int nranks, int rank, int timeout_ms,
			const char *secret, struct rw_bootstrap **out);

/**
 * Every rank contributes len bytes (the same len everywhere) and receives
 * all nranks contributions, rank order, in all (nranks * len bytes).
 */
int rw_bootstrap_allgather(struct rw_bootstrap *b, const void *mine, void *all, size_t len);

/** Returns once every rank has entered it. */
int rw_bootstrap_barrier(struct rw_bootstrap *b);

/** Close every connection; NULL is ignored. */
void rw_bootstrap_destroy(struct rw_bootstrap *b);

/* --- wire format and checks (exposed for the tests and the fuzzer) --------
 * Host byte order: every rank runs the same build.
 *   rank 0 -> connection, at accept:  struct rw_boot_challenge
 *   peer -> rank 0:                   struct rw_boot_hello
 *   rank 0 -> peer:                   struct rw_boot_welcome, then (joined)
 *   per allgather:  peer -> root: boot_hdr + len bytes;
 *                   root -> peer: boot_hdr + nranks * len bytes.
 */
#define RW_BOOT_MAGIC	   0x53425752u /* "RWBS" */
#define RW_BOOT_VERSION	   2
#define RW_BOOT_F_SECRET   1u	       /* challenge.flags: rank 0 requires the secret */
#define RW_BOOT_LABEL_PEER 0x72656570u /* "peer": the hello's hash */
#define RW_BOOT_LABEL_ROOT 0x746f6f72u /* "root": the welcome's hash */

struct rw_boot_challenge {
	uint32_t magic, version, flags, rsvd;
	uint64_t nonce; /* fresh for this connection */
};

struct rw_boot_hello {
	uint32_t magic, version;
	int32_t rank, nranks;
	uint64_t nonce; /* the peer's own */
	uint64_t mac;	/* rw_bootstrap_mac(PEER, challenge nonce, nonce, rank, nranks); 0 without a
			   secret */
};

struct rw_boot_welcome {
	uint32_t magic;
	int32_t status; /* 0: joined; else -EACCES, -EPROTO, -EEXIST, -EPROTONOSUPPORT */
	uint64_t mac;	/* rw_bootstrap_mac(ROOT, challenge nonce, hello nonce, rank, status) */
};

/** A derived job key; set == 0: no secret. */
struct rw_boot_key {
	uint64_t k[2];
	int set;
};

/** SipHash-2-4 of len bytes under the 128-bit key k (k[0]: bytes 0..7, little endian). */
uint64_t rw_bootstrap_siphash(const uint64_t k[2], const void *data, size_t len);

/**
 * The job key: the "#key" of root when it has one (root may be NULL), else
 * secret (NULL or "": none).  \return 0, or -EINVAL for an empty "#key".
 */
int rw_bootstrap_key(const char *root, const char *secret, struct rw_boot_key *key);

/** The keyed hash of one side of the handshake (see the structs). */
uint64_t rw_bootstrap_mac(const struct rw_boot_key *key, uint32_t label, uint64_t root_nonce,
			  uint64_t peer_nonce, int32_t rank, int32_t value);

/**
 * Rank 0's verdict on a hello answering a challenge with root_nonce: 0,
 * -EBADMSG (not ringway's), -EPROTONOSUPPORT (another version), -EACCES (the
 * secret is not proven), -EPROTO (another nranks, a rank out of range).
 * With a key, the hash is checked first: -EPROTO then came from a rank
 * that holds the secret.
 */
int rw_bootstrap_check_hello(const struct rw_boot_key *key, uint64_t root_nonce, int nranks,
			     const struct rw_boot_hello *h);

/**
 * A peer's verdict on a challenge: 0, -EPROTO (not a ringway rank 0),
 * -EPROTONOSUPPORT (another version), -EACCES (rank 0 requires a secret and
 * key has none, or the reverse).
 */
int rw_bootstrap_check_challenge(const struct rw_boot_key *key, const struct rw_boot_challenge *c);

/**
 * A peer's verdict on the welcome to its hello h answering root_nonce: 0
 * (joined), rank 0's refusal (-EACCES, -EPROTO, -EEXIST, -EPROTONOSUPPORT;
 * anything else reads -EPROTO), or -EACCES when a welcome does not prove
 * the secret.
 */
int rw_bootstrap_check_welcome(const struct rw_boot_key *key, uint64_t root_nonce,
			       const struct rw_boot_hello *h, const struct rw_boot_welcome *w);

#endif /* RW_BOOTSTRAP_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP toolbox: what the socket transport, the ib transport's set-up
 * connection and the rendezvous (coll/bootstrap.c) share about TCP.
 *
 *   tcp_addr.c    addresses: formatting, parsing "host:port", comparing
 *   tcp_ifname.c  interface discovery and selection (NCCL_SOCKET_IFNAME rules)
 *   tcp_conn.c    sockets, listen, the non-blocking connect with a deadline,
 *                 bounded I/O
 *   tcp_gate.c    accept, and the policy for connections that have not
 *                 proven themselves yet (the "gate")
 *   tcp_nonce.c   nonces for the handshakes
 *
 * Functions that can fail return 0 (1 where they say "done"), or -errno,
 * and write their outputs only on success.  Nothing here reads the environment: callers pass the
 * parameters (RINGWAY_SOCKET_IFNAME, RINGWAY_SOCKET_HELLO_MS, ...) in.
 * Nothing here logs, except the gate, which names every connection it drops.
 */
#ifndef RW_TCP_H
#define RW_TCP_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/rw_common.h"

/* --- addresses (tcp_addr.c) ------------------------------------------- */

/** Room for "[v6addr%scope]:port". */
#define RW_TCP_ADDRSTRLEN 72

/**
 * "1.2.3.4:5", "[::1]:5" or "[fe80::1%2]:5" (scope as a number);
 * "?(family N)" for other families.  Always terminates buf (len > 0).
 */
void rw_tcp_addr_str(const struct sockaddr_storage *sa, char *buf, size_t len);
/** The address alone, for messages: "1.2.3.4", "[::1]" or "[fe80::1%2]". */
void rw_tcp_host_str(const struct sockaddr_storage *sa, char *buf, size_t len);
/** sizeof the sockaddr_in or sockaddr_in6 that sa holds. */
socklen_t rw_tcp_addr_len(const struct sockaddr_storage *sa);
/** The port in host order (0 for other families). */
int rw_tcp_addr_port(const struct sockaddr_storage *sa);
/** Set the port (host order); ignored for other families. */
void rw_tcp_addr_set_port(struct sockaddr_storage *sa, int port);
/** The same host (address family and address; ports and scopes aside).
 *  Two addresses of other families count as one host. */
bool rw_tcp_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/** 127.0.0.0/8 or ::1. */
bool rw_tcp_is_loopback(const struct sockaddr_storage *sa);

/**
 * Split "host:port" or "[v6addr]:port" (port 1..65535, decimal digits
 * only; the host non-empty, without brackets in the output).  A host with
 * colons needs the brackets (else the last colon is taken as the port's).
 * \param[out] host  room for hostlen bytes
 * \return 0 or -EINVAL.
 */
int rw_tcp_hostport_split(const char *s, char *host, size_t hostlen, int *port);

/**
 * Parse a numeric address with its port: "1.2.3.4:5", "[::1]:5",
 * "[fe80::1%2]:5" (what rw_tcp_addr_str prints).  No name resolution.
 * \return 0 or -EINVAL.
 */
int rw_tcp_addr_parse(const char *s, struct sockaddr_storage *out);

/* --- interfaces (tcp_ifname.c) ------------------------------------------ */

/** One address of one interface, as discovery found it. */
struct rw_tcp_ifaddr {
	char name[IF_NAMESIZE];
	struct sockaddr_storage addr; /**< AF_INET or AF_INET6 */
};

/** Which rule picked the interfaces. */
enum rw_tcp_if_rule {
	RW_TCP_IF_RULE_SPEC,	 /**< the user's spec (RINGWAY_SOCKET_IFNAME) */
	RW_TCP_IF_RULE_DEFAULT,	 /**< all but lo*, docker*, virbr* */
	RW_TCP_IF_RULE_DOCKER,	 /**< fallback: only docker* exist */
	RW_TCP_IF_RULE_LOOPBACK, /**< fallback: only lo* exist */
};

/**
 * Choose interfaces the way NCCL reads NCCL_SOCKET_IFNAME (pure: no system
 * calls).
 *
 * spec: comma-separated name prefixes ("eth,ib"); a leading '^' excludes
 * the listed prefixes; a leading '=' makes them exact names; "^=" excludes
 * exact names.  Blanks around names are ignored.  An empty spec (or NULL)
 * applies the default: every interface except lo*, docker* and virbr*, or
 * if that leaves none, docker*, then lo*.
 *
 * family (enum rw_socket_family) filters addresses.  IPv6 link-local
 * addresses are skipped (they need a scope to be reachable).  An interface
 * appears once in the result, with its first IPv4 address when the family
 * allows it, else its first IPv6 address; order is the order of first
 * appearance in `in`.
 *
 * \param[out] out   room for max entries
 * \param[out] nout  number written (0 when nothing matches)
 * \param[out] rule  which rule chose them (may be NULL)
 * \return 0, or -EINVAL on NULL arguments.
 */
int rw_tcp_if_select(const char *spec, int family, const struct rw_tcp_ifaddr *in, size_t nin,
		     struct rw_tcp_ifaddr *out, size_t max, size_t *nout,
		     enum rw_tcp_if_rule *rule);

/** Addresses of the interfaces that are up (getifaddrs), at most max.
 *  0 or -errno. */
int rw_tcp_if_discover(struct rw_tcp_ifaddr *out, size_t max, size_t *n);

/**
 * Discovery then selection: the interfaces spec and family choose on this
 * host, at most max.  \param[out] found  (may be NULL) the names of every
 * interface with an address, comma-separated, for a message when nothing
 * matched.  \return 0 (*nout may be 0) or -errno from discovery.
 */
int rw_tcp_if_pick(const char *spec, int family, struct rw_tcp_ifaddr *out, size_t max,
		   size_t *nout, enum rw_tcp_if_rule *rule, char *found, size_t found_len);

/* --- sockets, listen, connect, bounded I/O (tcp_conn.c) ------------------- */

/** A non-blocking, close-on-exec TCP socket.  0 or -errno. */
int rw_tcp_socket(int family, int *fd);

/**
 * A listening socket (non-blocking, close-on-exec) on *sa; port 0 picks a
 * free one.  reuse sets SO_REUSEADDR (a fixed port that a previous run may
 * hold in TIME_WAIT).  \param[in,out] sa  the address actually bound, on
 * success.  \return 0 or -errno (nothing is left open on failure).
 */
int rw_tcp_listen(struct sockaddr_storage *sa, int backlog, bool reuse, int *fd);

/** Start a connect on fd (non-blocking): 0 when under way or done, else
 *  -errno (ECONNREFUSED for a local closed port may come at once). */
int rw_tcp_connect_begin(int fd, const struct sockaddr_storage *sa);

/** Has the connect on fd finished?  1: connected; 0: not yet; -errno: it
 *  failed (the error the kernel recorded, e.g. -ECONNREFUSED).  Never waits. */
int rw_tcp_connect_done(int fd);

/**
 * Connect to sa, waiting at most until deadline_ms (rw_now_ms() time).
 * \param[out] fd  a connected, non-blocking socket
 * \return 0, -ETIMEDOUT when the deadline passed first, or -errno.
 */
int rw_tcp_connect(const struct sockaddr_storage *sa, uint64_t deadline_ms, int *fd);

/** Wait for events on fd until deadline_ms: 0, -ETIMEDOUT or -errno. */
int rw_tcp_wait(int fd, short events, uint64_t deadline_ms);

/**
 * Move what is left of buf[*done..len) over a non-blocking fd without
 * waiting.  1: all moved; 0: the socket would block; -ECONNRESET when the
 * peer closed (reading), -errno else.
 */
int rw_tcp_io_step(int fd, void *buf, size_t len, size_t *done, bool out);

/** All len bytes, waiting at most until deadline_ms.  0, -ETIMEDOUT,
 *  -ECONNRESET (the peer closed), -EPIPE or -errno. */
int rw_tcp_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ms);
int rw_tcp_read_all(int fd, void *buf, size_t len, uint64_t deadline_ms);

/* --- nonces (tcp_nonce.c) --------------------------------------------------- */

/** A nonce for a handshake (a listener's, a challenge's, a PSN): from
 *  getrandom() when it answers at once, else mixed from time, pid and a
 *  counter.  Never 0; never blocks. */
uint64_t rw_tcp_nonce64(void);

/* --- accept and the unproven-connection policy (tcp_gate.c) --------------- */

/** Unproven connections a gate may hold at most. */
#define RW_TCP_GATE_MAX 256
/** Hello bytes a gate collects at most. */
#define RW_TCP_HELLO_MAX 128
/** Drop warnings are limited per this window (see warns below). */
#define RW_TCP_DROP_WINDOW_MS 10000

/** An accepted connection that has not proven itself yet. */
struct rw_tcp_cand {
	int fd;
	struct sockaddr_storage src;
	char name[RW_TCP_ADDRSTRLEN]; /**< its address, for messages */
	uint64_t accepted_ms;
	uint64_t deadline_ms; /**< accepted_ms + hello_ms */
	uint64_t tag;	      /**< the caller's (bootstrap: the challenge's nonce) */
	size_t got;	      /**< hello bytes read */
	union {
		unsigned char hello[RW_TCP_HELLO_MAX];
		uint64_t align_;
	};
};

struct rw_tcp_gate_cfg {
	const char *who;   /**< starts every message: "socket: listener 1.2.3.4:5" */
	const char *param; /**< names the hello deadline: "RINGWAY_SOCKET_HELLO_MS" */
	int max;	   /**< unproven connections held at once, 1..RW_TCP_GATE_MAX */
	int per_host;	   /**< of them from one source address (0: max) */
	int64_t hello_ms;  /**< time to prove */
	int64_t starve_ms; /**< accept waits this long for fds (EMFILE) before failing */
	size_t hello_len;  /**< bytes of the hello, 1..RW_TCP_HELLO_MAX */
	int warns;	   /**< drop warnings per window; the rest counted.  0: at INFO */
	void (*fd_count)(long delta); /**< told of every fd accepted/closed (may be NULL) */
};

/**
 * The policy.  A connection is kept while it owes its hello, at most
 * hello_ms; it cannot delay or take the place of one that proved itself:
 *   - when max are held, a new one evicts the oldest; when per_host come
 *     from its address, it evicts that address's oldest (one host cannot
 *     push out the others);
 *   - a connection is read as soon as it is accepted (rw_tcp_gate_accept
 *     does not read; the caller reads it at once), so a peer whose hello
 *     has arrived proves itself before newer ones can evict it;
 *   - when the process has no free fd, the oldest unproven connection is
 *     closed to make one; with none, accept waits up to starve_ms;
 *   - every drop names the address and the reason; with warns > 0, at most
 *     warns warnings per RW_TCP_DROP_WINDOW_MS, the others counted and
 *     reported once the window is over or at rw_tcp_gate_fini.
 * c[0..n) are the connections held, oldest first; indices shift when one
 * is dropped or taken.
 */
struct rw_tcp_gate {
	struct rw_tcp_gate_cfg cfg;
	char who[96];
	char param[40];
	int n, cap;
	struct rw_tcp_cand *c; /**< grows on demand up to max (a listener nobody
				    knocks at costs no table) */
	uint64_t starved_ms;   /**< since when accept finds no free fd (0: not) */
	uint64_t window_ms;    /**< start of the current warning window */
	int nwarned;
	long nquiet;
	char quiet_last[160];
};

/** 0 or -EINVAL (bad cfg).  Allocates nothing yet. */
int rw_tcp_gate_init(struct rw_tcp_gate *g, const struct rw_tcp_gate_cfg *cfg);
/** Close every connection held (without a message each), report the
 *  count of unwarned drops, free the table.  Idempotent. */
void rw_tcp_gate_fini(struct rw_tcp_gate *g);

/**
 * Accept one connection from the listening socket lfd (non-blocking) and
 * hold it, evicting per the policy.
 * \param[out] idx  its index in c[] when 1 is returned
 * \return 1: accepted; 0: none queued (or fds are short and we wait);
 *         -errno: the listener failed, or no memory for the table (logged).
 */
int rw_tcp_gate_accept(struct rw_tcp_gate *g, int lfd, uint64_t now, int *idx);

/**
 * Read the hello bytes that arrived on c[i].  1: hello_len bytes are in
 * (the caller judges them, then takes or drops it); 0: more to come;
 * -1: c[i] was dropped (closed early, failed, or past its deadline;
 * logged).  Never waits.
 */
int rw_tcp_gate_read(struct rw_tcp_gate *g, int i, uint64_t now);

/** Drop c[i] naming the reason (a warning under the limit, else counted). */
void rw_tcp_gate_drop(struct rw_tcp_gate *g, int i, const char *fmt, ...) RW_PRINTF(3, 4);
/** Drop c[i] without a message (the caller logged it). */
void rw_tcp_gate_close(struct rw_tcp_gate *g, int i);
/** Take c[i] out of the gate: the caller owns the returned fd. */
int rw_tcp_gate_take(struct rw_tcp_gate *g, int i);
/** Drop every connection past its deadline; the earliest deadline left
 *  (UINT64_MAX when none). */
uint64_t rw_tcp_gate_expire(struct rw_tcp_gate *g, uint64_t now);
/** A drop of something else the caller holds (half-set-up connections),
 *  under the same warning limit. */
void rw_tcp_gate_note(struct rw_tcp_gate *g, const char *peer, const char *why);
/** Close the warning window when it is over (reporting the count). */
void rw_tcp_gate_tick(struct rw_tcp_gate *g, uint64_t now);

#endif /* RW_TCP_H */

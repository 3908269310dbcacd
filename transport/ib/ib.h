/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The InfiniBand/RoCE verbs transport behind rw_net.
 *
 * libibverbs is loaded at run time (RINGWAY_IBVERBS_LIB, default
 * libibverbs.so.1) and its symbols resolved with their versions; nothing
 * links it.  A device is one active port of an HCA chosen by RINGWAY_IB_HCA.
 * A connection is RINGWAY_IB_QPS_PER_CONN RC QPs: the receiver posts its
 * buffers into a FIFO the sender reads (clear-to-send), data goes by RDMA
 * WRITE WITH IMMEDIATE straight into the receive buffer, split across the
 * QPs.  Wire formats and the protocol are in ib_proto.h; objects in
 * ib_internal.h.
 *
 * This header is what the rest of ringway and the tests use besides the
 * rw_net ops: creation with the reason it failed, the pure selection
 * functions (HCA filter, GID choice), the handle decoder and the
 * live-object counters.
 */
#ifndef RW_IB_H
#define RW_IB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/rw_params.h"
#include "transport/rw_net.h"

/**
 * Create the ib transport.  Opens every device RINGWAY_IB_HCA selects that
 * has an active port; each such port is one rw_net device.
 * \param[out] out  set only on success
 * \param[out] why  on failure, one sentence saying why ib is unusable here
 *                  ("libibverbs.so.1: cannot open shared object file",
 *                  "no device matches RINGWAY_IB_HCA=mlx5_9", "sv_down0
 *                  port 1 is DOWN", ...); may be NULL.  Written only on
 *                  failure.
 * \return 0; -ENOENT (no library), -ENODEV (no device or no active port),
 *         -ENOTSUP (built without verbs headers), or -errno.  Nothing is
 *         logged above INFO: the caller decides whether this is an error
 *         (RINGWAY_TRANSPORT=ib) or a fallback (auto).
 */
int rw_ib_create_why(const struct rw_config *cfg, struct rw_net **out, char *why, size_t why_len);

/** rw_ib_create_why() that logs the reason as a warning when it fails. */
int rw_ib_create(const struct rw_config *cfg, struct rw_net **out);

/* --- HCA filter (pure) ----------------------------------------------------- */

#define RW_IB_SPEC_MAX 32

/** RINGWAY_IB_HCA, parsed. */
struct rw_ib_spec {
	bool exclude; /**< leading '^': the list says what not to use */
	bool exact;   /**< leading '=': names match exactly, not as prefixes */
	int n;	      /**< 0: no filter, everything matches */
	struct {
		char name[64];
		int port; /**< -1: any port */
	} e[RW_IB_SPEC_MAX];
};

/**
 * Parse NCCL's syntax: "mlx5_0:1,mlx5_1", "^mlx5_2", "=mlx5_0", "^=mlx5_3:2".
 * Entries are comma-separated "name[:port]"; blanks around them are ignored.
 * \return 0, or -EINVAL (a port that is not a number, a name too long,
 *         too many entries); out is untouched on failure.
 */
int rw_ib_spec_parse(const char *s, struct rw_ib_spec *out);

/** Does the spec let device `name`, port `port` be used? */
bool rw_ib_spec_match(const struct rw_ib_spec *sp, const char *name, int port);

/* --- GID choice (pure) ----------------------------------------------------- */

enum rw_ib_gid_type {
	RW_IB_GID_IB, /* InfiniBand (or RoCE v1 on an Ethernet port) */
	RW_IB_GID_ROCE_V1,
	RW_IB_GID_ROCE_V2,
};

struct rw_ib_gid {
	uint8_t raw[16];
	enum rw_ib_gid_type type;
};

/**
 * The GID index to use on a port: on Ethernet (RoCE) the best of
 * RoCE v2 with an IPv4-mapped address, RoCE v2 with a global IPv6 address,
 * RoCE v1 with an IPv4-mapped address, RoCE v1 global, then link-local
 * v2 and v1; zero GIDs never.  On InfiniBand, the first non-zero GID.
 * \param ethernet  the port's link layer is Ethernet
 * \return the index, or -1 when there is no usable GID.
 */
int rw_ib_gid_pick(const struct rw_ib_gid *gids, int n, bool ethernet);

/** Port speed in Mb/s from ibv_port_attr's active_speed and active_width
 *  codes; 0 when a code is unknown. */
int rw_ib_speed_mbps(unsigned int active_speed, unsigned int active_width);

/* --- handles and leak checks ------------------------------------------------- */

/** The TCP set-up address of an ib listen handle.  0 or -EINVAL. */
int rw_ib_handle_addr(const void *handle, struct sockaddr_storage *out);

/** Objects alive right now, process-wide, all instances together (comms,
 *  listeners, requests, registrations, QPs, threads, instances): 0 once
 *  everything was freed. */
long rw_ib_live_total(void);

/** Verbs memory registrations alive (the registration caches' entries). */
long rw_ib_live_regs(void);

#endif /* RW_IB_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The input of the NCCL handle fuzz targets, tests/net/fuzz_handle.c (over
 * rw_net) and tests/abi/fuzz_handle_plugin.c (over the plugin's ncclNet
 * v11 table): byte 0 = b, then up to 128 handle bytes
 * (RW_NET_HANDLE_MAXSIZE = NCCL_NET_HANDLE_MAXSIZE).
 *   b & 3     transport: 0 socket, 1 shm, 2 auto (RINGWAY_TRANSPORT=auto,
 *             whose peers on this host are shm ones), 3 socket again;
 *   b & 4     the handle is the bytes given (zero padded); otherwise the
 *             bytes are XORed over a real listen handle (reaches the paths
 *             behind the magic, version and nonce checks);
 *   b & 8     accept on the real listener between connect calls;
 *   b >> 4    connect is called 1 + (b >> 4) % 8 times (non-blocking: a
 *             bounded number of calls, never a wait).
 * The socket handle's address and port are forced to loopback and to the
 * listener's own port, so that no input knocks on another host or on
 * another process's listener; every other byte (magic, version, family,
 * scope id, reserved, nonce, the auto flags, the shm part) is the fuzzer's.
 */
#ifndef RW_FUZZ_HANDLE_H
#define RW_FUZZ_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transport/net_auto_proto.h"
#include "transport/rw_net.h"
#include "transport/socket/sock_proto.h"

#define RW_FUZZ_HSIZE RW_NET_HANDLE_MAXSIZE

static const char *const rw_fuzz_handle_transports[4] = {"socket", "shm", "auto", "socket"};

/** What byte 0 asks for. */
struct rw_fuzz_handle_input {
	int kind;    /**< index into rw_fuzz_handle_transports */
	bool accept; /**< accept between connect calls */
	int calls;   /**< connect calls at most */
};

/* Point the socket handle at off at loopback and the listener's port,
 * whatever family byte the fuzzer chose. */
static inline void rw_fuzz_handle_pin_socket(uint8_t *h, const uint8_t *real, size_t off)
{
	struct rw_sock_handle s, r;

	memcpy(&s, h + off, sizeof(s));
	memcpy(&r, real + off, sizeof(r));
	s.port = r.port;
	if (s.family == r.family) {
		memcpy(s.addr, r.addr, 4); /* 127.0.0.1; bytes 4..15 stay fuzzed */
	} else {
		memset(s.addr, 0, sizeof(s.addr)); /* ::1 */
		s.addr[15] = 1;
	}
	memcpy(h + off, &s, sizeof(s));
}

/** Byte 0 of data (size >= 1). */
static inline struct rw_fuzz_handle_input rw_fuzz_handle_input(const uint8_t *data)
{
	return (struct rw_fuzz_handle_input){
		.kind = data[0] & 3, .accept = data[0] & 8, .calls = 1 + (data[0] >> 4) % 8};
}

/** The handle h to connect to, from data (size >= 1) and the listener's
 *  real handle (both RW_FUZZ_HSIZE bytes). */
static inline void rw_fuzz_handle_make(const uint8_t *data, size_t size, const uint8_t *real,
				       uint8_t *h)
{
	size_t n = size - 1 < RW_FUZZ_HSIZE ? size - 1 : RW_FUZZ_HSIZE;
	int kind = data[0] & 3;

	memset(h, 0, RW_FUZZ_HSIZE);
	if (data[0] & 4) {
		memcpy(h, data + 1, n);
	} else {
		memcpy(h, real, RW_FUZZ_HSIZE);
		for (size_t i = 0; i < n; i++)
			h[i] ^= data[1 + i];
	}
	if (kind == 0 || kind == 3)
		rw_fuzz_handle_pin_socket(h, real, 0);
	else if (kind == 2)
		rw_fuzz_handle_pin_socket(h, real, offsetof(struct rw_auto_handle, sock));
}

#endif /* RW_FUZZ_HANDLE_H */

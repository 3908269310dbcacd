/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-netperf internals: the out-of-band channel between the two ranks
 * and the raw-TCP baselines measured in the same run.
 */
#ifndef RW_NETPERF_NP_H
#define RW_NETPERF_NP_H

#include <stddef.h>
#include <stdint.h>

/* Blocking exact-length I/O on the bootstrap socket; 0 or -errno. */
int np_write_all(int fd, const void *buf, size_t len);
int np_read_all(int fd, void *buf, size_t len);
/* Both ranks wait for each other.  0 or -errno. */
int np_barrier(int fd);

/* Bootstrap for two hosts: the server accepts one client on port. */
int np_boot_server(int port, int *fd_out);
int np_boot_client(const char *host, int port, int timeout_ms, int *fd_out);

struct np_raw_result {
	double gbps;	    /* one-stream bandwidth, GB/s (1e9) */
	double rtt_us;	    /* ping-pong round trip, blocking reads */
	double rtt_poll_us; /* the same, reads busy-polled */
	size_t bytes;
	int iters;
};

/*
 * Raw TCP baselines between the two ranks: rank 0 listens on an ephemeral
 * port, tells rank 1 over `boot`, rank 1 connects to `host` (the address rank
 * 0 is reachable at).  One stream, TCP_NODELAY, blocking send/recv: what a
 * careful program does without ringway.  Both ranks return the figures.
 */
int np_raw_tcp(int boot, int rank, const char *host, size_t bytes, int iters, int pp_iters,
	       struct np_raw_result *out);

double np_now_us(void);

/* Single-thread memcpy of bytes from src to dst, iters times after one
 * untimed copy: the local copy bandwidth in GB/s (1e9), the yardstick for a
 * same-host transport. */
double np_memcpy_gbps(void *dst, const void *src, size_t bytes, int iters);

#endif /* RW_NETPERF_NP_H */

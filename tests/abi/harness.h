/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ABI harness: drives libnccl-net-ringway.so through the tables NCCL
 * dlsym()s, never through ringway's internals.
 *
 * The h_*() calls flatten one ncclNet_vN_t into version-independent calls
 * (harness_bind.c) so one driver exercises v6..v12: sizes are size_t here
 * and become int for the versions that take int.  Properties are read into struct h_props, which
 * has every field of every version, with `version` telling which exist.
 *
 * Everything that touches the plugin runs in a forked child (the plugin
 * starts threads; the cmocka parent stays clean).  Children report through
 * their exit status: H_CHECK prints what failed and _exit(1)s.
 */
#ifndef RW_TEST_ABI_HARNESS_H
#define RW_TEST_ABI_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"

#define H_FIRST_VERSION 6
#define H_LAST_VERSION	12

#define H_CHILD_TIMEOUT_S 150	      /* per test, all its children together */
#define H_STEP_TIMEOUT_MS 60000	      /* one connect, accept or transfer */
#define H_DEV		  0	      /* RINGWAY_SOCKET_IFNAME=lo: the only one */
#define H_TAG		  1	      /* the "rank" every sender claims */
#define H_BIG		  (64u << 20) /* the largest message */

#define H_CHECK(cond, ...)                                                                         \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "[pid %d] %s:%d: check failed: %s: ", (int)getpid(),       \
				__FILE__, __LINE__, #cond);                                        \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			fflush(stderr);                                                            \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

/* Every field of every props version; `version` says which are real. */
struct h_props {
	int version;
	const char *name;
	const char *pci_path;
	uint64_t guid;
	int ptr_support;
	int reg_is_global; /* v8+ */
	int force_flush;   /* v9+ */
	int speed;
	int port;
	float latency;
	int max_comms;
	int max_recvs;
	int net_device_type; /* v7+ */
	int net_device_version;
	int vndevs; /* v9+ */
	int vdevs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
	int vdevs_cap; /* 4 or 8 */
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request_size; /* v11+ */
	int rail_id;		    /* v12 */
	int plane_id;
};

/*
 * The version-independent calls, on the table bound by h_bind().  Each
 * returns the table's ncclResult_t.  Where the ABI has a device-handle
 * out-argument the harness passes a pointer to NULL and checks the plugin
 * left it alone; profiler handles are NULL.
 */
extern int h_version;

/** v6..v10: *ctx = NULL; v11+: a new context (ctx NULL is passed through). */
int h_init(void **ctx);
/** v11+ only. */
int h_finalize(void *ctx);
int h_devices(int *ndev);
/** Fills a garbage-prefilled vN struct, then converts it into out. */
int h_props(int dev, struct h_props *out);
/** getProperties(dev, NULL). */
int h_props_null(int dev);
int h_listen(void *ctx, int dev, void *handle, void **listen_comm);
int h_connect(void *ctx, int dev, void *handle, void **send_comm);
int h_accept(void *listen_comm, void **recv_comm);
int h_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
int h_dereg_mr(void *comm, void *mhandle);
int h_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void **request);
int h_irecv(void *recv_comm, int n, void **data, const size_t *sizes, int *tags, void **mhandles,
	    void **request);
int h_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
int h_test(void *request, int *done, int *sizes);
int h_close_send(void *send_comm);
int h_close_recv(void *recv_comm);
int h_close_listen(void *listen_comm);
/* v10+ only: isend/irecv with profiler handles (phandles: n of them, or NULL). */
int h_isend_ph(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
	       void **request);
int h_irecv_ph(void *recv_comm, int n, void **data, const size_t *sizes, int *tags, void **mhandles,
	       void **phandles, void **request);

/* The profiler callback init gets (v10+) forwards here; NULL: a call fails
 * the child.  h_prof_none: init gets NULL instead (set before h_init). */
extern ncclProfilerCallback_t h_prof_hook;
extern bool h_prof_none;

/* What the NCCL logger given to init saw (per process). */
struct h_log {
	int warns;
	int infos;
	int startup_lines; /* "ringway X: NET/ringway ABI vN, ..." */
	unsigned long startup_flags;
	char startup[1024];
	char last_warn[1024];
};

extern struct h_log h_log;
extern const char *h_plugin_path;

/** The logger handed to init (ncclDebugLogger_t). */
void h_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/** dlopen the plugin as NCCL does (RTLD_NOW | RTLD_LOCAL). */
void *h_open(void);

/** Bind the h_*() calls to ncclNetPlugin_v<version> of dl; H_CHECKs it. */
void h_bind(void *dl, int version);
/** The bound table (a const ncclNet_vN_t *). */
const void *h_table(void);

/* --- children and polling loops (harness_child.c) ------------------------- */

typedef void (*h_child_fn)(void *arg);

/** Fork a child running fn(arg), which then _exit(0)s (after a leak check
 *  under ASan).  Parent only. */
pid_t h_spawn(h_child_fn fn, void *arg);
/** Wait for n children; the first failure or the deadline kills the rest;
 *  fails the cmocka test unless all exited 0.  Parent only. */
void h_wait_children(const pid_t *pids, int n, const char *what);
void h_run_one(h_child_fn fn, void *arg, const char *what);
/** h_run_one(fn, &version, "v<version> name") for a H_VERSION_TEST's state. */
void h_run_version(h_child_fn fn, void **state, const char *name);

/** Yield, then sleep a little, so spinning children leave CPU to the
 *  transport's helper threads. */
void h_backoff(unsigned *spins);
/** A random-access pseudo-random byte stream per seed. */
void h_pattern_fill(unsigned char *p, size_t len, uint64_t seed);
/** Offset of the first byte that differs from the stream, or -1. */
long h_pattern_check(const unsigned char *p, size_t len, uint64_t seed);

/** Every field sane for a physical device dev. */
void h_check_props(int dev, const struct h_props *p);
/** dlopen, bind, init, devices, check every device; returns ndev. */
int h_child_setup(int version, void **ctx, struct h_props *dev0);
/** Exactly `lines` startup messages so far, tagged INIT|NET, naming the
 *  ringway version and the ABI version. */
void h_check_startup_log(int version, int lines);
/** finalize(ctx) for v11+, nothing before. */
void h_child_finalize(void *ctx);
void *h_alloc(size_t len);

void h_poll_connect(void *ctx, void *handle, void **send_comm);
void h_poll_accept(void *listen_comm, void **recv_comm);
/** listen on ctx_listen, then connect (ctx_connect) and accept in turn. */
void h_self_connect(void *ctx_listen, void *ctx_connect, void **listen_comm, void **send_comm,
		    void **recv_comm);
/** isend / irecv until the plugin takes the request; checks *request was
 *  overwritten (the 0x1 hint included). */
void *h_post_send(void *send_comm, void *data, size_t len, void *mhandle);
void *h_post_recv(void *recv_comm, int n, void **data, const size_t *caps, void **mhandles);
/** test until done; sizes may be NULL. */
void h_wait_req(void *request, int *sizes, const char *what);

/* --- tests run once per version ------------------------------------------- */

/* The cmocka test fn for version v, named fn_v<v>, with teardown td (or
 * NULL); fn reads the version as *(const int *)*state. */
#define H_VERSION_TEST(fn, v, td)                                                                  \
	{                                                                                          \
		.name = #fn "_v" #v, .test_func = fn, .teardown_func = td,                         \
		.initial_state = (int[])                                                           \
		{                                                                                  \
			v                                                                          \
		}                                                                                  \
	}

/* --- the tests of test_abi_misuse.c ---------------------------------------- */

/* One version each: *state is the version (an int); contexts: v11 on. */
void misuse(void **state);
void contexts(void **state);
void standalone_logs_to_stderr(void **state);

#endif /* RW_TEST_ABI_HARNESS_H */

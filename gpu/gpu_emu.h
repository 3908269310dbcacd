/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside gpu/: the host-emulated GPU (rw_gpu_emu.h) as rw_cuda.c,
 * rw_cuda_none.c, rw_cuda_ipc.c and rw_cuda_dmabuf.c reach it.  Each public
 * call starts with RW_EMU_ROUTE(): when the emulator is on, its twin here
 * answers instead.  Nothing outside gpu/ includes this.
 *
 * One lock (emu.lock) guards the memory registry, the stream queues and the
 * events; stream threads hold it only to take an op and to retire it, never
 * while they copy.  emu.done is broadcast whenever an op retires.
 */
#ifndef RW_GPU_EMU_INTERNAL_H
#define RW_GPU_EMU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/rw_cuda.h"
#include "gpu/rw_cuda_ipc.h"
#include "gpu/rw_gpu_emu.h"

/* Longest any emulator call waits for a stream before it gives up. */
#define RW_EMU_WAIT_MS 120000

/** One allocation the emulator knows: own device memory, pinned host
 *  memory, or a peer's device memory opened by IPC. */
struct rw_emu_region {
	char *base;    /* the address callers see */
	char *shadow;  /* where the emulator reaches it (== base unless strict) */
	size_t size;   /* as asked for */
	size_t mapped; /* page-rounded length of both mappings */
	enum rw_mem_kind kind;
	int device;
	int fd;	  /* the memfd of own device memory, else -1 */
	bool ipc; /* opened from a peer */
	uint64_t ino, dev, id;
	struct rw_emu_region *next;
};

struct rw_emu_stream;

struct rw_emu_counters {
	uint64_t copies[4], bytes[4]; /* h2d, d2h, d2d, h2h */
	uint64_t memsets, host_fns, kernels, blocking;
	uint64_t allocs_live, ipc_exports, ipc_opens_live, streams_live;
};

struct rw_emu {
	int on; /* read lock-free by every rw_cuda_* call */
	int ndevices;
	unsigned int flags;
	unsigned int delay_us;
	bool ipc_refused; /* rw_gpu_emu_set_ipc_refused */
	char busid[RW_GPU_EMU_MAX_DEVICES][RW_GPU_EMU_BUSID_LEN];
	pid_t pid; /* of this process (reset after fork) */
	uint64_t next_id;
	pthread_mutex_t lock;
	pthread_cond_t done; /* an op retired (any stream); monotonic clock */
	struct rw_emu_region *regions;
	struct rw_emu_stream *streams; /* live streams of this process */
	struct rw_emu_stream *null_stream;
	struct rw_emu_counters n; /* updated with __atomic adds */
};

extern struct rw_emu rw_emu_g;

static inline bool rw_emu_on(void)
{
	return __atomic_load_n(&rw_emu_g.on, __ATOMIC_ACQUIRE) != 0;
}

#define RW_EMU_ROUTE(call)                                                                         \
	do {                                                                                       \
		if (rw_emu_on())                                                                   \
			return call;                                                               \
	} while (0)
#define RW_EMU_ROUTE_VOID(call)                                                                    \
	do {                                                                                       \
		if (rw_emu_on()) {                                                                 \
			call;                                                                      \
			return;                                                                    \
		}                                                                                  \
	} while (0)

static inline void rw_emu_count(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* ---- memory (rw_gpu_emu.c) ------------------------------------------------ */

/* The region holding p, or NULL; call with emu.lock held. */
struct rw_emu_region *rw_emu_region_find(const void *p);
/*
 * Where the emulator reaches [p, p + len) and what it is.  \return 0, or
 * -EFAULT (logged with who) when the range starts in a region but leaves it.
 */
int rw_emu_translate(const char *who, const void *p, size_t len, void **at, enum rw_mem_kind *kind);
/* Map a memfd twice (a PROT_NONE address unless host visible, and the
 * emulator's view) and register it.  Takes ownership of nothing. */
int rw_emu_region_map(int fd, size_t size, enum rw_mem_kind kind, bool ipc,
		      struct rw_emu_region **out);
/* Unregister and unmap r (emu.lock not held). */
void rw_emu_region_unmap(struct rw_emu_region *r);
/* The calling thread's current device. */
int rw_emu_current_device(void);
/* Count a call that waited. */
void rw_emu_count_blocking(void);

int rw_emu_device_count(int *count);
enum rw_mem_kind rw_emu_mem_kind(const void *ptr);
int rw_emu_ptr_device(const void *ptr);
int rw_emu_set_device(int dev);
int rw_emu_device_busid(int dev, char *buf, size_t len);
int rw_emu_get_device(int *dev);
int rw_emu_malloc(void **ptr, size_t bytes);
void rw_emu_free(void *ptr);
int rw_emu_host_alloc(void **ptr, size_t bytes);
void rw_emu_host_free(void *ptr);

/* ---- streams and events (gpu_emu_stream.c) ------------------------------- */

int rw_emu_memcpy(void *dst, const void *src, size_t bytes);
int rw_emu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
int rw_emu_memset(void *dst, int value, size_t bytes);
int rw_emu_stream_create(void **stream);
void rw_emu_stream_destroy(void *stream);
int rw_emu_stream_sync(void *stream);
int rw_emu_stream_query(void *stream);
int rw_emu_launch_host(void *stream, void (*fn)(void *arg), void *arg, bool kernel);
int rw_emu_stream_wait_event(void *stream, void *event);
int rw_emu_event_create(void **event);
void rw_emu_event_destroy(void *event);
int rw_emu_event_record(void *event, void *stream);
int rw_emu_event_query(void *event);
int rw_emu_event_sync(void *event);
int rw_emu_event_elapsed_ms(void *start, void *end, float *ms);
/* Wait until every stream of this process has run what it holds. */
int rw_emu_device_sync(const char *who);
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
void rw_emu_cond_init(pthread_cond_t *c);
/* After fork, in the child (emu.lock held): forget the parent's streams. */
void rw_emu_streams_forget(void);

/* ---- IPC and dma-buf (gpu_emu_ipc.c) -------------------------------------- */

int rw_emu_ipc_export(const void *ptr, size_t size, struct rw_cuda_ipc_handle *h, uint64_t *offset);
int rw_emu_ipc_open(const struct rw_cuda_ipc_handle *h, void **base, size_t *size);
void rw_emu_ipc_close(void *base);
int rw_emu_dmabuf_supported(char *why, size_t why_len);
int rw_emu_dmabuf_fd(const void *ptr, size_t size, int *fd, uint64_t *offset);

#endif /* RW_GPU_EMU_INTERNAL_H */

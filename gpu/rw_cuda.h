/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA runtime as the rest of ringway sees it.  Only kernels/ calls
 * CUDA; a transport, the engine or a tool that needs device memory, a
 * stream or a copy comes here.  The runtime is linked statically and finds
 * the driver (libcuda.so.1) at the first call, so every function works on a
 * machine without a GPU or driver: probes answer "none" and the rest fail
 * with -ENODEV.  In a build without CUDA (RINGWAY_WITH_CUDA=OFF) probes
 * answer "none" and the rest return -ENOTSUP with a warning that says so.
 *
 * Streams and events are opaque void * (cudaStream_t / cudaEvent_t); a NULL
 * stream is the default stream.  Functions act on the calling thread's
 * current device, as the CUDA runtime does.  Tests may put a host-emulated
 * GPU behind every call here (gpu/rw_gpu_emu.h); nothing else changes.  Every failure is logged
 * once here with CUDA's message; callers pass the -errno up without logging.
 */
#ifndef RW_CUDA_H
#define RW_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a pointer points to, as CUDA sees it. */
enum rw_mem_kind {
	RW_MEM_HOST,	    /* ordinary host memory, or CUDA is absent */
	RW_MEM_HOST_PINNED, /* host memory registered with or allocated by CUDA */
	RW_MEM_DEVICE,	    /* device memory */
	RW_MEM_MANAGED,	    /* unified (managed) memory */
};

/**
 * Number of usable GPUs.  Never logs a warning: this is the probe.
 * \param[out] count set only on success (>= 1).
 * \return 0; -ENODEV without a driver or GPU; -ENOTSUP without CUDA.
 */
int rw_cuda_device_count(int *count);

/** Where ptr lives; RW_MEM_HOST when CUDA cannot tell.  Never fails. */
enum rw_mem_kind rw_cuda_mem_kind(const void *ptr);

/** Device ordinal of device or managed memory, else -1. */
int rw_cuda_ptr_device(const void *ptr);

/**
 * PCI bus id of device dev, lower case as sysfs and the topology write it
 * ("0000:1b:00.0"; cudaDeviceGetPCIBusId).  \param len >= 16.
 * \return 0, -EINVAL (no such device, or len too small), -ENODEV, -ENOTSUP.
 */
int rw_cuda_device_busid(int dev, char *buf, size_t len);

/** Make dev the calling thread's current device. */
int rw_cuda_set_device(int dev);
/** \param[out] dev the calling thread's current device. */
int rw_cuda_get_device(int *dev);

/**
 * Device memory (cudaMalloc).  \param[out] ptr set only on success.
 * \return 0, -ENOMEM, -ENODEV, -ENOTSUP.  Free with rw_cuda_free().
 */
int rw_cuda_malloc(void **ptr, size_t bytes);
/** Free device memory; NULL is ignored.  Blocks as cudaFree does. */
void rw_cuda_free(void *ptr);

/** Pinned host memory (cudaHostAlloc, portable); free with rw_cuda_host_free(). */
int rw_cuda_host_alloc(void **ptr, size_t bytes);
void rw_cuda_host_free(void *ptr);

/** Copy between any two memories (cudaMemcpyDefault); blocks until done. */
int rw_cuda_memcpy(void *dst, const void *src, size_t bytes);
/** The same, enqueued on stream; returns once enqueued. */
int rw_cuda_memcpy_async(void *dst, const void *src, size_t bytes, void *stream);
/** Fill device memory with a byte value; blocks until done. */
int rw_cuda_memset(void *dst, int value, size_t bytes);

/** A non-blocking stream on the current device.  \param[out] stream. */
int rw_cuda_stream_create(void **stream);
/** Destroy a stream from rw_cuda_stream_create(); NULL is ignored. */
void rw_cuda_stream_destroy(void *stream);
/** Block until everything enqueued on stream has run. */
int rw_cuda_stream_sync(void *stream);
/** Non-blocking: 0 when stream has run everything, -EAGAIN while busy. */
int rw_cuda_stream_query(void *stream);

/**
 * Enqueue fn(arg) on stream (cudaLaunchHostFunc): it runs on a host thread
 * once everything enqueued before it has run, and what is enqueued after it
 * waits for it.  fn must not call rw_cuda_* (it would wait for itself) and
 * must not touch device memory except through what the caller arranged
 * (under the emulator: rw_gpu_emu_access()).  Returns once enqueued.
 */
int rw_cuda_launch_host(void *stream, void (*fn)(void *arg), void *arg);

/** Make later work on stream wait until event's recorded work has run
 *  (cudaStreamWaitEvent); returns at once. */
int rw_cuda_stream_wait_event(void *stream, void *event);

/** An event for ordering and timing.  \param[out] event. */
int rw_cuda_event_create(void **event);
void rw_cuda_event_destroy(void *event);
int rw_cuda_event_record(void *event, void *stream);
/** Non-blocking: 0 once the recorded work has run, -EAGAIN before. */
int rw_cuda_event_query(void *event);
int rw_cuda_event_sync(void *event);
/** \param[out] ms time between two recorded, completed events. */
int rw_cuda_event_elapsed_ms(void *start, void *end, float *ms);

/* A cudaError_t as -errno: -ENODEV for a missing driver or GPU, -ENOMEM,
 * -EINVAL, -EAGAIN (not ready), -ENOTSUP, -EFAULT (bad address), else -EIO.
 * (gpu/rw_cuda.c; only built with CUDA; kernels/reduce_cuda.cu uses it too.) */
int rw_cuda_errno(int cuda_err);

#ifdef __cplusplus
}
#endif

#endif /* RW_CUDA_H */

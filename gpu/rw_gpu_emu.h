/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A host-emulated GPU, for tests: once rw_gpu_emu_enable() is called, every
 * call of rw_cuda.h, rw_cuda_ipc.h and rw_cuda_dmabuf.h in this process is
 * answered by the emulator instead of the CUDA runtime (a build with CUDA)
 * or the "no CUDA" stubs (a build without), and kernels/' _dev reductions
 * run on its streams.  Nothing changes until it is called; no production
 * path calls it (tests only).
 *
 * What it emulates:
 *  - rw_cuda_device_count() answers ndevices; rw_cuda_set_device() picks
 *    the calling thread's device (default 0).
 *  - rw_cuda_malloc() memory is a memfd mapping that rw_cuda_mem_kind()
 *    reports as RW_MEM_DEVICE and rw_cuda_ptr_device() as the device it was
 *    allocated on.  Unless RW_GPU_EMU_HOST_VISIBLE, host code cannot touch
 *    it (the address is reserved PROT_NONE: a host memcpy from device
 *    memory faults, as on a GPU); the emulator reaches it through a second
 *    mapping (rw_gpu_emu_access()).  rw_cuda_host_alloc() memory is
 *    RW_MEM_HOST_PINNED; malloc()ed memory stays RW_MEM_HOST.
 *  - A stream is an ordered work queue run by a thread of its own; the
 *    NULL stream is one more such queue.  Copies, memsets, host functions
 *    (rw_cuda_launch_host()), event records and waits run in the order
 *    they were enqueued.  Events complete when the stream reaches them;
 *    query answers -EAGAIN before, 0 after; elapsed time is measured.
 *  - rw_cuda_memcpy() and rw_cuda_memset() wait for the NULL stream and
 *    then run in the caller; every call that waits is counted (stats).
 *  - IPC: a handle names the exporting process and the memfd behind the
 *    allocation (pid, fd number, inode, size); a peer process opens it
 *    through /proc/<pid>/fd/<fd> (or pidfd_getfd) and checks the inode and
 *    size before it maps it.  Opening a handle of one's own process fails,
 *    as it does in CUDA.
 *  - dma-buf: rw_cuda_dmabuf_supported() answers -ENOTSUP with a reason.
 *
 * Streams and events belong to the process that made them: after fork()
 * the child makes its own (those of the parent answer -EIO there).  Memory
 * allocated before fork() stays device memory in the child.
 */
#ifndef RW_GPU_EMU_H
#define RW_GPU_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RW_GPU_EMU_MAX_DEVICES 16

/** rw_gpu_emu_enable() flags. */
enum {
	/* Device memory is also host memory at its own address (a host access
	 * does not fault).  Off by default: a GPU's memory is not host memory. */
	RW_GPU_EMU_HOST_VISIBLE = 1u << 0,
};

/**
 * Emulate ndevices GPUs in this process from now on.  Call it before any
 * other gpu/ or kernels/ _dev call (in a test's main or a forked child);
 * it cannot be undone.  A second call with the same arguments is a no-op.
 * \return 0; -EINVAL for ndevices outside 1..RW_GPU_EMU_MAX_DEVICES, an
 *         unknown flag, or a second call with other arguments.
 */
int rw_gpu_emu_enable(int ndevices, unsigned int flags);

/** Whether rw_gpu_emu_enable() was called in this process. */
bool rw_gpu_emu_enabled(void);

#define RW_GPU_EMU_BUSID_LEN 16

/**
 * Give emulated device dev the PCI bus id rw_cuda_device_busid() answers
 * ("0000:1b:00.0", at most 15 characters; stored in lower case), e.g. a
 * GPU of a topology fixture.  By default device d is "0000:%02x:00.0"
 * with bus 0xe0 + d.  Call after rw_gpu_emu_enable().
 * \return 0, or -EINVAL (not enabled, no such device, too long).
 */
int rw_gpu_emu_set_busid(int dev, const char *busid);

/**
 * Make each later stream operation (copy, memset, host function) wait
 * us microseconds before it runs, so that callers see work in flight
 * (event queries answering -EAGAIN).  0 (the default) for none.
 */
void rw_gpu_emu_set_delay_us(unsigned int us);

/**
 * Refuse (true) or allow (false, the default) CUDA IPC exports from now on,
 * as a driver or container that forbids them does: rw_cuda_ipc_export()
 * answers -ENOTSUP, so a transport moves device buffers through host memory.
 */
void rw_gpu_emu_set_ipc_refused(bool refused);

/** What the emulator did in this process (counters since enable). */
struct rw_gpu_emu_stats {
	uint64_t copies_h2d, bytes_h2d; /* host (or pinned) -> device */
	uint64_t copies_d2h, bytes_d2h; /* device -> host */
	uint64_t copies_d2d, bytes_d2d; /* device -> device (IPC mappings too) */
	uint64_t copies_h2h, bytes_h2h; /* host -> host through rw_cuda_memcpy* */
	uint64_t memsets;
	uint64_t host_fns;	  /* rw_cuda_launch_host() functions run */
	uint64_t kernels;	  /* kernels/ _dev reductions run */
	uint64_t blocking;	  /* calls that waited for a stream: sync copies and
				     memsets, stream and event syncs, frees */
	uint64_t blocking_thread; /* of those, made by the calling thread */
	uint64_t allocs_live;	  /* device allocations not yet freed */
	uint64_t ipc_exports;	  /* rw_cuda_ipc_export() calls that succeeded */
	uint64_t ipc_opens_live;  /* peer allocations opened and not closed */
	uint64_t streams_live;
};

/** Snapshot of the counters.  Zeros when not enabled. */
void rw_gpu_emu_stats(struct rw_gpu_emu_stats *out);

/**
 * Where host code reaches [ptr, ptr + len): for emulated device memory
 * (own or opened by IPC) the emulator's own mapping of it, for anything
 * else ptr.  For functions run by rw_cuda_launch_host() that stand in for
 * kernels, and for tests.  NULL when the range starts in device memory but
 * leaves its allocation.
 */
void *rw_gpu_emu_access(const void *ptr, size_t len);

/**
 * rw_cuda_launch_host() for a function that stands in for a kernel (the
 * kernels/ _dev reductions): the same, counted as a kernel.  -ENOTSUP when
 * the emulator is off.
 */
int rw_gpu_emu_launch_kernel(void *stream, void (*fn)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RW_GPU_EMU_H */

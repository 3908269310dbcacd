/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA IPC for the same-host transport: export a device allocation to
 * another process on this host and open a peer's allocation here.  Copies,
 * streams and events are rw_cuda.h's; this file adds only the IPC handle
 * calls (cudaIpcGetMemHandle / cudaIpcOpenMemHandle), so a transport never
 * calls CUDA itself.
 *
 * In a build without CUDA every call returns -ENOTSUP (quietly: callers
 * check rw_cuda_device_count() first and never get here for host memory).
 * Failures are logged once here with CUDA's message.  Nothing blocks except
 * rw_cuda_ipc_close(), which waits as cudaIpcCloseMemHandle does.
 */
#ifndef RW_CUDA_IPC_H
#define RW_CUDA_IPC_H

#include <stddef.h>
#include <stdint.h>

#define RW_CUDA_IPC_HANDLE_BYTES 64

/** An exported allocation, as another process opens it (cudaIpcMemHandle_t). */
struct rw_cuda_ipc_handle {
	uint8_t bytes[RW_CUDA_IPC_HANDLE_BYTES];
};

/**
 * Export the device allocation that holds [ptr, ptr + size).
 * \param[out] h       the IPC handle of the whole allocation
 * \param[out] offset  where ptr lies in it
 * \return 0, -EINVAL (not device memory, or the range leaves the
 *         allocation), -ENOTSUP (no CUDA) or another -errno (logged).
 */
int rw_cuda_ipc_export(const void *ptr, size_t size, struct rw_cuda_ipc_handle *h,
		       uint64_t *offset);

/**
 * Open a peer's allocation on the current device (peer access enabled as
 * needed).  A process opens one handle once: callers cache the result.
 * \param[out] base  its address in this process, until rw_cuda_ipc_close()
 * \param[out] size  its size
 * \return 0, -ENOTSUP or another -errno (logged).
 */
int rw_cuda_ipc_open(const struct rw_cuda_ipc_handle *h, void **base, size_t *size);

/** Close what rw_cuda_ipc_open() opened; copies from it must be done. */
void rw_cuda_ipc_close(void *base);

#endif /* RW_CUDA_IPC_H */

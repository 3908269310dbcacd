/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dma-buf export of GPU memory, for GPUDirect RDMA by ibv_reg_dmabuf_mr
 * (the ib transport).  The CUDA driver calls are found through the runtime
 * (cudaGetDriverEntryPoint*), so nothing links libcuda.  In a build without
 * CUDA both calls answer -ENOTSUP.  Neither blocks on anything but the
 * CUDA driver.
 */
#ifndef RW_CUDA_DMABUF_H
#define RW_CUDA_DMABUF_H

#include <stddef.h>
#include <stdint.h>

/**
 * Can this machine's GPUs export device memory as dma-buf: a CUDA driver
 * with cuMemGetHandleForAddressRange, and every GPU reporting
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED?  A probe: it never warns.
 * \param[out] why  why not (when it fails), one phrase.
 * \return 0 yes; -ENODEV no GPU or driver; -ENOTSUP no support, or a build
 *         without CUDA.
 */
int rw_cuda_dmabuf_supported(char *why, size_t why_len);

/**
 * A dma-buf fd covering the host pages around device memory
 * [ptr, ptr + size).
 * \param[out] fd      set only on success; the caller closes it
 * \param[out] offset  where ptr lies in the dma-buf
 * \return 0, -ENOTSUP, -ENODEV, -EINVAL (not device memory) or -EIO; a
 *         failure is logged here with the driver's error.
 */
int rw_cuda_dmabuf_fd(const void *ptr, size_t size, int *fd, uint64_t *offset);

#endif /* RW_CUDA_DMABUF_H */

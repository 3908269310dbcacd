/* SPDX-License-Identifier: Apache-2.0 */
/* dma-buf export of GPU memory (rw_cuda_dmabuf.h). */
#include "gpu/rw_cuda_dmabuf.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "gpu/gpu_emu.h"

#if RW_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gpu/rw_cuda.h"

typedef CUresult (*rw_cu_get_handle_fn)(void *handle, CUdeviceptr ptr, size_t size,
					CUmemRangeHandleType type, unsigned long long flags);
typedef CUresult (*rw_cu_device_get_fn)(CUdevice *dev, int ordinal);
typedef CUresult (*rw_cu_attr_fn)(int *value, CUdevice_attribute attr, CUdevice dev);

/* A driver function by name, through the runtime; NULL when absent. */
static void *driver_fn(const char *name)
{
	enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;
	cudaError_t e;

#if CUDART_VERSION >= 12050
	e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
#else
	e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q);
#endif
	(void)cudaGetLastError();
	return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? fn : NULL;
}

int rw_cuda_dmabuf_supported(char *why, size_t why_len)
{
	RW_EMU_ROUTE(rw_emu_dmabuf_supported(why, why_len));
	rw_cu_device_get_fn dev_get;
	rw_cu_attr_fn attr;
	int n = 0;

	if (rw_cuda_device_count(&n)) {
		snprintf(why, why_len, "no CUDA device");
		return -ENODEV;
	}
	dev_get = (rw_cu_device_get_fn)driver_fn("cuDeviceGet");
	attr = (rw_cu_attr_fn)driver_fn("cuDeviceGetAttribute");
	if (!driver_fn("cuMemGetHandleForAddressRange") || !dev_get || !attr) {
		snprintf(why, why_len,
			 "the CUDA driver has no cuMemGetHandleForAddressRange "
			 "(older than 11.7)");
		return -ENOTSUP;
	}
	for (int i = 0; i < n; i++) {
		CUdevice d;
		int v = 0;

		if (dev_get(&d, i) != CUDA_SUCCESS ||
		    attr(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, d) != CUDA_SUCCESS || !v) {
			snprintf(why, why_len, "GPU %d does not support dma-buf", i);
			return -ENOTSUP;
		}
	}
	return 0;
}

int rw_cuda_dmabuf_fd(const void *ptr, size_t size, int *fd, uint64_t *offset)
{
	RW_EMU_ROUTE(rw_emu_dmabuf_fd(ptr, size, fd, offset));
	rw_cu_get_handle_fn get = (rw_cu_get_handle_fn)driver_fn("cuMemGetHandleForAddressRange");
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)ptr & ~(pg - 1);
	/* a page at least: a registration of 0 bytes still exports one */
	uintptr_t end = ((uintptr_t)ptr + (size ? size : 1) + pg - 1) & ~(pg - 1);
	int handle = -1;
	CUresult r;

	if (!get) {
		RW_WARN(RW_LOG_NET, "cuda: cuMemGetHandleForAddressRange is not available");
		return -ENOTSUP;
	}
	r = get(&handle, (CUdeviceptr)start, end - start, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CUDA_SUCCESS) {
		RW_WARN(RW_LOG_NET,
			"cuda: cuMemGetHandleForAddressRange(%p, %zu bytes, dma-buf) "
			"failed: CUresult %d",
			(void *)start, (size_t)(end - start), (int)r);
		return r == CUDA_ERROR_INVALID_VALUE ? -EINVAL : -EIO;
	}
	*fd = handle;
	*offset = (uintptr_t)ptr - start;
	return 0;
}

#else /* !RW_HAVE_CUDA */

int rw_cuda_dmabuf_supported(char *why, size_t why_len)
{
	RW_EMU_ROUTE(rw_emu_dmabuf_supported(why, why_len));
	snprintf(why, why_len, "ringway was built without CUDA");
	return -ENOTSUP;
}

int rw_cuda_dmabuf_fd(const void *ptr, size_t size, int *fd, uint64_t *offset)
{
	RW_EMU_ROUTE(rw_emu_dmabuf_fd(ptr, size, fd, offset));
	(void)ptr, (void)size, (void)fd, (void)offset;
	RW_WARN(RW_LOG_NET, "cuda: dma-buf export needs a build with CUDA (RINGWAY_WITH_CUDA)");
	return -ENOTSUP;
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA IPC handles (rw_cuda_ipc.h) over the CUDA runtime.  The allocation
 * that holds a pointer is found with the driver's cuMemGetAddressRange,
 * reached through the runtime's driver entry point (no link to libcuda).
 * Without CUDA the calls are stubs.
 */
#include "gpu/rw_cuda_ipc.h"
#include "gpu/rw_cuda.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "gpu/gpu_emu.h"

#if RW_HAVE_CUDA

#include <pthread.h>

#include <cuda_runtime_api.h>

/* CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) */
typedef int (*mem_range_fn)(unsigned long long *base, size_t *size, unsigned long long p);

static struct {
	pthread_once_t once;
	mem_range_fn range;
} drv = {.once = PTHREAD_ONCE_INIT};

static void drv_load(void)
{
	void *fn = NULL;
	cudaError_t e;

#if CUDART_VERSION >= 12050
	enum cudaDriverEntryPointQueryResult q;

	e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 3020, cudaEnableDefault,
					     &q);
	if (q != cudaDriverEntryPointSuccess)
		fn = NULL;
#elif CUDART_VERSION >= 12000
	enum cudaDriverEntryPointQueryResult q;

	e = cudaGetDriverEntryPoint("cuMemGetAddressRange", &fn, cudaEnableDefault, &q);
	if (q != cudaDriverEntryPointSuccess)
		fn = NULL;
#else
	e = cudaGetDriverEntryPoint("cuMemGetAddressRange", &fn, cudaEnableDefault);
#endif
	if (e != cudaSuccess || !fn) {
		(void)cudaGetLastError();
		RW_WARN(RW_LOG_INIT | RW_LOG_NET,
			"cuda-ipc: driver entry point cuMemGetAddressRange not found: %s",
			cudaGetErrorString(e));
		return;
	}
	drv.range = (mem_range_fn)fn;
}

static int address_range(const void *p, char **base, size_t *size)
{
	unsigned long long b = 0;
	size_t n = 0;
	int r;

	pthread_once(&drv.once, drv_load);
	if (!drv.range)
		return -ENOTSUP;
	r = drv.range(&b, &n, (unsigned long long)(uintptr_t)p);
	if (r != 0) {
		RW_WARN(RW_LOG_NET, "cuda-ipc: cuMemGetAddressRange(%p) failed: CUresult %d", p, r);
		return -EINVAL;
	}
	*base = (char *)(uintptr_t)b;
	*size = n;
	return 0;
}

int rw_cuda_ipc_export(const void *ptr, size_t size, struct rw_cuda_ipc_handle *h, uint64_t *offset)
{
	RW_EMU_ROUTE(rw_emu_ipc_export(ptr, size, h, offset));
	struct cudaPointerAttributes a;
	cudaIpcMemHandle_t ih;
	cudaError_t e;
	char *base;
	size_t len;
	int rc;

	static_assert(sizeof(ih) == sizeof(h->bytes), "cudaIpcMemHandle_t size");
	e = cudaPointerGetAttributes(&a, ptr);
	if (e != cudaSuccess || a.type != cudaMemoryTypeDevice) {
		(void)cudaGetLastError();
		return -EINVAL;
	}
	rc = address_range(ptr, &base, &len);
	if (rc)
		return rc;
	if ((const char *)ptr + size > base + len)
		return -EINVAL;
	e = cudaIpcGetMemHandle(&ih, base);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		RW_WARN(RW_LOG_NET, "cuda-ipc: cudaIpcGetMemHandle(%p, %zu bytes) failed: %s", base,
			len, cudaGetErrorString(e));
		return rw_cuda_errno(e);
	}
	memcpy(h->bytes, &ih, sizeof(h->bytes));
	*offset = (uint64_t)((const char *)ptr - base);
	return 0;
}

int rw_cuda_ipc_open(const struct rw_cuda_ipc_handle *h, void **base, size_t *size)
{
	RW_EMU_ROUTE(rw_emu_ipc_open(h, base, size));
	cudaIpcMemHandle_t ih;
	cudaError_t e;
	void *p = NULL;
	char *b;
	size_t len;
	int rc;

	memcpy(&ih, h->bytes, sizeof(ih));
	e = cudaIpcOpenMemHandle(&p, ih, cudaIpcMemLazyEnablePeerAccess);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		RW_WARN(RW_LOG_NET, "cuda-ipc: cudaIpcOpenMemHandle failed: %s",
			cudaGetErrorString(e));
		return rw_cuda_errno(e);
	}
	rc = address_range(p, &b, &len);
	if (rc) {
		cudaIpcCloseMemHandle(p);
		return rc;
	}
	*base = p;
	*size = len - (size_t)((char *)p - b);
	return 0;
}

void rw_cuda_ipc_close(void *base)
{
	RW_EMU_ROUTE_VOID(rw_emu_ipc_close(base));
	cudaError_t e;

	if (!base)
		return;
	e = cudaIpcCloseMemHandle(base);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		RW_WARN(RW_LOG_NET, "cuda-ipc: cudaIpcCloseMemHandle(%p) failed: %s", base,
			cudaGetErrorString(e));
	}
}

#else /* !RW_HAVE_CUDA */

int rw_cuda_ipc_export(const void *ptr, size_t size, struct rw_cuda_ipc_handle *h, uint64_t *offset)
{
	RW_EMU_ROUTE(rw_emu_ipc_export(ptr, size, h, offset));
	(void)ptr, (void)size, (void)h, (void)offset;
	return -ENOTSUP;
}

int rw_cuda_ipc_open(const struct rw_cuda_ipc_handle *h, void **base, size_t *size)
{
	RW_EMU_ROUTE(rw_emu_ipc_open(h, base, size));
	(void)h, (void)base, (void)size;
	return -ENOTSUP;
}

void rw_cuda_ipc_close(void *base)
{
	RW_EMU_ROUTE_VOID(rw_emu_ipc_close(base));
	(void)base;
}

#endif /* RW_HAVE_CUDA */

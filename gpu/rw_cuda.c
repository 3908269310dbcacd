/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA runtime helpers of rw_cuda.h (a build with CUDA). */
#include "gpu/rw_cuda.h"

#include <ctype.h>
#include <errno.h>

#include <cuda_runtime_api.h>

#include "common/rw_log.h"
#include "gpu/gpu_emu.h"

int rw_cuda_errno(int cuda_err)
{
	switch ((cudaError_t)cuda_err) {
	case cudaSuccess:
		return 0;
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorStubLibrary:
	case cudaErrorCallRequiresNewerDriver:
	case cudaErrorDevicesUnavailable:
	case cudaErrorSystemDriverMismatch:
	case cudaErrorCompatNotSupportedOnDevice:
	case cudaErrorNoKernelImageForDevice:
	case cudaErrorUnsupportedPtxVersion:
	case cudaErrorInitializationError:
		return -ENODEV;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidResourceHandle:
		return -EINVAL;
	case cudaErrorNotReady:
		return -EAGAIN;
	case cudaErrorNotSupported:
		return -ENOTSUP;
	case cudaErrorIllegalAddress:
	case cudaErrorMisalignedAddress:
		return -EFAULT;
	default:
		return -EIO;
	}
}

/* Log a failed call once, with CUDA's name and message, and map it. */
#define RW_CUDA_FAIL(e, fmt, ...)                                                                  \
	(RW_WARN(RW_LOG_INIT, fmt " failed: %s (%s)", __VA_ARGS__, cudaGetErrorString(e),          \
		 cudaGetErrorName(e)),                                                             \
	 rw_cuda_errno(e))

int rw_cuda_device_count(int *count)
{
	RW_EMU_ROUTE(rw_emu_device_count(count));
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n < 1) {
		(void)cudaGetLastError();
		RW_LOG_ONCE(RW_LOG_INFO, RW_LOG_INIT, "cuda: no usable GPU: %s",
			    e != cudaSuccess ? cudaGetErrorString(e) : "no device");
		return -ENODEV;
	}
	*count = n;
	return 0;
}

/*
 * A runtime that failed to initialise (no driver, no device) stays so for
 * the life of the process: once a pointer query has said so, the queries
 * answer "host" without asking again (each collective asks twice, and the
 * failing call costs more than a small collective's other work).
 */
static int cuda_absent;

static cudaError_t pointer_attributes(struct cudaPointerAttributes *attr, const void *ptr)
{
	cudaError_t e;

	if (__atomic_load_n(&cuda_absent, __ATOMIC_RELAXED))
		return cudaErrorNoDevice;
	e = cudaPointerGetAttributes(attr, ptr);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		/* only what lasts: not a device busy now, nor a bad argument */
		if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
		    e == cudaErrorStubLibrary || e == cudaErrorInitializationError)
			__atomic_store_n(&cuda_absent, 1, __ATOMIC_RELAXED);
	}
	return e;
}

enum rw_mem_kind rw_cuda_mem_kind(const void *ptr)
{
	RW_EMU_ROUTE(rw_emu_mem_kind(ptr));
	struct cudaPointerAttributes attr;

	if (!ptr || pointer_attributes(&attr, ptr) != cudaSuccess)
		return RW_MEM_HOST; /* no driver, or not CUDA's: host */
	switch (attr.type) {
	case cudaMemoryTypeHost:
		return RW_MEM_HOST_PINNED;
	case cudaMemoryTypeDevice:
		return RW_MEM_DEVICE;
	case cudaMemoryTypeManaged:
		return RW_MEM_MANAGED;
	default:
		return RW_MEM_HOST;
	}
}

int rw_cuda_ptr_device(const void *ptr)
{
	RW_EMU_ROUTE(rw_emu_ptr_device(ptr));
	struct cudaPointerAttributes attr;

	if (!ptr || pointer_attributes(&attr, ptr) != cudaSuccess)
		return -1;
	if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
		return -1;
	return attr.device;
}

int rw_cuda_device_busid(int dev, char *buf, size_t len)
{
	RW_EMU_ROUTE(rw_emu_device_busid(dev, buf, len));
	cudaError_t e;

	if (!buf || len < 16)
		return -EINVAL;
	e = cudaDeviceGetPCIBusId(buf, (int)len, dev);
	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaDeviceGetPCIBusId(%d)", dev);
	for (char *c = buf; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return 0;
}

int rw_cuda_set_device(int dev)
{
	RW_EMU_ROUTE(rw_emu_set_device(dev));
	cudaError_t e = cudaSetDevice(dev);

	return e == cudaSuccess ? 0 : RW_CUDA_FAIL(e, "cudaSetDevice(%d)", dev);
}

int rw_cuda_get_device(int *dev)
{
	RW_EMU_ROUTE(rw_emu_get_device(dev));
	int d;
	cudaError_t e = cudaGetDevice(&d);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaGetDevice(%s)", "current");
	*dev = d;
	return 0;
}

int rw_cuda_malloc(void **ptr, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_malloc(ptr, bytes));
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, bytes);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaMalloc(bytes=%zu)", bytes);
	*ptr = p;
	return 0;
}

void rw_cuda_free(void *ptr)
{
	RW_EMU_ROUTE_VOID(rw_emu_free(ptr));
	cudaError_t e;

	if (!ptr)
		return;
	e = cudaFree(ptr);
	if (e != cudaSuccess)
		(void)RW_CUDA_FAIL(e, "cudaFree(%p)", ptr);
}

int rw_cuda_host_alloc(void **ptr, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_host_alloc(ptr, bytes));
	void *p = NULL;
	cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaHostAlloc(bytes=%zu)", bytes);
	*ptr = p;
	return 0;
}

void rw_cuda_host_free(void *ptr)
{
	RW_EMU_ROUTE_VOID(rw_emu_host_free(ptr));
	cudaError_t e;

	if (!ptr)
		return;
	e = cudaFreeHost(ptr);
	if (e != cudaSuccess)
		(void)RW_CUDA_FAIL(e, "cudaFreeHost(%p)", ptr);
}

/*
 * cudaMemcpy from pageable memory and cudaMemset may return before the
 * device has written the bytes, and the legacy stream they run on does not
 * order the non-blocking streams the engine and the kernels use: a kernel
 * launched right after could read what was there before (seen on an H200:
 * a small host-to-device copy still landing after the reduction).  So the
 * synchronous helpers wait for the legacy stream before they return.
 */
static cudaError_t legacy_stream_done(cudaError_t e)
{
	return e == cudaSuccess ? cudaStreamSynchronize(cudaStreamLegacy) : e;
}

int rw_cuda_memcpy(void *dst, const void *src, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_memcpy(dst, src, bytes));
	cudaError_t e = legacy_stream_done(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));

	return e == cudaSuccess
		       ? 0
		       : RW_CUDA_FAIL(e, "cudaMemcpy(dst=%p, src=%p, bytes=%zu)", dst, src, bytes);
}

int rw_cuda_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
	RW_EMU_ROUTE(rw_emu_memcpy_async(dst, src, bytes, stream));
	cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);

	return e == cudaSuccess
		       ? 0
		       : RW_CUDA_FAIL(e, "cudaMemcpyAsync(dst=%p, src=%p, bytes=%zu, stream=%p)",
				      dst, src, bytes, stream);
}

int rw_cuda_memset(void *dst, int value, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_memset(dst, value, bytes));
	cudaError_t e = legacy_stream_done(cudaMemset(dst, value, bytes));

	return e == cudaSuccess ? 0
				: RW_CUDA_FAIL(e, "cudaMemset(dst=%p, value=%d, bytes=%zu)", dst,
					       value, bytes);
}

int rw_cuda_stream_create(void **stream)
{
	RW_EMU_ROUTE(rw_emu_stream_create(stream));
	cudaStream_t s;
	cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaStreamCreateWithFlags(%s)", "non-blocking");
	*stream = s;
	return 0;
}

void rw_cuda_stream_destroy(void *stream)
{
	RW_EMU_ROUTE_VOID(rw_emu_stream_destroy(stream));
	cudaError_t e;

	if (!stream)
		return;
	e = cudaStreamDestroy((cudaStream_t)stream);
	if (e != cudaSuccess)
		(void)RW_CUDA_FAIL(e, "cudaStreamDestroy(%p)", stream);
}

int rw_cuda_stream_sync(void *stream)
{
	RW_EMU_ROUTE(rw_emu_stream_sync(stream));
	cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);

	return e == cudaSuccess ? 0 : RW_CUDA_FAIL(e, "cudaStreamSynchronize(%p)", stream);
}

int rw_cuda_stream_query(void *stream)
{
	RW_EMU_ROUTE(rw_emu_stream_query(stream));
	cudaError_t e = cudaStreamQuery((cudaStream_t)stream);

	if (e == cudaSuccess)
		return 0;
	if (e == cudaErrorNotReady) {
		(void)cudaGetLastError();
		return -EAGAIN;
	}
	return RW_CUDA_FAIL(e, "cudaStreamQuery(%p)", stream);
}

int rw_cuda_launch_host(void *stream, void (*fn)(void *arg), void *arg)
{
	RW_EMU_ROUTE(rw_emu_launch_host(stream, fn, arg, false));
	cudaError_t e = cudaLaunchHostFunc((cudaStream_t)stream, fn, arg);

	return e == cudaSuccess ? 0 : RW_CUDA_FAIL(e, "cudaLaunchHostFunc(stream=%p)", stream);
}

int rw_cuda_stream_wait_event(void *stream, void *event)
{
	RW_EMU_ROUTE(rw_emu_stream_wait_event(stream, event));
	cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);

	return e == cudaSuccess
		       ? 0
		       : RW_CUDA_FAIL(e, "cudaStreamWaitEvent(stream=%p, event=%p)", stream, event);
}

int rw_cuda_event_create(void **event)
{
	RW_EMU_ROUTE(rw_emu_event_create(event));
	cudaEvent_t ev;
	cudaError_t e = cudaEventCreate(&ev);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaEventCreate(%s)", "default");
	*event = ev;
	return 0;
}

void rw_cuda_event_destroy(void *event)
{
	RW_EMU_ROUTE_VOID(rw_emu_event_destroy(event));
	cudaError_t e;

	if (!event)
		return;
	e = cudaEventDestroy((cudaEvent_t)event);
	if (e != cudaSuccess)
		(void)RW_CUDA_FAIL(e, "cudaEventDestroy(%p)", event);
}

int rw_cuda_event_record(void *event, void *stream)
{
	RW_EMU_ROUTE(rw_emu_event_record(event, stream));
	cudaError_t e = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);

	return e == cudaSuccess
		       ? 0
		       : RW_CUDA_FAIL(e, "cudaEventRecord(event=%p, stream=%p)", event, stream);
}

int rw_cuda_event_query(void *event)
{
	RW_EMU_ROUTE(rw_emu_event_query(event));
	cudaError_t e = cudaEventQuery((cudaEvent_t)event);

	if (e == cudaSuccess)
		return 0;
	if (e == cudaErrorNotReady) {
		(void)cudaGetLastError();
		return -EAGAIN;
	}
	return RW_CUDA_FAIL(e, "cudaEventQuery(%p)", event);
}

int rw_cuda_event_sync(void *event)
{
	RW_EMU_ROUTE(rw_emu_event_sync(event));
	cudaError_t e = cudaEventSynchronize((cudaEvent_t)event);

	return e == cudaSuccess ? 0 : RW_CUDA_FAIL(e, "cudaEventSynchronize(%p)", event);
}

int rw_cuda_event_elapsed_ms(void *start, void *end, float *ms)
{
	RW_EMU_ROUTE(rw_emu_event_elapsed_ms(start, end, ms));
	float t;
	cudaError_t e = cudaEventElapsedTime(&t, (cudaEvent_t)start, (cudaEvent_t)end);

	if (e != cudaSuccess)
		return RW_CUDA_FAIL(e, "cudaEventElapsedTime(start=%p, end=%p)", start, end);
	*ms = t;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_cuda.h in a build without CUDA
 * (RINGWAY_WITH_CUDA=OFF, or no toolkit found): probes answer "no GPU",
 * everything else returns -ENOTSUP and says why.
 */
#include "gpu/rw_cuda.h"

#include <errno.h>

#include "common/rw_log.h"
#include "gpu/gpu_emu.h"

#define RW_NO_CUDA(call)                                                                           \
	(RW_WARN(RW_LOG_INIT,                                                                      \
		 "%s: this ringway was built without CUDA "                                        \
		 "(RINGWAY_WITH_CUDA=OFF or no CUDA toolkit found)",                               \
		 call),                                                                            \
	 -ENOTSUP)

int rw_cuda_device_count(int *count)
{
	RW_EMU_ROUTE(rw_emu_device_count(count));
	(void)count;
	return -ENOTSUP;
}

enum rw_mem_kind rw_cuda_mem_kind(const void *ptr)
{
	RW_EMU_ROUTE(rw_emu_mem_kind(ptr));
	(void)ptr;
	return RW_MEM_HOST;
}

int rw_cuda_ptr_device(const void *ptr)
{
	RW_EMU_ROUTE(rw_emu_ptr_device(ptr));
	(void)ptr;
	return -1;
}

int rw_cuda_device_busid(int dev, char *buf, size_t len)
{
	RW_EMU_ROUTE(rw_emu_device_busid(dev, buf, len));
	(void)dev, (void)buf, (void)len;
	return RW_NO_CUDA("rw_cuda_device_busid");
}

int rw_cuda_set_device(int dev)
{
	RW_EMU_ROUTE(rw_emu_set_device(dev));
	(void)dev;
	return RW_NO_CUDA("rw_cuda_set_device");
}

int rw_cuda_get_device(int *dev)
{
	RW_EMU_ROUTE(rw_emu_get_device(dev));
	(void)dev;
	return RW_NO_CUDA("rw_cuda_get_device");
}

int rw_cuda_malloc(void **ptr, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_malloc(ptr, bytes));
	(void)ptr, (void)bytes;
	return RW_NO_CUDA("rw_cuda_malloc");
}

void rw_cuda_free(void *ptr)
{
	RW_EMU_ROUTE_VOID(rw_emu_free(ptr));
	(void)ptr;
}

int rw_cuda_host_alloc(void **ptr, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_host_alloc(ptr, bytes));
	(void)ptr, (void)bytes;
	return RW_NO_CUDA("rw_cuda_host_alloc");
}

void rw_cuda_host_free(void *ptr)
{
	RW_EMU_ROUTE_VOID(rw_emu_host_free(ptr));
	(void)ptr;
}

int rw_cuda_memcpy(void *dst, const void *src, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_memcpy(dst, src, bytes));
	(void)dst, (void)src, (void)bytes;
	return RW_NO_CUDA("rw_cuda_memcpy");
}

int rw_cuda_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
	RW_EMU_ROUTE(rw_emu_memcpy_async(dst, src, bytes, stream));
	(void)dst, (void)src, (void)bytes, (void)stream;
	return RW_NO_CUDA("rw_cuda_memcpy_async");
}

int rw_cuda_memset(void *dst, int value, size_t bytes)
{
	RW_EMU_ROUTE(rw_emu_memset(dst, value, bytes));
	(void)dst, (void)value, (void)bytes;
	return RW_NO_CUDA("rw_cuda_memset");
}

int rw_cuda_stream_create(void **stream)
{
	RW_EMU_ROUTE(rw_emu_stream_create(stream));
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_create");
}

void rw_cuda_stream_destroy(void *stream)
{
	RW_EMU_ROUTE_VOID(rw_emu_stream_destroy(stream));
	(void)stream;
}

int rw_cuda_stream_sync(void *stream)
{
	RW_EMU_ROUTE(rw_emu_stream_sync(stream));
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_sync");
}

int rw_cuda_stream_query(void *stream)
{
	RW_EMU_ROUTE(rw_emu_stream_query(stream));
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_query");
}

int rw_cuda_launch_host(void *stream, void (*fn)(void *arg), void *arg)
{
	RW_EMU_ROUTE(rw_emu_launch_host(stream, fn, arg, false));
	(void)stream, (void)fn, (void)arg;
	return RW_NO_CUDA("rw_cuda_launch_host");
}

int rw_cuda_stream_wait_event(void *stream, void *event)
{
	RW_EMU_ROUTE(rw_emu_stream_wait_event(stream, event));
	(void)stream, (void)event;
	return RW_NO_CUDA("rw_cuda_stream_wait_event");
}

int rw_cuda_event_create(void **event)
{
	RW_EMU_ROUTE(rw_emu_event_create(event));
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_create");
}

void rw_cuda_event_destroy(void *event)
{
	RW_EMU_ROUTE_VOID(rw_emu_event_destroy(event));
	(void)event;
}

int rw_cuda_event_record(void *event, void *stream)
{
	RW_EMU_ROUTE(rw_emu_event_record(event, stream));
	(void)event, (void)stream;
	return RW_NO_CUDA("rw_cuda_event_record");
}

int rw_cuda_event_query(void *event)
{
	RW_EMU_ROUTE(rw_emu_event_query(event));
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_query");
}

int rw_cuda_event_sync(void *event)
{
	RW_EMU_ROUTE(rw_emu_event_sync(event));
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_sync");
}

int rw_cuda_event_elapsed_ms(void *start, void *end, float *ms)
{
	RW_EMU_ROUTE(rw_emu_event_elapsed_ms(start, end, ms));
	(void)start, (void)end, (void)ms;
	return RW_NO_CUDA("rw_cuda_event_elapsed_ms");
}

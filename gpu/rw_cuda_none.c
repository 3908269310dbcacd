/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_cuda.h in a build without CUDA
 * (RINGWAY_WITH_CUDA=OFF, or no toolkit found): probes answer "no GPU",
 * everything else returns -ENOTSUP and says why.
 */
#include "gpu/rw_cuda.h"

#include <errno.h>

#include "common/rw_log.h"

#define RW_NO_CUDA(call)                                                                           \
	(RW_WARN(RW_LOG_INIT,                                                                      \
		 "%s: this ringway was built without CUDA "                                        \
		 "(RINGWAY_WITH_CUDA=OFF or no CUDA toolkit found)",                               \
		 call),                                                                            \
	 -ENOTSUP)

int rw_cuda_device_count(int *count)
{
	(void)count;
	return -ENOTSUP;
}

enum rw_mem_kind rw_cuda_mem_kind(const void *ptr)
{
	(void)ptr;
	return RW_MEM_HOST;
}

int rw_cuda_ptr_device(const void *ptr)
{
	(void)ptr;
	return -1;
}

int rw_cuda_set_device(int dev)
{
	(void)dev;
	return RW_NO_CUDA("rw_cuda_set_device");
}

int rw_cuda_get_device(int *dev)
{
	(void)dev;
	return RW_NO_CUDA("rw_cuda_get_device");
}

int rw_cuda_malloc(void **ptr, size_t bytes)
{
	(void)ptr, (void)bytes;
	return RW_NO_CUDA("rw_cuda_malloc");
}

void rw_cuda_free(void *ptr)
{
	(void)ptr;
}

int rw_cuda_host_alloc(void **ptr, size_t bytes)
{
	(void)ptr, (void)bytes;
	return RW_NO_CUDA("rw_cuda_host_alloc");
}

void rw_cuda_host_free(void *ptr)
{
	(void)ptr;
}

int rw_cuda_memcpy(void *dst, const void *src, size_t bytes)
{
	(void)dst, (void)src, (void)bytes;
	return RW_NO_CUDA("rw_cuda_memcpy");
}

int rw_cuda_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
	(void)dst, (void)src, (void)bytes, (void)stream;
	return RW_NO_CUDA("rw_cuda_memcpy_async");
}

int rw_cuda_memset(void *dst, int value, size_t bytes)
{
	(void)dst, (void)value, (void)bytes;
	return RW_NO_CUDA("rw_cuda_memset");
}

int rw_cuda_stream_create(void **stream)
{
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_create");
}

void rw_cuda_stream_destroy(void *stream)
{
	(void)stream;
}

int rw_cuda_stream_sync(void *stream)
{
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_sync");
}

int rw_cuda_stream_query(void *stream)
{
	(void)stream;
	return RW_NO_CUDA("rw_cuda_stream_query");
}

int rw_cuda_launch_host(void *stream, void (*fn)(void *arg), void *arg)
{
	(void)stream, (void)fn, (void)arg;
	return RW_NO_CUDA("rw_cuda_launch_host");
}

int rw_cuda_stream_wait_event(void *stream, void *event)
{
	(void)stream, (void)event;
	return RW_NO_CUDA("rw_cuda_stream_wait_event");
}

int rw_cuda_event_create(void **event)
{
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_create");
}

void rw_cuda_event_destroy(void *event)
{
	(void)event;
}

int rw_cuda_event_record(void *event, void *stream)
{
	(void)event, (void)stream;
	return RW_NO_CUDA("rw_cuda_event_record");
}

int rw_cuda_event_query(void *event)
{
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_query");
}

int rw_cuda_event_sync(void *event)
{
	(void)event;
	return RW_NO_CUDA("rw_cuda_event_sync");
}

int rw_cuda_event_elapsed_ms(void *start, void *end, float *ms)
{
	(void)start, (void)end, (void)ms;
	return RW_NO_CUDA("rw_cuda_event_elapsed_ms");
}

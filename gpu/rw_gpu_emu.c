/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* memfd_create */
/*
 * The host-emulated GPU (rw_gpu_emu.h): the switch, the counters, and the
 * memory: device allocations are memfds mapped twice (a reserved PROT_NONE
 * address the callers see, and the emulator's read-write view), pinned host
 * memory is plain anonymous memory the registry marks as pinned.  Streams
 * and events are in gpu_emu_stream.c, IPC in gpu_emu_ipc.c.
 */
#include "gpu/gpu_emu.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"

struct rw_emu rw_emu_g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static _Thread_local int tls_device;
static _Thread_local uint64_t tls_blocking;

/* ---- the switch ------------------------------------------------------------ */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&rw_emu_g.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&rw_emu_g.lock);
}

/* The child has only the forking thread: the stream threads are gone. */
static void atfork_child(void)
{
	rw_emu_cond_init(&rw_emu_g.done);
	rw_emu_g.pid = getpid();
	rw_emu_streams_forget();
	pthread_mutex_unlock(&rw_emu_g.lock);
}

/* Each allocation holds a memfd open: let a test have many. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int rw_gpu_emu_enable(int ndevices, unsigned int flags)
{
	int rc = 0;

	if (ndevices < 1 || ndevices > RW_GPU_EMU_MAX_DEVICES ||
	    (flags & ~RW_GPU_EMU_HOST_VISIBLE)) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: enable(ndevices=%d, flags=%#x): need 1..%d devices "
			"and known flags",
			ndevices, flags, RW_GPU_EMU_MAX_DEVICES);
		return -EINVAL;
	}
	pthread_mutex_lock(&rw_emu_g.lock);
	if (rw_emu_g.on) {
		if (rw_emu_g.ndevices != ndevices || rw_emu_g.flags != flags) {
			RW_WARN(RW_LOG_INIT,
				"gpu-emu: enable(ndevices=%d, flags=%#x): already on with %d "
				"devices, flags %#x",
				ndevices, flags, rw_emu_g.ndevices, rw_emu_g.flags);
			rc = -EINVAL;
		}
	} else {
		rw_emu_g.ndevices = ndevices;
		rw_emu_g.flags = flags;
		rw_emu_g.pid = getpid();
		for (int d = 0; d < ndevices; d++)
			snprintf(rw_emu_g.busid[d], sizeof(rw_emu_g.busid[d]), "0000:%02x:00.0",
				 0xe0 + d);
		raise_fd_limit();
		rw_emu_cond_init(&rw_emu_g.done);
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		__atomic_store_n(&rw_emu_g.on, 1, __ATOMIC_RELEASE);
		RW_INFO(RW_LOG_INIT, "gpu-emu: %d emulated GPU(s), device memory %s", ndevices,
			flags & RW_GPU_EMU_HOST_VISIBLE ? "host visible" : "not host visible");
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

bool rw_gpu_emu_enabled(void)
{
	return rw_emu_on();
}

int rw_gpu_emu_set_busid(int dev, const char *busid)
{
	size_t n = busid ? strlen(busid) : 0;

	if (!rw_emu_on() || dev < 0 || dev >= rw_emu_g.ndevices || n == 0 ||
	    n >= RW_GPU_EMU_BUSID_LEN) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: set_busid(%d, %s): need an enabled device and 1..%d "
			"characters",
			dev, busid ? busid : "NULL", RW_GPU_EMU_BUSID_LEN - 1);
		return -EINVAL;
	}
	pthread_mutex_lock(&rw_emu_g.lock);
	for (size_t i = 0; i <= n; i++)
		rw_emu_g.busid[dev][i] = (char)tolower((unsigned char)busid[i]);
	pthread_mutex_unlock(&rw_emu_g.lock);
	return 0;
}

void rw_gpu_emu_set_delay_us(unsigned int us)
{
	__atomic_store_n(&rw_emu_g.delay_us, us, __ATOMIC_RELAXED);
}

void rw_gpu_emu_set_ipc_refused(bool refused)
{
	__atomic_store_n(&rw_emu_g.ipc_refused, refused, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

void rw_gpu_emu_stats(struct rw_gpu_emu_stats *out)
{
	const struct rw_emu_counters *n = &rw_emu_g.n;

	memset(out, 0, sizeof(*out));
	if (!rw_emu_on())
		return;
	out->copies_h2d = load(&n->copies[0]);
	out->bytes_h2d = load(&n->bytes[0]);
	out->copies_d2h = load(&n->copies[1]);
	out->bytes_d2h = load(&n->bytes[1]);
	out->copies_d2d = load(&n->copies[2]);
	out->bytes_d2d = load(&n->bytes[2]);
	out->copies_h2h = load(&n->copies[3]);
	out->bytes_h2h = load(&n->bytes[3]);
	out->memsets = load(&n->memsets);
	out->host_fns = load(&n->host_fns);
	out->kernels = load(&n->kernels);
	out->blocking = load(&n->blocking);
	out->blocking_thread = tls_blocking;
	out->allocs_live = load(&n->allocs_live);
	out->ipc_exports = load(&n->ipc_exports);
	out->ipc_opens_live = load(&n->ipc_opens_live);
	out->streams_live = load(&n->streams_live);
}

void rw_emu_count_blocking(void)
{
	tls_blocking++;
	rw_emu_count(&rw_emu_g.n.blocking, 1);
}

int rw_gpu_emu_launch_kernel(void *stream, void (*fn)(void *arg), void *arg)
{
	if (!rw_emu_on())
		return -ENOTSUP;
	return rw_emu_launch_host(stream, fn, arg, true);
}

/* ---- the registry ---------------------------------------------------------- */

struct rw_emu_region *rw_emu_region_find(const void *p)
{
	const char *c = p;

	for (struct rw_emu_region *r = rw_emu_g.regions; r; r = r->next) {
		if (c >= r->base && c < r->base + r->size)
			return r;
	}
	return NULL;
}

int rw_emu_translate(const char *who, const void *p, size_t len, void **at, enum rw_mem_kind *kind)
{
	struct rw_emu_region *r;
	int rc = 0;

	pthread_mutex_lock(&rw_emu_g.lock);
	r = rw_emu_region_find(p);
	if (!r) {
		*at = (void *)p;
		*kind = RW_MEM_HOST;
	} else if (len > r->size - (size_t)((const char *)p - r->base)) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: %s: [%p, +%zu) leaves its %zu-byte allocation at %p (device %d)",
			who, p, len, r->size, (void *)r->base, r->device);
		rc = -EFAULT;
	} else {
		*at = r->shadow + ((const char *)p - r->base);
		*kind = r->kind;
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

void *rw_gpu_emu_access(const void *ptr, size_t len)
{
	enum rw_mem_kind kind;
	void *at;

	if (!rw_emu_on())
		return (void *)ptr;
	return rw_emu_translate("rw_gpu_emu_access", ptr, len, &at, &kind) ? NULL : at;
}

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (RW_MAX(n, 1) + pg - 1) / pg * pg;
}

int rw_emu_region_map(int fd, size_t size, enum rw_mem_kind kind, bool ipc,
		      struct rw_emu_region **out)
{
	struct rw_emu_region *r = calloc(1, sizeof(*r));
	struct stat st;
	int rc;

	if (!r)
		return -ENOMEM;
	r->mapped = page_round(size);
	r->shadow = mmap(NULL, r->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->shadow == MAP_FAILED) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "gpu-emu: mmap(%zu bytes, fd %d): %s", r->mapped, fd,
			strerror(errno));
		free(r);
		return rc;
	}
	r->base = r->shadow;
	if (!(rw_emu_g.flags & RW_GPU_EMU_HOST_VISIBLE)) {
		r->base = mmap(NULL, r->mapped, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (r->base == MAP_FAILED) {
			rc = -errno;
			RW_WARN(RW_LOG_INIT, "gpu-emu: reserving %zu bytes: %s", r->mapped,
				strerror(errno));
			munmap(r->shadow, r->mapped);
			free(r);
			return rc;
		}
	}
	if (fstat(fd, &st) == 0) {
		r->ino = (uint64_t)st.st_ino;
		r->dev = (uint64_t)st.st_dev;
	}
	r->size = size;
	r->kind = kind;
	r->ipc = ipc;
	r->fd = -1;
	r->device = rw_emu_current_device();
	pthread_mutex_lock(&rw_emu_g.lock);
	r->id = ++rw_emu_g.next_id;
	r->next = rw_emu_g.regions;
	rw_emu_g.regions = r;
	pthread_mutex_unlock(&rw_emu_g.lock);
	*out = r;
	return 0;
}

void rw_emu_region_unmap(struct rw_emu_region *r)
{
	pthread_mutex_lock(&rw_emu_g.lock);
	for (struct rw_emu_region **pp = &rw_emu_g.regions; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (r->base != r->shadow)
		munmap(r->base, r->mapped);
	munmap(r->shadow, r->mapped);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

/* Take the region starting at ptr out of the registry, if it is of kind
 * and (for device memory) not opened by IPC. */
static struct rw_emu_region *region_take(const void *ptr, enum rw_mem_kind kind)
{
	struct rw_emu_region *r;

	pthread_mutex_lock(&rw_emu_g.lock);
	r = rw_emu_region_find(ptr);
	if (r && (r->base != (const char *)ptr || r->kind != kind || r->ipc))
		r = NULL;
	pthread_mutex_unlock(&rw_emu_g.lock);
	return r;
}

/* ---- devices and pointers ---------------------------------------------------- */

int rw_emu_current_device(void)
{
	return tls_device;
}

int rw_emu_device_count(int *count)
{
	*count = rw_emu_g.ndevices;
	return 0;
}

enum rw_mem_kind rw_emu_mem_kind(const void *ptr)
{
	enum rw_mem_kind k = RW_MEM_HOST;
	struct rw_emu_region *r;

	if (!ptr)
		return RW_MEM_HOST;
	pthread_mutex_lock(&rw_emu_g.lock);
	r = rw_emu_region_find(ptr);
	if (r)
		k = r->kind;
	pthread_mutex_unlock(&rw_emu_g.lock);
	return k;
}

int rw_emu_ptr_device(const void *ptr)
{
	struct rw_emu_region *r;
	int dev = -1;

	if (!ptr)
		return -1;
	pthread_mutex_lock(&rw_emu_g.lock);
	r = rw_emu_region_find(ptr);
	if (r && r->kind == RW_MEM_DEVICE)
		dev = r->device;
	pthread_mutex_unlock(&rw_emu_g.lock);
	return dev;
}

int rw_emu_set_device(int dev)
{
	if (dev < 0 || dev >= rw_emu_g.ndevices) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: set_device(%d): %d emulated device(s)", dev,
			rw_emu_g.ndevices);
		return -ENODEV;
	}
	tls_device = dev;
	return 0;
}

int rw_emu_device_busid(int dev, char *buf, size_t len)
{
	if (dev < 0 || dev >= rw_emu_g.ndevices || !buf || len < RW_GPU_EMU_BUSID_LEN) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: device_busid(%d, %zu bytes): %d emulated device(s), "
			"need %d bytes",
			dev, len, rw_emu_g.ndevices, RW_GPU_EMU_BUSID_LEN);
		return -EINVAL;
	}
	pthread_mutex_lock(&rw_emu_g.lock);
	snprintf(buf, len, "%s", rw_emu_g.busid[dev]);
	pthread_mutex_unlock(&rw_emu_g.lock);
	return 0;
}

int rw_emu_get_device(int *dev)
{
	*dev = tls_device;
	return 0;
}

/* ---- allocations --------------------------------------------------------------- */

int rw_emu_malloc(void **ptr, size_t bytes)
{
	struct rw_emu_region *r;
	int fd, rc;

	if (bytes == 0) { /* cudaMalloc(0) succeeds with NULL */
		*ptr = NULL;
		return 0;
	}
	fd = memfd_create("ringway-gpu-emu", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "gpu-emu: malloc(%zu bytes): memfd_create: %s", bytes,
			strerror(errno));
		return rc;
	}
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)page_round(bytes)) != 0) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "gpu-emu: malloc(%zu bytes): sizing the memfd: %s", bytes,
			strerror(errno));
		close(fd);
		return rc == -ENOSPC || rc == -EFBIG ? -ENOMEM : rc;
	}
	rc = rw_emu_region_map(fd, bytes, RW_MEM_DEVICE, false, &r);
	if (rc) {
		close(fd);
		return rc;
	}
	r->fd = fd;
	rw_emu_count(&rw_emu_g.n.allocs_live, 1);
	*ptr = r->base;
	return 0;
}

void rw_emu_free(void *ptr)
{
	struct rw_emu_region *r;

	if (!ptr)
		return;
	r = region_take(ptr, RW_MEM_DEVICE);
	if (!r) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: free(%p): not a device allocation of this process",
			ptr);
		return;
	}
	(void)rw_emu_device_sync("free"); /* cudaFree waits for the device */
	rw_emu_region_unmap(r);
	rw_emu_count(&rw_emu_g.n.allocs_live, (uint64_t)-1);
}

int rw_emu_host_alloc(void **ptr, size_t bytes)
{
	struct rw_emu_region *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->mapped = page_round(bytes);
	r->shadow =
		mmap(NULL, r->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->shadow == MAP_FAILED) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "gpu-emu: host_alloc(%zu bytes): %s", bytes, strerror(errno));
		free(r);
		return rc == -EAGAIN ? -ENOMEM : rc;
	}
	r->base = r->shadow;
	r->size = RW_MAX(bytes, 1);
	r->kind = RW_MEM_HOST_PINNED;
	r->fd = -1;
	r->device = -1;
	pthread_mutex_lock(&rw_emu_g.lock);
	r->id = ++rw_emu_g.next_id;
	r->next = rw_emu_g.regions;
	rw_emu_g.regions = r;
	pthread_mutex_unlock(&rw_emu_g.lock);
	*ptr = r->base;
	return 0;
}

void rw_emu_host_free(void *ptr)
{
	struct rw_emu_region *r;

	if (!ptr)
		return;
	r = region_take(ptr, RW_MEM_HOST_PINNED);
	if (!r) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: host_free(%p): not pinned memory of this process",
			ptr);
		return;
	}
	(void)rw_emu_device_sync("host_free");
	rw_emu_region_unmap(r);
}

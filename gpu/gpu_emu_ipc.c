/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
/*
 * CUDA IPC and dma-buf of the host-emulated GPU (rw_gpu_emu.h).  A handle
 * names the memfd behind a device allocation: the exporter's pid, the fd
 * number it holds it under, and the file's inode, device and size.  The
 * peer opens /proc/<pid>/fd/<fd> (same user: no ptrace attach needed), or
 * else takes the fd with pidfd_getfd(); either way it checks that the file
 * is still that memfd (inode, device, owner, size) before mapping it, so a
 * recycled fd number or a dead exporter is refused, not mapped.
 */
#include "gpu/gpu_emu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/rw_log.h"

#define IPC_MAGIC   0x52574749u /* "RWGI" */
#define IPC_VERSION 1u

struct emu_handle {
	uint32_t magic, version;
	int32_t pid, fd;
	uint64_t size, ino, dev, id;
	int32_t device;
	uint32_t pad;
};
_Static_assert(sizeof(struct emu_handle) <= RW_CUDA_IPC_HANDLE_BYTES, "emulated IPC handle");

int rw_emu_ipc_export(const void *ptr, size_t size, struct rw_cuda_ipc_handle *h, uint64_t *offset)
{
	struct emu_handle e;
	struct rw_emu_region *r;
	int rc = 0;

	if (__atomic_load_n(&rw_emu_g.ipc_refused, __ATOMIC_RELAXED))
		return -ENOTSUP;
	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&rw_emu_g.lock);
	r = ptr ? rw_emu_region_find(ptr) : NULL;
	if (!r || r->kind != RW_MEM_DEVICE || r->ipc || r->fd < 0 ||
	    size > r->size - (size_t)((const char *)ptr - r->base)) {
		rc = -EINVAL;
	} else {
		e.magic = IPC_MAGIC;
		e.version = IPC_VERSION;
		e.pid = (int32_t)rw_emu_g.pid;
		e.fd = r->fd;
		e.size = r->size;
		e.ino = r->ino;
		e.dev = r->dev;
		e.id = r->id;
		e.device = r->device;
		*offset = (uint64_t)((const char *)ptr - r->base);
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (rc)
		return rc; /* quietly, as the CUDA path: "not device memory" */
	memset(h->bytes, 0, sizeof(h->bytes));
	memcpy(h->bytes, &e, sizeof(e));
	rw_emu_count(&rw_emu_g.n.ipc_exports, 1);
	return 0;
}

/* The exporter's fd: by /proc, else by pidfd_getfd.  -errno of /proc. */
static int peer_fd(const struct emu_handle *e)
{
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)e->pid, (int)e->fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = errno;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	{
		int pfd = (int)syscall(SYS_pidfd_open, (pid_t)e->pid, 0);

		if (pfd >= 0) {
			fd = (int)syscall(SYS_pidfd_getfd, pfd, e->fd, 0);
			close(pfd);
			if (fd >= 0) {
				(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
				return fd;
			}
		}
	}
#endif
	snprintf(path, sizeof(path), "/proc/%d", (int)e->pid);
	if (err == ENOENT && access(path, F_OK) != 0) {
		RW_WARN(RW_LOG_NET, "gpu-emu: ipc_open: allocation %llu: process %d has exited",
			(unsigned long long)e->id, (int)e->pid);
		return -ESRCH;
	}
	RW_WARN(RW_LOG_NET, "gpu-emu: ipc_open: allocation %llu: fd %d of process %d: %s",
		(unsigned long long)e->id, (int)e->fd, (int)e->pid,
		err == ENOENT ? "freed (no such fd)" : strerror(err));
	return err == ENOENT ? -EINVAL : -err;
}

int rw_emu_ipc_open(const struct rw_cuda_ipc_handle *h, void **base, size_t *size)
{
	struct rw_emu_region *r;
	struct emu_handle e;
	struct stat st;
	int fd, rc;

	memcpy(&e, h->bytes, sizeof(e));
	if (e.magic != IPC_MAGIC || e.version != IPC_VERSION || e.size == 0) {
		RW_WARN(RW_LOG_NET,
			"gpu-emu: ipc_open: not a handle of the emulated GPU "
			"(magic %#x, version %u)",
			e.magic, e.version);
		return -EINVAL;
	}
	if (e.pid == (int32_t)rw_emu_g.pid) {
		RW_WARN(RW_LOG_NET,
			"gpu-emu: ipc_open: allocation %llu was exported by this process; CUDA "
			"opens only other processes' handles",
			(unsigned long long)e.id);
		return -EINVAL;
	}
	fd = peer_fd(&e);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != e.ino ||
	    (uint64_t)st.st_dev != e.dev || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size < e.size) {
		RW_WARN(RW_LOG_NET,
			"gpu-emu: ipc_open: fd %d of process %d is no longer allocation %llu "
			"(inode %llu, %llu bytes expected)",
			(int)e.fd, (int)e.pid, (unsigned long long)e.id, (unsigned long long)e.ino,
			(unsigned long long)e.size);
		close(fd);
		return -EINVAL;
	}
	rc = rw_emu_region_map(fd, (size_t)e.size, RW_MEM_DEVICE, true, &r);
	close(fd); /* the mapping keeps the memfd */
	if (rc)
		return rc;
	rw_emu_count(&rw_emu_g.n.ipc_opens_live, 1);
	*base = r->base;
	*size = r->size;
	return 0;
}

void rw_emu_ipc_close(void *base)
{
	struct rw_emu_region *r;

	if (!base)
		return;
	pthread_mutex_lock(&rw_emu_g.lock);
	r = rw_emu_region_find(base);
	if (r && (r->base != (char *)base || !r->ipc))
		r = NULL;
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (!r) {
		RW_WARN(RW_LOG_NET, "gpu-emu: ipc_close(%p): not an opened peer allocation", base);
		return;
	}
	(void)rw_emu_device_sync("ipc_close"); /* no copy from it may still run */
	rw_emu_region_unmap(r);
	rw_emu_count(&rw_emu_g.n.ipc_opens_live, (uint64_t)-1);
}

int rw_emu_dmabuf_supported(char *why, size_t why_len)
{
	if (why && why_len)
		snprintf(why, why_len, "emulated GPU: no dma-buf export");
	return -ENOTSUP;
}

int rw_emu_dmabuf_fd(const void *ptr, size_t size, int *fd, uint64_t *offset)
{
	(void)fd, (void)offset;
	RW_WARN(RW_LOG_NET,
		"gpu-emu: dmabuf_fd(%p, %zu bytes): the emulated GPU has no dma-buf "
		"export",
		ptr, size);
	return -ENOTSUP;
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
/*
 * Shared memory of the same-host transport: sealed memfds (never a name in
 * /dev/shm, freed with the last mapping, so a crash leaves nothing behind),
 * the checks a receiver makes before trusting one, and the segment header.
 */
#include "transport/shm/shm_internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rw_log.h"

#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int rw_shm_memfd_create(const char *name, size_t size, int *out)
{
	int fd, rc;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_SHM, "shm: memfd_create(%s): %s", name, strerror(errno));
		return rc;
	}
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, SEALS) != 0) {
		rc = -errno;
		RW_WARN(RW_LOG_SHM, "shm: preparing memfd %s (%zu bytes, mode 0600, sealed): %s",
			name, size, strerror(errno));
		close(fd);
		return rc;
	}
	rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
	*out = fd;
	return 0;
}

int rw_shm_memfd_check(int fd, size_t size, const char *what, const char *peer)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) != 0) {
		RW_WARN(RW_LOG_SHM, "shm: %s from %s: fstat: %s", what, peer, strerror(errno));
		return -EPROTO;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600) {
		RW_WARN(RW_LOG_SHM,
			"shm: %s from %s refused: owner uid %u mode %04o, expected uid %u mode "
			"0600",
			what, peer, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			(unsigned)geteuid());
		return -EPERM;
	}
	if ((uint64_t)st.st_size != size) {
		RW_WARN(RW_LOG_SHM, "shm: %s from %s refused: %lld bytes, announced %zu", what,
			peer, (long long)st.st_size, size);
		return -EPROTO;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_SEAL)) != (F_SEAL_SHRINK | F_SEAL_SEAL)) {
		RW_WARN(RW_LOG_SHM,
			"shm: %s from %s refused: not sealed against shrinking (seals %#x)", what,
			peer, seals);
		return -EPROTO;
	}
	return 0;
}

int rw_shm_map(int fd, size_t size, void **out)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		int rc = -errno;

		RW_WARN(RW_LOG_SHM, "shm: mmap(fd %d, %zu bytes): %s", fd, size, strerror(errno));
		return rc;
	}
	rw_shm_live_add(RW_SHM_LIVE_MAPS, 1);
	*out = p;
	return 0;
}

void rw_shm_unmap(void *p, size_t size)
{
	if (!p)
		return;
	munmap(p, size);
	rw_shm_live_add(RW_SHM_LIVE_MAPS, -1);
}

void rw_shm_seg_init(struct rw_shm_seg *seg, uint64_t nonce, uint64_t conn_id, uint32_t nslots,
		     uint32_t slot_bytes, uint64_t seg_bytes)
{
	memset(seg, 0, sizeof(*seg));
	seg->hdr.magic = RW_SHM_SEG_MAGIC;
	seg->hdr.version = RW_SHM_VERSION;
	seg->hdr.ctrl_bytes = RW_SHM_CTRL_BYTES;
	seg->hdr.nonce = nonce;
	seg->hdr.conn_id = conn_id;
	seg->hdr.creator_uid = (uint32_t)geteuid();
	seg->hdr.creator_pid = getpid();
	seg->hdr.nslots = nslots;
	seg->hdr.slot_bytes = slot_bytes;
	seg->hdr.seg_bytes = seg_bytes;
}

int rw_shm_seg_check(const struct rw_shm_seg_hdr *s, const struct rw_shm_hello *h, uint64_t nonce,
		     const char *peer)
{
	const char *why = NULL;

	if (s->magic != RW_SHM_SEG_MAGIC)
		why = "not a ringway segment";
	else if (s->version != RW_SHM_VERSION)
		why = "another layout version";
	else if (s->creator_uid != (uint32_t)geteuid())
		why = "created by another user";
	else if (s->nonce != nonce || s->conn_id != h->conn_id)
		why = "belongs to another connection";
	else if (s->ctrl_bytes != RW_SHM_CTRL_BYTES || s->nslots < 2 || s->slot_bytes < 4096 ||
		 s->slot_bytes % 4096 || s->seg_bytes != h->seg_bytes ||
		 s->seg_bytes != RW_SHM_SLOTS_OFFSET + (uint64_t)s->nslots * s->slot_bytes)
		why = "inconsistent geometry";
	if (!why)
		return 0;
	RW_WARN(RW_LOG_SHM,
		"shm: segment from %s refused: %s (version %u, uid %u, %u slots x %u bytes; "
		"expected version %u, uid %u)",
		peer, why, (unsigned)s->version, (unsigned)s->creator_uid, (unsigned)s->nslots,
		(unsigned)s->slot_bytes, RW_SHM_VERSION, (unsigned)geteuid());
	return s->creator_uid != (uint32_t)geteuid() ? -EPERM : -EPROTO;
}

int rw_shm_db_check(const struct rw_shm_doorbell *db, const char *peer)
{
	if (db->magic == RW_SHM_DB_MAGIC && db->version == RW_SHM_VERSION &&
	    db->owner_uid == (uint32_t)geteuid())
		return 0;
	RW_WARN(RW_LOG_SHM,
		"shm: doorbell from %s refused (magic %#x, version %u, uid %u; expected version "
		"%u, uid %u)",
		peer, db->magic, (unsigned)db->version, (unsigned)db->owner_uid, RW_SHM_VERSION,
		(unsigned)geteuid());
	return -EPROTO;
}

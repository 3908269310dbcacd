/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* process_vm_readv/writev */
/*
 * Cross-memory attach: a large host message goes straight from the sender's
 * buffer into the receiver's, one copy.  The receiver installs a job (the
 * job and progress lines of the segment, shm_layout.h) and both processes
 * copy it, chunk by chunk, from one shared claim counter: the receiver with
 * process_vm_readv, the sender (while it waits for the message anyway) with
 * process_vm_writev.  Two cores on one message reach memory bandwidth where
 * one copy of 4 KiB pages would not.
 */
#include "transport/shm/shm_internal.h"

#include <sched.h>
#include <string.h>
#include <sys/uio.h>

#include "common/rw_log.h"
#include "gpu/rw_cuda.h"

#define GEN_MASK ((1ull << (64 - RW_SHM_CLAIM_IDX_BITS)) - 1)

bool rw_shm_cma_probe(pid_t pid, uint64_t addr, uint64_t val)
{
	uint64_t got = 0;
	struct iovec local = {.iov_base = &got, .iov_len = sizeof(got)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof(got)};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n != (ssize_t)sizeof(got) || got != val) {
		RW_INFO(RW_LOG_NET | RW_LOG_SHM,
			"shm: cross-memory attach to pid %d not permitted (%s); using the slot "
			"ring",
			(int)pid, n < 0 ? strerror(errno) : "probe mismatch");
		return false;
	}
	return true;
}

static uint64_t job_gen(uint64_t seq)
{
	return ((seq + 1) & GEN_MASK) ? ((seq + 1) & GEN_MASK) : 1;
}

void rw_shm_cma_job_start(struct rw_shm_comm *c, uint64_t seq, uint64_t src, char *dst,
			  uint64_t size, bool coop)
{
	struct rw_shm_seg_job *j = &c->d.seg->job;

	__atomic_store_n(&c->d.seg->prog.done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->d.seg->prog.err, 0, __ATOMIC_RELAXED);
	j->seq = seq;
	j->src = src;
	j->dst = (uint64_t)(uintptr_t)dst;
	j->size = size;
	j->chunk = RW_SHM_CMA_CHUNK;
	j->flags = coop ? RW_SHM_JOB_COOP : 0;
	/* publishes every field above */
	__atomic_store_n(&j->claim, RW_SHM_CLAIM(job_gen(seq), 0), __ATOMIC_RELEASE);
}

/* Claim the next chunk of the job whose claim word is w.  1: got *idx. */
static int claim(struct rw_shm_seg_job *j, uint64_t *w, uint64_t nchunks, uint64_t *idx)
{
	uint64_t v = *w;

	while ((v & RW_SHM_CLAIM_IDX_MASK) < nchunks) {
		if (__atomic_compare_exchange_n(&j->claim, &v, v + 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			*idx = v & RW_SHM_CLAIM_IDX_MASK;
			*w = v + 1;
			return 1;
		}
		if (RW_SHM_CLAIM_GEN(v) != RW_SHM_CLAIM_GEN(*w))
			return 0; /* another job now */
	}
	return 0;
}

/* Receiver into device memory: read into a pinned piece (shm_up.c), then
 * copy it up without waiting for the device. */
static ssize_t read_to_device(struct rw_shm_comm *c, char *piece, char *dst, uint64_t src,
			      size_t len)
{
	struct iovec local = {.iov_base = piece, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
	ssize_t n;
	int rc;

	if (len > RW_SHM_UP_PIECE_BYTES)
		return -EPROTO; /* the job's chunk is not ours */
	n = process_vm_readv(c->peer_pid, &local, 1, &remote, 1, 0);
	if (n != (ssize_t)len)
		return n < 0 ? -errno : -EFAULT;
	rc = rw_shm_up_push(c, dst, len);
	return rc ? rc : n;
}

/* A copy failed: nobody claims another chunk of this job, and the bytes
 * never claimed count as done, so the receiver sees the job end (failed). */
static void abort_job(struct rw_shm_comm *c, uint64_t w, uint64_t nchunks, uint64_t chunk,
		      uint64_t size)
{
	struct rw_shm_seg_job *j = &c->d.seg->job;
	const uint64_t gen = RW_SHM_CLAIM_GEN(w);
	uint64_t idx;

	w = __atomic_load_n(&j->claim, __ATOMIC_ACQUIRE);
	for (;;) {
		idx = w & RW_SHM_CLAIM_IDX_MASK;
		if (RW_SHM_CLAIM_GEN(w) != gen || idx >= nchunks)
			return; /* all claimed already, or another job */
		if (__atomic_compare_exchange_n(&j->claim, &w, RW_SHM_CLAIM(gen, nchunks), false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	__atomic_add_fetch(&c->d.seg->prog.done, size - RW_MIN(size, idx * chunk),
			   __ATOMIC_RELEASE);
}

long rw_shm_cma_work(struct rw_shm_comm *c)
{
	struct rw_shm_seg_job *j = &c->d.seg->job;
	uint64_t w = __atomic_load_n(&j->claim, __ATOMIC_ACQUIRE);
	uint64_t size, dst, src, chunk, nchunks, idx;
	long copied = 0;
	bool device_dst = false;

	if (RW_SHM_CLAIM_GEN(w) == 0)
		return 0;
	if (c->is_send) {
		/* help only with one of our own messages, exactly as we sent it;
		 * dst is the receiver's, written into the receiver only */
		struct rw_shm_req *r;

		size = j->size;
		dst = j->dst;
		src = j->src;
		chunk = j->chunk ? j->chunk : RW_SHM_CMA_CHUNK;
		if (!c->d.coop || !(j->flags & RW_SHM_JOB_COOP))
			return 0;
		for (r = c->d.q_head; r && r->seq != j->seq; r = r->next)
			;
		if (!r || (uint64_t)(uintptr_t)r->data != src || r->size != size ||
		    RW_SHM_CLAIM_GEN(w) != job_gen(r->seq))
			return 0;
	} else {
		/* the job is the one we installed: where to and how much come
		 * from our own state, never from the job's lines, which the
		 * sender can write (a stray write there must not aim our copy) */
		if (c->d.rx != RW_SHM_RX_CMA || !c->d.cur_req)
			return 0;
		size = c->d.cur_size;
		dst = (uint64_t)(uintptr_t)c->d.cur_req->buf[c->d.cur_idx].data;
		src = c->d.cur_src;
		chunk = RW_SHM_CMA_CHUNK;
		device_dst = c->d.cur_req->buf[c->d.cur_idx].type == RW_PTR_CUDA;
		if (RW_SHM_CLAIM_GEN(w) != job_gen(c->d.cur_seq))
			return 0;
	}
	nchunks = RW_DIV_UP(size, chunk);
	for (int k = 0; k < RW_SHM_CMA_BUDGET; k++) {
		struct iovec local, remote;
		char *piece = NULL;
		int prc = 0;
		uint64_t off;
		size_t len;
		ssize_t n;

		/* into device memory: a chunk is claimed only with a piece to
		 * read it into (a failure to make them fails the chunk) */
		if (device_dst && (prc = rw_shm_up_piece(c, &piece)) == -EAGAIN)
			break;
		if (!claim(j, &w, nchunks, &idx))
			break;
		off = idx * chunk;
		len = (size_t)RW_MIN(chunk, size - off);
		if (c->is_send) {
			local = (struct iovec){(void *)(uintptr_t)(src + off), len};
			remote = (struct iovec){(void *)(uintptr_t)(dst + off), len};
			n = process_vm_writev(c->peer_pid, &local, 1, &remote, 1, 0);
			if (n != (ssize_t)len)
				n = n < 0 ? -errno : -EFAULT;
		} else if (device_dst) {
			n = prc ? prc
				: read_to_device(c, piece, (char *)(uintptr_t)(dst + off),
						 src + off, len);
		} else {
			local = (struct iovec){(void *)(uintptr_t)(dst + off), len};
			remote = (struct iovec){(void *)(uintptr_t)(src + off), len};
			n = process_vm_readv(c->peer_pid, &local, 1, &remote, 1, 0);
			if (n != (ssize_t)len)
				n = n < 0 ? -errno : -EFAULT;
		}
		if (n < 0) {
			int zero = 0;

			__atomic_compare_exchange_n(&c->d.seg->prog.err, &zero, (int)n, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		}
		/* the chunk is accounted even when it failed, so the job ends */
		__atomic_add_fetch(&c->d.seg->prog.done, len, __ATOMIC_RELEASE);
		copied += (long)len;
		if (n < 0)
			abort_job(c, w, nchunks, chunk, size);
		if (n == -ESRCH)
			return n; /* the peer is gone: the caller says so */
		if (n < 0) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: %s %s pid %d (message %llu, %zu bytes at offset %llu): %s",
				c->is_send ? "process_vm_writev to" : "process_vm_readv from",
				c->is_send ? "receiver" : "sender", (int)c->peer_pid,
				(unsigned long long)(c->is_send ? j->seq : c->d.cur_seq), len,
				(unsigned long long)off, strerror((int)-n));
			return n;
		}
	}
	return copied;
}

int rw_shm_cma_job_done(struct rw_shm_comm *c, int *err)
{
	uint64_t done = __atomic_load_n(&c->d.seg->prog.done, __ATOMIC_ACQUIRE);

	if (done < c->d.cur_size)
		return 0;
	*err = __atomic_load_n(&c->d.seg->prog.err, __ATOMIC_RELAXED);
	return 1;
}

void rw_shm_cma_job_retire(struct rw_shm_comm *c)
{
	struct rw_shm_seg_job *j = &c->d.seg->job;
	uint64_t w = __atomic_load_n(&j->claim, __ATOMIC_ACQUIRE);
	uint64_t nchunks = RW_DIV_UP(c->d.cur_size, RW_SHM_CMA_CHUNK), claimed, start, limit;

	if (RW_SHM_CLAIM_GEN(w) == 0)
		return;
	/* close the claim counter: nobody takes a chunk after this */
	while ((w & RW_SHM_CLAIM_IDX_MASK) < nchunks &&
	       !__atomic_compare_exchange_n(&j->claim, &w,
					    RW_SHM_CLAIM(RW_SHM_CLAIM_GEN(w), nchunks), false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	claimed = RW_MIN(c->d.cur_size, (w & RW_SHM_CLAIM_IDX_MASK) * RW_SHM_CMA_CHUNK);
	/* The sender may still be writing a chunk into our buffer, which its
	 * owner takes back once this returns: wait for it.  A copy of one
	 * chunk is short, a sender that closed or failed its comm is not in
	 * one (its own thread does both), and a dead sender writes nothing; a
	 * sender kept off its core for RINGWAY_TIMEOUT_MS is named. */
	start = rw_now_ns();
	limit = (uint64_t)c->base.net->cfg.timeout_ms * 1000000ull;
	while (__atomic_load_n(&c->d.seg->prog.done, __ATOMIC_ACQUIRE) < claimed &&
	       !__atomic_load_n(&c->d.seg->tx.closed, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&c->d.seg->tx.failed, __ATOMIC_ACQUIRE) && !rw_shm_peer_exited(c)) {
		if (rw_now_ns() - start > limit) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: receive comm from %s: the sender has not finished its copy "
				"into message %llu's buffer after RINGWAY_TIMEOUT_MS=%lld; it may "
				"still write there",
				c->peer, (unsigned long long)c->d.cur_seq,
				(long long)c->base.net->cfg.timeout_ms);
			break;
		}
		sched_yield();
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's device path on the host-emulated GPU (gpu/rw_gpu_emu.h):
 * forked ranks run allreduce, reduce-scatter, allgather and broadcast on
 * device buffers, several types and ops, counts 0, 1, fewer than the ranks,
 * odd and many chunks, on 2 and 3 ranks, and compare with the host
 * kernels' references.  On shm (CUDA IPC) every chunk stays on the device:
 * the engine counts 0 copies through host memory, and the emulator agrees
 * (no host<->device copy during a collective) and saw no blocking call from
 * the thread that drives the collectives.  On socket the chunks go through
 * host staging.  With a delay on every stream operation the chunks wait in
 * device work while the ring goes on, and results stay exact.
 */
#include "support/rw_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/rw_coll.h"
#include "common/rw_common.h"
#include "coll_test.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_gpu_emu.h"

static bool emu_on;

/* What a sweep expects of the data path. */
struct expect {
	bool device_staging; /* shm: zero host copies, every channel on the device */
	unsigned delay_us;   /* emulated stream delay */
	bool ipc_refused;    /* the emulated driver refuses CUDA IPC */
	size_t dev_chunk;    /* the comm's device chunk (0: not checked) */
};

/* What the device collectives of a sweep did, as the emulator saw it. */
struct tally {
	uint64_t xfer, blocked; /* host<->device copies; blocking calls */
	uint64_t nch;		/* channels the engine chose, summed */
};

static void *dalloc(size_t bytes)
{
	void *d = NULL;
	void *junk = coll_xmalloc(bytes);

	if (rw_cuda_malloc(&d, bytes ? bytes : 1)) {
		free(junk);
		return NULL;
	}
	if (bytes)
		rw_cuda_memcpy(d, junk, bytes); /* garbage where results must land */
	free(junk);
	return d;
}

static int up(void *d, const void *h, size_t bytes)
{
	return bytes ? rw_cuda_memcpy(d, h, bytes) : 0;
}

static int report(int rank, const char *what, size_t count, enum rw_dtype dt, enum rw_op op, int rc)
{
	fprintf(stderr, "rank %d: device %s %s %s count %zu: %s\n", rank, what, rw_dtype_name(dt),
		rw_op_name(op), count, rc ? strerror(-rc) : "wrong result");
	return 1;
}

/* Run one collective on device copies of hsend (sbytes) into a device
 * buffer of rbytes, read back into hrecv.  The emulator's host<->device
 * copies and blocking calls during the collective, and the channels the
 * engine chose, go to t. */
static int run_dev(struct rw_coll_comm *c, struct rw_coll_args *a, const void *hsend, size_t sbytes,
		   void *hrecv, size_t rbytes, bool inplace, struct tally *t)
{
	struct rw_gpu_emu_stats s0, s1;
	struct rw_coll_choice ch;
	void *dr = dalloc(rbytes), *ds = NULL;
	int rc;

	if (!dr)
		return -ENOMEM;
	if (inplace) {
		ds = (char *)dr + ((const char *)a->sendbuf - (const char *)a->recvbuf);
	} else {
		ds = dalloc(sbytes);
		if (!ds) {
			rw_cuda_free(dr);
			return -ENOMEM;
		}
	}
	rc = hsend ? up(ds, hsend, sbytes) : 0;
	a->recvbuf = dr;
	a->sendbuf = hsend ? ds : NULL;
	rw_coll_choose(c, a->kind, a->count, a->dtype, true, &ch);
	if (rbytes) /* a collective of nothing has no device buffer */
		t->nch += (uint64_t)ch.nchannels;
	rw_gpu_emu_stats(&s0);
	if (!rc)
		rc = rw_coll_run(c, a);
	rw_gpu_emu_stats(&s1);
	t->xfer += (s1.copies_h2d - s0.copies_h2d) + (s1.copies_d2h - s0.copies_d2h);
	t->blocked += s1.blocking_thread - s0.blocking_thread;
	if (!rc && rbytes)
		rc = rw_cuda_memcpy(hrecv, dr, rbytes);
	if (!inplace)
		rw_cuda_free(ds);
	rw_cuda_free(dr);
	return rc;
}

static int allreduce(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
		     enum rw_op op, bool inplace, uint64_t seed, struct tally *t)
{
	size_t bytes = count * rw_dtype_size(dt);
	char *src = coll_xmalloc(bytes), *dst = coll_xmalloc(bytes), *ref = coll_xmalloc(bytes);
	struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE, .count = count, .dtype = dt, .op = op};
	int rc, bad = 0;

	coll_fill(src, count, dt, op, rank, seed);
	coll_reference(ref, count, dt, op, p, seed);
	a.sendbuf = a.recvbuf = src; /* in place: same offset */
	rc = run_dev(c, &a, src, bytes, dst, bytes, inplace, t);
	if (rc || !coll_same("device allreduce", dst, ref, count, dt))
		bad = report(rank, "allreduce", count, dt, op, rc);
	free(src);
	free(dst);
	free(ref);
	return bad;
}

static int reduce_scatter(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
			  enum rw_op op, uint64_t seed, struct tally *t)
{
	size_t es = rw_dtype_size(dt), full = (size_t)p * count;
	char *src = coll_xmalloc(full * es), *ref = coll_xmalloc(full * es),
	     *dst = coll_xmalloc(count * es);
	struct rw_coll_args a = {
		.kind = RW_COLL_REDUCE_SCATTER, .count = count, .dtype = dt, .op = op};
	int rc, bad = 0;

	coll_fill(src, full, dt, op, rank, seed);
	coll_reference(ref, full, dt, op, p, seed);
	rc = run_dev(c, &a, src, full * es, dst, count * es, false, t);
	if (rc ||
	    !coll_same("device reduce-scatter", dst, ref + (size_t)rank * count * es, count, dt))
		bad = report(rank, "reduce-scatter", count, dt, op, rc);
	free(src);
	free(ref);
	free(dst);
	return bad;
}

static int allgather(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
		     uint64_t seed, struct tally *t)
{
	size_t es = rw_dtype_size(dt), full = (size_t)p * count;
	char *src = coll_xmalloc(count * es), *ref = coll_xmalloc(full * es),
	     *dst = coll_xmalloc(full * es);
	struct rw_coll_args a = {.kind = RW_COLL_ALLGATHER, .count = count, .dtype = dt};
	int rc, bad = 0;

	for (int r = 0; r < p; r++)
		coll_fill(ref + (size_t)r * count * es, count, dt, RW_OP_SUM, r, seed);
	coll_fill(src, count, dt, RW_OP_SUM, rank, seed);
	rc = run_dev(c, &a, src, count * es, dst, full * es, false, t);
	if (rc || !coll_same("device allgather", dst, ref, full, dt))
		bad = report(rank, "allgather", count, dt, RW_OP_SUM, rc);
	free(src);
	free(ref);
	free(dst);
	return bad;
}

static int broadcast(struct rw_coll_comm *c, int rank, size_t count, enum rw_dtype dt, int root,
		     uint64_t seed, struct tally *t)
{
	size_t bytes = count * rw_dtype_size(dt);
	char *src = coll_xmalloc(bytes), *ref = coll_xmalloc(bytes), *dst = coll_xmalloc(bytes);
	struct rw_coll_args a = {
		.kind = RW_COLL_BROADCAST, .count = count, .dtype = dt, .root = root};
	int rc, bad = 0;

	coll_fill(src, count, dt, RW_OP_SUM, root, seed);
	coll_fill(ref, count, dt, RW_OP_SUM, root, seed);
	rc = run_dev(c, &a, rank == root ? src : NULL, bytes, dst, bytes, false, t);
	if (rc || !coll_same("device broadcast", dst, ref, count, dt))
		bad = report(rank, "broadcast", count, dt, RW_OP_SUM, rc);
	free(src);
	free(ref);
	free(dst);
	return bad;
}

/* Every collective, a few types and ops, counts 0, 1, < p, odd, many chunks. */
static int sweep(struct rw_comm *w, int rank, int p, void *arg)
{
	const struct expect *e = arg;
	struct rw_coll_comm *c = coll_of(w);
	const size_t counts[] = {0, 1, (size_t)p - 1, 1001, 40007};
	static const struct {
		enum rw_dtype dt;
		enum rw_op op;
	} cases[] = {
		{RW_DTYPE_FLOAT32, RW_OP_SUM}, {RW_DTYPE_FLOAT32, RW_OP_AVG},
		{RW_DTYPE_INT32, RW_OP_PROD},  {RW_DTYPE_BFLOAT16, RW_OP_MAX},
		{RW_DTYPE_FLOAT16, RW_OP_MIN}, {RW_DTYPE_FLOAT8E4M3, RW_OP_SUM},
		{RW_DTYPE_UINT8, RW_OP_MAX},
	};
	struct rw_coll_settings set;
	struct rw_coll_stats s0, s1;
	struct tally t = {0};
	uint64_t seed = 7;
	int bad = 0;

	rw_gpu_emu_set_delay_us(e->delay_us);
	rw_gpu_emu_set_ipc_refused(e->ipc_refused); /* before the first device collective */
	if (e->ipc_refused)
		rw_test_log_expect("shm: regMr");
	rw_coll_comm_settings(c, &set);
	if (e->dev_chunk && set.dev_chunk_bytes != e->dev_chunk) {
		fprintf(stderr, "rank %d: device chunk %zu, not %zu\n", rank, set.dev_chunk_bytes,
			e->dev_chunk);
		bad++;
	}
	rw_coll_comm_stats(c, &s0);
	for (size_t k = 0; k < RW_ARRAY_SIZE(cases); k++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++, seed++) {
			enum rw_dtype dt = cases[k].dt;
			enum rw_op op = cases[k].op;
			size_t n = counts[i];

			bad += allreduce(c, rank, p, n, dt, op, (seed & 1) != 0, seed, &t);
			if (n <= 1001)
				bad += reduce_scatter(c, rank, p, n, dt, op, seed, &t);
			if (k % 3 == 0) {
				bad += allgather(c, rank, p, n, dt, seed, &t);
				bad += broadcast(c, rank, n, dt, (int)(seed % (uint64_t)p), seed,
						 &t);
			}
		}
	}
	rw_coll_comm_stats(c, &s1);
	if (s1.chunks_sent == s0.chunks_sent || s1.chunks_recv == s0.chunks_recv ||
	    s1.kernels == s0.kernels || s1.dev_collectives == s0.dev_collectives) {
		fprintf(stderr, "rank %d: the device path did not run (sent %llu)\n", rank,
			(unsigned long long)(s1.chunks_sent - s0.chunks_sent));
		bad++;
	}
	/* with slow streams, test() found device work still running and went
	 * on: several chunks of a channel were in device work at once */
	if (e->delay_us && (s1.dev_waits == s0.dev_waits || s1.dev_inflight_max < 2)) {
		fprintf(stderr,
			"rank %d: %llu polls found device work running, at most %llu "
			"chunks in it\n",
			rank, (unsigned long long)(s1.dev_waits - s0.dev_waits),
			(unsigned long long)s1.dev_inflight_max);
		bad++;
	}
	if (e->device_staging) {
		uint64_t ncoll = s1.dev_collectives - s0.dev_collectives;

		/* the engine's count and the emulator's agree: nothing went
		 * through host memory, nothing blocked the calling thread */
		if (s1.host_copies != s0.host_copies || t.xfer || t.blocked ||
		    s1.dev_channels - s0.dev_channels != t.nch || t.nch < ncoll) {
			fprintf(stderr,
				"rank %d: shm: %llu host copies counted, %llu seen, %llu blocking "
				"calls, %llu of %llu channel runs on the device\n",
				rank, (unsigned long long)(s1.host_copies - s0.host_copies),
				(unsigned long long)t.xfer, (unsigned long long)t.blocked,
				(unsigned long long)(s1.dev_channels - s0.dev_channels),
				(unsigned long long)t.nch);
			bad++;
		}
	} else if (s1.host_copies == s0.host_copies || s1.dev_channels != s0.dev_channels ||
		   (!e->ipc_refused && (s1.host_copies - s0.host_copies != t.xfer || t.blocked))) {
		/* host staging: the engine counts what the emulator saw (where
		 * IPC is refused, shm also copies into the receiver's device
		 * slots itself, a blocking copy) */
		fprintf(stderr,
			"rank %d: host staging: %llu host copies counted, %llu seen, %llu device "
			"channels, %llu blocking calls\n",
			rank, (unsigned long long)(s1.host_copies - s0.host_copies),
			(unsigned long long)t.xfer,
			(unsigned long long)(s1.dev_channels - s0.dev_channels),
			(unsigned long long)t.blocked);
		bad++;
	}
	return bad;
}

/*
 * An allreduce of many chunks, counted.  Per chunk round each rank sends
 * 2(p-1) messages and runs p-1 reductions.  Device-resident (shm): p+1
 * device copies (its local chunk out, the reduced chunk into its forward
 * slot, p-1 received chunks into recvbuf) and no host copy.  Host staging
 * (socket; before issue 15, every transport): 3p-2 host copies (the local
 * chunk out; in and out for each of the p-1 reductions; in for each of the
 * p-1 received results).  Whatever the transport made us retry: a redone
 * copy would show.  The chunk is the engine's choice for device buffers:
 * three chunks a segment make 3 * 2(p-1) messages a channel, so a chunk
 * other than the chosen one shows too.
 */
static int copy_formula(struct rw_comm *w, int rank, int p, void *arg)
{
	bool dev = *(const bool *)arg;
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_settings set;
	struct rw_coll_choice ch, again;
	struct rw_coll_stats s0, s1;
	struct tally t = {0};
	uint64_t sent, kern, dcopy, hcopy, q = 2 * (uint64_t)(p - 1);
	size_t count;
	int bad;

	rw_coll_comm_settings(c, &set);
	/* every segment of every channel a whole number of chunks, of the
	 * chunk chosen for that size */
	count = (size_t)p * (set.dev_chunk_bytes / 4) * 3;
	rw_coll_choose(c, RW_COLL_ALLREDUCE, count, RW_DTYPE_FLOAT32, true, &ch);
	count = (size_t)p * (size_t)ch.nchannels * (ch.chunk_bytes / 4) * 3;
	rw_coll_choose(c, RW_COLL_ALLREDUCE, count, RW_DTYPE_FLOAT32, true, &again);
	if (again.nchannels != ch.nchannels || again.chunk_bytes != ch.chunk_bytes) {
		fprintf(stderr, "rank %d: %zu floats: %d x %zu, then %d x %zu\n", rank, count,
			ch.nchannels, ch.chunk_bytes, again.nchannels, again.chunk_bytes);
		return 1;
	}
	rw_coll_comm_stats(c, &s0);
	bad = allreduce(c, rank, p, count, RW_DTYPE_FLOAT32, RW_OP_SUM, false, 99, &t);
	rw_coll_comm_stats(c, &s1);
	sent = s1.chunks_sent - s0.chunks_sent;
	kern = s1.kernels - s0.kernels;
	dcopy = s1.dev_copies - s0.dev_copies;
	hcopy = s1.host_copies - s0.host_copies;
	if (rank == 0)
		fprintf(stderr,
			"figure: allreduce %zu KiB float32, %d ranks, %d x %zu KiB chunks, %s: "
			"%llu "
			"chunks sent, %llu host copies (%.2f per chunk sent), %llu device copies, "
			"%llu kernels\n",
			count * 4 / 1024, p, ch.nchannels, ch.chunk_bytes / 1024,
			dev ? "shm (device staging)" : "socket (host staging)",
			(unsigned long long)sent, (unsigned long long)hcopy,
			sent ? (double)hcopy / (double)sent : 0.0, (unsigned long long)dcopy,
			(unsigned long long)kern);
	if (sent != q * 3 * (uint64_t)ch.nchannels || kern * 2 != sent || hcopy != t.xfer ||
	    dcopy * q != (dev ? sent * (uint64_t)(p + 1) : 0) ||
	    hcopy * q != (dev ? 0 : sent * (uint64_t)(3 * p - 2))) {
		fprintf(stderr,
			"rank %d: %llu sent, %llu kernels, %llu device copies, %llu host (%llu "
			"seen)\n",
			rank, (unsigned long long)sent, (unsigned long long)kern,
			(unsigned long long)dcopy, (unsigned long long)hcopy,
			(unsigned long long)t.xfer);
		bad++;
	}
	return bad;
}

/* One rank: the collective is the activation's copy, enqueued and polled. */
static int one_rank(struct rw_comm *w, int rank, int p, void *arg)
{
	struct rw_coll_comm *c = coll_of(w);
	struct tally t = {0};
	int bad = 0;

	(void)arg;
	for (size_t n = 0; n < 3000; n = n * 3 + 1) {
		bad += allreduce(c, rank, p, n, RW_DTYPE_FLOAT32, RW_OP_AVG, false, n, &t);
		bad += allreduce(c, rank, p, n, RW_DTYPE_INT8, RW_OP_SUM, true, n, &t);
		bad += reduce_scatter(c, rank, p, n, RW_DTYPE_BFLOAT16, RW_OP_MAX, n, &t);
		bad += allgather(c, rank, p, n, RW_DTYPE_FLOAT64, n, &t);
		bad += broadcast(c, rank, n, RW_DTYPE_UINT32, 0, n, &t);
	}
	if (t.xfer || t.blocked) {
		fprintf(stderr, "one rank: %llu host copies, %llu blocking calls\n",
			(unsigned long long)t.xfer, (unsigned long long)t.blocked);
		bad++;
	}
	return bad;
}

/*
 * A rank dies while chunks are in device work (slow streams): every other
 * rank returns an error, and once it has, nothing writes into its buffer.
 */
#define VICTIM 2

static int killed(struct rw_comm *w, int rank, int p, void *arg)
{
	enum { COUNT = 1 << 18 };
	struct rw_coll_comm *c = coll_of(w);
	size_t bytes = COUNT * sizeof(float);
	float *h = coll_xmalloc(bytes), *h2 = coll_xmalloc(bytes);
	void *d = dalloc(bytes);
	struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
				 .count = COUNT,
				 .dtype = RW_DTYPE_FLOAT32,
				 .op = RW_OP_SUM};
	int rc = 0, bad = 0;

	(void)arg;
	(void)p;
	if (!d)
		return 1;
	rw_test_log_expect("coll: rank");
	rw_test_log_expect("shm:");
	rw_test_log_expect("bootstrap:");
	rw_gpu_emu_set_delay_us(200);
	coll_fill(h, COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 5);
	bad += up(d, h, bytes) != 0;
	a.sendbuf = a.recvbuf = d;
	for (int it = 0; it < 50 && !rc; it++) {
		if (rank == VICTIM && it == 1) {
			struct rw_coll_req *req;
			int done = 0;

			if (rw_coll_start(c, &a, &req))
				return 1;
			for (int i = 0; i < 20 && !done; i++) {
				rw_coll_test(req, &done, NULL);
				usleep(500);
			}
			raise(SIGKILL);
		}
		rc = rw_coll_run(c, &a);
	}
	if (!rc) {
		fprintf(stderr, "rank %d: never saw the failure\n", rank);
		return 1;
	}
	/* the collective is over: its device work too */
	bad += rw_cuda_memcpy(h, d, bytes) != 0;
	usleep(20000);
	bad += rw_cuda_memcpy(h2, d, bytes) != 0;
	if (memcmp(h, h2, bytes)) {
		fprintf(stderr, "rank %d: the buffer changed after the failed allreduce\n", rank);
		bad++;
	}
	rw_cuda_free(d);
	free(h);
	free(h2);
	return bad;
}

/*
 * Ranks that disagree on the buffers' kind: one host's device collectives
 * are cut in other chunks (coll/tune.c), so a rank with host buffers
 * against one with device buffers fails at once on every rank, naming the
 * mismatch, instead of on truncated messages or the timeout.
 */
static int host_against_device(struct rw_comm *w, int rank, int p, void *arg)
{
	enum { COUNT = 1 << 22 }; /* 16 MiB: host 4 x 4M chunks, device 1 x 16M */
	struct rw_coll_comm *c = coll_of(w);
	size_t bytes = COUNT * sizeof(float);
	float *h = coll_xmalloc(bytes);
	void *d = rank == 0 ? dalloc(bytes) : NULL;
	struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
				 .count = COUNT,
				 .dtype = RW_DTYPE_FLOAT32,
				 .op = RW_OP_SUM};
	int rc;

	(void)arg;
	(void)p;
	rw_test_log_expect("coll: rank");
	rw_test_log_expect("shm:"); /* the other rank may have gone on and closed */
	coll_fill(h, COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 3);
	if (rank == 0 && (!d || up(d, h, bytes)))
		return 1;
	a.sendbuf = a.recvbuf = rank == 0 ? d : (void *)h;
	rc = rw_coll_run(c, &a);
	if (rc != -EINVAL)
		fprintf(stderr, "rank %d: host against device buffers: %s, not a mismatch\n", rank,
			rc ? strerror(-rc) : "success");
	if (d)
		rw_cuda_free(d);
	free(h);
	return rc != -EINVAL;
}

/* The device chunk and the channels by size, as the comm was given them. */
static int dev_defaults(struct rw_comm *w, int rank, int p, void *arg)
{
	size_t want = *(const size_t *)arg;
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_settings set;
	struct rw_coll_choice small, big;

	(void)p;
	rw_coll_comm_settings(c, &set);
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1 << 18, RW_DTYPE_FLOAT32, true, &small);
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1 << 26, RW_DTYPE_FLOAT32, true, &big);
	if (set.dev_chunk_bytes != want || big.chunk_bytes != want || small.nchannels != 1 ||
	    big.nchannels < 2) {
		fprintf(stderr,
			"rank %d: device chunk %zu (want %zu); 1 MiB %d x %zu, 256 MiB %d x %zu\n",
			rank, set.dev_chunk_bytes, want, small.nchannels, small.chunk_bytes,
			big.nchannels, big.chunk_bytes);
		return 1;
	}
	return 0;
}

static const char *const shm_env[] = {
	"RINGWAY_TRANSPORT", "shm", "RINGWAY_CHUNK_BYTES", "16K", "RINGWAY_NCHANNELS", "2", NULL};
/* device chunks 4x the host ones */
static const char *const wide_env[] = {"RINGWAY_TRANSPORT",
				       "shm",
				       "RINGWAY_CHUNK_BYTES",
				       "16K",
				       "RINGWAY_DEV_CHUNK_BYTES",
				       "64K",
				       NULL};
static const char *const sock_env[] = {"RINGWAY_CHUNK_BYTES", "16K", "RINGWAY_NCHANNELS", "2",
				       NULL};

static void shm_device_resident(void **state)
{
	struct expect e = {.device_staging = true};

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, shm_env, sweep, &e, 240), 0);
	assert_int_equal(coll_fork(3, shm_env, sweep, &e, 240), 0);
}

static void shm_device_work_pending(void **state)
{
	struct expect e = {.device_staging = true, .delay_us = 300};

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(3, shm_env, sweep, &e, 240), 0);
}

static void copies_counted_not_redone(void **state)
{
	bool dev = true, host = false;

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, shm_env, copy_formula, &dev, 120), 0);
	assert_int_equal(coll_fork(3, shm_env, copy_formula, &dev, 120), 0);
	assert_int_equal(coll_fork(2, sock_env, copy_formula, &host, 120), 0);
	assert_int_equal(coll_fork(3, sock_env, copy_formula, &host, 120), 0);
}

static void shm_device_wide_chunks(void **state)
{
	struct expect e = {.device_staging = true, .dev_chunk = 64 << 10};
	bool dev = true;

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, wide_env, sweep, &e, 240), 0);
	assert_int_equal(coll_fork(3, wide_env, sweep, &e, 240), 0);
	assert_int_equal(coll_fork(2, wide_env, copy_formula, &dev, 120), 0);
	assert_int_equal(coll_fork(3, wide_env, copy_formula, &dev, 120), 0);
}

/* No CUDA IPC (a driver or container that refuses it): the chunks of
 * device collectives go through host slots as wide as the device ones. */
static void shm_refused_ipc_stages_wide_chunks_on_the_host(void **state)
{
	struct expect e = {.ipc_refused = true, .dev_chunk = 64 << 10};

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, wide_env, sweep, &e, 240), 0);
	assert_int_equal(coll_fork(3, wide_env, sweep, &e, 240), 0);
}

static void host_against_device_buffers_fails_clearly(void **state)
{
	static const char *const env[] = {"RINGWAY_TRANSPORT", "shm", "RINGWAY_TIMEOUT_MS", "20000",
					  NULL};

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, env, host_against_device, NULL, 15), 0);
}

static void device_chunk_defaults(void **state)
{
	static const char *const shm[] = {"RINGWAY_TRANSPORT", "shm", NULL};
	static const char *const shm_chunk[] = {"RINGWAY_TRANSPORT", "shm", "RINGWAY_CHUNK_BYTES",
						"1M", NULL};
	static const char *const sock[] = {"RINGWAY_TRANSPORT", "socket", NULL};
	size_t ipc = 16 << 20, forced = 1 << 20, net = 4 << 20;

	(void)state;
	if (!emu_on)
		skip();
	/* one host: 16 MiB; RINGWAY_CHUNK_BYTES alone sets it; a network: 4 MiB */
	assert_int_equal(coll_fork(2, shm, dev_defaults, &ipc, 30), 0);
	assert_int_equal(coll_fork(2, shm_chunk, dev_defaults, &forced, 30), 0);
	assert_int_equal(coll_fork(2, sock, dev_defaults, &net, 30), 0);
}

static void one_rank_device(void **state)
{
	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(1, shm_env, one_rank, NULL, 60), 0);
}

static void failure_with_device_work(void **state)
{
	static const char *const env[] = {"RINGWAY_TRANSPORT",
					  "shm",
					  "RINGWAY_CHUNK_BYTES",
					  "16K",
					  "RINGWAY_TIMEOUT_MS",
					  "5000",
					  NULL};
	int codes[3];

	(void)state;
	if (!emu_on)
		skip();
	coll_fork_codes(3, env, killed, NULL, 60, codes);
	for (int r = 0; r < 3; r++)
		assert_int_equal(codes[r], r == VICTIM ? 128 + SIGKILL : 0);
}

static void socket_host_staging(void **state)
{
	struct expect e = {.device_staging = false};

	(void)state;
	if (!emu_on)
		skip();
	assert_int_equal(coll_fork(2, sock_env, sweep, &e, 240), 0);
	assert_int_equal(coll_fork(3, sock_env, sweep, &e, 240), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shm_device_resident, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(shm_device_work_pending, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(copies_counted_not_redone, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(socket_host_staging, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(shm_device_wide_chunks, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(shm_refused_ipc_stages_wide_chunks_on_the_host,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(host_against_device_buffers_fails_clearly,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(device_chunk_defaults, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(one_rank_device, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(failure_with_device_work, rw_test_setup_log,
						rw_test_teardown_log),
	};
	int rc;

	rw_test_log_install();
	/* in the parent, before the ranks fork: their transports see a GPU */
	rc = rw_gpu_emu_enable(1, 0);
	emu_on = rc == 0;
	if (!emu_on)
		fprintf(stderr, "no emulated GPU (%s): the device tests skip\n", strerror(-rc));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a collective: argument checks, the segment layout, the choice
 * of memory (host or device) and algorithm, registrations of the user's
 * buffers; then the blocking wait used by the C API and the tools.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

/*
 * The blocking wait (rw_coll_run): poll, yielding the core between idle
 * polls, for RW_COLL_YIELD_NS without progress; then nap between polls,
 * a tenth of the idle time so far within [RW_COLL_NAP_MIN_US,
 * RW_COLL_NAP_MAX_US].  Measured (issue 16): naps after 50 us
 * (the old policy: usleep(50), 100-200 us each with the timer slack) made
 * the torch backend multimodal below 256 KiB (2 ranks TCP, 4 KiB one call
 * at a time: 55-67 us or 170-330 us by launch; never above 115 with the
 * naps after 1 ms) and cost 4 ranks on 2 cores TCP 128 KiB 584 -> 455 us.
 * A spin without the yield starves the socket transport's helper threads
 * (4 ranks TCP 128 KiB: 20 ms).
 *
 * Where every rank is on this host over shm and the ranks fit the cores
 * this process may run on (c->spin, coll_comm.c), nobody should wait for
 * our core: the first RW_COLL_SPIN_NS of an idle spell spin with a pause
 * instead of the yield, whose system call outlasts a small message (Open
 * MPI's rule: it yields only when oversubscribed).  But the scheduler may
 * still put two ranks on one core for a while (a fresh fork starts on its
 * parent's): then every wait spins out its RW_COLL_SPIN_NS before the peer
 * can run (2 ranks, 8 B: 5-15 us a call instead of 0.6 in one launch of
 * ten).  So RW_COLL_SPIN_MISSES waits in a row that outlast the spin (a
 * shared core, or just a slow peer: then the yield costs nothing) stop the
 * spinning for RW_COLL_SPIN_BACKOFF_NS.
 */
#define RW_COLL_YIELD_NS	1000000ull
#define RW_COLL_SPIN_NS		5000ull
#define RW_COLL_SPIN_MISSES	8u
#define RW_COLL_SPIN_BACKOFF_NS 100000000ull
#define RW_COLL_NAP_MIN_US	50u
#define RW_COLL_NAP_MAX_US	1000u

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

static const char *const kind_names[] = {
	[RW_COLL_ALLREDUCE] = "allreduce",
	[RW_COLL_REDUCE_SCATTER] = "reduce-scatter",
	[RW_COLL_ALLGATHER] = "allgather",
	[RW_COLL_BROADCAST] = "broadcast",
};
static_assert(RW_ARRAY_SIZE(kind_names) == RW_COLL_KIND_COUNT, "kind names");

/* NVTX range names must outlive the range: literals. */
static const char *const nvtx_names[] = {
	[RW_COLL_ALLREDUCE] = "ringway allreduce",
	[RW_COLL_REDUCE_SCATTER] = "ringway reduce-scatter",
	[RW_COLL_ALLGATHER] = "ringway allgather",
	[RW_COLL_BROADCAST] = "ringway broadcast",
};
static_assert(RW_ARRAY_SIZE(nvtx_names) == RW_COLL_KIND_COUNT, "nvtx names");

const char *rw_coll_kind_name(enum rw_coll_kind kind)
{
	return (unsigned)kind < RW_COLL_KIND_COUNT ? kind_names[kind] : "invalid";
}

bool rw_coll_reduce_supported(int dtype, int op)
{
	/* the kernels reduce every type of rw_types.def with every op */
	return dtype >= 0 && dtype < RW_DTYPE_COUNT && op >= 0 && op < RW_OP_COUNT &&
	       rw_dtype_size((enum rw_dtype)dtype) != 0;
}

static bool reduces(enum rw_coll_kind k)
{
	return k == RW_COLL_ALLREDUCE || k == RW_COLL_REDUCE_SCATTER;
}

struct rw_coll_sig rw_coll_sig_of(const struct rw_coll_args *a)
{
	return (struct rw_coll_sig){
		.kind = (uint8_t)a->kind,
		.dtype = (uint8_t)a->dtype,
		.op = reduces(a->kind) ? (uint8_t)a->op : UINT8_MAX,
		.flags = RW_COLL_SIG_VALID,
		.root = a->kind == RW_COLL_BROADCAST ? a->root : -1,
		.count = a->count,
	};
}

bool rw_coll_sig_same(const struct rw_coll_sig *a, const struct rw_coll_sig *b)
{
	return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
	       a->count == b->count && a->flags == b->flags;
}

const char *rw_coll_sig_str(const struct rw_coll_sig *s, char *buf, size_t len)
{
	const char *dt =
		s->dtype < RW_DTYPE_COUNT ? rw_dtype_name((enum rw_dtype)s->dtype) : "invalid";
	const char *dev = s->flags & RW_COLL_SIG_DEVICE ? ", device buffers" : "";

	if (!(s->flags & RW_COLL_SIG_VALID))
		snprintf(buf, len, "nothing");
	else if (s->kind == RW_COLL_BROADCAST)
		snprintf(buf, len, "%s(count=%llu, %s, root=%d%s)", rw_coll_kind_name(s->kind),
			 (unsigned long long)s->count, dt, (int)s->root, dev);
	else if (s->op == UINT8_MAX)
		snprintf(buf, len, "%s(count=%llu, %s%s)", rw_coll_kind_name(s->kind),
			 (unsigned long long)s->count, dt, dev);
	else
		snprintf(buf, len, "%s(count=%llu, %s, %s%s)", rw_coll_kind_name(s->kind),
			 (unsigned long long)s->count, dt,
			 s->op < RW_OP_COUNT ? rw_op_name((enum rw_op)s->op) : "invalid", dev);
	return buf;
}

static int bad(const struct rw_coll_comm *c, const struct rw_coll_args *a, const char *why)
{
	RW_WARN(RW_LOG_COLL, "coll: rank %d: %s(count=%zu, dtype=%d, op=%d, root=%d): %s", c->rank,
		rw_coll_kind_name(a->kind), a->count, (int)a->dtype, (int)a->op, a->root, why);
	return -EINVAL;
}

static int check_args(const struct rw_coll_comm *c, const struct rw_coll_args *a)
{
	size_t es;

	if ((unsigned)a->kind >= RW_COLL_KIND_COUNT)
		return bad(c, a, "unknown collective");
	es = rw_dtype_size(a->dtype);
	if (!es)
		return bad(c, a, "unknown datatype");
	if (reduces(a->kind) && ((int)a->op < 0 || (int)a->op >= RW_OP_COUNT))
		return bad(c, a, "unknown reduction op");
	if (a->kind == RW_COLL_BROADCAST && (a->root < 0 || a->root >= c->nranks))
		return bad(c, a, "root is not a rank");
	if (a->count > SIZE_MAX / es / (size_t)c->nranks)
		return bad(c, a, "the buffer size overflows");
	if (!a->seg_off != !a->seg_count)
		return bad(c, a, "give both seg_off and seg_count, or neither");
	if (a->seg_off && a->kind != RW_COLL_REDUCE_SCATTER && a->kind != RW_COLL_ALLGATHER)
		return bad(c, a, "segment layouts are for reduce-scatter and allgather");
	return 0;
}

/* Segments, element space and buffer bases of r. */
static int layout(struct rw_coll_req *r)
{
	const struct rw_coll_args *a = &r->a;
	int p = r->comm->nranks, me = r->comm->rank;
	int nseg = a->kind == RW_COLL_BROADCAST ? 1 : p;
	size_t *off, *cnt;

	r->seg = (size_t *)(r + 1); /* 2 * nranks, allocated with r */
	off = r->seg;
	cnt = r->seg + nseg;
	switch (a->kind) {
	case RW_COLL_ALLREDUCE:
		rw_ring_split(a->count, p, off, cnt);
		r->space = a->count;
		break;
	case RW_COLL_BROADCAST:
		cnt[0] = a->count;
		r->space = a->count;
		break;
	default:
		r->space = 0;
		for (int i = 0; i < p; i++) {
			off[i] = a->seg_off ? a->seg_off[i] : (size_t)i * a->count;
			cnt[i] = a->seg_count ? a->seg_count[i] : a->count;
			if (off[i] > SIZE_MAX / r->esize - cnt[i] ||
			    off[i] + cnt[i] > SIZE_MAX / r->esize)
				return bad(r->comm, a, "a segment overflows");
			r->space = RW_MAX(r->space, off[i] + cnt[i]);
		}
		if (a->kind == RW_COLL_REDUCE_SCATTER)
			r->dst_base = off[me];
		else
			r->src_base = off[me];
		break;
	}
	r->a.seg_off = off;
	r->a.seg_count = cnt;
	return 0;
}

/* Bytes of sendbuf and recvbuf the collective touches. */
static void buffer_bytes(const struct rw_coll_req *r, size_t *src, size_t *dst)
{
	const struct rw_coll_args *a = &r->a;
	size_t own = a->seg_count[a->kind == RW_COLL_BROADCAST ? 0 : r->comm->rank];

	switch (a->kind) {
	case RW_COLL_REDUCE_SCATTER:
		*src = r->space * r->esize;
		*dst = own * r->esize;
		break;
	case RW_COLL_ALLGATHER:
		*src = own * r->esize;
		*dst = r->space * r->esize;
		break;
	case RW_COLL_BROADCAST:
		*src = r->comm->rank == a->root ? a->count * r->esize : 0;
		*dst = a->count * r->esize;
		break;
	default:
		*src = *dst = a->count * r->esize;
		break;
	}
}

static int register_buffers(struct rw_coll_req *r, size_t src_bytes, size_t dst_bytes)
{
	struct rw_coll_comm *c = r->comm;
	int rc;

	if (!r->a.send_mr && src_bytes) {
		rc = rw_coll_reg_mr(c, (void *)r->a.sendbuf, src_bytes, RW_PTR_HOST, &r->a.send_mr);
		if (rc)
			return rc;
		r->own_send_mr = true;
	}
	if (!r->a.recv_mr && dst_bytes) {
		rc = rw_coll_reg_mr(c, r->a.recvbuf, dst_bytes, RW_PTR_HOST, &r->a.recv_mr);
		if (rc)
			return rc;
		r->own_recv_mr = true;
	}
	return 0;
}

static void unregister_buffers(struct rw_coll_req *r)
{
	if (r->own_send_mr)
		rw_coll_dereg_mr(r->comm, r->a.send_mr);
	if (r->own_recv_mr)
		rw_coll_dereg_mr(r->comm, r->a.recv_mr);
	r->own_send_mr = r->own_recv_mr = false;
}

int rw_coll_start(struct rw_coll_comm *c, const struct rw_coll_args *a, struct rw_coll_req **out)
{
	struct rw_coll_choice choice;
	struct rw_coll_req *r;
	size_t bytes, src_bytes, dst_bytes;
	int rc;

	if (!c || !a || !out) {
		RW_WARN(RW_LOG_COLL, "coll: start(comm=%p, args=%p, req=%p): bad arguments",
			(void *)c, (const void *)a, (void *)out);
		return -EINVAL;
	}
	if (c->error)
		return c->error; /* logged when it happened */
	rc = check_args(c, a);
	if (rc)
		return rc;
	/* the request and its segment arrays (layout) in one allocation;
	 * malloc and memset, as glibc's calloc skips the thread cache */
	bytes = sizeof(*r) + 2 * (size_t)c->nranks * sizeof(size_t);
	r = malloc(bytes);
	if (!r)
		return -ENOMEM;
	memset(r, 0, bytes);
	r->comm = c;
	r->a = *a;
	r->sig = rw_coll_sig_of(a);
	r->a.send_mr = a->send_mr;
	r->a.recv_mr = a->recv_mr;
	r->esize = rw_dtype_size(a->dtype);
	r->redop = a->op == RW_OP_AVG ? RW_OP_SUM : a->op;
	rc = layout(r);
	if (rc)
		goto err_free;
	buffer_bytes(r, &src_bytes, &dst_bytes);
	if ((src_bytes && !a->sendbuf) || (dst_bytes && !a->recvbuf)) {
		rc = bad(c, a, "NULL buffer");
		goto err_free;
	}
	r->bytes = dst_bytes;
	rc = rw_coll_mem_classify(src_bytes ? a->sendbuf : NULL, dst_bytes ? a->recvbuf : NULL,
				  &r->mem);
	if (rc)
		goto err_free;
	/* one host's device collectives cut the buffer otherwise (tune.c): a
	 * rank with host buffers against one with device buffers must be
	 * told, not left to truncated messages and timeouts */
	if (r->mem == RW_COLL_MEM_DEVICE && c->links_shm)
		r->sig.flags |= RW_COLL_SIG_DEVICE;
	rw_coll_choose(c, a->kind, a->count, a->dtype, r->mem == RW_COLL_MEM_DEVICE, &choice);
	r->nch = choice.nchannels;
	r->chunk_bytes = choice.chunk_bytes;
	r->nontemporal = r->mem == RW_COLL_MEM_HOST &&
			 rw_coll_nontemporal(c, a->sendbuf, src_bytes, a->recvbuf, dst_bytes);
	r->disjoint = r->mem == RW_COLL_MEM_HOST && src_bytes && dst_bytes &&
		      ((const char *)a->sendbuf + src_bytes <= (const char *)a->recvbuf ||
		       (const char *)a->recvbuf + dst_bytes <= (const char *)a->sendbuf);
	switch (choice.algo) {
	case RW_COLL_ALGO_PS:
		r->ops = &rw_coll_ps_ops;
		break;
	case RW_COLL_ALGO_RD:
		r->ops = &rw_coll_rd_ops;
		break;
	case RW_COLL_ALGO_DIRECT:
		r->ops = &rw_coll_direct_ops;
		break;
	default:
		r->ops = &rw_coll_ring_ops;
		break;
	}
	if (c->algo != RW_COLL_ALGO_AUTO && c->algo != RW_COLL_ALGO_RING &&
	    r->mem != RW_COLL_MEM_HOST && a->kind == RW_COLL_ALLREDUCE && c->nranks > 1)
		RW_INFO(RW_LOG_COLL, "coll: RINGWAY_ALGO=%s is host memory only; ring used",
			rw_coll_algo_name(c->algo));
	if (c->nranks > 1 && r->mem == RW_COLL_MEM_DEVICE) {
		rc = rw_coll_stage_device(c, r->nch);
		if (rc)
			goto err_free;
	}
	/* the latency algorithms send and receive through their own staging */
	if (c->nranks > 1 && r->mem == RW_COLL_MEM_HOST && r->ops != &rw_coll_rd_ops &&
	    r->ops != &rw_coll_direct_ops) {
		rc = register_buffers(r, src_bytes, dst_bytes);
		if (rc)
			goto err_unregister;
	}
	rc = r->ops->init(r);
	if (rc)
		goto err_unregister;
	rw_coll_enqueue(r);
	*out = r;
	return 0;

err_unregister:
	unregister_buffers(r);
err_free:
	rw_coll_req_free(r);
	return rc;
}

int rw_coll_activate(struct rw_coll_req *r)
{
	const struct rw_coll_args *a = &r->a;
	int p = r->comm->nranks, me = r->comm->rank, rc = 0;
	const char *src = a->sendbuf;
	char *dst = a->recvbuf;
	size_t es = r->esize;

	RW_NVTX_PUSH(nvtx_names[a->kind]);
	r->nvtx_depth = 1;
	switch (a->kind) {
	case RW_COLL_ALLREDUCE:
		if (p == 1 && src != dst)
			rc = rw_coll_copy(r, dst, src, a->count * es);
		break;
	case RW_COLL_REDUCE_SCATTER:
		if (p == 1 && src + a->seg_off[0] * es != dst)
			rc = rw_coll_copy(r, dst, src + a->seg_off[0] * es, a->seg_count[0] * es);
		break;
	case RW_COLL_ALLGATHER:
		if (src != dst + a->seg_off[me] * es)
			rc = rw_coll_copy(r, dst + a->seg_off[me] * es, src, a->seg_count[me] * es);
		break;
	case RW_COLL_BROADCAST:
	default:
		if (me == a->root && src != dst)
			rc = rw_coll_copy(r, dst, src, a->count * es);
		break;
	}
	return rc;
}

/* May this wait spin?  A back-off that ran out ends here too: the waits
 * short enough never to read the clock would otherwise keep it forever. */
static bool spin_allowed(struct rw_coll_comm *c)
{
	if (!c->spin)
		return false;
	if (c->spin_after_ns && rw_now_ns() >= c->spin_after_ns)
		c->spin_after_ns = 0;
	return !c->spin_after_ns;
}

/* A wait that spun ended (missed: it outlasted RW_COLL_SPIN_NS). */
static void spin_count(struct rw_coll_comm *c, bool missed, uint64_t now)
{
	if (!missed) {
		c->spin_misses = 0;
	} else if (++c->spin_misses >= RW_COLL_SPIN_MISSES) {
		c->spin_after_ns = now + RW_COLL_SPIN_BACKOFF_NS;
		c->spin_misses = 0;
	}
}

int rw_coll_run(struct rw_coll_comm *c, const struct rw_coll_args *a)
{
	struct rw_coll_req *r;
	uint64_t seen, idle_since = 0;
	unsigned idle_polls = 0;
	bool spin = spin_allowed(c); /* this wait spins first */
	bool counted = false;	     /* its spin ran out: it yields now */
	int done = 0, rc;

	rc = rw_coll_start(c, a, &r);
	if (rc)
		return rc;
	seen = c->moves;
	for (;;) {
		uint64_t now, idle;

		rc = rw_coll_test(r, &done, NULL);
		if (rc || done || c->moves != seen) {
			/* a wait that spun says whether the spin was enough (the
			 * transport may have yielded inside test(): time it) */
			if (spin && idle_polls && !counted) {
				now = idle_since ? rw_now_ns() : 0;
				spin_count(c, idle_since && now - idle_since >= RW_COLL_SPIN_NS,
					   now);
			}
			if (rc || done)
				return rc;
			seen = c->moves;
			idle_since = 0;
			idle_polls = 0;
			spin = spin_allowed(c);
			counted = false;
			continue;
		}
		/* Nothing moved: spin (c->spin) or yield the core (to the
		 * transport's threads, to the ranks that share it) and poll
		 * again; the clock is read only every RW_COLL_CLOCK_POLLS idle
		 * polls, the first reading starting the idle spell.  Past
		 * RW_COLL_SPIN_NS idle a spinner yields too; past
		 * RW_COLL_YIELD_NS, nap: a tenth of the idle time so far, so a
		 * long wait costs the CPU little and is noticed late by at
		 * most about a tenth. */
		if (++idle_polls % RW_COLL_CLOCK_POLLS) {
			if (spin && !counted)
				cpu_pause();
			else
				sched_yield();
			continue;
		}
		now = rw_now_ns();
		if (!idle_since)
			idle_since = now;
		idle = now - idle_since;
		if (spin && !counted && idle >= RW_COLL_SPIN_NS) {
			spin_count(c, true, now);
			counted = true;
		}
		if (spin && !counted)
			cpu_pause();
		else if (idle < RW_COLL_YIELD_NS)
			sched_yield();
		else
			usleep((useconds_t)RW_MIN(RW_MAX(idle / 10000, RW_COLL_NAP_MIN_US),
						  RW_COLL_NAP_MAX_US));
	}
}

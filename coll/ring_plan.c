/* SPDX-License-Identifier: Apache-2.0 */
/* The ring schedule (see ring_plan.h): pure arithmetic over segments. */
#include "coll/ring_plan.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"

static const char *const kind_names[] = {
	[RW_RING_ALLREDUCE] = "allreduce",
	[RW_RING_REDUCE_SCATTER] = "reduce-scatter",
	[RW_RING_ALLGATHER] = "allgather",
	[RW_RING_BROADCAST] = "broadcast",
};
static_assert(RW_ARRAY_SIZE(kind_names) == RW_RING_KIND_COUNT, "kind names");

const char *rw_ring_kind_name(enum rw_ring_kind kind)
{
	return (unsigned)kind < RW_RING_KIND_COUNT ? kind_names[kind] : "?";
}

void rw_ring_split(size_t count, int n, size_t *off, size_t *cnt)
{
	size_t base = count / (size_t)n, rem = count % (size_t)n, o = 0;

	for (int i = 0; i < n; i++) {
		cnt[i] = base + ((size_t)i < rem);
		off[i] = o;
		o += cnt[i];
	}
}

static int mod(int a, int n)
{
	a %= n;
	return a < 0 ? a + n : a;
}

void rw_ring_plan_piece(const struct rw_ring_plan *p, int seg, int ch, size_t *off, size_t *count)
{
	size_t n = p->seg_count[seg], c = (size_t)ch, nc = (size_t)p->nchannels;
	size_t base = n / nc, rem = n % nc;

	*count = base + (c < rem);
	*off = p->seg_off[seg] + c * base + RW_MIN(c, rem);
}

static size_t piece_chunks(const struct rw_ring_plan *p, int seg, int ch)
{
	size_t off, count;

	rw_ring_plan_piece(p, seg, ch, &off, &count);
	return RW_DIV_UP(count, p->chunk_elems);
}

static int seg_sent(const struct rw_ring_plan *p, int step)
{
	if (p->kind == RW_RING_BROADCAST)
		return 0;
	return mod(p->rank - step + p->rot, p->nranks);
}

static int seg_received(const struct rw_ring_plan *p, int step)
{
	if (p->kind == RW_RING_BROADCAST)
		return 0;
	return mod(p->rank - step - 1 + p->rot, p->nranks);
}

static size_t nck(const struct rw_ring_plan *p, int ch, int seg)
{
	return p->nck[(size_t)ch * (size_t)p->nseg + (size_t)seg];
}

/* Does message (round, step) exist in this direction? */
static bool send_exists(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos)
{
	return p->sends && pos.step < p->nsteps && nck(p, ch, seg_sent(p, pos.step)) > pos.round;
}

static bool recv_exists(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos)
{
	return p->receives && pos.step < p->nsteps &&
	       nck(p, ch, seg_received(p, pos.step)) > pos.round;
}

static bool advance(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos,
		    bool (*exists)(const struct rw_ring_plan *, int, struct rw_ring_pos))
{
	if (p->nsteps == 0)
		return false;
	for (;;) {
		if (++pos->step >= p->nsteps) {
			pos->step = 0;
			if (++pos->round >= p->rounds[ch])
				return false;
		}
		if (exists(p, ch, *pos))
			return true;
	}
}

bool rw_ring_plan_send_first(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos)
{
	*pos = (struct rw_ring_pos){.round = 0, .step = -1};
	return p->rounds[ch] > 0 && advance(p, ch, pos, send_exists);
}

bool rw_ring_plan_send_next(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos)
{
	return advance(p, ch, pos, send_exists);
}

bool rw_ring_plan_recv_first(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos)
{
	*pos = (struct rw_ring_pos){.round = 0, .step = -1};
	return p->rounds[ch] > 0 && advance(p, ch, pos, recv_exists);
}

bool rw_ring_plan_recv_next(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos)
{
	return advance(p, ch, pos, recv_exists);
}

static void fill_tables(struct rw_ring_plan *p)
{
	for (int ch = 0; ch < p->nchannels; ch++) {
		size_t rounds = 0, ns = 0, nr = 0;

		for (int seg = 0; seg < p->nseg; seg++) {
			size_t n = piece_chunks(p, seg, ch);

			p->nck[(size_t)ch * (size_t)p->nseg + (size_t)seg] = n;
			rounds = RW_MAX(rounds, n);
		}
		for (int s = 0; s < p->nsteps; s++) {
			ns += p->sends ? nck(p, ch, seg_sent(p, s)) : 0;
			nr += p->receives ? nck(p, ch, seg_received(p, s)) : 0;
		}
		p->rounds[ch] = rounds;
		p->nsend[ch] = ns;
		p->nrecv[ch] = nr;
	}
}

int rw_ring_plan_init(struct rw_ring_plan *plan, const struct rw_ring_plan_args *a)
{
	struct rw_ring_plan p = {0};
	size_t nc;

	if (!a || !a->seg_off || !a->seg_count || a->nranks < 1 || a->rank < 0 ||
	    a->rank >= a->nranks || a->nchannels < 1 || a->chunk_elems < 1 ||
	    (unsigned)a->kind >= RW_RING_KIND_COUNT)
		return -EINVAL;
	if (a->kind == RW_RING_BROADCAST && (a->root < 0 || a->root >= a->nranks))
		return -EINVAL;

	p.kind = a->kind;
	p.nranks = a->nranks;
	p.rank = a->rank;
	p.root = a->kind == RW_RING_BROADCAST ? a->root : 0;
	p.nchannels = a->nchannels;
	p.chunk_elems = a->chunk_elems;
	p.nseg = a->kind == RW_RING_BROADCAST ? 1 : a->nranks;
	p.sends = p.receives = true;
	switch (a->kind) {
	case RW_RING_ALLREDUCE:
		p.nsteps = 2 * (a->nranks - 1);
		break;
	case RW_RING_REDUCE_SCATTER:
		p.nsteps = a->nranks - 1;
		p.rot = -1;
		break;
	case RW_RING_ALLGATHER:
		p.nsteps = a->nranks - 1;
		break;
	case RW_RING_BROADCAST:
	default:
		p.nsteps = a->nranks > 1 ? 1 : 0;
		p.receives = a->rank != a->root;
		p.sends = mod(a->rank - a->root, a->nranks) != a->nranks - 1;
		break;
	}

	nc = (size_t)p.nchannels;
	p.seg_off = calloc((size_t)p.nseg * (2 + nc), sizeof(size_t));
	if (!p.seg_off)
		return -ENOMEM;
	p.seg_count = p.seg_off + p.nseg;
	p.nck = p.seg_count + p.nseg;
	p.rounds = calloc(3 * nc, sizeof(size_t));
	if (!p.rounds) {
		free(p.seg_off);
		return -ENOMEM;
	}
	p.nsend = p.rounds + nc;
	p.nrecv = p.nsend + nc;
	memcpy(p.seg_off, a->seg_off, (size_t)p.nseg * sizeof(size_t));
	memcpy(p.seg_count, a->seg_count, (size_t)p.nseg * sizeof(size_t));
	fill_tables(&p);
	*plan = p;
	return 0;
}

void rw_ring_plan_fini(struct rw_ring_plan *plan)
{
	free(plan->seg_off);
	free(plan->rounds);
	memset(plan, 0, sizeof(*plan));
}

int rw_ring_plan_owned_seg(const struct rw_ring_plan *p)
{
	switch (p->kind) {
	case RW_RING_ALLREDUCE:
		return mod(p->rank + 1, p->nranks);
	case RW_RING_REDUCE_SCATTER:
		return p->rank;
	default:
		return -1;
	}
}

static void fill_msg(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos, int seg,
		     struct rw_ring_msg *m)
{
	size_t off, count;

	rw_ring_plan_piece(p, seg, ch, &off, &count);
	*m = (struct rw_ring_msg){
		.step = pos.step,
		.seg = seg,
		.chunk = pos.round,
		.off = off + pos.round * p->chunk_elems,
		.count = RW_MIN(p->chunk_elems, count - pos.round * p->chunk_elems),
		.action = RW_RING_COPY,
	};
}

void rw_ring_plan_send(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos,
		       struct rw_ring_msg *msg)
{
	fill_msg(p, ch, pos, seg_sent(p, pos.step), msg);
	if (p->kind == RW_RING_BROADCAST) {
		msg->local = !p->receives;
		msg->from = pos;
	} else {
		msg->local = pos.step == 0;
		msg->from = (struct rw_ring_pos){.round = pos.round, .step = pos.step - 1};
	}
}

void rw_ring_plan_recv(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos,
		       struct rw_ring_msg *msg)
{
	int last_reduce = p->nranks - 2; /* the scatter-reduce's last step */

	fill_msg(p, ch, pos, seg_received(p, pos.step), msg);
	if (p->kind == RW_RING_ALLREDUCE || p->kind == RW_RING_REDUCE_SCATTER) {
		if (pos.step < last_reduce)
			msg->action = RW_RING_REDUCE_FWD;
		else if (pos.step == last_reduce)
			msg->action = RW_RING_REDUCE_FINAL;
	}
	if (p->kind == RW_RING_BROADCAST)
		msg->forwarded = p->sends;
	else
		msg->forwarded = pos.step + 1 < p->nsteps;
}

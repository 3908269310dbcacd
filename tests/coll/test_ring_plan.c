/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring schedule, simulated symbolically: every element carries the set
 * of ranks whose contribution it holds (a bit mask).  Every rank's plan is
 * run against its neighbours' plans message by message; the test checks
 * that neighbours agree on every message, that nothing is counted twice,
 * that the pipeline never waits on itself, and that each collective ends
 * with the right sets everywhere.
 */
#include "support/rw_test.h"

#include <stdlib.h>
#include <string.h>

#include "coll/ring_plan.h"
#include "common/rw_common.h"

#define MAXR 8

/* A message on the wire: what the sender said it is, and its payload. */
struct wire_msg {
	struct rw_ring_msg m;
	uint64_t *payload;
};

struct sim_rank {
	struct rw_ring_plan plan;
	uint64_t *out;	/* the output buffer, as masks */
	int *writes;	/* times each output element was written */
	uint64_t **fwd; /* per (round, step): what a processed receive holds */
	int *want_fwd;	/* per (round, step): the receive says it is forwarded */
	int *nfwd;	/* per (round, step): sends that forwarded it */
	struct rw_ring_pos spos, rpos;
	bool smore, rmore;
	struct rw_ring_pos last_recv; /* order check */
	bool any_recv;
	size_t sent, received;
};

struct sim {
	enum rw_ring_kind kind;
	int nranks, nch, root;
	size_t count, chunk;
	size_t *seg_off, *seg_cnt;
	size_t space;  /* elements of the element space */
	size_t rounds; /* of the channel being run */
	struct sim_rank r[MAXR];
	/* sent by rank r on the channel, in order; read up to wire_rd */
	struct wire_msg *wire[MAXR];
	size_t wire_n[MAXR], wire_rd[MAXR];
};

static int prev_of(const struct sim *s, int r)
{
	return (r + s->nranks - 1) % s->nranks;
}

static size_t key(const struct sim *s, const struct sim_rank *sr, struct rw_ring_pos pos)
{
	assert_true(pos.round < s->rounds);
	assert_true(pos.step >= 0 && pos.step < RW_MAX(sr->plan.nsteps, 1));
	return pos.round * (size_t)RW_MAX(sr->plan.nsteps, 1) + (size_t)pos.step;
}

static uint64_t local_value(const struct sim *s, int r)
{
	if (s->kind == RW_RING_BROADCAST)
		return 1ull << s->root;
	return 1ull << r;
}

/* Post rank r's next send on channel ch if its data is ready. */
static int try_send(struct sim *s, int r, int ch)
{
	struct sim_rank *sr = &s->r[r];
	const struct rw_ring_plan *p = &sr->plan;
	struct rw_ring_msg m;
	uint64_t *payload;

	if (!sr->smore)
		return 0;
	rw_ring_plan_send(p, ch, sr->spos, &m);
	assert_int_equal(m.step, sr->spos.step);
	assert_int_equal(m.chunk, sr->spos.round);
	assert_true(m.count > 0 && m.count <= s->chunk);
	assert_true(m.off + m.count <= s->space);
	if (!m.local && !sr->fwd[key(s, sr, m.from)])
		return 0; /* waits for the receive it forwards */
	payload = calloc(m.count, sizeof(*payload));
	assert_non_null(payload);
	if (m.local) {
		for (size_t e = 0; e < m.count; e++)
			payload[e] = local_value(s, r);
		if (s->kind == RW_RING_ALLGATHER || s->kind == RW_RING_ALLREDUCE)
			assert_int_equal(m.seg, r);
		if (s->kind == RW_RING_REDUCE_SCATTER)
			assert_int_equal(m.seg, prev_of(s, r));
	} else {
		struct rw_ring_msg rm;

		rw_ring_plan_recv(p, ch, m.from, &rm);
		assert_true(rm.forwarded);
		assert_int_equal(rm.off, m.off);
		assert_int_equal(rm.count, m.count);
		assert_int_equal(m.from.round, sr->spos.round); /* same round */
		memcpy(payload, sr->fwd[key(s, sr, m.from)], m.count * sizeof(*payload));
		sr->nfwd[key(s, sr, m.from)]++;
	}
	s->wire[r][s->wire_n[r]++] = (struct wire_msg){.m = m, .payload = payload};
	sr->sent++;
	sr->smore = rw_ring_plan_send_next(p, ch, &sr->spos);
	return 1;
}

/* Complete rank r's next receive on channel ch if it has arrived. */
static int try_recv(struct sim *s, int r, int ch)
{
	struct sim_rank *sr = &s->r[r];
	const struct rw_ring_plan *p = &sr->plan;
	int from = prev_of(s, r);
	struct wire_msg *w;
	struct rw_ring_msg m;
	uint64_t mine = 1ull << r, *keep;

	if (!sr->rmore || s->wire_rd[from] >= s->wire_n[from])
		return 0;
	w = &s->wire[from][s->wire_rd[from]++];
	rw_ring_plan_recv(p, ch, sr->rpos, &m);
	assert_int_equal(m.off, w->m.off); /* neighbours agree */
	assert_int_equal(m.count, w->m.count);
	assert_int_equal(m.seg, w->m.seg);
	assert_int_equal(m.step, w->m.step);
	assert_int_equal(m.chunk, w->m.chunk);
	if (sr->any_recv) /* strictly in order */
		assert_true(rw_ring_pos_cmp(sr->last_recv, sr->rpos) < 0);
	sr->last_recv = sr->rpos;
	sr->any_recv = true;
	keep = calloc(m.count, sizeof(uint64_t));
	assert_non_null(keep);
	for (size_t e = 0; e < m.count; e++) {
		uint64_t v = w->payload[e];
		size_t at = m.off + e;

		switch (m.action) {
		case RW_RING_REDUCE_FWD:
			assert_int_equal(v & mine, 0); /* counted once */
			v |= mine;
			break;
		case RW_RING_REDUCE_FINAL:
			assert_int_equal(v & mine, 0);
			v |= mine;
			assert_int_equal(m.seg, rw_ring_plan_owned_seg(p));
			sr->out[at] = v;
			sr->writes[at]++;
			break;
		case RW_RING_COPY:
			sr->out[at] = v;
			sr->writes[at]++;
			break;
		}
		keep[e] = v;
	}
	assert_null(sr->fwd[key(s, sr, sr->rpos)]);
	sr->fwd[key(s, sr, sr->rpos)] = keep;
	sr->want_fwd[key(s, sr, sr->rpos)] = m.forwarded;
	sr->received++;
	sr->rmore = rw_ring_plan_recv_next(p, ch, &sr->rpos);
	return 1;
}

static void run_channel(struct sim *s, int ch)
{
	size_t maxmsg = 0, nkeys;

	s->rounds = 1;
	for (int r = 0; r < s->nranks; r++) {
		struct sim_rank *sr = &s->r[r];

		s->rounds = RW_MAX(s->rounds, sr->plan.rounds[ch]);
		maxmsg = RW_MAX(maxmsg, rw_ring_plan_nsend(&sr->plan, ch));
		/* what r sends, r+1 receives */
		assert_int_equal(rw_ring_plan_nsend(&sr->plan, ch),
				 rw_ring_plan_nrecv(&s->r[(r + 1) % s->nranks].plan, ch));
	}
	nkeys = s->rounds * (size_t)(2 * s->nranks);
	for (int r = 0; r < s->nranks; r++) {
		struct sim_rank *sr = &s->r[r];

		s->wire[r] = calloc(maxmsg + 1, sizeof(struct wire_msg));
		sr->fwd = calloc(nkeys, sizeof(uint64_t *));
		sr->want_fwd = calloc(nkeys, sizeof(int));
		sr->nfwd = calloc(nkeys, sizeof(int));
		assert_non_null(sr->want_fwd);
		assert_non_null(sr->nfwd);
		s->wire_n[r] = s->wire_rd[r] = 0;
		assert_non_null(s->wire[r]);
		assert_non_null(sr->fwd);
		sr->sent = sr->received = 0;
		sr->any_recv = false;
		sr->smore = rw_ring_plan_send_first(&sr->plan, ch, &sr->spos);
		sr->rmore = rw_ring_plan_recv_first(&sr->plan, ch, &sr->rpos);
	}
	for (int progress = 1; progress;) {
		progress = 0;
		for (int r = 0; r < s->nranks; r++) {
			progress |= try_send(s, r, ch);
			progress |= try_recv(s, r, ch);
		}
	}
	for (int r = 0; r < s->nranks; r++) {
		struct sim_rank *sr = &s->r[r];

		/* no deadlock: everything went through, and the counts add up */
		assert_false(sr->smore);
		assert_false(sr->rmore);
		assert_int_equal(sr->sent, rw_ring_plan_nsend(&sr->plan, ch));
		assert_int_equal(sr->received, rw_ring_plan_nrecv(&sr->plan, ch));
		for (size_t i = 0; i < s->wire_n[r]; i++)
			free(s->wire[r][i].payload);
		for (size_t i = 0; i < nkeys; i++) {
			/* forwarded exactly when the plan said so, once */
			assert_int_equal(sr->nfwd[i], sr->want_fwd[i]);
			free(sr->fwd[i]);
		}
		free(sr->want_fwd);
		free(sr->nfwd);
		free(s->wire[r]);
		free(sr->fwd);
	}
}

static int owner_of(const struct sim *s, size_t e)
{
	for (int r = 0; r < s->nranks; r++)
		if (e >= s->seg_off[r] && e < s->seg_off[r] + s->seg_cnt[r])
			return r;
	return -1;
}

static void check_result(const struct sim *s)
{
	uint64_t all = (s->nranks >= 64) ? ~0ull : (1ull << s->nranks) - 1;

	for (int r = 0; r < s->nranks; r++) {
		const struct sim_rank *sr = &s->r[r];

		for (size_t e = 0; e < s->space; e++) {
			int own = owner_of(s, e);

			switch (s->kind) {
			case RW_RING_ALLREDUCE:
				if (s->nranks == 1)
					break;
				assert_int_equal(sr->out[e], all);
				assert_int_equal(sr->writes[e], 1);
				break;
			case RW_RING_REDUCE_SCATTER:
				if (own == r && s->nranks > 1) {
					assert_int_equal(sr->out[e], all);
					assert_int_equal(sr->writes[e], 1);
				} else {
					assert_int_equal(sr->writes[e], 0);
				}
				break;
			case RW_RING_ALLGATHER:
				if (own == r) {
					assert_int_equal(sr->writes[e], 0);
				} else {
					assert_int_equal(sr->out[e], 1ull << own);
					assert_int_equal(sr->writes[e], 1);
				}
				break;
			case RW_RING_BROADCAST:
			default:
				if (r == s->root) {
					assert_int_equal(sr->writes[e], 0);
				} else {
					assert_int_equal(sr->out[e], 1ull << s->root);
					assert_int_equal(sr->writes[e], 1);
				}
				break;
			}
		}
	}
}

static void simulate(enum rw_ring_kind kind, int nranks, size_t count, int nch, size_t chunk,
		     int root)
{
	struct sim s = {.kind = kind,
			.nranks = nranks,
			.nch = nch,
			.root = root,
			.count = count,
			.chunk = chunk};
	int nseg = kind == RW_RING_BROADCAST ? 1 : nranks;
	size_t off[MAXR] = {0}, cnt[MAXR] = {0};

	if (kind == RW_RING_ALLREDUCE || kind == RW_RING_BROADCAST) {
		rw_ring_split(count, nseg, off, cnt);
	} else {
		/* reduce-scatter / allgather: count per rank, packed */
		for (int r = 0; r < nranks; r++) {
			off[r] = (size_t)r * count;
			cnt[r] = count;
		}
	}
	s.seg_off = off;
	s.seg_cnt = cnt;
	s.space = off[nseg - 1] + cnt[nseg - 1];
	for (int r = 0; r < nranks; r++) {
		struct rw_ring_plan_args a = {
			.kind = kind,
			.nranks = nranks,
			.rank = r,
			.root = root,
			.nchannels = nch,
			.chunk_elems = chunk,
			.seg_off = off,
			.seg_count = cnt,
		};

		assert_int_equal(rw_ring_plan_init(&s.r[r].plan, &a), 0);
		s.r[r].out = calloc(s.space + 1, sizeof(uint64_t));
		s.r[r].writes = calloc(s.space + 1, sizeof(int));
		assert_non_null(s.r[r].out);
		assert_non_null(s.r[r].writes);
	}
	for (int ch = 0; ch < nch; ch++)
		run_channel(&s, ch);
	check_result(&s);
	for (int r = 0; r < nranks; r++) {
		rw_ring_plan_fini(&s.r[r].plan);
		free(s.r[r].out);
		free(s.r[r].writes);
	}
}

static const size_t counts[] = {0, 1, 2, 3, 4, 5, 7, 13, 64, 101, 1000};
static const size_t chunks[] = {1, 3, 16, 1 << 20};

static void sweep(enum rw_ring_kind kind)
{
	for (int p = 1; p <= 6; p++)
		for (size_t c = 0; c < RW_ARRAY_SIZE(counts); c++)
			for (int nch = 1; nch <= 3; nch++)
				for (size_t k = 0; k < RW_ARRAY_SIZE(chunks); k++)
					simulate(kind, p, counts[c], nch, chunks[k],
						 (int)(counts[c] % (size_t)p));
}

static void allreduce_schedule(void **state)
{
	(void)state;
	sweep(RW_RING_ALLREDUCE);
}

static void reduce_scatter_schedule(void **state)
{
	(void)state;
	sweep(RW_RING_REDUCE_SCATTER);
}

static void allgather_schedule(void **state)
{
	(void)state;
	sweep(RW_RING_ALLGATHER);
}

static void broadcast_schedule(void **state)
{
	(void)state;
	sweep(RW_RING_BROADCAST);
	for (int root = 0; root < 5; root++)
		simulate(RW_RING_BROADCAST, 5, 77, 2, 4, root);
}

/* Each rank sends 2(P-1)/P of the buffer in an allreduce: the optimum. */
static void allreduce_traffic_is_optimal(void **state)
{
	size_t off[5], cnt[5];

	(void)state;
	rw_ring_split(1000, 5, off, cnt);
	for (int r = 0; r < 5; r++) {
		struct rw_ring_plan p;
		struct rw_ring_plan_args a = {
			.kind = RW_RING_ALLREDUCE,
			.nranks = 5,
			.rank = r,
			.nchannels = 2,
			.chunk_elems = 7,
			.seg_off = off,
			.seg_count = cnt,
		};
		size_t total = 0;

		assert_int_equal(rw_ring_plan_init(&p, &a), 0);
		for (int ch = 0; ch < 2; ch++) {
			struct rw_ring_pos pos;
			bool more = rw_ring_plan_send_first(&p, ch, &pos);

			for (; more; more = rw_ring_plan_send_next(&p, ch, &pos)) {
				struct rw_ring_msg m;

				rw_ring_plan_send(&p, ch, pos, &m);
				total += m.count;
			}
		}
		assert_int_equal(total, 2 * 4 * 200);
		rw_ring_plan_fini(&p);
	}
}

static void split_and_bad_arguments(void **state)
{
	size_t off[4], cnt[4];
	struct rw_ring_plan p;
	struct rw_ring_plan_args a = {
		.kind = RW_RING_ALLREDUCE,
		.nranks = 4,
		.rank = 0,
		.nchannels = 1,
		.chunk_elems = 1,
		.seg_off = off,
		.seg_count = cnt,
	};

	(void)state;
	rw_ring_split(6, 4, off, cnt);
	assert_int_equal(cnt[0], 2);
	assert_int_equal(cnt[1], 2);
	assert_int_equal(cnt[2], 1);
	assert_int_equal(cnt[3], 1);
	assert_int_equal(off[3], 5);
	rw_ring_split(2, 4, off, cnt);
	assert_int_equal(cnt[2], 0);
	assert_int_equal(off[3], 2);

	a.rank = 4;
	assert_int_equal(rw_ring_plan_init(&p, &a), -EINVAL);
	a.rank = 0;
	a.nchannels = 0;
	assert_int_equal(rw_ring_plan_init(&p, &a), -EINVAL);
	a.nchannels = 1;
	a.chunk_elems = 0;
	assert_int_equal(rw_ring_plan_init(&p, &a), -EINVAL);
	a.chunk_elems = 1;
	a.kind = RW_RING_BROADCAST;
	a.root = 4;
	assert_int_equal(rw_ring_plan_init(&p, &a), -EINVAL);
	assert_string_equal(rw_ring_kind_name(RW_RING_REDUCE_SCATTER), "reduce-scatter");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allreduce_schedule),
		cmocka_unit_test(reduce_scatter_schedule),
		cmocka_unit_test(allgather_schedule),
		cmocka_unit_test(broadcast_schedule),
		cmocka_unit_test(allreduce_traffic_is_optimal),
		cmocka_unit_test(split_and_bad_arguments),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

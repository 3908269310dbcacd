/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The latency algorithms of allreduce (coll/small_op.c) and the choice by
 * size (coll/tune.c), end to end with forked ranks:
 *  - rd and direct forced, on 2, 3, 4 and 5 ranks (5 and 3: the fold of
 *    recursive doubling), every datatype and op, counts 0, 1, < ranks, odd
 *    and larger, in place and out of place, socket and shm; the engine's
 *    message counter says the algorithm asked for is the one that ran;
 *  - every rank gets the same bits with values whose sums round (random
 *    floats), equal to the reduction order the algorithm documents;
 *  - auto at the sizes where its choice changes (one element either side);
 *  - a 4 KiB ring allreduce runs on one channel unless RINGWAY_NCHANNELS is
 *    set, and RINGWAY_ALGO=ring wins over the table;
 *  - the extra links are bounded: every peer up to 8 ranks, else recursive
 *    doubling's partners only (log2(P) + 1 at most), checked for up to
 *    5000 ranks and end to end on 9 ranks (where direct runs as rd).
 * (Failures of these algorithms: tests/coll/test_coll_fail.c.)
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "coll/rw_coll.h"
#include "coll_test.h"
#include "ring_checks.h"
#include "common/rw_common.h"

static uint64_t sent(struct rw_coll_comm *c)
{
	struct rw_coll_stats s;

	rw_coll_comm_stats(c, &s);
	return s.chunks_sent;
}

/* Messages this rank sends in one allreduce of the latency algorithm. */
static uint64_t small_sends(enum rw_coll_algo algo, int rank, int p)
{
	int p2 = 1, rounds = 0;

	if (algo == RW_COLL_ALGO_DIRECT)
		return (uint64_t)p - 1;
	while (p2 * 2 <= p) {
		p2 *= 2;
		rounds++;
	}
	if (rank >= p2)
		return 1;
	return (uint64_t)rounds + (rank < p - p2);
}

/* Did the messages counted (delta) come from choice ch? */
static bool ran(const struct rw_coll_choice *ch, uint64_t delta, int rank, int p)
{
	if (ch->algo == RW_COLL_ALGO_RD || ch->algo == RW_COLL_ALGO_DIRECT)
		return delta == small_sends(ch->algo, rank, p);
	/* the ring: 2(P-1) messages per channel and chunk at least */
	return ch->algo == RW_COLL_ALGO_RING && delta >= 2 * (uint64_t)(p - 1);
}

static int allreduce_checked(struct rw_coll_comm *c, int rank, int p, size_t count,
			     enum rw_dtype dt, enum rw_op op, bool inplace, uint64_t seed,
			     struct rw_coll_choice *ch)
{
	uint64_t before = sent(c);

	rw_coll_choose(c, RW_COLL_ALLREDUCE, count, dt, false, ch);
	if (coll_check_allreduce(c, rank, p, count, dt, op, inplace, seed)) {
		fprintf(stderr, "rank %d: (the allreduce above ran %s)\n", rank,
			rw_coll_algo_name(ch->algo));
		return 1;
	}
	if (!ran(ch, sent(c) - before, rank, p)) {
		fprintf(stderr, "rank %d: count %zu: %llu messages sent, not %s's\n", rank, count,
			(unsigned long long)(sent(c) - before), rw_coll_algo_name(ch->algo));
		return 1;
	}
	return 0;
}

/* --- every datatype and op, forced algorithms ----------------------------- */

static int every_dtype_op(struct rw_comm *w, int rank, int p, void *arg)
{
	const enum rw_coll_algo want = *(const enum rw_coll_algo *)arg;
	const size_t counts[] = {0, 1, (size_t)p - 1, 7, 1001};
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_choice ch;
	uint64_t seed = 1;
	int bad = 0;

	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		for (int op = 0; op < RW_OP_COUNT; op++) {
			for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
				for (int ip = 0; ip < 2; ip++, seed++) {
					bad += allreduce_checked(c, rank, p, counts[i], dt, op, ip,
								 seed, &ch);
					if (ch.algo != want) {
						fprintf(stderr, "rank %d: ran %s, not %s\n", rank,
							rw_coll_algo_name(ch.algo),
							rw_coll_algo_name(want));
						return 1;
					}
				}
			}
		}
	}
	return bad;
}

static void forced(const char *algo, enum rw_coll_algo want, const char *transport)
{
	const char *const env[] = {"RINGWAY_ALGO", algo, "RINGWAY_TRANSPORT", transport, NULL};

	for (int p = 2; p <= 5; p++) {
		if (coll_fork(p, env, every_dtype_op, &want, 120) != 0)
			fail_msg("%s on %d ranks over %s failed", algo, p, transport);
	}
}

static void rd_every_dtype_op_2_to_5_ranks(void **state)
{
	(void)state;
	forced("rd", RW_COLL_ALGO_RD, "socket");
}

static void direct_every_dtype_op_2_to_5_ranks(void **state)
{
	(void)state;
	forced("direct", RW_COLL_ALGO_DIRECT, "socket");
}

static void rd_and_direct_over_shm(void **state)
{
	(void)state;
	forced("rd", RW_COLL_ALGO_RD, "shm");
	forced("direct", RW_COLL_ALGO_DIRECT, "shm");
}

/* --- the same bits on every rank -------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Values whose sums round: signs, exponents over 2^-10..2^10, full mantissas. */
static void fill_random(void *buf, size_t count, enum rw_dtype dt, int rank, uint64_t seed)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t h = mix(seed * 1000003u + (uint64_t)rank * 7919u + i);
		float f = (float)((double)(h >> 40) / (double)(1u << 24) *
				  (double)(1 << ((h >> 8) % 20)) / 1024.0);
		uint32_t bits;

		if (h & 1)
			f = -f;
		switch (dt) {
		case RW_DTYPE_FLOAT64:
			((double *)buf)[i] = (double)f * (1.0 + (double)(h & 0xffff) / 65536.0);
			break;
		case RW_DTYPE_BFLOAT16:
			memcpy(&bits, &f, sizeof(bits));
			((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
			break;
		default:
			((float *)buf)[i] = f;
			break;
		}
	}
}

/* The result of algo on p ranks, reduced here in its documented order. */
static void reference(void *ref, size_t count, enum rw_dtype dt, int p, enum rw_coll_algo algo,
		      uint64_t seed)
{
	size_t es = rw_dtype_size(dt);
	char *v = coll_xmalloc((size_t)p * count * es);
	int p2 = 1;

	for (int r = 0; r < p; r++)
		fill_random(v + (size_t)r * count * es, count, dt, r, seed);
	if (algo == RW_COLL_ALGO_DIRECT) {
		for (int r = 1; r < p; r++) /* a left fold in rank order */
			rw_reduce(v, v, v + (size_t)r * count * es, count, dt, RW_OP_SUM);
	} else {
		/* ranks p2.. fold into 0..; then lower block op upper block */
		while (p2 * 2 <= p)
			p2 *= 2;
		for (int r = 0; r + p2 < p; r++)
			rw_reduce(v + (size_t)r * count * es, v + (size_t)r * count * es,
				  v + (size_t)(r + p2) * count * es, count, dt, RW_OP_SUM);
		for (int k = 1; k < p2; k *= 2)
			for (int r = 0; r < p2; r += 2 * k)
				rw_reduce(v + (size_t)r * count * es, v + (size_t)r * count * es,
					  v + (size_t)(r + k) * count * es, count, dt, RW_OP_SUM);
	}
	memcpy(ref, v, count * es);
	free(v);
}

static uint64_t hash(const void *buf, size_t bytes)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < bytes; i++)
		h = (h ^ ((const uint8_t *)buf)[i]) * 0x100000001b3ull;
	return h;
}

static int same_bits(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {1, 7, 1000, 5003};
	static const enum rw_dtype types[] = {RW_DTYPE_FLOAT32, RW_DTYPE_FLOAT64,
					      RW_DTYPE_BFLOAT16};
	struct rw_coll_comm *c = coll_of(w);
	uint64_t seed = 77;
	int bad = 0;

	(void)arg;
	for (size_t t = 0; t < RW_ARRAY_SIZE(types); t++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++, seed++) {
			enum rw_dtype dt = types[t];
			size_t n = counts[i], es = rw_dtype_size(dt);
			char *buf = coll_xmalloc(n * es), *ref = coll_xmalloc(n * es);
			struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
						 .sendbuf = buf,
						 .recvbuf = buf,
						 .count = n,
						 .dtype = dt,
						 .op = RW_OP_SUM};
			struct rw_coll_choice ch;
			uint64_t h, lo = 0, hi = 0;
			struct rw_coll_args ha = {.kind = RW_COLL_ALLREDUCE,
						  .sendbuf = &h,
						  .count = 1,
						  .dtype = RW_DTYPE_UINT64};
			int rc;

			rw_coll_choose(c, RW_COLL_ALLREDUCE, n, dt, false, &ch);
			fill_random(buf, n, dt, rank, seed);
			rc = rw_coll_run(c, &a);
			h = hash(buf, n * es);
			ha.recvbuf = &lo;
			ha.op = RW_OP_MIN;
			rc = rc ? rc : rw_coll_run(c, &ha);
			ha.recvbuf = &hi;
			ha.op = RW_OP_MAX;
			rc = rc ? rc : rw_coll_run(c, &ha);
			if (rc || lo != hi || lo != h) {
				fprintf(stderr,
					"rank %d: %s %s count %zu: ranks got different bits\n",
					rank, rw_coll_algo_name(ch.algo), rw_dtype_name(dt), n);
				bad++;
			}
			if (ch.algo != RW_COLL_ALGO_RING) {
				reference(ref, n, dt, p, ch.algo, seed);
				if (!coll_same(rw_coll_algo_name(ch.algo), buf, ref, n, dt))
					bad++;
			}
			free(buf);
			free(ref);
		}
	}
	return bad;
}

static void every_rank_gets_the_same_bits(void **state)
{
	static const char *const algos[] = {"rd", "direct", "auto", "ring"};

	(void)state;
	for (size_t i = 0; i < RW_ARRAY_SIZE(algos); i++) {
		const char *const env[] = {"RINGWAY_ALGO", algos[i], NULL};

		for (int p = 3; p <= 5; p += 2)
			if (coll_fork(p, env, same_bits, NULL, 120) != 0)
				fail_msg("%s on %d ranks", algos[i], p);
	}
}

/* --- auto: the sizes where the choice changes --------------------------------- */

static bool same_choice(const struct rw_coll_choice *a, const struct rw_coll_choice *b)
{
	return a->algo == b->algo && a->nchannels == b->nchannels &&
	       (a->algo != RW_COLL_ALGO_RING || a->chunk_bytes == b->chunk_bytes);
}

static int boundaries(struct rw_comm *w, int rank, int p, void *arg)
{
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_choice lo, hi, ch;
	int bad = 0, changes = 0;
	uint64_t seed = 500;

	(void)arg;
	/* float32 counts 1 .. 1M (4 MiB): find each change, run either side */
	for (size_t n = 1; n < (1u << 20); n *= 2) {
		size_t a = n, b = 2 * n;

		rw_coll_choose(c, RW_COLL_ALLREDUCE, a, RW_DTYPE_FLOAT32, false, &lo);
		rw_coll_choose(c, RW_COLL_ALLREDUCE, b, RW_DTYPE_FLOAT32, false, &hi);
		if (same_choice(&lo, &hi))
			continue;
		while (b - a > 1) { /* the first count with hi's choice */
			size_t m = a + (b - a) / 2;

			rw_coll_choose(c, RW_COLL_ALLREDUCE, m, RW_DTYPE_FLOAT32, false, &ch);
			if (same_choice(&ch, &lo))
				a = m;
			else
				b = m;
		}
		changes++;
		for (size_t k = b - 1; k <= b + 1; k++)
			for (int ip = 0; ip < 2; ip++)
				bad += allreduce_checked(c, rank, p, k, RW_DTYPE_FLOAT32, RW_OP_SUM,
							 ip, seed++, &ch);
		bad += allreduce_checked(c, rank, p, b - 1, RW_DTYPE_BFLOAT16, RW_OP_AVG, false,
					 seed++, &ch);
	}
	/* auto has at least: a latency algorithm, then the ring; 1 then more channels */
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1, RW_DTYPE_FLOAT32, false, &lo);
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1024, RW_DTYPE_FLOAT32, false, &ch);
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1u << 22, RW_DTYPE_FLOAT32, false, &hi);
	if (changes < 2 || lo.algo == RW_COLL_ALGO_RING || ch.algo == RW_COLL_ALGO_RING ||
	    hi.algo != RW_COLL_ALGO_RING || hi.nchannels < 2) {
		fprintf(stderr, "rank %d: %d changes; 4 B %s, 4 KiB %s, 16 MiB %s x %d\n", rank,
			changes, rw_coll_algo_name(lo.algo), rw_coll_algo_name(ch.algo),
			rw_coll_algo_name(hi.algo), hi.nchannels);
		bad++;
	}
	/* device buffers and the other collectives take the ring */
	rw_coll_choose(c, RW_COLL_ALLREDUCE, 1, RW_DTYPE_FLOAT32, true, &ch);
	bad += ch.algo != RW_COLL_ALGO_RING;
	rw_coll_choose(c, RW_COLL_BROADCAST, 1, RW_DTYPE_FLOAT32, false, &ch);
	bad += ch.algo != RW_COLL_ALGO_RING || ch.nchannels != 1;
	return bad;
}

static void auto_either_side_of_each_change(void **state)
{
	(void)state;
	for (int p = 2; p <= 5; p++)
		if (coll_fork(p, NULL, boundaries, NULL, 120) != 0)
			fail_msg("auto on %d ranks", p);
}

/* --- the windows against everything else, ranks out of step ------------------------ */

/*
 * Over shm, small allreduces go through the windows and the rest through
 * messages; a rank that finishes a collective first may write its next
 * window collective while its peer still runs the last one (the peer's
 * idle checks see it and must not take it for a mismatch).  Rank-skewed
 * pauses put either rank ahead; every result is checked, and every
 * window collective counts its P-1 messages.
 */
static int windows_interleaved(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {2, 256 << 10, 1024, 32 << 10, 0, 3000, 7};
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_choice ch;
	int bad = 0;

	(void)arg;
	for (int it = 0; it < 60 && !bad; it++) {
		size_t count = counts[it % RW_ARRAY_SIZE(counts)];

		if ((it + rank) % 3 == 0)
			usleep(200 * (unsigned)(1 + (it % 4)));
		bad = allreduce_checked(c, rank, p, count, RW_DTYPE_FLOAT32, RW_OP_SUM, it % 2,
					(uint64_t)it + 1, &ch);
	}
	return bad;
}

static void windows_interleave_with_other_algorithms(void **state)
{
	static const char *const env[] = {"RINGWAY_TRANSPORT", "shm", NULL};

	(void)state;
	for (int p = 2; p <= 4; p++)
		if (coll_fork(p, env, windows_interleaved, NULL, 120) != 0)
			fail_msg("%d ranks over shm", p);
}

/* --- channels by size; what the user sets wins --------------------------------- */

/* A 4 KiB allreduce forced onto the ring: 2(P-1) messages a channel. */
static int four_kib_ring(struct rw_comm *w, int rank, int p, void *arg)
{
	const int want_nch = *(const int *)arg;
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_choice ch;
	uint64_t before = sent(c);
	int bad = allreduce_checked(c, rank, p, 1024, RW_DTYPE_FLOAT32, RW_OP_SUM, false, 9, &ch);
	uint64_t delta = sent(c) - before;

	if (bad || ch.algo != RW_COLL_ALGO_RING || ch.nchannels != want_nch ||
	    delta != 2 * (uint64_t)(p - 1) * (uint64_t)want_nch) {
		fprintf(stderr, "rank %d: 4 KiB: %s x %d channels, %llu messages; want ring x %d\n",
			rank, rw_coll_algo_name(ch.algo), ch.nchannels, (unsigned long long)delta,
			want_nch);
		return 1;
	}
	return 0;
}

static void four_kib_takes_one_channel_unless_set(void **state)
{
	static const char *const by_size[] = {"RINGWAY_ALGO", "ring", NULL};
	static const char *const set[] = {"RINGWAY_ALGO", "ring", "RINGWAY_NCHANNELS", "4", NULL};
	int one = 1, four = 4;

	(void)state;
	assert_int_equal(coll_fork(3, by_size, four_kib_ring, &one, 60), 0);
	assert_int_equal(coll_fork(3, set, four_kib_ring, &four, 60), 0);
}

/* --- the latency algorithms' links are bounded -------------------------------- */

static int log2_floor(int p)
{
	int l = 0;

	while ((2 << l) <= p)
		l++;
	return l;
}

static void links_are_bounded(void **state)
{
	int *peers = calloc(8192, sizeof(int)), *back = calloc(8192, sizeof(int));

	(void)state;
	assert_non_null(peers);
	assert_non_null(back);
	assert_int_equal(rw_coll_p2p_peers(2, 0, RW_COLL_ALGO_AUTO, peers), 0);
	assert_int_equal(rw_coll_p2p_peers(5, 0, RW_COLL_ALGO_RING, peers), 0);
	assert_int_equal(rw_coll_p2p_peers(5, 0, RW_COLL_ALGO_PS, peers), 0);
	for (int p = 3; p <= 5000; p += p < 40 ? 1 : 97) {
		int p2 = 1 << log2_floor(p);

		for (int r = 0; r < p; r += p < 100 ? 1 : 13) {
			int n = rw_coll_p2p_peers(p, r, RW_COLL_ALGO_AUTO, peers);

			if (p <= RW_COLL_DIRECT_MAX) {
				assert_int_equal(n, p - 1); /* every peer */
			} else {
				/* rd's partners: xor below p2, the fold partner */
				assert_true(n >= 1 && n <= log2_floor(p) + 1);
				for (int k = 1; r < p2 && k < p2; k *= 2) {
					bool found = false;

					for (int i = 0; i < n; i++)
						found |= peers[i] == (r ^ k);
					assert_true(found);
				}
				if (r >= p2)
					assert_true(n == 1 && peers[0] == r - p2);
			}
			for (int i = 0; i < n; i++) {
				int m;
				bool mutual = false;

				assert_true(peers[i] >= 0 && peers[i] < p && peers[i] != r);
				assert_true(i == 0 || peers[i - 1] < peers[i]); /* ascending */
				m = rw_coll_p2p_peers(p, peers[i], RW_COLL_ALGO_RD, back);
				for (int j = 0; j < m; j++)
					mutual |= back[j] == r;
				assert_true(mutual);
			}
		}
	}
	free(peers);
	free(back);
}

/* 9 ranks: rd (auto or a forced direct) over its partners' links only. */
static int nine(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {0, 1, 8, 9, 1001};
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_choice ch;
	uint64_t seed = 900;
	int bad = 0;

	(void)arg;
	if (c->np2p > log2_floor(p) + 1) {
		fprintf(stderr, "rank %d of %d: %d extra link pairs\n", rank, p, c->np2p);
		return 1;
	}
	for (int dt = RW_DTYPE_INT32; dt <= RW_DTYPE_BFLOAT16; dt++) {
		for (int op = 0; op < RW_OP_COUNT; op++) {
			for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
				bad += allreduce_checked(c, rank, p, counts[i], dt, op, i & 1,
							 seed++, &ch);
				bad += ch.algo != RW_COLL_ALGO_RD;
			}
		}
	}
	return bad;
}

static void nine_ranks_link_only_rd_partners(void **state)
{
	static const char *const autos[] = {"RINGWAY_TRANSPORT", "shm", NULL};
	static const char *const direct[] = {"RINGWAY_TRANSPORT", "shm", "RINGWAY_ALGO", "direct",
					     NULL};

	(void)state;
	assert_int_equal(coll_fork(9, autos, nine, NULL, 120), 0);
	assert_int_equal(coll_fork(9, direct, nine, NULL, 120), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(rd_every_dtype_op_2_to_5_ranks, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(direct_every_dtype_op_2_to_5_ranks,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(rd_and_direct_over_shm, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(every_rank_gets_the_same_bits, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(auto_either_side_of_each_change, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(four_kib_takes_one_channel_unless_set,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test(links_are_bounded),
		cmocka_unit_test_setup_teardown(windows_interleave_with_other_algorithms,
						rw_test_setup_log, NULL),
		cmocka_unit_test_setup_teardown(nine_ranks_link_only_rd_partners, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

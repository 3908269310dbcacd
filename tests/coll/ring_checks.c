/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One collective at a time, run and checked against a reference reduced
 * by the host kernels (coll_test.h's data), and the sweeps of the ring's
 * tests that more than one test program runs (test_coll_ring over socket
 * and shm, test_coll_ring_ib over the emulated ib fabric).  Each returns
 * the number of failures, printing each to stderr with the rank, the
 * collective, the datatype, the op, the count and the placement.
 */
#include "ring_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_test.h"

static int report(int rc, const char *what, int rank, size_t count, enum rw_dtype dt, enum rw_op op,
		  bool inplace)
{
	fprintf(stderr, "rank %d: %s %s %s count %zu %s: %s\n", rank, what, rw_dtype_name(dt),
		rw_op_name(op), count, inplace ? "in place" : "out of place",
		rc ? strerror(-rc) : "wrong result");
	return 1;
}

int coll_check_allreduce(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
			 enum rw_op op, bool inplace, uint64_t seed)
{
	size_t es = rw_dtype_size(dt);
	char *src = coll_xmalloc(count * es), *dst = inplace ? src : coll_xmalloc(count * es);
	char *ref = coll_xmalloc(count * es);
	struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
				 .sendbuf = src,
				 .recvbuf = dst,
				 .count = count,
				 .dtype = dt,
				 .op = op};
	int rc, bad = 0;

	coll_fill(src, count, dt, op, rank, seed);
	coll_reference(ref, count, dt, op, p, seed);
	rc = rw_coll_run(c, &a);
	if (rc || !coll_same("allreduce", dst, ref, count, dt))
		bad = report(rc, "allreduce", rank, count, dt, op, inplace);
	free(src);
	if (!inplace)
		free(dst);
	free(ref);
	return bad;
}

int coll_check_reduce_scatter(struct rw_coll_comm *c, int rank, int p, size_t count,
			      enum rw_dtype dt, enum rw_op op, bool inplace, uint64_t seed)
{
	size_t es = rw_dtype_size(dt), full = (size_t)p * count;
	char *src = coll_xmalloc(full * es), *ref = coll_xmalloc(full * es);
	char *dst = inplace ? src + (size_t)rank * count * es : coll_xmalloc(count * es);
	struct rw_coll_args a = {.kind = RW_COLL_REDUCE_SCATTER,
				 .sendbuf = src,
				 .recvbuf = dst,
				 .count = count,
				 .dtype = dt,
				 .op = op};
	int rc, bad = 0;

	coll_fill(src, full, dt, op, rank, seed);
	coll_reference(ref, full, dt, op, p, seed);
	rc = rw_coll_run(c, &a);
	if (rc || !coll_same("reduce-scatter", dst, ref + (size_t)rank * count * es, count, dt))
		bad = report(rc, "reduce-scatter", rank, count, dt, op, inplace);
	free(src);
	free(ref);
	if (!inplace)
		free(dst);
	return bad;
}

int coll_check_allgather(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
			 bool inplace, uint64_t seed)
{
	size_t es = rw_dtype_size(dt), full = (size_t)p * count;
	char *dst = coll_xmalloc(full * es), *ref = coll_xmalloc(full * es);
	char *src = inplace ? dst + (size_t)rank * count * es : coll_xmalloc(count * es);
	struct rw_coll_args a = {.kind = RW_COLL_ALLGATHER,
				 .sendbuf = src,
				 .recvbuf = dst,
				 .count = count,
				 .dtype = dt};
	int rc, bad = 0;

	for (int r = 0; r < p; r++)
		coll_fill(ref + (size_t)r * count * es, count, dt, RW_OP_SUM, r, seed);
	coll_fill(src, count, dt, RW_OP_SUM, rank, seed);
	rc = rw_coll_run(c, &a);
	if (rc || !coll_same("allgather", dst, ref, full, dt))
		bad = report(rc, "allgather", rank, count, dt, RW_OP_SUM, inplace);
	free(dst);
	free(ref);
	if (!inplace)
		free(src);
	return bad;
}

int coll_check_broadcast(struct rw_coll_comm *c, int rank, size_t count, enum rw_dtype dt, int root,
			 bool inplace, uint64_t seed)
{
	size_t es = rw_dtype_size(dt);
	char *dst = coll_xmalloc(count * es), *ref = coll_xmalloc(count * es), *src = NULL;
	struct rw_coll_args a = {.kind = RW_COLL_BROADCAST,
				 .recvbuf = dst,
				 .count = count,
				 .dtype = dt,
				 .root = root};
	int rc, bad = 0;

	if (rank == root) {
		src = inplace ? dst : coll_xmalloc(count * es);
		coll_fill(src, count, dt, RW_OP_SUM, root, seed);
	}
	a.sendbuf = src; /* NULL on the others: never read */
	coll_fill(ref, count, dt, RW_OP_SUM, root, seed);
	rc = rw_coll_run(c, &a);
	if (rc || !coll_same("broadcast", dst, ref, count, dt))
		bad = report(rc, "broadcast", rank, count, dt, RW_OP_SUM, inplace);
	if (src && src != dst)
		free(src);
	free(dst);
	free(ref);
	return bad;
}

/* Every collective for counts 0, 1, < nranks, odd and large. */
int coll_shapes(struct rw_comm *w, int rank, int p, void *arg)
{
	const size_t large = *(const size_t *)arg;
	const size_t counts[] = {0, 1, (size_t)p - 1, 2 * (size_t)p + 1, large};
	static const struct {
		enum rw_dtype dt;
		enum rw_op op;
	} combos[] = {
		{RW_DTYPE_FLOAT32, RW_OP_SUM},
		{RW_DTYPE_INT32, RW_OP_MAX},
		{RW_DTYPE_BFLOAT16, RW_OP_AVG},
	};
	struct rw_coll_comm *c = coll_of(w);
	uint64_t seed = 1000;
	int bad = 0;

	for (size_t k = 0; k < RW_ARRAY_SIZE(combos); k++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
			enum rw_dtype dt = combos[k].dt;
			enum rw_op op = combos[k].op;

			/* the large count only for the first combination */
			if (counts[i] == large && k > 0)
				continue;
			for (int ip = 0; ip < 2; ip++, seed++) {
				size_t n = counts[i];

				bad += coll_check_allreduce(c, rank, p, n, dt, op, ip, seed);
				bad += coll_check_reduce_scatter(
					c, rank, p, n / (size_t)p + (n == 1), dt, op, ip, seed);
				bad += coll_check_allgather(c, rank, p, n / (size_t)p + (n == 1),
							    dt, ip, seed);
				bad += coll_check_broadcast(c, rank, n, dt, (int)(seed % (size_t)p),
							    ip, seed);
			}
		}
	}
	return bad;
}

/*
 * Out of place at 3 or more ranks, an allreduce's partial sums land in
 * their segment's place in recvbuf and are forwarded from there
 * (ring_recv.c); in place, where recvbuf is the input, and in a
 * reduce-scatter, whose recvbuf holds one segment, they go through the
 * staging slots.  Results are checked either way (avg divides on the last
 * step only, so a partial sum taken for a final one shows); the counter
 * says which road each collective took.
 */
int coll_partials(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {2, 7, 1000, 100003};
	static const struct {
		enum rw_dtype dt;
		enum rw_op op;
	} combos[] = {{RW_DTYPE_FLOAT32, RW_OP_SUM}, {RW_DTYPE_BFLOAT16, RW_OP_AVG}};
	struct rw_coll_comm *c = coll_of(w);
	uint64_t seed = 9000;
	int bad = 0;

	(void)arg;
	for (size_t k = 0; k < RW_ARRAY_SIZE(combos); k++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
			for (int ip = 0; ip < 2; ip++, seed++) {
				struct rw_coll_stats s0, s1, s2;
				/* every segment holds data from 7 elements on */
				bool want = !ip && p >= 3 && counts[i] >= 7;
				bool grew;

				rw_coll_comm_stats(c, &s0);
				bad += coll_check_allreduce(c, rank, p, counts[i], combos[k].dt,
							    combos[k].op, ip, seed);
				rw_coll_comm_stats(c, &s1);
				grew = s1.recvbuf_partials > s0.recvbuf_partials;
				/* a count below 7 may leave this rank's forwarded
				 * segments empty: only the others are sure */
				bool sure = ip || p < 3 || counts[i] >= 7;

				if (sure && grew != want) {
					fprintf(stderr,
						"rank %d: allreduce of %zu %s, %d ranks: %llu "
						"partial "
						"sums in recvbuf, expected %s\n",
						rank, counts[i], ip ? "in place" : "out of place",
						p,
						(unsigned long long)(s1.recvbuf_partials -
								     s0.recvbuf_partials),
						want ? "some" : "none");
					bad++;
				}
				bad += coll_check_reduce_scatter(
					c, rank, p, counts[i] / (size_t)p + 1, combos[k].dt,
					combos[k].op, ip, seed);
				rw_coll_comm_stats(c, &s2);
				if (s2.recvbuf_partials != s1.recvbuf_partials) {
					fprintf(stderr,
						"rank %d: a reduce-scatter put partial sums in "
						"its one-segment recvbuf\n",
						rank);
					bad++;
				}
			}
		}
	}
	return bad;
}

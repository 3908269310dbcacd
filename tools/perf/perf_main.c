/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-perf: an nccl-tests style sweep of ringway's collectives through
 * the public C API.  Same flags (-b -e -i -f -n -w -c -d -o) and the same
 * table: size, count, type, redop, then time, algbw and busbw (GB = 1e9)
 * and #wrong for out-of-place and in-place, and the average bus bandwidth.
 * busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for reduce-scatter and
 * allgather, x 1 for broadcast.  Times are the slowest rank's average.
 *
 *   ringway-perf --local 4 -b 8 -e 256M -f 2          # 4 ranks on this host
 *   mpirun -np 4 ringway-perf -b 16M -e 256M          # ranks from mpirun
 *   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. ringway-perf
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/rw_coll.h"
#include "coll/world.h"
#include "common/rw_common.h"
#include "common/rw_params.h"
#include "gpu/rw_cuda.h"
#include "tools/perf/perf.h"
#include "topo/rw_topo_place.h"

static const char *const coll_names[] = {
	[PERF_ALLREDUCE] = "allreduce",
	[PERF_REDUCE_SCATTER] = "reduce_scatter",
	[PERF_ALLGATHER] = "allgather",
	[PERF_BROADCAST] = "broadcast",
};

struct bench {
	const struct perf_opts *o;
	const struct perf_ranks *r;
	rw_comm_t *comm;
	char *send, *recv;	   /* maxbytes each, host or device */
	char *hsend, *href, *htmp; /* host: data, expected, scratch */
	int64_t wrong_total;
	double busbw_sum;
	int nlines;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ringway-perf [--local N] [-b minbytes] [-e maxbytes] [-f factor | -i "
		   "step]\n"
		   "                    [-n iters] [-w warmup] [-c 0|1] [-d type|all] [-o op|all]\n"
		   "                    [-a auto|ring|rd|direct|ps] [--coll "
		   "allreduce|reduce_scatter|allgather|broadcast]\n"
		   "                    [-r root] [--mem host|device]\n"
		   "  -b, -e     smallest and largest size in bytes (K/M/G suffixes), default 32M\n"
		   "  -f, -i     multiply by factor (default 2) or add step between sizes\n"
		   "  -n, -w     timed iterations (20) and warm-up iterations (5) per size\n"
		   "  -c         check the results (1) and report #wrong\n"
		   "  -d, -o     datatype (float) and reduction (sum); nccl-tests names\n"
		   "  -a         algorithm: auto (by size, the default), ring, rd (recursive\n"
		   "             doubling), direct (all to all), ps (everything through rank 0);\n"
		   "             the last column says what ran: algorithm, channels x chunk\n"
		   "  --local N  fork N ranks on this host; otherwise ranks come from mpirun\n"
		   "             (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE) or torchrun-style\n"
		   "             RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT\n"
		   "  --mem      buffers in host memory (default) or on the current CUDA device\n");
}

static int parse_bytes(const char *s, size_t *out)
{
	if (rw_parse_size(s, out)) {
		fprintf(stderr, "ringway-perf: '%s' is not a size\n", s);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longs[] = {
		{"local", required_argument, NULL, 'L'},
		{"mem", required_argument, NULL, 'M'},
		{"coll", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct perf_opts){.minbytes = 32 << 20,
				.maxbytes = 32 << 20,
				.stepfactor = 2,
				.iters = 20,
				.warmup = 5,
				.check = 1,
				.dtype = RW_FLOAT32,
				.op = RW_SUM};
	while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:a:r:t:g:G:m:p:z:h", longs, NULL)) !=
	       -1) {
		switch (c) {
		case 'b':
			if (parse_bytes(optarg, &o->minbytes))
				return -EINVAL;
			break;
		case 'e':
			if (parse_bytes(optarg, &o->maxbytes))
				return -EINVAL;
			break;
		case 'i':
			if (parse_bytes(optarg, &o->stepbytes))
				return -EINVAL;
			break;
		case 'f':
			o->stepfactor = strtod(optarg, NULL);
			break;
		case 'n':
			o->iters = atoi(optarg);
			break;
		case 'w':
			o->warmup = atoi(optarg);
			break;
		case 'c':
			o->check = atoi(optarg);
			break;
		case 'd':
			o->dtype = perf_dtype_parse(optarg);
			if (o->dtype == -2) {
				fprintf(stderr, "ringway-perf: unknown datatype '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			o->op = perf_op_parse(optarg);
			if (o->op == -2) {
				fprintf(stderr, "ringway-perf: unknown op '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'a':
			if (strcmp(optarg, "auto") && strcmp(optarg, "ring") &&
			    strcmp(optarg, "rd") && strcmp(optarg, "direct") &&
			    strcmp(optarg, "ps")) {
				fprintf(stderr,
					"ringway-perf: -a takes auto, ring, rd, direct or ps\n");
				return -EINVAL;
			}
			o->algo = optarg;
			break;
		case 'r':
			o->root = atoi(optarg);
			break;
		case 'L':
			o->local = atoi(optarg);
			if (o->local < 1 || o->local > 256) {
				fprintf(stderr, "ringway-perf: --local takes 1..256\n");
				return -EINVAL;
			}
			break;
		case 'M':
			o->device = strcmp(optarg, "device") == 0;
			if (!o->device && strcmp(optarg, "host")) {
				fprintf(stderr, "ringway-perf: --mem takes host or device\n");
				return -EINVAL;
			}
			break;
		case 'C':
			for (o->coll = 0; o->coll < PERF_COLL_COUNT; o->coll++)
				if (strcmp(optarg, coll_names[o->coll]) == 0)
					break;
			if (o->coll == PERF_COLL_COUNT) {
				fprintf(stderr, "ringway-perf: unknown collective '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 't':
		case 'g':
		case 'G':
		case 'm':
		case 'p':
		case 'z':
			break; /* nccl-tests flags that mean nothing here */
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc || o->iters < 1 || o->warmup < 0 || o->maxbytes < o->minbytes ||
	    (o->stepbytes == 0 && o->stepfactor <= 1)) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* --- one size ------------------------------------------------------------- */

/* Elements per rank-visible buffer and the bytes of the size line. */
static void shape(const struct bench *b, size_t bytes, int dtype, size_t *count, size_t *size)
{
	size_t es = perf_dtype_size(dtype), n = (size_t)b->r->nranks;

	*count = bytes / es;
	if (b->o->coll == PERF_REDUCE_SCATTER || b->o->coll == PERF_ALLGATHER)
		*count = *count / n * n; /* whole per-rank blocks */
	*size = *count * es;
}

/* One collective; in_place picks the buffers.  count: total elements. */
static int run_one(struct bench *b, size_t count, int dtype, int op, bool in_place)
{
	size_t n = (size_t)b->r->nranks, es = perf_dtype_size(dtype), part = count / n;
	char *send = b->send, *recv = in_place ? b->send : b->recv;

	switch (b->o->coll) {
	case PERF_REDUCE_SCATTER:
		return rw_reduce_scatter(b->comm, send,
					 in_place ? send + (size_t)b->r->rank * part * es : recv,
					 part, (rw_dtype_t)dtype, (rw_op_t)op);
	case PERF_ALLGATHER:
		return rw_allgather(b->comm,
				    in_place ? recv + (size_t)b->r->rank * part * es : send, recv,
				    part, (rw_dtype_t)dtype);
	case PERF_BROADCAST:
		return rw_broadcast(b->comm, send, recv, count, (rw_dtype_t)dtype, b->o->root);
	default:
		return rw_allreduce(b->comm, send, recv, count, (rw_dtype_t)dtype, (rw_op_t)op);
	}
}

static int to_dev(const struct bench *b, void *dst, const void *src, size_t bytes)
{
	if (!b->o->device) {
		memcpy(dst, src, bytes);
		return 0;
	}
	return rw_cuda_memcpy(dst, src, bytes);
}

static int poison(const struct bench *b, void *dst, size_t bytes)
{
	if (!b->o->device) {
		memset(dst, 0xa5, bytes);
		return 0;
	}
	return rw_cuda_memset(dst, 0xa5, bytes);
}

/* Fill, run once, count wrong elements on this rank.  The output is
 * poisoned first, so a result left by an earlier run cannot pass. */
static int check_one(struct bench *b, size_t count, int dtype, int op, bool in_place,
		     int64_t *wrong)
{
	size_t n = (size_t)b->r->nranks, es = perf_dtype_size(dtype), part = count / n;
	int me = b->r->rank, rc;
	size_t off = 0, len = count;
	char *out;

	rc = poison(b, in_place ? b->send : b->recv, count * es);
	if (rc)
		return rc;
	switch (b->o->coll) {
	case PERF_ALLGATHER:
		/* rank r contributes block r of the all-rank pattern */
		perf_fill(b->href, count, dtype, RW_SUM, 0);
		memcpy(b->hsend, b->href + (size_t)me * part * es, part * es);
		rc = to_dev(b, in_place ? b->send + (size_t)me * part * es : b->send, b->hsend,
			    part * es);
		break;
	case PERF_BROADCAST:
		perf_fill(b->href, count, dtype, RW_SUM, b->o->root);
		if (me == b->o->root)
			rc = to_dev(b, b->send, b->href, count * es);
		break;
	default:
		perf_fill(b->hsend, count, dtype, op, me);
		perf_expect(b->href, b->htmp, count, dtype, op, (int)n);
		rc = to_dev(b, b->send, b->hsend, count * es);
		if (b->o->coll == PERF_REDUCE_SCATTER) {
			off = (size_t)me * part;
			len = part;
		}
		break;
	}
	if (!rc)
		rc = run_one(b, count, dtype, op, in_place);
	if (rc)
		return rc;
	out = in_place ? b->send : b->recv;
	if (b->o->coll == PERF_REDUCE_SCATTER && in_place)
		out += off * es;
	if (b->o->device) {
		rc = rw_cuda_memcpy(b->htmp, out, len * es);
		out = b->htmp;
		if (rc)
			return rc;
	}
	*wrong = perf_wrong(out, b->href + off * es, len, dtype);
	return 0;
}

static int barrier(struct bench *b)
{
	int32_t x = 0, y;

	return rw_allreduce(b->comm, &x, &y, 1, RW_INT32, RW_SUM);
}

static double bus_factor(const struct bench *b)
{
	double n = b->r->nranks;

	switch (b->o->coll) {
	case PERF_ALLREDUCE:
		return 2 * (n - 1) / n;
	case PERF_BROADCAST:
		return 1;
	default:
		return (n - 1) / n;
	}
}

static void fmt_time(char *buf, size_t len, double us)
{
	snprintf(buf, len, us < 1e4 ? "%7.2f" : us < 1e5 ? "%7.1f" : "%7.0f", us);
}

/* Time (slowest rank's average, us) and #wrong of one placement. */
static int measure(struct bench *b, size_t count, int dtype, int op, bool in_place, double *us,
		   int64_t *wrong)
{
	double t, tmax;
	int rc = 0;

	for (int i = 0; i < b->o->warmup && !rc; i++)
		rc = run_one(b, count, dtype, op, in_place);
	if (!rc)
		rc = barrier(b);
	t = now_s();
	for (int i = 0; i < b->o->iters && !rc; i++)
		rc = run_one(b, count, dtype, op, in_place);
	t = (now_s() - t) / b->o->iters * 1e6;
	if (!rc)
		rc = rw_allreduce(b->comm, &t, &tmax, 1, RW_FLOAT64, RW_MAX);
	*us = tmax;
	*wrong = -1;
	if (!rc && b->o->check) {
		int64_t mine = 0;

		rc = check_one(b, count, dtype, op, in_place, &mine);
		if (!rc)
			rc = rw_allreduce(b->comm, &mine, wrong, 1, RW_INT64, RW_SUM);
	}
	return rc;
}

/* "1M", "64K", "4000": a chunk for the algorithm column */
static void fmt_bytes(char *buf, size_t len, size_t v)
{
	if (v && v % (1 << 20) == 0)
		snprintf(buf, len, "%zuM", v >> 20);
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%zuK", v >> 10);
	else
		snprintf(buf, len, "%zu", v);
}

/* What the engine runs for this size: "rd", "ring:2x512K" (channels x chunk). */
static void fmt_choice(const struct bench *b, size_t count, int dtype, char *buf, size_t len)
{
	static const enum rw_coll_kind kinds[] = {
		[PERF_ALLREDUCE] = RW_COLL_ALLREDUCE,
		[PERF_REDUCE_SCATTER] = RW_COLL_REDUCE_SCATTER,
		[PERF_ALLGATHER] = RW_COLL_ALLGATHER,
		[PERF_BROADCAST] = RW_COLL_BROADCAST,
	};
	struct rw_coll_comm *c = rw_world_coll(b->comm);
	struct rw_coll_choice ch;
	size_t n = b->o->coll == PERF_REDUCE_SCATTER || b->o->coll == PERF_ALLGATHER
			   ? count / (size_t)b->r->nranks
			   : count;
	char chunk[32];

	rw_coll_choose(c, kinds[b->o->coll], n, (enum rw_dtype)dtype, b->o->device, &ch);
	if (ch.algo != RW_COLL_ALGO_RING) {
		snprintf(buf, len, "%s", rw_coll_algo_name(ch.algo));
		return;
	}
	fmt_bytes(chunk, sizeof(chunk), ch.chunk_bytes);
	snprintf(buf, len, "ring:%dx%s", ch.nchannels, chunk);
}

static int run_size(struct bench *b, size_t bytes, int dtype, int op)
{
	size_t count, size;
	double us[2];
	int64_t wrong[2];
	char line[320], tbuf[32], wbuf[32], algo[48];
	int used, rc;

	shape(b, bytes, dtype, &count, &size);
	for (int ip = 0; ip < 2; ip++) {
		rc = measure(b, count, dtype, op, ip, &us[ip], &wrong[ip]);
		if (rc) {
			fprintf(stderr, "ringway-perf: rank %d: %s of %zu bytes: %s\n", b->r->rank,
				coll_names[b->o->coll], size, rw_strerror(rc));
			return rc;
		}
	}
	if (b->r->rank != 0)
		return 0;
	used = snprintf(
		line, sizeof(line), "%12zu  %12zu  %8s  %6s", size, count, perf_dtype_name(dtype),
		b->o->coll == PERF_ALLREDUCE || b->o->coll == PERF_REDUCE_SCATTER ? perf_op_name(op)
										  : "none");
	for (int ip = 0; ip < 2; ip++) {
		double algbw = us[ip] > 0 ? (double)size / (us[ip] * 1e-6) / 1e9 : 0;
		double busbw = algbw * bus_factor(b);

		fmt_time(tbuf, sizeof(tbuf), us[ip]);
		if (wrong[ip] < 0)
			snprintf(wbuf, sizeof(wbuf), "N/A");
		else
			snprintf(wbuf, sizeof(wbuf), "%lld", (long long)wrong[ip]);
		used += snprintf(line + used, sizeof(line) - (size_t)used,
				 "  %7s  %6.2f  %6.2f  %6s", tbuf, algbw, busbw, wbuf);
		b->wrong_total += wrong[ip] > 0 ? wrong[ip] : 0;
		b->busbw_sum += busbw;
		b->nlines++;
	}
	fmt_choice(b, count, dtype, algo, sizeof(algo));
	printf("%s  %s\n", line, algo);
	fflush(stdout);
	return 0;
}

/* --- a rank's whole run ------------------------------------------------------ */

static void header(const struct bench *b)
{
	rw_config_t cfg = RW_CONFIG_INIT;
	const struct rw_topo_place *place;

	struct rw_coll_settings set;

	rw_comm_get_config(b->comm, &cfg); /* what the communicator runs with */
	rw_coll_comm_settings(rw_world_coll(b->comm), &set);
	printf("# ringway-perf %s: %s, %d rank(s) (%s), %s memory\n", rw_version(),
	       coll_names[b->o->coll], b->r->nranks, b->r->how, b->o->device ? "device" : "host");
	printf("# algo %s, transport %s, chunk %lld bytes, %lld channel(s) (at most: each size's "
	       "in the last column), iters %d, warmup %d, "
	       "check %d\n",
	       cfg.algo, cfg.transport,
	       (long long)(b->o->device ? set.dev_chunk_bytes : (size_t)cfg.chunk_bytes),
	       (long long)cfg.nchannels, b->o->iters, b->o->warmup, b->o->check);
	/* the ring and each channel's NIC, as the INFO log says them */
	place = rw_world_place(b->comm);
	if (place && place->nranks)
		rw_topo_place_write(place, "# ", stdout);
	printf("#\n");
	printf("#                                                out-of-place                      "
	       " in-place\n");
	printf("#       size         count      type   redop     time   algbw   busbw  #wrong     "
	       "time   algbw   busbw  #wrong  algorithm\n");
	printf("#        (B)    (elements)                        (us)  (GB/s)  (GB/s)             "
	       "(us)  (GB/s)  (GB/s)\n");
	fflush(stdout);
}

static int alloc_buffers(struct bench *b)
{
	size_t bytes = RW_MAX(b->o->maxbytes, (size_t)64);
	int rc = 0;

	b->hsend = malloc(bytes);
	b->href = malloc(bytes);
	b->htmp = malloc(bytes);
	if (!b->hsend || !b->href || !b->htmp)
		return -ENOMEM;
	memset(b->hsend, 0, bytes);
	if (!b->o->device) {
		b->send = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
		b->recv = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
		if (!b->send || !b->recv)
			return -ENOMEM;
		memset(b->send, 0, bytes);
		memset(b->recv, 0, bytes);
		return 0;
	}
	rc = rw_cuda_malloc((void **)&b->send, bytes);
	if (!rc)
		rc = rw_cuda_malloc((void **)&b->recv, bytes);
	if (!rc)
		rc = rw_cuda_memset(b->send, 0, bytes);
	if (!rc)
		rc = rw_cuda_memset(b->recv, 0, bytes);
	return rc;
}

static void free_buffers(struct bench *b)
{
	if (b->o->device) {
		rw_cuda_free(b->send);
		rw_cuda_free(b->recv);
	} else {
		free(b->send);
		free(b->recv);
	}
	free(b->hsend);
	free(b->href);
	free(b->htmp);
}

static int rank_main(const struct perf_ranks *r, void *arg)
{
	const struct perf_opts *o = arg;
	struct bench b = {.o = o, .r = r};
	rw_config_t cfg = RW_CONFIG_INIT;
	int d0 = o->dtype < 0 ? 0 : o->dtype, d1 = o->dtype < 0 ? RW_FLOAT8E5M2 : o->dtype;
	int o0 = o->op < 0 ? 0 : o->op, o1 = o->op < 0 ? RW_AVG : o->op;
	bool reduces = o->coll == PERF_ALLREDUCE || o->coll == PERF_REDUCE_SCATTER;
	int rc;

	cfg.algo = o->algo; /* NULL: RINGWAY_ALGO */
	if (r->id)
		rc = rw_comm_init_id(&b.comm, r->nranks, r->rank, r->id, &cfg);
	else
		rc = rw_comm_init_config(&b.comm, r->nranks, r->rank, r->root[0] ? r->root : NULL,
					 &cfg);
	if (rc) {
		fprintf(stderr, "ringway-perf: rank %d: rw_comm_init: %s\n", r->rank,
			rw_strerror(rc));
		return 1;
	}
	rc = alloc_buffers(&b);
	if (rc)
		fprintf(stderr, "ringway-perf: rank %d: %zu-byte buffers: %s\n", r->rank,
			o->maxbytes, rw_strerror(rc));
	if (!rc && r->rank == 0)
		header(&b);
	for (int d = d0; d <= d1 && !rc; d++) {
		for (int op = o0; op <= (reduces ? o1 : o0) && !rc; op++) {
			size_t bytes = o->minbytes;

			while (!rc && bytes <= o->maxbytes) {
				rc = run_size(&b, bytes, d, op);
				if (o->stepbytes)
					bytes += o->stepbytes;
				else if ((size_t)((double)bytes * o->stepfactor) > bytes)
					bytes = (size_t)((double)bytes * o->stepfactor);
				else
					bytes++;
			}
		}
	}
	if (!rc && r->rank == 0) {
		printf("# Out of bounds values : %lld %s\n", (long long)b.wrong_total,
		       b.wrong_total ? "FAILED" : "OK");
		printf("# Avg bus bandwidth    : %g\n", b.nlines ? b.busbw_sum / b.nlines : 0.0);
		printf("#\n");
		fflush(stdout);
	}
	free_buffers(&b);
	rw_comm_destroy(b.comm);
	return rc || b.wrong_total ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_ranks r;

	if (parse_args(argc, argv, &o))
		return 2;
	if (o.local)
		return perf_fork_local(o.local, rank_main, &o);
	if (perf_ranks_from_env(&r))
		return 2;
	return rank_main(&r, &o);
}

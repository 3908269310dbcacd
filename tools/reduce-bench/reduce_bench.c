/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-reduce-bench: bandwidth of the reduction kernels per datatype x op,
 * GB/s = (bytes read + bytes written) / time, GB = 1e9.  One thread.  The
 * same run measures memcpy and a plain float32 c[i] = a[i] + b[i] loop on
 * host memory, and on a GPU a device-to-device copy timed with CUDA events,
 * so each kernel is shown against the bar that matters for it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_common.h"
#include "kernels/rw_reduce.h"
#include "tools/reduce-bench/rb.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void rb_stats_of(double *secs, int n, struct rb_stats *out)
{
	qsort(secs, (size_t)n, sizeof(*secs), cmp_double);
	out->best = secs[0];
	out->median = n % 2 ? secs[n / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
}

void rb_fill(void *buf, size_t count, enum rw_dtype dt, unsigned int seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);

	for (size_t i = 0; i < count; i++) {
		uint64_t r;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = x >> 40;
		switch (dt) {
		case RW_DTYPE_FLOAT32: {
			float f = 1.0f + (float)(r % 1000) / 1000.0f;

			memcpy((char *)buf + 4 * i, &f, 4);
			break;
		}
		case RW_DTYPE_FLOAT64: {
			double d = 1.0 + (double)(r % 1000) / 1000.0;

			memcpy((char *)buf + 8 * i, &d, 8);
			break;
		}
		case RW_DTYPE_FLOAT16: /* 1.0 .. 2.0 */
			((uint16_t *)buf)[i] = (uint16_t)(0x3c00 | (r & 0x3ff));
			break;
		case RW_DTYPE_BFLOAT16:
			((uint16_t *)buf)[i] = (uint16_t)(0x3f80 | (r & 0x7f));
			break;
		case RW_DTYPE_FLOAT8E4M3:
			((uint8_t *)buf)[i] = (uint8_t)(0x38 | (r & 0x7));
			break;
		case RW_DTYPE_FLOAT8E5M2:
			((uint8_t *)buf)[i] = (uint8_t)(0x3c | (r & 0x3));
			break;
		default: {
			uint64_t v = r * 2654435761u;

			memcpy((char *)buf + rw_dtype_size(dt) * i, &v, rw_dtype_size(dt));
			break;
		}
		}
	}
}

static void *rb_alloc(size_t bytes)
{
	void *p = aligned_alloc(4096, RW_DIV_UP(bytes, 4096) * 4096);

	if (!p) {
		fprintf(stderr, "ringway-reduce-bench: out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	memset(p, 0, bytes); /* fault the pages in before timing */
	return p;
}

static double gbs(double bytes, double secs)
{
	return bytes / secs / 1e9;
}

/* ---- host --------------------------------------------------------------- */

/*
 * The host buffers: the sources and dst of the kernels, and three float32
 * buffers of the same size for the plain add, which runs between the
 * kernel's runs so that both see the same machine (the 2-core build hosts
 * are shared) and each row compares like with like.
 */
struct rb_host {
	char *buf[RW_REDUCE_MAX_SRCS + 1];
	float *plain[3];
	double *secs, *plain_secs;
};

static double time_plain_add(const struct rb_opts *o, struct rb_host *h)
{
	uint64_t t0 = rw_now_ns();

	rb_plain_add_f32(h->plain[2], h->plain[0], h->plain[1], o->host_bytes / 4);
	return (double)(rw_now_ns() - t0) / 1e9;
}

static void host_baselines(const struct rb_opts *o, struct rb_host *h)
{
	struct rb_stats st;

	rb_memcpy(h->plain[2], h->plain[0], o->host_bytes); /* warm-up */
	for (int i = 0; i < o->iters; i++) {
		uint64_t t0 = rw_now_ns();

		rb_memcpy(h->plain[2], h->plain[0], o->host_bytes);
		h->secs[i] = (double)(rw_now_ns() - t0) / 1e9;
	}
	rb_stats_of(h->secs, o->iters, &st);
	printf("host  %-10s %-6s %-9s %7.2f GB/s  (median %7.2f)\n", "memcpy", "copy", "libc",
	       gbs(2.0 * (double)o->host_bytes, st.best),
	       gbs(2.0 * (double)o->host_bytes, st.median));

	time_plain_add(o, h);
	for (int i = 0; i < o->iters; i++)
		h->secs[i] = time_plain_add(o, h);
	rb_stats_of(h->secs, o->iters, &st);
	printf("host  %-10s %-6s %-9s %7.2f GB/s  (median %7.2f)   c[i]=a[i]+b[i], -O3\n",
	       "float32", "add", "plain", gbs(3.0 * (double)o->host_bytes, st.best),
	       gbs(3.0 * (double)o->host_bytes, st.median));
}

/* One dtype x op on the current instruction set, runs interleaved with the plain add. */
static void host_one(const struct rb_opts *o, struct rb_host *h, enum rw_dtype dt, enum rw_op op)
{
	size_t esize = rw_dtype_size(dt), count = o->host_bytes / esize;
	double bytes = (double)((o->nsrcs + 1) * count * esize);
	double plain_bytes = 3.0 * (double)o->host_bytes;
	const void *srcs[RW_REDUCE_MAX_SRCS];
	void *dst = o->in_place ? h->buf[0] : h->buf[o->nsrcs];
	struct rb_stats st, plain;
	int err = 0;

	for (unsigned int j = 0; j < o->nsrcs; j++)
		srcs[j] = h->buf[j];
	for (int i = -1; i < o->iters && !err; i++) { /* i = -1: warm-up */
		uint64_t t0 = rw_now_ns();

		if (op == RW_OP_AVG)
			err = rw_reduce_multi_avg(dst, srcs, o->nsrcs, count, dt, o->nsrcs);
		else if (o->nsrcs == 2)
			err = rw_reduce(dst, srcs[0], srcs[1], count, dt, op);
		else
			err = rw_reduce_multi(dst, srcs, o->nsrcs, count, dt, op);
		if (i >= 0) {
			h->secs[i] = (double)(rw_now_ns() - t0) / 1e9;
			h->plain_secs[i] = time_plain_add(o, h);
		}
	}
	if (err) {
		fprintf(stderr, "ringway-reduce-bench: %s %s: %s\n", rw_dtype_name(dt),
			rw_op_name(op), strerror(-err));
		exit(1);
	}
	rb_stats_of(h->secs, o->iters, &st);
	rb_stats_of(h->plain_secs, o->iters, &plain);
	printf("host  %-10s %-6s %-9s %7.2f GB/s  (median %7.2f)  %5.1f%% of plain add (%.2f)\n",
	       rw_dtype_name(dt), rw_op_name(op), rw_isa_name(rw_reduce_get_isa()),
	       gbs(bytes, st.best), gbs(bytes, st.median),
	       100.0 * gbs(bytes, st.best) / gbs(plain_bytes, plain.best),
	       gbs(plain_bytes, plain.best));
}

static void run_host(const struct rb_opts *o)
{
	struct rb_host h;
	enum rw_isa best = rw_reduce_best_isa();

	printf("# host: one thread, %zu MiB per buffer, %u sources%s, best of %d runs "
	       "(median in brackets); best instruction set here: %s\n",
	       o->host_bytes >> 20, o->nsrcs, o->in_place ? ", in place" : "", o->iters,
	       rw_isa_name(best));
	printf("# GB/s = (bytes read + bytes written) / time; avg = sum and /nranks in one pass;\n"
	       "# %% of plain add: against the plain add run between the kernel's runs (its GB/s "
	       "in brackets)\n");
	for (unsigned int j = 0; j <= o->nsrcs; j++)
		h.buf[j] = rb_alloc(o->host_bytes);
	for (int j = 0; j < 3; j++) {
		h.plain[j] = rb_alloc(o->host_bytes);
		rb_fill(h.plain[j], o->host_bytes / 4, RW_DTYPE_FLOAT32, (unsigned int)j + 100);
	}
	h.secs = calloc((size_t)o->iters, sizeof(double));
	h.plain_secs = calloc((size_t)o->iters, sizeof(double));
	if (!h.secs || !h.plain_secs)
		exit(1);
	host_baselines(o, &h);
	for (int isa = o->all_isas ? 0 : (int)best; isa <= (int)best; isa++) {
		if (rw_reduce_set_isa((enum rw_isa)isa))
			continue;
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
			if (!o->dtypes[dt])
				continue;
			for (unsigned int j = 0; j < o->nsrcs; j++)
				rb_fill(h.buf[j], o->host_bytes / rw_dtype_size((enum rw_dtype)dt),
					(enum rw_dtype)dt, j);
			for (int op = 0; op < RW_OP_COUNT; op++)
				if (o->ops[op])
					host_one(o, &h, (enum rw_dtype)dt, (enum rw_op)op);
		}
	}
	rw_reduce_set_isa(best);
	for (unsigned int j = 0; j <= o->nsrcs; j++)
		free(h.buf[j]);
	for (int j = 0; j < 3; j++)
		free(h.plain[j]);
	free(h.secs);
	free(h.plain_secs);
}

/* ---- options -------------------------------------------------------------- */

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G':
	case 'g':
		v <<= 30;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		break;
	case 'K':
	case 'k':
		v <<= 10;
		break;
	case '\0':
		break;
	default:
		v = 0;
		break;
	}
	return (size_t)v;
}

/* "all" or a comma list of names -> flags; 0 or -EINVAL. */
static int parse_list(const char *s, bool *flags, int n, const char *(*name)(int))
{
	char tmp[256], *save = NULL;

	if (!strcmp(s, "all")) {
		for (int i = 0; i < n; i++)
			flags[i] = true;
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s", s);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < n && strcmp(t, name(i)); i++)
			;
		if (i == n) {
			fprintf(stderr, "ringway-reduce-bench: unknown name '%s'\n", t);
			return -EINVAL;
		}
		flags[i] = true;
	}
	return 0;
}

static const char *dtype_name(int i)
{
	return rw_dtype_name((enum rw_dtype)i);
}

static const char *op_name(int i)
{
	return rw_op_name((enum rw_op)i);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringway-reduce-bench [options]\n"
		"  -s, --size BYTES     host bytes per buffer (K/M/G), default 64M\n"
		"  -S, --dev-size BYTES device bytes per buffer, default 256M\n"
		"  -n, --iters N        timed runs per kernel (best and median shown), default 10\n"
		"  -d, --dtype LIST     datatypes, comma separated, or all (default)\n"
		"  -o, --op LIST        sum,prod,max,min,avg or all (default)\n"
		"  -k, --nsrcs K        sources per reduction, 2..%d, default 2\n"
		"  -i, --in-place       dst is the first source\n"
		"  -a, --all-isas       also the instruction sets below the best one\n"
		"      --host-only, --device-only\n"
		"datatypes:",
		RW_REDUCE_MAX_SRCS);
	for (int i = 0; i < RW_DTYPE_COUNT; i++)
		fprintf(f, " %s", dtype_name(i));
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"size", required_argument, NULL, 's'},	 {"dev-size", required_argument, NULL, 'S'},
		{"iters", required_argument, NULL, 'n'}, {"dtype", required_argument, NULL, 'd'},
		{"op", required_argument, NULL, 'o'},	 {"nsrcs", required_argument, NULL, 'k'},
		{"in-place", no_argument, NULL, 'i'},	 {"all-isas", no_argument, NULL, 'a'},
		{"host-only", no_argument, NULL, 'H'},	 {"device-only", no_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},	 {NULL, 0, NULL, 0},
	};
	struct rb_opts o = {.host_bytes = 64u << 20,
			    .dev_bytes = 256u << 20,
			    .iters = 10,
			    .nsrcs = 2,
			    .host = true,
			    .device = true};
	bool any_dt = false, any_op = false;
	int c;

	while ((c = getopt_long(argc, argv, "s:S:n:d:o:k:iah", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.host_bytes = parse_size(optarg);
			break;
		case 'S':
			o.dev_bytes = parse_size(optarg);
			break;
		case 'n':
			o.iters = atoi(optarg);
			break;
		case 'd':
			if (parse_list(optarg, o.dtypes, RW_DTYPE_COUNT, dtype_name))
				return 2;
			any_dt = true;
			break;
		case 'o':
			if (parse_list(optarg, o.ops, RW_OP_COUNT, op_name))
				return 2;
			any_op = true;
			break;
		case 'k':
			o.nsrcs = (unsigned int)atoi(optarg);
			break;
		case 'i':
			o.in_place = true;
			break;
		case 'a':
			o.all_isas = true;
			break;
		case 'H':
			o.device = false;
			break;
		case 'D':
			o.host = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.host_bytes < 4096 || o.dev_bytes < 4096 || o.iters < 1 || o.nsrcs < 2 ||
	    o.nsrcs > RW_REDUCE_MAX_SRCS) {
		usage(stderr);
		return 2;
	}
	if (!any_dt)
		parse_list("all", o.dtypes, RW_DTYPE_COUNT, dtype_name);
	if (!any_op)
		parse_list("all", o.ops, RW_OP_COUNT, op_name);
	printf("# ringway-reduce-bench %s\n", RW_VERSION_STRING);
	if (o.host)
		run_host(&o);
	if (o.device && rb_device(&o) && !o.host)
		return 1;
	return 0;
}

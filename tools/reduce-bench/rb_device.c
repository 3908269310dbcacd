/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-reduce-bench on a GPU: each kernel next to a device-to-device
 * copy of the same buffers, every run timed with a pair of CUDA events on
 * one stream (all CUDA through kernels/rw_cuda.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/rw_cuda.h"
#include "kernels/rw_reduce.h"
#include "tools/reduce-bench/rb.h"

struct rb_dev {
	void *stream;
	void *ev[2];
	char *buf[RW_REDUCE_MAX_SRCS + 1];
	size_t bytes;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "ringway-reduce-bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* Time one enqueued operation (op == -1: the copy) iters times. */
static void dev_time(const struct rb_opts *o, struct rb_dev *d, enum rw_dtype dt, int op,
		     struct rb_stats *st)
{
	size_t count = d->bytes / (op < 0 ? 1 : rw_dtype_size(dt));
	double *secs = calloc((size_t)o->iters, sizeof(double));
	const void *srcs[RW_REDUCE_MAX_SRCS];
	void *dst = o->in_place ? d->buf[0] : d->buf[o->nsrcs];
	int err;

	if (!secs)
		exit(1);
	for (unsigned int j = 0; j < o->nsrcs; j++)
		srcs[j] = d->buf[j];
	for (int i = -1; i < o->iters; i++) { /* i = -1: warm-up */
		float ms = 0;

		err = rw_cuda_event_record(d->ev[0], d->stream);
		if (err)
			die("cudaEventRecord", err);
		if (op < 0)
			err = rw_cuda_memcpy_async(d->buf[o->nsrcs], d->buf[0], d->bytes,
						   d->stream);
		else if (op == RW_OP_AVG)
			err = rw_reduce_multi_avg_dev(dst, srcs, o->nsrcs, count, dt, o->nsrcs,
						      d->stream);
		else
			err = rw_reduce_multi_dev(dst, srcs, o->nsrcs, count, dt, (enum rw_op)op,
						  d->stream);
		if (err)
			die(op < 0 ? "device copy" : "device reduction", err);
		err = rw_cuda_event_record(d->ev[1], d->stream);
		if (!err)
			err = rw_cuda_event_sync(d->ev[1]);
		if (!err)
			err = rw_cuda_event_elapsed_ms(d->ev[0], d->ev[1], &ms);
		if (err)
			die("cuda events", err);
		if (i >= 0)
			secs[i] = ms / 1e3;
	}
	rb_stats_of(secs, o->iters, st);
	free(secs);
}

int rb_device(const struct rb_opts *o)
{
	struct rb_dev d = {.bytes = o->dev_bytes};
	struct rb_stats copy, st;
	int n = 0, dev = 0, err = rw_cuda_device_count(&n);
	char *host;

	if (err) {
		printf("# device: no GPU here (%s); device kernels not measured\n",
		       err == -ENOTSUP ? "built without CUDA" : "no driver or device");
		return 1;
	}
	rw_cuda_get_device(&dev);
	printf("# device %d of %d: %zu MiB per buffer, %u sources%s, best of %d runs timed with "
	       "CUDA events (median in brackets)\n",
	       dev, n, o->dev_bytes >> 20, o->nsrcs, o->in_place ? ", in place" : "", o->iters);
	host = malloc(o->dev_bytes);
	if (!host)
		exit(1);
	for (unsigned int j = 0; j <= o->nsrcs; j++) {
		void *p = NULL;

		err = rw_cuda_malloc(&p, o->dev_bytes);
		if (err)
			die("cudaMalloc", err);
		d.buf[j] = p;
	}
	if ((err = rw_cuda_stream_create(&d.stream)) || (err = rw_cuda_event_create(&d.ev[0])) ||
	    (err = rw_cuda_event_create(&d.ev[1])))
		die("stream/events", err);

	dev_time(o, &d, RW_DTYPE_UINT8, -1, &copy);
	printf("dev   %-10s %-6s %-9s %7.2f GB/s  (median %7.2f)   cudaMemcpyAsync D2D\n", "bytes",
	       "copy", "cuda", 2.0 * (double)d.bytes / copy.best / 1e9,
	       2.0 * (double)d.bytes / copy.median / 1e9);
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		if (!o->dtypes[dt])
			continue;
		for (unsigned int j = 0; j < o->nsrcs; j++) {
			rb_fill(host, o->dev_bytes / rw_dtype_size((enum rw_dtype)dt),
				(enum rw_dtype)dt, j);
			err = rw_cuda_memcpy(d.buf[j], host, o->dev_bytes);
			if (err)
				die("cudaMemcpy", err);
		}
		for (int op = 0; op < RW_OP_COUNT; op++) {
			double bytes = (double)(o->nsrcs + 1) * (double)d.bytes;

			if (!o->ops[op])
				continue;
			dev_time(o, &d, (enum rw_dtype)dt, op, &st);
			printf("dev   %-10s %-6s %-9s %7.2f GB/s  (median %7.2f)  %5.1f%% of D2D "
			       "copy\n",
			       rw_dtype_name((enum rw_dtype)dt), rw_op_name((enum rw_op)op), "cuda",
			       bytes / st.best / 1e9, bytes / st.median / 1e9,
			       100.0 * (bytes / st.best) / (2.0 * (double)d.bytes / copy.best));
		}
	}
	rw_cuda_event_destroy(d.ev[0]);
	rw_cuda_event_destroy(d.ev[1]);
	rw_cuda_stream_destroy(d.stream);
	for (unsigned int j = 0; j <= o->nsrcs; j++)
		rw_cuda_free(d.buf[j]);
	free(host);
	return 0;
}

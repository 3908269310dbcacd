/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prof_cost: what ringway's network events for NCCL's profiler cost, on a
 * machine too busy for wall-clock A/B runs to resolve 2 %.
 *
 * One process, one thread, one connection to itself through the plugin's
 * ncclNetPlugin_v11 table, from a context with a stand-in profiler callback
 * (it hands out an event and counts, as NCCL's callback and a profiler
 * plugin do).  A: transfers without phandles (no events; what a run without
 * a profiler costs, but for one pointer test); B: every isend/irecv carries
 * a phandle, as NCCL's do, and starts an event.  The same comm and buffers
 * serve both, so only the events differ.  Rounds alternate a block of
 * `iters` SIZE-byte transfers of A and of B (AB, then BA), WINDOW in flight;
 * each block is timed by this thread's CPU clock (what the transfers and
 * the events cost this thread; preemption by other work excluded), by the
 * process's CPU clock (helper threads included) and by the wall clock.
 * Both ends of each transfer run in this thread, so B does 2 start and 2 stop
 * calls per transfer.  Prints every round and the medians of the per-round
 * B/A ratios; nothing is asserted.
 *
 *   prof_cost <libnccl-net-ringway.so> [-s size] [-n iters] [-r rounds]
 *
 * Then the event path alone, which the A/B rounds cannot resolve on a busy
 * machine: on a comm of the plugin linked into this program, a million
 * rw_prof_start() + rw_prof_stop() pairs of one 1-buffer transfer (what
 * one end adds per transfer: isend/irecv's start, test()'s stop), timed by
 * the thread CPU clock, median of 9; with the A rounds' time per transfer
 * that gives the cost relative to a transfer of SIZE bytes per end.
 *
 * RINGWAY_TRANSPORT picks the transport (shm and socket run in one process;
 * RINGWAY_SOCKET_IFNAME defaults to lo).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/rw_params.h"
#include "harness.h"
#include "plugin/rw_plugin.h"

#define WINDOW 8

static struct {
	unsigned long started, stopped;
	char event;
} prof;

static ncclResult_t stand_in(void **eh, int type, void *ph, int64_t id, void *data)
{
	(void)ph, (void)id, (void)data;
	if (type == ncclProfilerNetEventStart) {
		*eh = &prof.event;
		prof.started++;
	} else if (*eh == &prof.event) {
		prof.stopped++;
	}
	return ncclSuccess;
}

struct side {
	void *ctx, *lc, *sc, *rc, *smh, *rmh;
	unsigned char *sbuf, *rbuf;
};

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* listen, then connect and accept in turn until both are there. */
static void self_connect(struct side *s)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;

	H_CHECK(h_listen(s->ctx, H_DEV, handle, &s->lc) == 0, "listen: %s", h_log.last_warn);
	while (!s->sc || !s->rc) {
		if (!s->sc)
			H_CHECK(h_connect(s->ctx, H_DEV, handle, &s->sc) == 0, "connect");
		if (!s->rc)
			H_CHECK(h_accept(s->lc, &s->rc) == 0, "accept");
		H_CHECK(rw_now_ms() < deadline, "self connect timed out");
		if (!s->sc || !s->rc)
			usleep(100);
	}
}

static void *alloc(size_t len)
{
	void *p = calloc(1, len);

	H_CHECK(p, "calloc(%zu)", len);
	return p;
}

static void open_side(struct side *s, bool with_profiler, size_t size)
{
	h_prof_none = !with_profiler;
	H_CHECK(h_init(&s->ctx) == ncclSuccess && s->ctx, "init: %s", h_log.last_warn);
	self_connect(s);
	s->sbuf = alloc(size * WINDOW + 1);
	s->rbuf = alloc(size * WINDOW + 1);
	H_CHECK(h_reg_mr(s->sc, s->sbuf, size * WINDOW + 1, NCCL_PTR_HOST, &s->smh) == 0, "regMr");
	H_CHECK(h_reg_mr(s->rc, s->rbuf, size * WINDOW + 1, NCCL_PTR_HOST, &s->rmh) == 0, "regMr");
}

static void close_side(struct side *s)
{
	H_CHECK(h_dereg_mr(s->sc, s->smh) == 0 && h_dereg_mr(s->rc, s->rmh) == 0, "deregMr");
	H_CHECK(h_close_send(s->sc) == 0 && h_close_recv(s->rc) == 0 && h_close_listen(s->lc) == 0,
		"close");
	H_CHECK(h_finalize(s->ctx) == 0, "finalize");
	free(s->sbuf);
	free(s->rbuf);
}

/* iters transfers of size bytes, WINDOW in flight, with phandles (events)
 * or not; both ends are tested every pass (the receiver's progress may be
 * what a send waits on). */
static void block(struct side *s, size_t size, int iters, bool events)
{
	void *sreq[WINDOW] = {0}, *rreq[WINDOW] = {0};
	bool sent[WINDOW] = {0}, got[WINDOW] = {0};
	char ph[2 * WINDOW];
	int posted = 0, done = 0, tag = H_TAG;
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;

	while (done < iters) {
		for (int w = 0; w < WINDOW; w++) {
			int d, sizes[8];

			if (!rreq[w] && !sreq[w] && posted < iters) {
				void *data = s->rbuf + (size_t)w * size, *php = &ph[w];
				void **phs = events ? &php : NULL;
				size_t cap = size;

				H_CHECK(h_irecv_ph(s->rc, 1, &data, &cap, &tag, &s->rmh, phs,
						   &rreq[w]) == 0,
					"irecv");
				if (!rreq[w])
					continue;
				posted++;
				sent[w] = got[w] = false;
			}
			if (rreq[w] && !sreq[w])
				H_CHECK(h_isend_ph(s->sc, s->sbuf + (size_t)w * size, size, tag,
						   s->smh, events ? &ph[WINDOW + w] : NULL,
						   &sreq[w]) == 0,
					"isend");
			if (sreq[w] && !sent[w]) {
				d = 0;
				H_CHECK(h_test(sreq[w], &d, sizes) == 0, "test send");
				sent[w] = d;
			}
			if (rreq[w] && !got[w]) {
				d = 0;
				H_CHECK(h_test(rreq[w], &d, sizes) == 0, "test recv");
				got[w] = d;
			}
			if (sent[w] && got[w]) {
				rreq[w] = sreq[w] = NULL;
				sent[w] = got[w] = false;
				done++;
			}
		}
		H_CHECK(rw_now_ms() < deadline, "no progress for %d ms", H_STEP_TIMEOUT_MS);
	}
}

static double median(double *v, int n);

/*
 * ns per start + stop of one transfer's event on a send comm of the linked-in
 * plugin (its own v11 table, not the dlopen()ed one), median of 9 runs of n.
 */
static double event_path_ns(int n)
{
	const ncclNet_v11_t *t = &ncclNetPlugin_v11;
	ncclNetCommConfig_v11_t config = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *ctx = NULL, *lc = NULL, *sc = NULL, *rc = NULL, *ph = &prof.event;
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	double runs[9];
	struct rw_pcomm *pc;
	size_t size = 65536;
	int tag = H_TAG;

	H_CHECK(t->init(&ctx, 1, &config, NULL, stand_in) == ncclSuccess, "linked-in init");
	H_CHECK(t->listen(ctx, H_DEV, handle, &lc) == ncclSuccess, "linked-in listen");
	while (!sc || !rc) {
		if (!sc)
			H_CHECK(t->connect(ctx, H_DEV, handle, &sc, NULL) == ncclSuccess,
				"connect");
		if (!rc)
			H_CHECK(t->accept(lc, &rc, NULL) == ncclSuccess, "accept");
		H_CHECK(rw_now_ms() < deadline, "linked-in self connect timed out");
	}
	pc = rw_pcomm_check(sc, RW_PCOMM_SEND);
	H_CHECK(pc && pc->prof, "no event state on the linked-in send comm");
	for (int r = 0; r < 9; r++) {
		double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);

		for (int i = 0; i < n; i++) {
			rw_prof_start(pc, &runs[i & 7], false, 1, &size, &tag, &ph);
			rw_prof_stop(pc, &runs[i & 7]);
		}
		runs[r] = (now_s(CLOCK_THREAD_CPUTIME_ID) - t0) / n * 1e9;
	}
	H_CHECK(t->closeSend(sc) == 0 && t->closeRecv(rc) == 0 && t->closeListen(lc) == 0,
		"linked-in close");
	H_CHECK(t->finalize(ctx) == 0, "linked-in finalize");
	return median(runs, 9);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	size_t size = 65536;
	int iters = 20000, rounds = 9, c;
	struct side b = {0};
	double r_thread[64], r_proc[64], r_wall[64], a_us[64], ev_ns;

	if (argc < 2) {
		fprintf(stderr, "usage: %s <plugin.so> [-s size] [-n iters] [-r rounds]\n",
			argv[0]);
		return 2;
	}
	h_plugin_path = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "s:n:r:")) != -1) {
		if (c == 's' && rw_parse_size(optarg, &size) == 0)
			continue;
		if (c == 'n' && (iters = atoi(optarg)) > 0)
			continue;
		if (c == 'r' && (rounds = atoi(optarg)) > 0 && rounds <= 64)
			continue;
		fprintf(stderr, "prof_cost: bad option -%c\n", c);
		return 2;
	}
	setenv("RINGWAY_SOCKET_IFNAME", "lo", 0);
	h_bind(h_open(), 11);
	h_prof_hook = stand_in;
	open_side(&b, true, size);
	block(&b, size, iters / 10 + 1, false); /* warm-up */
	block(&b, size, iters / 10 + 1, true);
	printf("# prof_cost: %zu B, %d transfers per block, %d in flight, transport %s\n", size,
	       iters, WINDOW, getenv("RINGWAY_TRANSPORT") ? getenv("RINGWAY_TRANSPORT") : "auto");
	printf("# round  A thread-CPU us/transfer  B thread-CPU  B/A  | process-CPU B/A | wall "
	       "B/A\n");
	for (int r = 0; r < rounds; r++) {
		double t[2], p[2], w[2];

		for (int k = 0; k < 2; k++) {
			int i = k ^ (r & 1); /* AB, then BA */
			double t0 = now_s(CLOCK_THREAD_CPUTIME_ID),
			       p0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
			double w0 = now_s(CLOCK_MONOTONIC);

			block(&b, size, iters, i == 1);
			t[i] = (now_s(CLOCK_THREAD_CPUTIME_ID) - t0) / iters * 1e6;
			p[i] = (now_s(CLOCK_PROCESS_CPUTIME_ID) - p0) / iters * 1e6;
			w[i] = (now_s(CLOCK_MONOTONIC) - w0) / iters * 1e6;
		}
		a_us[r] = t[0];
		r_thread[r] = t[1] / t[0];
		r_proc[r] = p[1] / p[0];
		r_wall[r] = w[1] / w[0];
		printf("%7d  %10.3f  %10.3f  %.4f  | %.4f | %.4f\n", r + 1, t[0], t[1], r_thread[r],
		       r_proc[r], r_wall[r]);
	}
	printf("# median B/A: thread CPU %.4f (cost %+.2f%%), process CPU %.4f, wall %.4f; "
	       "events: %lu started, %lu stopped\n",
	       median(r_thread, rounds), 100 * (median(r_thread, rounds) - 1),
	       median(r_proc, rounds), median(r_wall, rounds), prof.started, prof.stopped);
	close_side(&b);
	ev_ns = event_path_ns(1000000);
	/* A's thread does both ends of each transfer: one end's share is half */
	printf("# event path: %.1f ns per transfer per end (start + stop, thread CPU, median of 9 "
	       "x 1e6); one end's share of a %zu B transfer here: %.3f us (A, thread CPU, "
	       "median / 2): cost %.2f%%\n",
	       ev_ns, size, median(a_us, rounds) / 2,
	       100 * ev_ns / (median(a_us, rounds) / 2 * 1e3));
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Case 6: a peer that dies (SIGKILL) or closes its comm mid-pipeline.
 *
 * NCCL's proxy has no timeout of its own: it calls test() (and retries a
 * NULL isend) until the plugin answers, so a plugin that keeps answering
 * "not done" after the peer is gone hangs the job.  Here the surviving
 * process has NCCL_STEPS requests in flight when its peer goes; every one
 * of them must finish (with an error where its data cannot come) within
 * the bound below, measured as wall time (CLOCK_MONOTONIC, one clock for
 * every process) from the kill() or the closeSend()/closeRecv() to the
 * error; and once the comm has failed, the next irecv / isend must fail at
 * once instead of answering NULL.
 *
 * The bound: 1 s for socket, shm and auto (the peer's death is seen by the
 * kernel: a closed TCP stream, a dead process behind shared memory).  On
 * the verbs emulator it is RP_IB_PEER_BOUND_MS, 1.5 s: the ib transport
 * learns of the peer's end from its set-up connection and first gives
 * acknowledgements already on their way 500 ms (measured: the last request
 * fails 500-502 ms after the kill or close), then the same 1 s as the
 * others.
 *
 *   killed_recv   A receives; B sends 3 of 8 steps, then is killed.
 *   closed_recv   A receives; B sends 3, posts 2 more and calls closeSend.
 *   killed_send   B sends, A received 8 and posted 4 more, then is killed.
 *   closed_send   the same, and A calls closeRecv.
 */
#include "support/rw_test.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay.h"

#define RP_PEER_BOUND_MS    1000u /* socket, shm, auto */
#define RP_IB_PEER_BOUND_MS 1500u /* ib on the emulator (see above) */
#define P_LEN		    RP_STEP_BYTES
#define P_WAIT_MS	    15000 /* past the bound: a request this late is a hang */
#define P_SENT_FIRST	    3	  /* killed_recv / closed_recv: steps B completes */
#define P_SENT_MORE	    2	  /* closed_recv: posted, never tested */
#define P_MORE_RECVS	    4	  /* killed_send / closed_send: A's second batch */
#define P_MAX_SENDS	    64

static_assert(H_TAG == 1, "B's rank is the tag h_post_send() uses");

struct pcase6 {
	int kill; /* SIGKILL, else close */
};

static uint32_t bound_ms(void)
{
	return rp_transport == RP_IB ? RP_IB_PEER_BOUND_MS : RP_PEER_BOUND_MS;
}

static const char *how(const struct pcase6 *pc)
{
	return pc->kill ? "was killed" : "closed its comm";
}

/* The instant the peer went: from the parent (kill) or from the peer. */
static int event_fd(const struct rp_ctl *ctl, const struct pcase6 *pc)
{
	return pc->kill ? ctl->parent_in : ctl->in;
}

/* The dying process waits for SIGKILL, bounded. */
static void wait_to_be_killed(struct rp_ctl *ctl)
{
	rp_ctl_send(ctl->parent_out, "R", 1);
	for (int i = 0; i < 1200; i++)
		usleep(100000);
	H_CHECK(0, "never killed");
}

static void post_recvs(void *rcomm, unsigned char *buf, void *mh, void **reqs, int first, int count)
{
	for (int i = first; i < first + count; i++) {
		uint64_t deadline = rw_now_ms() + RP_STEP_TIMEOUT_MS;
		void *data = buf + (size_t)i * P_LEN;
		size_t cap = P_LEN;
		int tag = 1; /* B's rank */
		unsigned spins = 0;

		reqs[i] = NULL;
		while (!reqs[i]) {
			int rc = h_irecv(rcomm, 1, &data, &cap, &tag, &mh, &reqs[i]);

			H_CHECK(rc == ncclSuccess, "v%d irecv %d: %d (%s)", h_version, i, rc,
				h_log.last_warn);
			H_CHECK(rw_now_ms() < deadline, "v%d irecv %d never taken", h_version, i);
			if (!reqs[i])
				h_backoff(&spins);
		}
	}
}

/* --- the surviving receiver (killed_recv, closed_recv) ---------------------------- */

static void survivor_recv(struct rp_ctl *ctl)
{
	struct pcase6 *pc = ctl->pair->arg;
	struct rp_link l;
	struct h_props props;
	void *ctx = NULL, *mh = NULL, *reqs[RP_STEPS];
	unsigned char *buf = rp_alloc((size_t)RP_STEPS * P_LEN);
	int res[RP_STEPS] = {0}, left = RP_STEPS,
	    sent = P_SENT_FIRST + (pc->kill ? 0 : P_SENT_MORE);
	uint64_t t_err[RP_STEPS] = {0}, t_event = 0, worst = 0, start = rw_now_ms();
	unsigned spins = 0;
	void *req;
	int rc;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l);
	H_CHECK(h_reg_mr(l.recv[0], buf, (size_t)RP_STEPS * P_LEN, NCCL_PTR_HOST, &mh) ==
			ncclSuccess,
		"v%d regMr", h_version);
	post_recvs(l.recv[0], buf, mh, reqs, 0, RP_STEPS);
	rp_ctl_send(ctl->out, "p", 1);
	if (pc->kill)
		rp_ctl_send(ctl->parent_out, "R", 1);
	while (left) {
		uint64_t now;
		int progressed = 0;

		for (int i = 0; i < RP_STEPS; i++) {
			int done = 0, sizes[RP_PROXY_SIZES] = {0};

			if (res[i])
				continue;
			rc = h_test(reqs[i], &done, sizes);
			if (rc != ncclSuccess) {
				res[i] = -1;
				t_err[i] = rw_now_ns();
			} else if (done) {
				long bad = h_pattern_check(buf + (size_t)i * P_LEN, P_LEN,
							   rp_msg_seed(0, 1, (uint32_t)i));

				H_CHECK(i < sent,
					"receive %d completed, but the peer never sent it", i);
				H_CHECK(sizes[0] == (int)P_LEN && bad < 0,
					"receive %d: %d bytes, first bad byte %ld", i, sizes[0],
					bad);
				res[i] = 1;
			}
			left -= res[i] != 0;
			progressed |= res[i] != 0;
		}
		if (!t_event)
			rp_ctl_try_recv(event_fd(ctl, pc), &t_event, sizeof(t_event));
		now = rw_now_ms();
		H_CHECK(!t_event || now < t_event / 1000000 + P_WAIT_MS,
			"over %s, %d receive(s) still open %d ms after the peer %s (test() keeps "
			"answering 'not done'; plugin's last warning: %s)",
			rp_transport_name, left, P_WAIT_MS, how(pc), h_log.last_warn);
		H_CHECK(now < start + 2 * RP_STEP_TIMEOUT_MS, "the peer never went");
		if (!progressed)
			h_backoff(&spins);
	}
	if (!t_event)
		rp_ctl_recv(event_fd(ctl, pc), &t_event, sizeof(t_event));
	for (int i = 0; i < RP_STEPS; i++) {
		H_CHECK(i < sent || res[i] < 0, "receive %d (never sent) did not fail", i);
		if (res[i] > 0)
			continue;
		H_CHECK(t_err[i] >= t_event, "receive %d failed %.1f ms before the peer %s", i,
			(double)(t_event - t_err[i]) / 1e6, how(pc));
		worst = RW_MAX(worst, t_err[i] - t_event);
	}
	print_message("[          ] over %s, the peer %s: the last of the receives failed "
		      "%.1f ms later (bound %u ms)\n",
		      rp_transport_name, how(pc), (double)worst / 1e6, bound_ms());
	H_CHECK(worst <= (uint64_t)bound_ms() * 1000000,
		"over %s, the peer %s and the last open receive failed %.1f ms later (bound %u "
		"ms)",
		rp_transport_name, how(pc), (double)worst / 1e6, bound_ms());
	/* A failed comm answers at once. */
	{
		void *data = buf;
		size_t cap = P_LEN;
		int tag = 1;

		req = NULL;
		rc = h_irecv(l.recv[0], 1, &data, &cap, &tag, &mh, &req);
		H_CHECK(rc != ncclSuccess,
			"over %s, irecv on a comm whose peer %s returned success (request %p): "
			"NCCL would wait on it",
			rp_transport_name, how(pc), req);
	}
	if (!pc->kill)
		rp_ctl_send(ctl->out, "d", 1);
	(void)h_dereg_mr(l.recv[0], mh);
	(void)h_close_recv(l.recv[0]);
	(void)h_close_send(l.send[0]);
	h_child_finalize(ctx);
	free(buf);
}

/* The peer: sends P_SENT_FIRST steps, then goes. */
static void peer_send(struct rp_ctl *ctl)
{
	struct pcase6 *pc = ctl->pair->arg;
	struct rp_link l;
	struct h_props props;
	void *ctx = NULL, *mh = NULL, *reqs[RP_STEPS];
	unsigned char *buf = rp_alloc((size_t)RP_STEPS * P_LEN);
	uint64_t t;
	char c;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l);
	H_CHECK(h_reg_mr(l.send[0], buf, (size_t)RP_STEPS * P_LEN, NCCL_PTR_HOST, &mh) ==
			ncclSuccess,
		"v%d regMr", h_version);
	rp_ctl_recv(ctl->in, &c, 1);
	for (int i = 0; i < P_SENT_FIRST + P_SENT_MORE; i++) {
		h_pattern_fill(buf + (size_t)i * P_LEN, P_LEN, rp_msg_seed(0, 1, (uint32_t)i));
		reqs[i] = h_post_send(l.send[0], buf + (size_t)i * P_LEN, P_LEN, mh); /* tag 1 */
		if (i < P_SENT_FIRST)
			h_wait_req(reqs[i], NULL, "send");
		if (i + 1 == P_SENT_FIRST && pc->kill)
			wait_to_be_killed(ctl);
	}
	/* Mid-pipeline: two sends posted and not tested. */
	t = rw_now_ns();
	(void)h_close_send(l.send[0]);
	rp_ctl_send(ctl->out, &t, sizeof(t));
	rp_ctl_recv(ctl->in, &c, 1);
	(void)h_close_recv(l.recv[0]);
	h_child_finalize(ctx);
	free(buf);
}

/* --- the surviving sender (killed_send, closed_send) ------------------------------ */

static void survivor_send(struct rp_ctl *ctl)
{
	struct pcase6 *pc = ctl->pair->arg;
	struct rp_link l;
	struct h_props props;
	void *ctx = NULL, *mh = NULL, *reqs[P_MAX_SENDS] = {0};
	unsigned char *buf = rp_alloc((size_t)RP_STEPS * P_LEN);
	uint32_t sent = 0, done = 0, failed = 0, nulls = 0;
	uint64_t t_event = 0, t_first = 0, t_all = 0, start = rw_now_ms();
	unsigned spins = 0;
	int told = 0, rc;
	char c;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l);
	H_CHECK(h_reg_mr(l.send[0], buf, (size_t)RP_STEPS * P_LEN, NCCL_PTR_HOST, &mh) ==
			ncclSuccess,
		"v%d regMr", h_version);
	rp_ctl_recv(ctl->in, &c, 1);
	/* The proxy: up to NCCL_STEPS in flight, a NULL isend tried again. */
	for (;;) {
		int progressed = 0, open = 0;
		uint64_t now;

		if (!failed && sent < P_MAX_SENDS && sent < done + RP_STEPS) {
			unsigned char *slot = buf + (size_t)(sent % RP_STEPS) * P_LEN;
			void *req = NULL;

			h_pattern_fill(slot, P_LEN, rp_msg_seed(0, 1, sent));
			rc = h_isend(l.send[0], slot, P_LEN, 1, mh, &req);
			if (rc != ncclSuccess) {
				failed++;
				t_first = t_first ? t_first : rw_now_ns();
			} else if (req) {
				reqs[sent++] = req;
				progressed = 1;
			} else {
				nulls++;
			}
		}
		for (uint32_t i = 0; i < sent; i++) {
			int d = 0, size = -1;

			if (!reqs[i])
				continue;
			rc = h_test(reqs[i], &d, &size);
			if (rc != ncclSuccess) {
				failed++;
				t_first = t_first ? t_first : rw_now_ns();
				reqs[i] = NULL;
			} else if (d) {
				done++;
				reqs[i] = NULL;
				progressed = 1;
			}
			open += reqs[i] != NULL;
		}
		if (done >= RP_STEPS && !told) {
			told = 1;
			rp_ctl_send(ctl->out, "8", 1); /* A posts its second batch */
			if (pc->kill)
				rp_ctl_send(ctl->parent_out, "R", 1);
		}
		if (!t_event)
			rp_ctl_try_recv(event_fd(ctl, pc), &t_event, sizeof(t_event));
		if (failed && !open) {
			t_all = rw_now_ns();
			break;
		}
		now = rw_now_ms();
		H_CHECK(!t_event || now < t_event / 1000000 + P_WAIT_MS,
			"over %s, no error %d ms after the peer %s: %d send(s) still open, %u NULL "
			"isend(s) (plugin's last warning: %s)",
			rp_transport_name, P_WAIT_MS, how(pc), open, nulls, h_log.last_warn);
		H_CHECK(now < start + 2 * RP_STEP_TIMEOUT_MS, "the peer never went");
		if (!progressed)
			h_backoff(&spins);
	}
	if (!t_event)
		rp_ctl_recv(event_fd(ctl, pc), &t_event, sizeof(t_event));
	H_CHECK(t_first >= t_event, "a send failed %.1f ms before the peer %s",
		(double)(t_event - t_first) / 1e6, how(pc));
	print_message("[          ] over %s, the peer %s: first error %.1f ms later, every send "
		      "finished %.1f ms later (bound %u ms)\n",
		      rp_transport_name, how(pc), (double)(t_first - t_event) / 1e6,
		      (double)(t_all - t_event) / 1e6, bound_ms());
	H_CHECK(t_all - t_event <= (uint64_t)bound_ms() * 1000000,
		"over %s, the peer %s and the sends took %.1f ms to fail (bound %u ms)",
		rp_transport_name, how(pc), (double)(t_all - t_event) / 1e6, bound_ms());
	/* A failed comm answers at once. */
	{
		void *req = NULL;

		rc = h_isend(l.send[0], buf, P_LEN, 1, mh, &req);
		H_CHECK(rc != ncclSuccess,
			"over %s, isend on a comm whose peer %s returned success (request %p): "
			"NCCL would retry it forever",
			rp_transport_name, how(pc), req);
	}
	if (!pc->kill)
		rp_ctl_send(ctl->out, "d", 1);
	(void)h_dereg_mr(l.send[0], mh);
	(void)h_close_send(l.send[0]);
	(void)h_close_recv(l.recv[0]);
	h_child_finalize(ctx);
	free(buf);
}

/* The peer: receives 8, posts 4 more, then goes. */
static void peer_recv(struct rp_ctl *ctl)
{
	struct pcase6 *pc = ctl->pair->arg;
	struct rp_link l;
	struct h_props props;
	void *ctx = NULL, *mh = NULL, *reqs[RP_STEPS + P_MORE_RECVS];
	size_t len = (size_t)(RP_STEPS + P_MORE_RECVS) * P_LEN;
	unsigned char *buf = rp_alloc(len);
	uint64_t t, last = 0;
	unsigned spins = 0;
	char c;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l);
	H_CHECK(h_reg_mr(l.recv[0], buf, len, NCCL_PTR_HOST, &mh) == ncclSuccess, "v%d regMr",
		h_version);
	post_recvs(l.recv[0], buf, mh, reqs, 0, RP_STEPS);
	rp_ctl_send(ctl->out, "p", 1);
	/* The proxy never blocks: test() the receives until B has sent 8. */
	while (!rp_ctl_try_recv(ctl->in, &c, 1)) {
		int progressed = 0;

		for (int i = 0; i < RP_STEPS; i++) {
			int done = 0, sizes[RP_PROXY_SIZES] = {0};

			if (!reqs[i])
				continue;
			H_CHECK(h_test(reqs[i], &done, sizes) == ncclSuccess, "v%d test: %s",
				h_version, h_log.last_warn);
			if (done) {
				H_CHECK(sizes[0] == (int)P_LEN &&
						h_pattern_check(buf + (size_t)i * P_LEN, P_LEN,
								rp_msg_seed(0, 1, (uint32_t)i)) < 0,
					"receive %d: %d bytes or wrong contents", i, sizes[0]);
				reqs[i] = NULL;
				progressed = 1;
			}
		}
		rp_idle(progressed, &last, &spins, "receiver before its peer goes");
	}
	post_recvs(l.recv[0], buf, mh, reqs, RP_STEPS, P_MORE_RECVS);
	if (pc->kill)
		wait_to_be_killed(ctl);
	t = rw_now_ns();
	(void)h_close_recv(l.recv[0]);
	rp_ctl_send(ctl->out, &t, sizeof(t));
	rp_ctl_recv(ctl->in, &c, 1);
	(void)h_close_send(l.send[0]);
	h_child_finalize(ctx);
	free(buf);
}

/* --- the parent ------------------------------------------------------------------------- */

/* Wait for 'R' from both children; 0 if one of them went first. */
static int both_ready(struct rp_pair *p)
{
	struct pollfd pfd[2] = {{.fd = p->a_to_parent[0], .events = POLLIN},
				{.fd = p->b_to_parent[0], .events = POLLIN}};
	uint64_t deadline = rw_now_ms() + 2 * RP_STEP_TIMEOUT_MS;
	int ready[2] = {0, 0};

	while (!ready[0] || !ready[1]) {
		if (rw_now_ms() > deadline)
			return 0;
		if (poll(pfd, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			char c;

			if (!ready[i] && (pfd[i].revents & (POLLIN | POLLHUP))) {
				if (read(pfd[i].fd, &c, 1) != 1 || c != 'R')
					return 0;
				ready[i] = 1;
				pfd[i].events = 0;
			}
		}
	}
	return 1;
}

static void run_peer_case(struct pcase6 *pc, rp_child_fn a, rp_child_fn b, int dying,
			  const char *what)
{
	struct rp_pair p;
	pid_t pids[2];
	char msg[160];

	snprintf(msg, sizeof(msg), "%s over %s (seed %llu)", what, rp_transport_name,
		 (unsigned long long)rp_seed);
	rp_pair_init(&p, 11, pc);
	rp_pair_spawn(&p, a, b, pids);
	if (pc->kill && both_ready(&p)) {
		int to_fd = dying ? p.parent_to_a[1] : p.parent_to_b[1];
		uint64_t t = rw_now_ns();

		kill(pids[dying], SIGKILL);
		waitpid(pids[dying], NULL, 0);
		(void)!write(to_fd, &t, sizeof(t));
		h_wait_children(&pids[1 - dying], 1, msg);
	} else {
		h_wait_children(pids, 2, msg);
	}
	rp_pair_close_parent(&p);
}

void rp_case_peer_killed_recv(void **state)
{
	struct pcase6 pc = {.kill = 1};

	(void)state;
	run_peer_case(&pc, survivor_recv, peer_send, 1, "v11 sender killed mid-pipeline");
}

void rp_case_peer_closed_recv(void **state)
{
	struct pcase6 pc = {.kill = 0};

	(void)state;
	run_peer_case(&pc, survivor_recv, peer_send, 1, "v11 sender closed mid-pipeline");
}

void rp_case_peer_killed_send(void **state)
{
	struct pcase6 pc = {.kill = 1};

	(void)state;
	run_peer_case(&pc, peer_recv, survivor_send, 0, "v11 receiver killed mid-pipeline");
}

void rp_case_peer_closed_send(void **state)
{
	struct pcase6 pc = {.kill = 0};

	(void)state;
	run_peer_case(&pc, peer_recv, survivor_send, 0, "v11 receiver closed mid-pipeline");
}

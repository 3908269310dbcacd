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
 * the verbs emulator it is RP_IB_PEER_BOUND_MS, 2.5 s: the ib transport
 * learns of the peer's end from its set-up connection and first gives
 * acknowledgements already on their way 500 ms (measured: the last request
 * fails 500-502 ms after the kill or close), and the emulator's wire
 * threads, which a loaded host may keep off a core, take their turn
 * besides; 2 s of margin for them, against the others' 1 s.
 *
 *   killed_recv   A receives; B sends 3 of 8 steps, then is killed.
 *   closed_recv   A receives; B sends 3, posts 2 more and calls closeSend.
 *   killed_send   B sends, A received 8 and posted 4 more, then is killed.
 *   closed_send   the same, and A calls closeRecv.
 */
#include "support/rw_test.h"

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay.h"

#define RP_PEER_BOUND_MS    1000u /* socket, shm, auto */
#define RP_IB_PEER_BOUND_MS 2500u /* ib on the emulator (see above) */
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

/* One process of a case: its comms to the peer (one channel), its context
 * and its registered buffer on the data comm (send or recv). */
struct pside {
	const struct pcase6 *pc;
	struct rp_link l;
	void *ctx, *mh, *data; /* data: l.send[0] or l.recv[0] */
	unsigned char *buf;
	int recv;
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

/* Set up as NCCL does, then a buffer of len bytes registered on the send
 * comm (recv = 0) or the recv comm. */
static void side_open(struct rp_ctl *ctl, struct pside *s, size_t len, int recv)
{
	struct h_props props;

	memset(s, 0, sizeof(*s));
	s->pc = ctl->pair->arg;
	s->recv = recv;
	s->buf = rp_alloc(len);
	rp_child_setup(ctl->pair->version, &s->ctx, &props);
	rp_link_open(ctl, s->ctx, 1, &s->l);
	s->data = recv ? s->l.recv[0] : s->l.send[0];
	H_CHECK(h_reg_mr(s->data, s->buf, len, NCCL_PTR_HOST, &s->mh) == ncclSuccess, "v%d regMr",
		h_version);
}

static void close_comm(struct pside *s, int recv)
{
	(void)(recv ? h_close_recv(s->l.recv[0]) : h_close_send(s->l.send[0]));
}

/* The survivor, done: a failed comm answers the next irecv / isend at once
 * (success would have NCCL wait on the request, or retry a NULL one
 * forever); then it tells a closing peer so and closes everything. */
static void survivor_end(struct rp_ctl *ctl, struct pside *s)
{
	void *data = s->buf, *mh = s->mh, *req = NULL;
	size_t cap = P_LEN;
	int tag = 1; /* B's rank */
	int rc = s->recv ? h_irecv(s->data, 1, &data, &cap, &tag, &mh, &req)
			 : h_isend(s->data, s->buf, P_LEN, tag, s->mh, &req);

	H_CHECK(rc != ncclSuccess,
		"over %s, %s on a comm whose peer %s returned success (request %p): NCCL would "
		"wait on it",
		rp_transport_name, s->recv ? "irecv" : "isend", how(s->pc), req);
	if (!s->pc->kill)
		rp_ctl_send(ctl->out, "d", 1);
	(void)h_dereg_mr(s->data, s->mh);
	close_comm(s, s->recv);
	close_comm(s, !s->recv);
	h_child_finalize(s->ctx);
	free(s->buf);
}

/* The dying process waits for SIGKILL, bounded. */
static void wait_to_be_killed(struct rp_ctl *ctl)
{
	rp_ctl_send(ctl->parent_out, "R", 1);
	for (int i = 0; i < 1200; i++)
		usleep(100000);
	H_CHECK(0, "never killed");
}

/* The peer goes mid-pipeline: killed, or its data comm closed with
 * requests in flight (the instant sent to the survivor). */
static void peer_go(struct rp_ctl *ctl, struct pside *s)
{
	uint64_t t;
	char c;

	if (s->pc->kill)
		wait_to_be_killed(ctl);
	t = rw_now_ns();
	close_comm(s, s->recv);
	rp_ctl_send(ctl->out, &t, sizeof(t));
	rp_ctl_recv(ctl->in, &c, 1);
	close_comm(s, !s->recv);
	h_child_finalize(s->ctx);
	free(s->buf);
}

/* In the survivor's loop: learn when the peer went; fail if something is
 * still open (what, printf-style) P_WAIT_MS later, or the peer never goes. */
static void check_not_hung(struct rp_ctl *ctl, const struct pcase6 *pc, uint64_t *t_event,
			   uint64_t start, const char *what, ...)
	__attribute__((format(printf, 5, 6)));

static void check_not_hung(struct rp_ctl *ctl, const struct pcase6 *pc, uint64_t *t_event,
			   uint64_t start, const char *what, ...)
{
	uint64_t now;

	if (!*t_event)
		rp_ctl_try_recv(event_fd(ctl, pc), t_event, sizeof(*t_event));
	now = rw_now_ms();
	if (*t_event && now >= *t_event / 1000000 + P_WAIT_MS) {
		char open[160];
		va_list ap;

		va_start(ap, what);
		vsnprintf(open, sizeof(open), what, ap);
		va_end(ap);
		H_CHECK(0, "over %s, %s %d ms after the peer %s (plugin's last warning: %s)",
			rp_transport_name, open, P_WAIT_MS, how(pc), h_log.last_warn);
	}
	H_CHECK(now < start + 2 * RP_STEP_TIMEOUT_MS, "the peer never went");
}

/* The survivor's last request ended late_ns after the peer went: within the
 * bound. */
static void check_bound(const struct pcase6 *pc, uint64_t late_ns, const char *what)
{
	print_message("[          ] over %s, the peer %s: %s %.1f ms later (bound %u ms)\n",
		      rp_transport_name, how(pc), what, (double)late_ns / 1e6, bound_ms());
	H_CHECK(late_ns <= (uint64_t)bound_ms() * 1000000,
		"over %s, the peer %s and %s %.1f ms later (bound %u ms)", rp_transport_name,
		how(pc), what, (double)late_ns / 1e6, bound_ms());
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
	struct pside s;
	void *reqs[RP_STEPS];
	int res[RP_STEPS] = {0}, left = RP_STEPS, sent;
	uint64_t t_err[RP_STEPS] = {0}, t_event = 0, worst = 0, start = rw_now_ms();
	unsigned spins = 0;
	int rc;

	side_open(ctl, &s, (size_t)RP_STEPS * P_LEN, 1);
	sent = P_SENT_FIRST + (s.pc->kill ? 0 : P_SENT_MORE);
	post_recvs(s.data, s.buf, s.mh, reqs, 0, RP_STEPS);
	rp_ctl_send(ctl->out, "p", 1);
	if (s.pc->kill)
		rp_ctl_send(ctl->parent_out, "R", 1);
	while (left) {
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
				long bad = h_pattern_check(s.buf + (size_t)i * P_LEN, P_LEN,
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
		check_not_hung(ctl, s.pc, &t_event, start,
			       "%d receive(s) still open (test() keeps answering 'not done')",
			       left);
		if (!progressed)
			h_backoff(&spins);
	}
	if (!t_event)
		rp_ctl_recv(event_fd(ctl, s.pc), &t_event, sizeof(t_event));
	for (int i = 0; i < RP_STEPS; i++) {
		H_CHECK(i < sent || res[i] < 0, "receive %d (never sent) did not fail", i);
		if (res[i] > 0)
			continue;
		H_CHECK(t_err[i] >= t_event, "receive %d failed %.1f ms before the peer %s", i,
			(double)(t_event - t_err[i]) / 1e6, how(s.pc));
		worst = RW_MAX(worst, t_err[i] - t_event);
	}
	check_bound(s.pc, worst, "the last open receive failed");
	survivor_end(ctl, &s);
}

/* The peer: sends P_SENT_FIRST steps, then goes with P_SENT_MORE posted and
 * not tested. */
static void peer_send(struct rp_ctl *ctl)
{
	struct pside s;
	void *reqs[RP_STEPS];
	char c;

	side_open(ctl, &s, (size_t)RP_STEPS * P_LEN, 0);
	rp_ctl_recv(ctl->in, &c, 1);
	for (int i = 0; i < P_SENT_FIRST + (s.pc->kill ? 0 : P_SENT_MORE); i++) {
		h_pattern_fill(s.buf + (size_t)i * P_LEN, P_LEN, rp_msg_seed(0, 1, (uint32_t)i));
		reqs[i] = h_post_send(s.data, s.buf + (size_t)i * P_LEN, P_LEN, s.mh); /* tag 1 */
		if (i < P_SENT_FIRST)
			h_wait_req(reqs[i], NULL, "send");
	}
	peer_go(ctl, &s);
}

/* --- the surviving sender (killed_send, closed_send) ------------------------------ */

static void survivor_send(struct rp_ctl *ctl)
{
	struct pside s;
	void *reqs[P_MAX_SENDS] = {0};
	uint32_t sent = 0, done = 0, failed = 0, nulls = 0;
	uint64_t t_event = 0, t_first = 0, t_all = 0, start = rw_now_ms();
	unsigned spins = 0;
	int told = 0, rc;
	char c;

	side_open(ctl, &s, (size_t)RP_STEPS * P_LEN, 0);
	rp_ctl_recv(ctl->in, &c, 1);
	/* The proxy: up to NCCL_STEPS in flight, a NULL isend tried again. */
	for (;;) {
		int progressed = 0, open = 0;

		if (!failed && sent < P_MAX_SENDS && sent < done + RP_STEPS) {
			unsigned char *slot = s.buf + (size_t)(sent % RP_STEPS) * P_LEN;
			void *req = NULL;

			h_pattern_fill(slot, P_LEN, rp_msg_seed(0, 1, sent));
			rc = h_isend(s.data, slot, P_LEN, 1, s.mh, &req);
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
			if (s.pc->kill)
				rp_ctl_send(ctl->parent_out, "R", 1);
		}
		if (failed && !open) {
			t_all = rw_now_ns();
			break;
		}
		check_not_hung(ctl, s.pc, &t_event, start,
			       "no error: %d send(s) still open, %u NULL isend(s)", open, nulls);
		if (!progressed)
			h_backoff(&spins);
	}
	if (!t_event)
		rp_ctl_recv(event_fd(ctl, s.pc), &t_event, sizeof(t_event));
	H_CHECK(t_first >= t_event, "a send failed %.1f ms before the peer %s",
		(double)(t_event - t_first) / 1e6, how(s.pc));
	print_message("[          ] over %s, the peer %s: first error %.1f ms later\n",
		      rp_transport_name, how(s.pc), (double)(t_first - t_event) / 1e6);
	check_bound(s.pc, t_all - t_event, "every send finished");
	survivor_end(ctl, &s);
}

/* The peer: receives 8, posts 4 more, then goes. */
static void peer_recv(struct rp_ctl *ctl)
{
	struct pside s;
	void *reqs[RP_STEPS + P_MORE_RECVS];
	uint64_t last = 0;
	unsigned spins = 0;
	char c;

	side_open(ctl, &s, (size_t)(RP_STEPS + P_MORE_RECVS) * P_LEN, 1);
	post_recvs(s.data, s.buf, s.mh, reqs, 0, RP_STEPS);
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
						h_pattern_check(s.buf + (size_t)i * P_LEN, P_LEN,
								rp_msg_seed(0, 1, (uint32_t)i)) < 0,
					"receive %d: %d bytes or wrong contents", i, sizes[0]);
				reqs[i] = NULL;
				progressed = 1;
			}
		}
		rp_idle(progressed, &last, &spins, "receiver before its peer goes");
	}
	post_recvs(s.data, s.buf, s.mh, reqs, RP_STEPS, P_MORE_RECVS);
	peer_go(ctl, &s);
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

static void run_peer_case(int killed, rp_child_fn a, rp_child_fn b, int dying, const char *what)
{
	struct pcase6 pc = {.kill = killed};
	struct rp_pair p;
	pid_t pids[2];
	char msg[160];

	snprintf(msg, sizeof(msg), "v11 %s %s mid-pipeline over %s (seed %llu)",
		 dying ? "sender" : "receiver", what, rp_transport_name,
		 (unsigned long long)rp_seed);
	rp_pair_init(&p, 11, &pc);
	rp_pair_spawn(&p, a, b, pids);
	if (pc.kill && both_ready(&p)) {
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

/* A survives; B, the sender, goes. */
void rp_case_peer_killed_recv(void **state)
{
	(void)state;
	run_peer_case(1, survivor_recv, peer_send, 1, "killed");
}

void rp_case_peer_closed_recv(void **state)
{
	(void)state;
	run_peer_case(0, survivor_recv, peer_send, 1, "closed");
}

/* B survives; A, the receiver, goes. */
void rp_case_peer_killed_send(void **state)
{
	(void)state;
	run_peer_case(1, peer_recv, survivor_send, 0, "killed");
}

void rp_case_peer_closed_send(void **state)
{
	(void)state;
	run_peer_case(0, peer_recv, survivor_send, 0, "closed");
}

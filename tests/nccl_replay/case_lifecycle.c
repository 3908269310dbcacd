/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Case 4: the v11 per-communicator lifecycle (src/plugin/net.cc
 * ncclNetPluginInit): init(&comm->netContext, commHash, config, logger,
 * profiler) for every communicator, finalize(netContext) when it goes.
 * NCCL 2.28 also calls finalize after an init that failed, with the
 * context init never wrote (NULL).  Here, in each process: a failed init
 * (and finalize after it), two communicators alive at once with traffic on
 * both, one finalized while the other carries on, then a third after the
 * plugin's last context went.
 *
 * Case 5: connect / accept return a NULL comm until done, and NCCL's proxy
 * calls them between progress rounds of other connections: one side spins
 * on accept (or connect) while the other sits in test() on requests that
 * cannot finish yet, then both carry on over old and new comms.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define MIB (1u << 20)

static const struct rp_pipe_spec small_spec = {
	.nops = 2,
	.nbytes = {3 * MIB + 11, 5},
	.slice = 1,
	.flush = 1,
};

/* --- case 4 ----------------------------------------------------------------------- */

/* Make init fail the way a misconfigured host does, where we know one. */
static const char *failing_env(const char **value)
{
	switch (rp_transport) {
	case RP_SOCKET:
		*value = "rw_no_such_if0";
		return "RINGWAY_SOCKET_IFNAME";
	case RP_IB:
		*value = "rw_no_such_hca0";
		return "RINGWAY_IB_HCA";
	default:
		return NULL;
	}
}

static void failed_inits(int version)
{
	const char *value = NULL, *name = failing_env(&value);
	void *ctx = NULL;
	int rc;

	h_bind(h_open(), version);
	memset(&h_log, 0, sizeof(h_log));
	if (name) {
		char *saved = getenv(name) ? strdup(getenv(name)) : NULL;

		setenv(name, value, 1);
		rc = h_init(&ctx);
		H_CHECK(rc != ncclSuccess, "v%d init with %s=%s: %d, want an error", version, name,
			value, rc);
		H_CHECK(ctx == NULL, "v%d failed init wrote a context (%p)", version, ctx);
		H_CHECK(h_log.warns >= 1, "v%d failed init logged no warning", version);
		if (saved)
			setenv(name, saved, 1);
		else
			unsetenv(name);
		free(saved);
		/* NCCL 2.28: finalize(comm->netContext) after the failure. */
		rc = h_finalize(ctx);
		H_CHECK(rc == ncclSuccess, "v%d finalize(NULL) after a failed init: %d", version,
			rc);
	}
	/* init(ctx = NULL) is refused; finalize(NULL) is still fine. */
	rc = h_init(NULL);
	H_CHECK(rc != ncclSuccess, "v%d init(ctx = NULL): %d, want an error", version, rc);
	H_CHECK(h_finalize(NULL) == ncclSuccess, "v%d finalize(NULL) after init(NULL)", version);
}

/* Traffic both ways on every link given, then a rendezvous (neither side
 * closes before the other is done). */
static void traffic(struct rp_ctl *ctl, struct rp_link *const *links, int nlinks,
		    uint32_t conn_base, const char *name)
{
	char what[96];

	snprintf(what, sizeof(what), "v%d %s", ctl->pair->version, name);
	rp_pipes_run(links, nlinks, conn_base, ctl->name == 'A' ? 0 : 1, &small_spec, what);
	rp_ctl_sync(ctl);
}

/* A communicator goes: its comms, then its context. */
static void comm_end(struct rp_link *l, void *ctx, const char *name)
{
	rp_link_close(l);
	H_CHECK(h_finalize(ctx) == ncclSuccess, "v%d finalize(%s): %s", h_version, name,
		h_log.last_warn);
}

static void lifecycle_child(struct rp_ctl *ctl)
{
	int version = ctl->pair->version;
	struct rp_link la, lb, lc;
	void *ca = NULL, *cb = NULL, *cc = NULL;
	struct h_props props;
	int rc;

	failed_inits(version);
	/* Communicator A, then B, both alive. */
	rp_child_setup(version, &ca, &props);
	rc = h_init(&cb);
	H_CHECK(rc == ncclSuccess && cb && cb != ca, "v%d second init: %d, ctx %p (first %p)",
		version, rc, cb, ca);
	rp_link_open(ctl, ca, 1, &la);
	rp_link_open(ctl, cb, 2, &lb);
	traffic(ctl, (struct rp_link *const[]){&la, &lb}, 2, 0, "two communicators");
	/* A goes; B carries on. */
	comm_end(&la, ca, "A");
	traffic(ctl, (struct rp_link *const[]){&lb}, 1, 64, "communicator B after A's finalize");
	comm_end(&lb, cb, "B");
	/* The plugin's last context is gone: a new communicator starts over. */
	rc = h_init(&cc);
	H_CHECK(rc == ncclSuccess && cc, "v%d init after the last finalize: %d (%s)", version, rc,
		h_log.last_warn);
	rp_link_open(ctl, cc, 1, &lc);
	traffic(ctl, (struct rp_link *const[]){&lc}, 1, 128, "communicator C");
	comm_end(&lc, cc, "C");
	H_CHECK(h_log.warns == 0, "v%d: %d plugin warning(s), last: %s", version, h_log.warns,
		h_log.last_warn);
}

void rp_case_lifecycle(void **state)
{
	struct rp_pair p;

	(void)state;
	rp_pair_init(&p, 11, NULL);
	rp_pair_run(&p, lifecycle_child, lifecycle_child, "v11 communicator lifecycle");
	rp_pair_init(&p, 12, NULL);
	rp_pair_run(&p, lifecycle_child, lifecycle_child, "v12 communicator lifecycle");
}

/* --- case 5 ------------------------------------------------------------------------- */

#define BURST	   RP_STEPS
#define BURST_LEN  (64u << 10)
#define SPIN_CALLS 200 /* NULL answers the spinning side collects first */

/* Eight receives (or sends) of 64 KiB on one comm, tested round-robin. */
struct burst {
	void *comm, *mh;
	unsigned char *buf;
	void *req[BURST];
	int left;
	uint32_t conn;
	int tag, recv;
};

static void burst_init(struct burst *b, void *comm, uint32_t conn, int tag, int recv)
{
	memset(b, 0, sizeof(*b));
	b->comm = comm;
	b->conn = conn;
	b->tag = tag;
	b->recv = recv;
	b->buf = rp_alloc((size_t)BURST * BURST_LEN);
	H_CHECK(h_reg_mr(comm, b->buf, (size_t)BURST * BURST_LEN, NCCL_PTR_HOST, &b->mh) ==
			ncclSuccess,
		"v%d regMr", h_version);
}

static void burst_post(struct burst *b)
{
	uint64_t deadline = rw_now_ms() + RP_STEP_TIMEOUT_MS;
	unsigned spins = 0;

	for (int i = 0; i < BURST; i++) {
		void *data = b->buf + (size_t)i * BURST_LEN;
		size_t len = BURST_LEN - (size_t)i;
		int rc;

		if (!b->recv)
			h_pattern_fill(data, len, rp_msg_seed(b->conn, b->tag, (uint32_t)i));
		b->req[i] = NULL;
		while (!b->req[i]) {
			rc = b->recv ? h_irecv(b->comm, 1, &data, &len, &b->tag, &b->mh, &b->req[i])
				     : h_isend(b->comm, data, len, b->tag, b->mh, &b->req[i]);
			H_CHECK(rc == ncclSuccess, "v%d %s: %d (%s)", h_version,
				b->recv ? "irecv" : "isend", rc, h_log.last_warn);
			H_CHECK(rw_now_ms() < deadline, "v%d %s never taken", h_version,
				b->recv ? "irecv" : "isend");
			if (!b->req[i])
				h_backoff(&spins);
		}
	}
	b->left = BURST;
}

/* One test() of each request still open; checks what completed. */
static int burst_test(struct burst *b)
{
	int did = 0;

	for (int i = 0; i < BURST; i++) {
		int done = 0, sizes[RP_PROXY_SIZES] = {0}, rc;

		if (!b->req[i])
			continue;
		rc = h_test(b->req[i], &done, sizes);
		H_CHECK(rc == ncclSuccess, "v%d test: %d (%s)", h_version, rc, h_log.last_warn);
		if (!done)
			continue;
		b->req[i] = NULL;
		b->left--;
		did = 1;
		if (b->recv) {
			size_t len = BURST_LEN - (size_t)i;
			long bad = h_pattern_check(b->buf + (size_t)i * BURST_LEN, len,
						   rp_msg_seed(b->conn, b->tag, (uint32_t)i));

			H_CHECK(sizes[0] == (int)len && bad < 0,
				"v%d conn %u message %d: %d bytes (want %zu), first bad byte %ld",
				h_version, b->conn, i, sizes[0], len, bad);
		}
	}
	return did;
}

/* Test the three bursts until every request is done; then deregister. */
static void bursts_finish(struct burst *const b[3], uint64_t *last, unsigned *spins)
{
	while (b[0]->left || b[1]->left || b[2]->left)
		rp_idle(burst_test(b[0]) | burst_test(b[1]) | burst_test(b[2]), last, spins,
			"bursts after the new comms");
	for (int i = 0; i < 3; i++) {
		H_CHECK(h_dereg_mr(b[i]->comm, b[i]->mh) == ncclSuccess, "v%d deregMr", h_version);
		free(b[i]->buf);
	}
}

/* The end of a side, after its new comms closed: the first link and the
 * context go, and the plugin warned about nothing on the way. */
static void side_end(struct rp_ctl *ctl, struct rp_link *l0, void *ctx)
{
	rp_link_close(l0);
	h_child_finalize(ctx);
	H_CHECK(h_log.warns == 0, "v%d %c: %d plugin warning(s), last: %s", h_version, ctl->name,
		h_log.warns, h_log.last_warn);
}

/* A: accepts new comms, B connects; who spins while whom is in test(). */
static void connect_a(struct rp_ctl *ctl)
{
	char h1[NCCL_NET_HANDLE_MAXSIZE], h2[NCCL_NET_HANDLE_MAXSIZE];
	struct rp_link l0;
	struct burst to_b, on_new, from_b;
	void *ctx = NULL, *listen = NULL, *r1 = NULL, *s2 = NULL;
	struct h_props props;
	uint32_t nulls = 0, calls = 0;
	uint64_t last = 0;
	unsigned spins = 0;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l0);
	/* 1: accept returns NULL again and again while B sits in test(). */
	memset(h1, 0x5a, sizeof(h1));
	H_CHECK(h_listen(ctx, H_DEV, h1, &listen) == ncclSuccess, "v%d listen", h_version);
	rp_ctl_send(ctl->out, h1, sizeof(h1));
	while (!r1) {
		H_CHECK(h_accept(listen, &r1) == ncclSuccess, "v%d accept: %s", h_version,
			h_log.last_warn);
		if (!r1 && ++nulls == SPIN_CALLS)
			rp_ctl_send(ctl->out, "s", 1); /* B may connect now */
		rp_idle(r1 != NULL, &last, &spins, "accept while the peer is in test()");
	}
	H_CHECK(nulls >= SPIN_CALLS, "accept returned a comm before B connected");
	H_CHECK(h_close_listen(listen) == ncclSuccess, "v%d closeListen", h_version);
	/* B's receives on the old comm can finish now. */
	burst_init(&to_b, l0.send[0], 1, 0, 0);
	burst_post(&to_b);
	/* 2: connect spins while B, busy in test() again, accepts late. */
	rp_ctl_recv(ctl->in, h2, sizeof(h2));
	burst_init(&from_b, r1, 2, 1, 1);
	burst_post(&from_b);
	nulls = 0;
	while (!s2 || calls < SPIN_CALLS) {
		int did = burst_test(&to_b) | burst_test(&from_b);

		if (!s2) {
			H_CHECK(h_connect(ctx, H_DEV, h2, &s2) == ncclSuccess, "v%d connect: %s",
				h_version, h_log.last_warn);
			nulls += !s2;
		}
		if (++calls == SPIN_CALLS)
			rp_ctl_send(ctl->out, "a", 1); /* B may accept now */
		rp_idle(did || s2, &last, &spins, "connect while the peer is in test()");
	}
	/* Sends on the new comm may come before B's accept returned. */
	burst_init(&on_new, s2, 3, 0, 0);
	burst_post(&on_new);
	print_message("[          ] connect over %s: %u NULL comm(s) from connect while the peer "
		      "was in test()\n",
		      rp_transport_name, nulls);
	bursts_finish((struct burst *const[]){&to_b, &from_b, &on_new}, &last, &spins);
	rp_ctl_sync(ctl);
	H_CHECK(h_close_recv(r1) == ncclSuccess && h_close_send(s2) == ncclSuccess, "v%d close",
		h_version);
	side_end(ctl, &l0, ctx);
}

static void connect_b(struct rp_ctl *ctl)
{
	char h1[NCCL_NET_HANDLE_MAXSIZE], h2[NCCL_NET_HANDLE_MAXSIZE];
	struct rp_link l0;
	struct burst from_a, to_a, on_new;
	void *ctx = NULL, *listen = NULL, *s1 = NULL, *r2 = NULL;
	struct h_props props;
	uint64_t last = 0;
	unsigned spins = 0;
	int may_connect = 0, may_accept = 0;
	char c;

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, 1, &l0);
	rp_ctl_recv(ctl->in, h1, sizeof(h1));
	/* Receives A cannot serve yet: test() says "not done" meanwhile. */
	burst_init(&from_a, l0.recv[0], 1, 0, 1);
	burst_post(&from_a);
	while (!s1) {
		int did = burst_test(&from_a);

		if (!may_connect)
			may_connect = rp_ctl_try_recv(ctl->in, &c, 1);
		if (may_connect)
			H_CHECK(h_connect(ctx, H_DEV, h1, &s1) == ncclSuccess, "v%d connect: %s",
				h_version, h_log.last_warn);
		rp_idle(did || s1, &last, &spins, "connect after A's accept spun");
	}
	H_CHECK(c == 's', "control: '%c'", c);
	/* 2: listen; accept only once A has spun on connect. */
	memset(h2, 0x5a, sizeof(h2));
	H_CHECK(h_listen(ctx, H_DEV, h2, &listen) == ncclSuccess, "v%d listen", h_version);
	rp_ctl_send(ctl->out, h2, sizeof(h2));
	burst_init(&to_a, s1, 2, 1, 0);
	burst_post(&to_a);
	while (!r2) {
		int did = burst_test(&from_a) | burst_test(&to_a);

		if (!may_accept)
			may_accept = rp_ctl_try_recv(ctl->in, &c, 1);
		if (may_accept)
			H_CHECK(h_accept(listen, &r2) == ncclSuccess, "v%d accept: %s", h_version,
				h_log.last_warn);
		rp_idle(did || r2, &last, &spins, "accept after A's connect spun");
	}
	H_CHECK(c == 'a', "control: '%c'", c);
	H_CHECK(h_close_listen(listen) == ncclSuccess, "v%d closeListen", h_version);
	burst_init(&on_new, r2, 3, 0, 1);
	burst_post(&on_new);
	bursts_finish((struct burst *const[]){&from_a, &to_a, &on_new}, &last, &spins);
	rp_ctl_sync(ctl);
	H_CHECK(h_close_send(s1) == ncclSuccess && h_close_recv(r2) == ncclSuccess, "v%d close",
		h_version);
	side_end(ctl, &l0, ctx);
}

void rp_case_connect_busy(void **state)
{
	struct rp_pair p;

	(void)state;
	rp_pair_init(&p, 11, NULL);
	rp_pair_run(&p, connect_a, connect_b, "v11 connect/accept while the peer is in test()");
}

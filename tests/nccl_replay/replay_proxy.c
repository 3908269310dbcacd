/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's proxy progress functions, replayed against the plugin.
 *
 * sendProxyProgress (src/transport/net.cc), per sub:
 *   post      the buffer of step `posted` goes to the GPU while posted <
 *             done + maxDepth ("the GPU" here fills it with the message);
 *   transmit  once the GPU filled it, isend(tag = tpRank); a NULL request
 *             means "not now": the same step is tried again on a later
 *             call, while the other subs go on;
 *   done      test() the oldest request; done frees its slot.
 * Each call does one of post / transmit (NCCL `continue`s after either),
 * then tests.
 *
 * recvProxyProgress, per op: the subs that share a recv comm are grouped
 * maxRecvs at a time; each group has one request per step:
 *   post      one irecv(n, buffers, tags = tpRemoteRank) holding every sub
 *             of the group that still has steps, unless one of them is
 *             maxDepth ahead of what the GPU consumed (then none);
 *   receive   test() the oldest request with NCCL's zeroed int sizes[64];
 *             every size and every byte is checked here;
 *   flush     iflush() the received buffers when the op asks for it (NCCL
 *             does for GPU memory) and test() that request if one came;
 *   consume   the GPU consumes the buffers on its own clock; irecvConsumed
 *             is called when the table has one, then the slots are free.
 */
#include "support/rw_test.h"

#include <string.h>

#include "replay.h"

uint32_t rp_max_depth(int nsubs)
{
	return (uint32_t)RW_MIN(RP_STEPS, RP_SHARED_STEPS / RW_MAX(nsubs, 1));
}

static int sched_go(struct rp_sched *s)
{
	return s->every <= 1 || rp_rand_below(&s->rng, s->every) == 0;
}

/* --- send ----------------------------------------------------------------------- */

void rp_send_sub_init(struct rp_send_sub *s, void *comm, void *mh, unsigned char *slots, size_t cap,
		      uint32_t conn, int tag, uint32_t total, uint32_t depth)
{
	*s = (struct rp_send_sub){
		.comm = comm,
		.mh = mh,
		.slots = slots,
		.cap = cap,
		.conn = conn,
		.tag = tag,
		.total = total,
		.depth = RW_MIN(depth, RP_STEPS),
		.sched = {.every = 1,
			  .rng = rp_seed ^ ((uint64_t)conn << 20) ^ (uint64_t)(uint32_t)tag},
	};
}

int rp_send_finished(const struct rp_send_sub *s)
{
	return s->done == s->total;
}

int rp_send_progress(struct rp_send_sub *s)
{
	if (s->done == s->total)
		return 0;
	/* Post the next buffer to the GPU, which fills it. */
	if (s->posted < s->total && s->posted < s->done + s->depth) {
		uint32_t slot = s->posted % RP_STEPS;
		size_t len = s->size_of(s->plan, s->conn, s->tag, s->posted);

		H_CHECK(len <= s->cap, "plan: message %u of tag %d is %zu bytes > %zu", s->posted,
			s->tag, len, s->cap);
		s->size[slot] = len;
		h_pattern_fill(s->slots + (size_t)slot * s->cap, len,
			       rp_msg_seed(s->conn, s->tag, s->posted));
		s->posted++;
		return 1;
	}
	/* The GPU filled it: send it to the network. */
	if (s->transmitted < s->posted && s->transmitted < s->done + RP_STEPS &&
	    sched_go(&s->sched)) {
		uint32_t slot = s->transmitted % RP_STEPS;
		void *req = (void *)0x1; /* must be overwritten */
		int rc = h_isend(s->comm, s->slots + (size_t)slot * s->cap, s->size[slot], s->tag,
				 s->mh, &req);

		H_CHECK(rc == ncclSuccess,
			"v%d isend(conn %u, tag %d, message %u, %zu bytes): %d (plugin: %s)",
			h_version, s->conn, s->tag, s->transmitted, s->size[slot], rc,
			h_log.last_warn);
		H_CHECK(req != (void *)0x1, "v%d isend left *request untouched", h_version);
		if (req) {
			s->req[slot] = req;
			s->transmitted++;
			if (s->log) {
				uint32_t i = s->log->naccepts++;

				H_CHECK(i < RP_LOG_MAX, "match log full");
				s->log->accepts[i] = (int8_t)s->tag;
			}
			return 1;
		}
		s->nulls++;
		if (s->log)
			s->log->nulls++;
	}
	/* Has the network completed the oldest send? */
	if (s->done < s->transmitted) {
		uint32_t slot = s->done % RP_STEPS;
		int done = 0, size = -1;
		int rc = h_test(s->req[slot], &done, &size);

		H_CHECK(rc == ncclSuccess,
			"v%d test(send: conn %u, tag %d, message %u, %zu bytes): %d (plugin: %s)",
			h_version, s->conn, s->tag, s->done, s->size[slot], rc, h_log.last_warn);
		if (done) {
			H_CHECK(size == (int)s->size[slot],
				"v%d send conn %u tag %d message %u: test size %d, sent %zu",
				h_version, s->conn, s->tag, s->done, size, s->size[slot]);
			s->req[slot] = NULL;
			s->done++;
			return 1;
		}
	}
	return 0;
}

/* --- receive --------------------------------------------------------------------- */

void rp_recv_op_init(struct rp_recv_op *op, void *comm, uint32_t conn, int max_recvs, size_t cap,
		     uint32_t *outstanding)
{
	memset(op, 0, sizeof(*op));
	op->comm = comm;
	op->conn = conn;
	op->group_size = RW_MAX(1, RW_MIN(max_recvs, RP_MAX_SUBS));
	op->cap = cap;
	op->outstanding = outstanding;
	op->sched.every = 1;
	op->sched.rng = rp_seed ^ 0xabcdefull ^ ((uint64_t)conn << 24);
}

void rp_recv_op_add(struct rp_recv_op *op, int tag, uint32_t nsteps, uint32_t first_k,
		    unsigned char *slots, void *mh)
{
	H_CHECK(op->nsubs < RP_MAX_SUBS && nsteps >= 1, "op: %d subs, %u steps", op->nsubs, nsteps);
	for (int i = 0; i < op->nsubs; i++)
		H_CHECK(op->subs[i].tag != tag, "op: tag %d twice", tag);
	op->subs[op->nsubs++] = (struct rp_recv_sub){
		.tag = tag, .nsteps = nsteps, .first_k = first_k, .slots = slots, .mh = mh};
}

void rp_recv_op_start(struct rp_recv_op *op)
{
	op->depth = rp_max_depth(op->nsubs);
	op->sched.rng ^= (uint64_t)op->subs[0].first_k << 32;
}

int rp_recv_finished(const struct rp_recv_op *op)
{
	return op->ndone == (uint32_t)op->nsubs;
}

static unsigned char *sub_buf(const struct rp_recv_op *op, const struct rp_recv_sub *sub,
			      uint32_t step)
{
	return sub->slots + (size_t)(step % RP_STEPS) * op->cap;
}

static size_t sub_expect(const struct rp_recv_op *op, const struct rp_recv_sub *sub, uint32_t step)
{
	return op->size_of(op->plan, op->conn, sub->tag, sub->first_k + step);
}

typedef ncclResult_t (*consumed_fn)(void *recv_comm, int n, void *request);

/* irecvConsumed, where the bound table has one (v7+; NULL in ringway's). */
static consumed_fn irecv_consumed(void)
{
	const void *t = h_table();

	switch (h_version) {
	case 7:
		return ((const ncclNet_v7_t *)t)->irecvConsumed;
	case 8:
		return ((const ncclNet_v8_t *)t)->irecvConsumed;
	case 9:
		return ((const ncclNet_v9_t *)t)->irecvConsumed;
	case 10:
		return ((const ncclNet_v10_t *)t)->irecvConsumed;
	case 11:
		return ((const ncclNet_v11_t *)t)->irecvConsumed;
	case 12:
		return ((const ncclNet_v12_t *)t)->irecvConsumed;
	}
	return NULL;
}

/* One irecv for the group's next step; 1 if the plugin took it. */
static int group_post(struct rp_recv_op *op, int g0, int gn, int gi)
{
	uint32_t step = op->g_posted[gi];
	struct rp_recv_req *rr = &op->g_req[gi][step % RP_STEPS];
	void *ptrs[RP_MAX_SUBS], *mhs[RP_MAX_SUBS], *req;
	size_t caps[RP_MAX_SUBS];
	int tags[RP_MAX_SUBS], subs[RP_MAX_SUBS], n = 0, rc;

	for (int i = 0; i < gn; i++) {
		struct rp_recv_sub *sub = &op->subs[g0 + i];

		if (step >= sub->nsteps)
			continue;
		if (step >= sub->done + op->depth)
			return 0; /* NCCL: subCount = 0, the whole group waits */
		ptrs[n] = sub_buf(op, sub, step);
		caps[n] = op->cap;
		tags[n] = sub->tag;
		mhs[n] = sub->mh;
		subs[n] = g0 + i;
		n++;
	}
	if (!n || *op->outstanding >= RP_MAX_REQUESTS || !sched_go(&op->sched))
		return 0;
	for (int i = 0; i < n; i++) {
		size_t expect = sub_expect(op, &op->subs[subs[i]], step);

		H_CHECK(expect <= op->cap, "plan: %zu bytes > receive buffer %zu", expect, op->cap);
		memset(ptrs[i], RP_GUARD, RW_MIN(op->cap, expect + RP_GUARD_CHECK));
	}
	/* LL and LL128 single receives carry NCCL's completion hint. */
	req = n == 1 && (step & 1) ? (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION : NULL;
	rc = h_irecv(op->comm, n, ptrs, caps, tags, mhs, &req);
	H_CHECK(rc == ncclSuccess, "v%d irecv(conn %u, n=%d, tag[0] %d, step %u): %d (plugin: %s)",
		h_version, op->conn, n, tags[0], step, rc, h_log.last_warn);
	H_CHECK(req != (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION,
		"v%d irecv left the completion hint in *request", h_version);
	if (!req)
		return 0;
	memset(rr, 0, sizeof(*rr));
	rr->req = req;
	rr->n = n;
	rr->step = step;
	memcpy(rr->sub, subs, sizeof(subs[0]) * (size_t)n);
	op->g_posted[gi]++;
	(*op->outstanding)++;
	if (op->log) {
		uint32_t i = op->log->nposts++;

		H_CHECK(i < RP_LOG_MAX, "match log full");
		op->log->posts[i].n = (uint8_t)n;
		for (int j = 0; j < n; j++)
			op->log->posts[i].tags[j] = (int8_t)tags[j];
	}
	return 1;
}

/* Every buffer of a completed receive: its size, its bytes, nothing past. */
static void check_received(struct rp_recv_op *op, struct rp_recv_req *rr, const int *sizes)
{
	rr->total = 0;
	for (int i = 0; i < rr->n; i++) {
		struct rp_recv_sub *sub = &op->subs[rr->sub[i]];
		uint32_t k = sub->first_k + rr->step;
		size_t expect = sub_expect(op, sub, rr->step);
		const unsigned char *buf = sub_buf(op, sub, rr->step);
		long bad;

		H_CHECK(sizes[i] == (int)expect,
			"v%d recv conn %u: buffer %d of %d (tag %d, its message %u) got %d bytes, "
			"sent %zu (a message of another tag or step?) seed %llu",
			h_version, op->conn, i, rr->n, sub->tag, k, sizes[i], expect,
			(unsigned long long)rp_seed);
		bad = h_pattern_check(buf, expect, rp_msg_seed(op->conn, sub->tag, k));
		H_CHECK(bad < 0,
			"v%d recv conn %u: tag %d message %u (%zu bytes) differs at byte %ld "
			"seed %llu",
			h_version, op->conn, sub->tag, k, expect, bad, (unsigned long long)rp_seed);
		for (size_t j = expect; j < RW_MIN(op->cap, expect + RP_GUARD_CHECK); j++)
			H_CHECK(buf[j] == RP_GUARD,
				"v%d recv conn %u: tag %d message %u (%zu bytes) wrote byte %zu of "
				"its buffer",
				h_version, op->conn, sub->tag, k, expect, j);
		rr->total += expect;
	}
	for (int i = rr->n; i < RP_PROXY_SIZES; i++)
		H_CHECK(sizes[i] == 0, "v%d recv: test wrote sizes[%d] = %d for n = %d", h_version,
			i, sizes[i], rr->n);
}

static int group_receive(struct rp_recv_op *op, int gi)
{
	struct rp_recv_req *rr = &op->g_req[gi][op->g_received[gi] % RP_STEPS];
	int sizes[RP_PROXY_SIZES] = {0}, done = 0, rc;

	rc = h_test(rr->req, &done, sizes);
	H_CHECK(rc == ncclSuccess,
		"v%d test(recv: conn %u, n=%d, tag[0] %d, step %u): %d (plugin: %s)", h_version,
		op->conn, rr->n, op->subs[rr->sub[0]].tag, rr->step, rc, h_log.last_warn);
	if (!done)
		return 0;
	(*op->outstanding)--;
	/* rr->req stays as NCCL's recvRequestsCache, for irecvConsumed. */
	check_received(op, rr, sizes);
	op->g_received[gi]++;
	if (op->flush && rr->total > 0) {
		void *ptrs[RP_MAX_SUBS], *mhs[RP_MAX_SUBS];
		void *req = NULL; /* NCCL cleared the slot when the receive completed */

		for (int i = 0; i < rr->n; i++) {
			struct rp_recv_sub *sub = &op->subs[rr->sub[i]];

			ptrs[i] = sub_buf(op, sub, rr->step);
			mhs[i] = sub->mh;
		}
		rc = h_iflush(op->comm, rr->n, ptrs, sizes, mhs, &req);
		H_CHECK(rc == ncclSuccess, "v%d iflush(conn %u, n=%d): %d (plugin: %s)", h_version,
			op->conn, rr->n, rc, h_log.last_warn);
		rr->flush = req;
		if (req)
			(*op->outstanding)++;
	}
	return 1;
}

static int group_flushed(struct rp_recv_op *op, int gi)
{
	struct rp_recv_req *rr = &op->g_req[gi][op->g_flushed[gi] % RP_STEPS];

	if (rr->flush) {
		int done = 0;
		int rc = h_test(rr->flush, &done, NULL);

		H_CHECK(rc == ncclSuccess, "v%d test(flush: conn %u): %d (plugin: %s)", h_version,
			op->conn, rc, h_log.last_warn);
		if (!done)
			return 0;
		(*op->outstanding)--;
		rr->flush = NULL;
	}
	op->g_flushed[gi]++;
	return 1;
}

static void group_consume(struct rp_recv_op *op, int gi)
{
	struct rp_recv_req *rr = &op->g_req[gi][op->g_consumed[gi] % RP_STEPS];
	consumed_fn consumed = irecv_consumed();

	if (consumed) {
		int rc = consumed(op->comm, rr->n, rr->req);

		H_CHECK(rc == ncclSuccess, "v%d irecvConsumed: %d", h_version, rc);
	}
	for (int i = 0; i < rr->n; i++) {
		struct rp_recv_sub *sub = &op->subs[rr->sub[i]];

		if (++sub->done == sub->nsteps)
			op->ndone++;
	}
	op->g_consumed[gi]++;
}

int rp_recv_progress(struct rp_recv_op *op)
{
	int did = 0;

	for (int g0 = 0, gi = 0; g0 < op->nsubs; g0 += op->group_size, gi++) {
		int gn = RW_MIN(op->group_size, op->nsubs - g0);

		did |= group_post(op, g0, gn, gi);
		if (op->g_received[gi] < op->g_posted[gi])
			did |= group_receive(op, gi);
		if (op->g_flushed[gi] < op->g_received[gi])
			did |= group_flushed(op, gi);
		if (op->g_consumed[gi] < op->g_flushed[gi] && sched_go(&op->sched)) {
			group_consume(op, gi);
			did = 1;
		}
	}
	return did;
}

void rp_idle(int progressed, uint64_t *last_progress_ms, unsigned *spins, const char *what)
{
	uint64_t now = rw_now_ms();

	if (progressed || !*last_progress_ms) {
		*last_progress_ms = now;
		*spins = 0;
		return;
	}
	H_CHECK(now - *last_progress_ms < RP_STEP_TIMEOUT_MS,
		"%s: no progress for %d ms (seed %llu; plugin's last warning: %s)", what,
		RP_STEP_TIMEOUT_MS, (unsigned long long)rp_seed, h_log.last_warn);
	h_backoff(spins);
}

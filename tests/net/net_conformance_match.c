/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net conformance, NCCL's matching rules (its IB transport, p2p.cc
 * ncclIbIsend, and the net plugin README): a send is taken (isend gives a
 * request) only when it can be matched now, to a free buffer with its tag
 * of the oldest posted receive that still has a free buffer; otherwise
 * isend answers NULL and the caller retries.  Never accept-then-drop, never
 * reorder across receives.  Then: a failed comm answers at once, sizes
 * above maxP2pBytes are refused before anything moves, and a peer that
 * closes fails what is outstanding.  conf_run() lists the cases.
 */
#include "support/rw_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "net/net_conformance_int.h"

/* --- helpers ----------------------------------------------------------------- */

/* One isend attempt that must be answered "not now" (NULL, no error),
 * while the receiver's requests are tested (so they progress) and stay
 * pending. */
static void isend_not_now(struct pair *pr, struct buf *sb, size_t size, int tag, struct op *recvs,
			  int nrecvs)
{
	struct rw_net_req *req = NULL;

	assert_int_equal(rw_net_isend(pr->s, sb->p, size, tag, sb->mr, &req), 0);
	if (req)
		fail_msg("isend(tag %d) was taken although no posted receive takes it", tag);
	for (int i = 0; i < nrecvs; i++) {
		int done = 0;

		assert_int_equal(rw_net_test(recvs[i].req, &done, recvs[i].sizes), 0);
		if (done)
			fail_msg("receive %d completed with no send taken for it", i);
	}
	usleep(500);
}

static bool conn_closed_error(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE;
}

/* --- a send waits for the receive that takes it -------------------------------- */

/* A receive {tag 5}: a send with tag 6 is never taken, and nothing fails
 * (no warning either: teardown checks the log); tag 5 goes through. */
void unmatched_tag_is_never_taken(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];

	(void)state;
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 64), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 64), 0);
	rw_test_fill(sb.p, 64, 6);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 5, &ops[1]), 0);
	for (int i = 0; i < 40; i++)
		isend_not_now(&pr, &sb, 64, 6, &ops[1], 1);
	assert_int_equal(conf_send_post(pr.s, sb.p, 64, 5, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 64);
	/* and the tag-6 send goes once a receive takes it */
	memset(rb.p, 0, 64);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 6, &ops[1]), 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 33, 6, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 33);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* isend before any irecv: NULL until the receive is posted. */
void send_before_receive_waits(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];

	(void)state;
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 3000), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 3000), 0);
	rw_test_fill(sb.p, sb.len, 3);
	for (int i = 0; i < 20; i++)
		isend_not_now(&pr, &sb, 3000, 3, NULL, 0);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 3000, 3, &ops[1]), 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 3000, 3, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 3000);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/*
 * The case: receive #0 = {tag m}, receive #1 = {tags 0..m-1}
 * (m = max_recvs: 8 gives {tag 8} and {tags 0..7}).  The sub-connection
 * with tag 0 sends first: NULL until receive #0 is satisfied by tag m, then
 * every message lands exactly in its tag's buffer.
 */
void tag_of_a_later_receive_waits(void **state)
{
	enum { CAP = 4096 };
	const int m = conf_props.max_recvs;
	struct pair pr;
	struct buf sb, rb;
	struct op ops[RW_NET_MAX_RECVS + 3], *recvs = ops, *sends = ops + 2;
	void *data[RW_NET_MAX_RECVS];
	size_t caps[RW_NET_MAX_RECVS], len[RW_NET_MAX_RECVS + 1];
	int tags[RW_NET_MAX_RECVS], order[RW_NET_MAX_RECVS];
	struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
	void *d0;
	size_t c0 = CAP;
	int t0 = m;

	(void)state;
	if (m < 2)
		skip(); /* no grouped receives: nothing to wait for */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, (size_t)(m + 1) * CAP), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, (size_t)(m + 1) * CAP), 0);
	rw_test_fill(sb.p, sb.len, 8);
	memset(rb.p, 0, rb.len);
	for (int t = 0; t <= m; t++)
		len[t] = 100 + 37 * (size_t)t; /* message of the sub with tag t */
	d0 = rb.p + (size_t)m * CAP;
	assert_int_equal(conf_recv_post(pr.r, 1, &d0, &c0, &t0, &rb.mr, &recvs[0]), 0);
	for (int i = 0; i < m; i++) {
		data[i] = rb.p + (size_t)i * CAP;
		caps[i] = CAP;
		tags[i] = i;
		mrs[i] = rb.mr;
	}
	assert_int_equal(conf_recv_post(pr.r, m, data, caps, tags, mrs, &recvs[1]), 0);

	/* tag 0 first: its buffer is in receive #1, receive #0 is still owed */
	for (int i = 0; i < 40; i++)
		isend_not_now(&pr, &sb, len[0], 0, recvs, 2);
	assert_int_equal(conf_send_post(pr.s, sb.p + (size_t)m * CAP, len[m], m, sb.mr, &sends[m]),
			 0);
	/* now receive #1 is the oldest with free buffers: tag 0, then the rest
	 * in a shuffled order */
	for (int i = 0; i < m; i++)
		order[i] = i;
	for (int i = m - 1; i > 1; i--) {
		int j = 1 + (int)((unsigned)(i * 7919 + 13) % (unsigned)i), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < m; i++) {
		int t = order[i];

		assert_int_equal(
			conf_send_post(pr.s, sb.p + (size_t)t * CAP, len[t], t, sb.mr, &sends[t]),
			0);
	}
	assert_int_equal(conf_drive(ops, m + 3, WAIT_MS), 0); /* both sides at once */
	for (int t = 0; t <= m; t++) {
		assert_int_equal(sends[t].rc, 0);
		assert_int_equal(sends[t].sizes[0], len[t]);
	}
	assert_int_equal(recvs[0].rc, 0);
	assert_int_equal(recvs[1].rc, 0);
	assert_int_equal(recvs[0].sizes[0], len[m]);
	for (int t = 0; t <= m; t++) {
		if (t < m)
			assert_int_equal(recvs[1].sizes[t], len[t]);
		if (memcmp(rb.p + (size_t)t * CAP, sb.p + (size_t)t * CAP, len[t]))
			fail_msg("the message with tag %d landed corrupted or elsewhere", t);
	}
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* --- random tag orders --------------------------------------------------------- */

/*
 * NCCL's shared comms: n sub-connections, each sending with its own tag on
 * its own schedule, into grouped receives of n buffers (one per tag, in a
 * shuffled order per receive), W receives in flight.  Message k of sub j
 * goes to receive k.  Sizes and contents follow from (seed, k, j), so a
 * sender in another process produces the same ones.
 */
#define PLAN_W 4

struct plan {
	int n, nrecv, w;
	size_t maxsz;
	uint64_t seed;
	int tag[RW_NET_MAX_RECVS]; /* of sub j */
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t msg_hash(const struct plan *p, int k, int j)
{
	return mix(p->seed ^ ((uint64_t)k << 8) ^ (uint64_t)j);
}

/* Mostly small, some medium, a few up to maxsz; some empty. */
static size_t msg_size(const struct plan *p, int k, int j)
{
	uint64_t h = msg_hash(p, k, j);

	switch (h % 16) {
	case 0:
		return 0;
	case 1:
		return (size_t)(h >> 20) % (p->maxsz + 1);
	case 2:
	case 3:
	case 4:
		return (size_t)(h >> 20) % RW_MIN(p->maxsz + 1, (size_t)65536);
	default:
		return (size_t)(h >> 20) % 4097;
	}
}

/* The buffer a message goes to: its size, or more. */
static size_t msg_cap(const struct plan *p, int k, int j)
{
	uint64_t h = mix(msg_hash(p, k, j));

	return RW_MIN(p->maxsz, msg_size(p, k, j) + (h % 3 ? 0 : (size_t)(h >> 40) % 5000));
}

/* Receive k's buffer i takes sub sub_of(k, i)'s tag: a shuffle per k. */
static int sub_of(const struct plan *p, int k, int i)
{
	int perm[RW_NET_MAX_RECVS];

	for (int a = 0; a < p->n; a++)
		perm[a] = a;
	for (int a = p->n - 1; a > 0; a--) {
		int b = (int)(mix(p->seed + (uint64_t)k * 131 + (uint64_t)a) % (uint64_t)(a + 1));
		int t = perm[a];

		perm[a] = perm[b];
		perm[b] = t;
	}
	return perm[i];
}

static void plan_init(struct plan *p, int n, int nrecv, int w, size_t maxsz, uint64_t seed)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->nrecv = nrecv;
	p->w = w;
	p->maxsz = maxsz;
	p->seed = seed;
	/* distinct tags, not 0..n-1 in order (NCCL's are ranks) */
	for (int j = 0; j < n; j++)
		p->tag[j] = (int)((unsigned)(j * 5 + (int)(seed % 7)) % 41u);
}

/* The sending side: every sub's messages, NULLs retried. */
struct tx {
	const struct plan *p;
	struct rw_net_comm *s;
	struct buf b;
	uint64_t rng;
	int next[RW_NET_MAX_RECVS]; /* message sub j sends next */
	struct rw_net_req *req[PLAN_W * 2][RW_NET_MAX_RECVS];
	int kof[PLAN_W * 2][RW_NET_MAX_RECVS];
	int left;   /* sends not yet complete */
	long nulls; /* isend answered "not now" */
};

static char *tx_slot(struct tx *t, int k, int j)
{
	return t->b.p + ((size_t)(k % t->p->w) * (size_t)t->p->n + (size_t)j) * t->p->maxsz;
}

/* One round: a random sub tries its next send, then every send in flight is
 * tested.  0, or -errno with *what set. */
static int tx_step(struct tx *t, const char **what)
{
	const struct plan *p = t->p;
	int j, k, rc;

	t->rng = mix(t->rng + 1);
	j = (int)(t->rng % (uint64_t)p->n);
	k = t->next[j];
	if (k < p->nrecv && !t->req[k % p->w][j]) {
		struct rw_net_req *req = NULL;
		size_t size = msg_size(p, k, j);

		rw_test_fill(tx_slot(t, k, j), size, msg_hash(p, k, j));
		rc = rw_net_isend(t->s, tx_slot(t, k, j), size, p->tag[j], t->b.mr, &req);
		if (rc) {
			*what = "isend";
			return rc;
		}
		if (req) {
			t->req[k % p->w][j] = req;
			t->kof[k % p->w][j] = k;
			t->next[j]++;
		} else {
			t->nulls++;
		}
	}
	for (int w = 0; w < p->w; w++) {
		for (j = 0; j < p->n; j++) {
			size_t sz = 0;
			int done = 0;

			if (!t->req[w][j])
				continue;
			rc = rw_net_test(t->req[w][j], &done, &sz);
			if (rc) {
				*what = "test of a send";
				return rc;
			}
			if (!done)
				continue;
			t->req[w][j] = NULL;
			t->left--;
			if (sz != msg_size(p, t->kof[w][j], j)) {
				*what = "the size a send reported";
				return -EIO;
			}
		}
	}
	return 0;
}

/* The receiving side: receives posted in order, W in flight, checked. */
struct rx {
	const struct plan *p;
	struct rw_net_comm *r;
	struct buf b;
	char *expect;
	int posted, left;
	struct op op[PLAN_W * 2];
	int kof[PLAN_W * 2];
	bool busy[PLAN_W * 2];
	char why[160];
};

static char *rx_slot(struct rx *x, int k, int i)
{
	return x->b.p + ((size_t)(k % x->p->w) * (size_t)x->p->n + (size_t)i) * x->p->maxsz;
}

/* Check receive k (op o): every buffer got its tag's message, whole. */
static int rx_check(struct rx *x, int k, const struct op *o)
{
	const struct plan *p = x->p;

	if (o->rc) {
		snprintf(x->why, sizeof(x->why), "receive %d failed: %d", k, o->rc);
		return o->rc;
	}
	for (int i = 0; i < p->n; i++) {
		int j = sub_of(p, k, i);
		size_t size = msg_size(p, k, j);

		if (o->sizes[i] != size) {
			snprintf(x->why, sizeof(x->why),
				 "receive %d buffer %d (tag %d): %zu bytes, expected %zu", k, i,
				 p->tag[j], o->sizes[i], size);
			return -EIO;
		}
		rw_test_fill(x->expect, size, msg_hash(p, k, j));
		if (memcmp(rx_slot(x, k, i), x->expect, size)) {
			snprintf(x->why, sizeof(x->why),
				 "receive %d buffer %d (tag %d, %zu bytes): wrong content", k, i,
				 p->tag[j], size);
			return -EIO;
		}
	}
	return 0;
}

static int rx_step(struct rx *x)
{
	const struct plan *p = x->p;
	int rc;

	while (x->posted < p->nrecv && !x->busy[x->posted % p->w]) {
		int k = x->posted, w = k % p->w;
		void *data[RW_NET_MAX_RECVS];
		size_t caps[RW_NET_MAX_RECVS];
		int tags[RW_NET_MAX_RECVS];
		struct rw_net_mr *mrs[RW_NET_MAX_RECVS];

		for (int i = 0; i < p->n; i++) {
			int j = sub_of(p, k, i);

			data[i] = rx_slot(x, k, i);
			caps[i] = msg_cap(p, k, j);
			tags[i] = p->tag[j];
			mrs[i] = x->b.mr;
			memset(data[i], 0xee, RW_MIN(caps[i] + 1, p->maxsz));
		}
		memset(&x->op[w], 0, sizeof(x->op[w]));
		rc = rw_net_irecv(x->r, p->n, data, caps, tags, mrs, &x->op[w].req);
		if (rc) {
			snprintf(x->why, sizeof(x->why), "irecv %d: %d", k, rc);
			return rc;
		}
		if (!x->op[w].req)
			break;
		x->busy[w] = true;
		x->kof[w] = k;
		x->posted++;
	}
	for (int w = 0; w < p->w; w++) {
		struct op *o = &x->op[w];
		int done = 0;

		if (!x->busy[w])
			continue;
		o->rc = rw_net_test(o->req, &done, o->sizes);
		if (!o->rc && !done)
			continue;
		x->busy[w] = false;
		x->left--;
		rc = rx_check(x, x->kof[w], o);
		if (rc)
			return rc;
	}
	return 0;
}

static int tx_init(struct tx *t, const struct plan *p, struct rw_net_comm *s)
{
	memset(t, 0, sizeof(*t));
	t->p = p;
	t->s = s;
	t->rng = p->seed * 3 + 1;
	t->left = p->n * p->nrecv;
	return conf_buf_get(s, &t->b, (size_t)p->w * (size_t)p->n * p->maxsz);
}

static int rx_init(struct rx *x, const struct plan *p, struct rw_net_comm *r)
{
	memset(x, 0, sizeof(*x));
	x->p = p;
	x->r = r;
	x->left = p->nrecv;
	x->expect = malloc(p->maxsz ? p->maxsz : 1);
	if (!x->expect)
		return -ENOMEM;
	return conf_buf_get(r, &x->b, (size_t)p->w * (size_t)p->n * p->maxsz);
}

static void rx_fini(struct rx *x)
{
	conf_buf_put(x->r, &x->b);
	free(x->expect);
}

/* n = 1..max_recvs, both sides driven from this thread, every byte checked. */
void grouped_random_tag_orders(void **state)
{
	(void)state;
	for (int n = 1; n <= conf_props.max_recvs; n++) {
		struct plan p;
		struct pair pr;
		struct tx t;
		struct rx x;
		const char *what = "";
		uint64_t deadline = rw_now_ms() + 3 * WAIT_MS;
		int rc = 0;

		plan_init(&p, n, 12, PLAN_W, 1 * MIB, 0x5eed0000ull + (uint64_t)n);
		assert_int_equal(conf_pair_open(conf_net, &pr), 0);
		assert_int_equal(tx_init(&t, &p, pr.s), 0);
		assert_int_equal(rx_init(&x, &p, pr.r), 0);
		while (!rc && (t.left || x.left) && rw_now_ms() < deadline) {
			rc = tx_step(&t, &what);
			if (!rc) {
				what = x.why;
				rc = rx_step(&x);
			}
		}
		if (rc)
			fail_msg("n=%d: %s (%d)", n, what, rc);
		if (t.left || x.left)
			fail_msg("n=%d: %d sends and %d receives still pending", n, t.left, x.left);
		print_message("      n=%d: %d messages, %ld isend(s) answered NULL\n", n,
			      n * p.nrecv, t.nulls);
		conf_buf_put(pr.s, &t.b);
		rx_fini(&x);
		conf_pair_close(&pr);
	}
}

#define TWO_PROC_SENDS 2000
/* Both processes' timeout: this case tests matching, and a loaded host may
 * hold either side longer than the suite's 2 s between messages. */
#define TWO_PROC_TIMEOUT_MS 60000

static struct plan two_proc_plan;

/* Child: the sending side of two_proc_plan; reports its result as an int. */
static void child_random_sender(struct child *k)
{
	struct rw_net *n = conf_net_timeout(TWO_PROC_TIMEOUT_MS);
	struct rw_net_comm *s;
	struct tx t;
	const char *what = "";
	uint64_t deadline = rw_now_ms() + 6 * WAIT_MS;
	int rc;

	CHILD_CHECK(n != NULL);
	CHILD_CHECK(conf_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(tx_init(&t, &two_proc_plan, s) == 0);
	rc = 0;
	while (!rc && t.left && rw_now_ms() < deadline)
		rc = tx_step(&t, &what);
	if (!rc && t.left)
		rc = -ETIMEDOUT;
	if (rc)
		fprintf(stderr, "child %d: %s: %d\n", (int)getpid(), what, rc);
	child_write(k, &rc, sizeof(rc));
	_exit(0);
}

/* The same across two processes: n = max_recvs, TWO_PROC_SENDS messages. */
void grouped_random_tag_orders_two_processes(void **state)
{
	struct child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rx x;
	struct rw_net *net = conf_net_timeout(TWO_PROC_TIMEOUT_MS);
	uint64_t deadline = rw_now_ms() + 6 * WAIT_MS;
	int n = conf_props.max_recvs, rc = 0, child_rc = -1;

	(void)state;
	assert_non_null(net);
	plan_init(&two_proc_plan, n, RW_DIV_UP(TWO_PROC_SENDS, n), 2 * PLAN_W, 256 * 1024,
		  0xfeed0000ull + (uint64_t)n);
	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	child_start(&k, child_random_sender);
	assert_int_equal(conf_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(rx_init(&x, &two_proc_plan, r), 0);
	while (!rc && x.left && rw_now_ms() < deadline)
		rc = rx_step(&x);
	if (rc)
		fail_msg("%s (%d)", x.why, rc);
	if (x.left)
		fail_msg("%d receives still pending", x.left);
	from_child(&k, &child_rc, sizeof(child_rc));
	assert_int_equal(child_rc, 0);
	child_reap(&k, false);
	rx_fini(&x);
	assert_int_equal(rw_net_close_recv(r), 0);
	rw_net_destroy(net);
}

/* --- failures and limits ---------------------------------------------------------- */

/*
 * After a protocol error (here a send larger than its buffer) the comms
 * answer with an error at once: a receive that was outstanding fails at its
 * first test, isend and irecv fail when called; and no call after the
 * first report adds a warning (logged once).
 */
void failed_comm_answers_at_once(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op recvs[2], send;
	struct rw_net_req *req;
	uint64_t t0;
	int logged, done = 0, rc;
	size_t size = 64;
	int tag = 1;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 8192), 0);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 1, &recvs[0]), 0);
	assert_int_equal(
		conf_recv1_post(pr.r, &(struct buf){rb.p + 4096, 0, rb.mr}, 4096, 1, &recvs[1]), 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 4096, 1, sb.mr, &send), 0);
	assert_int_equal(conf_drive(&send, 1, WAIT_MS), 0);
	assert_int_equal(send.rc, -EMSGSIZE);
	assert_int_equal(conf_drive(&recvs[0], 1, WAIT_MS), 0);
	assert_int_equal(recvs[0].rc, -EMSGSIZE);
	logged = rw_test_log_count("");

	t0 = rw_now_ms();
	rc = rw_net_test(recvs[1].req, &done, recvs[1].sizes);
	if (rc == 0)
		fail_msg("a receive outstanding on a failed comm answered %s",
			 done ? "done" : "not done, no error");
	for (int i = 0; i < 10; i++) {
		void *d = rb.p;

		req = NULL;
		assert_true(rw_net_irecv(pr.r, 1, &d, &size, &tag, &rb.mr, &req) < 0);
		assert_null(req);
		assert_true(rw_net_isend(pr.s, sb.p, 16, 1, sb.mr, &req) < 0);
		assert_null(req);
	}
	assert_true(rw_now_ms() - t0 < CALL_MS);
	assert_int_equal(rw_test_log_count(""), logged);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* isend and irecv above maxP2pBytes: -EMSGSIZE at once (whatever the
 * registration: the size is checked first), nothing moves, and the comm
 * stays good. */
void oversize_refused_before_anything_moves(void **state)
{
	const size_t over = conf_props.max_p2p_bytes + 1;
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];
	struct rw_net_req *req = NULL;
	void *d;
	int tag = 2, done = 0, logged;
	uint64_t t0;

	(void)state;
	rw_test_log_expect(""); /* the refusals are warnings: their text is the transport's */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 4096), 0);
	rw_test_fill(sb.p, sb.len, 2);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 4096, 2, &ops[1]), 0);
	logged = rw_test_log_count("");
	t0 = rw_now_ms();
	assert_int_equal(rw_net_isend(pr.s, sb.p, over, 2, sb.mr, &req), -EMSGSIZE);
	assert_null(req);
	d = rb.p;
	assert_int_equal(rw_net_irecv(pr.r, 1, &d, &over, &tag, &rb.mr, &req), -EMSGSIZE);
	assert_null(req);
	assert_true(rw_now_ms() - t0 < CALL_MS);
	assert_true(rw_test_log_count("") >= logged + 2); /* each said why */
	/* nothing moved: the posted receive still waits, then takes a good send */
	assert_int_equal(rw_net_test(ops[1].req, &done, ops[1].sizes), 0);
	assert_false(done);
	assert_int_equal(conf_send_post(pr.s, sb.p, 4000, 2, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 4000);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* Drive op until it ends: it must fail with a connection error (the close
 * was seen, not a timeout) before RINGWAY_TIMEOUT_MS. */
static void fails_for_close(struct op *op, uint64_t t0, bool may_succeed)
{
	assert_int_equal(conf_drive(op, 1, conf_cfg.timeout_ms + 3000), 0);
	if (may_succeed && op->rc == 0)
		return;
	if (!conn_closed_error(op->rc))
		fail_msg("expected -ECONNRESET or -EPIPE after the peer's close, got %d", op->rc);
	if (rw_now_ms() - t0 >= (uint64_t)conf_cfg.timeout_ms)
		fail_msg("the close was noticed after %llu ms (RINGWAY_TIMEOUT_MS=%lld)",
			 (unsigned long long)(rw_now_ms() - t0), (long long)conf_cfg.timeout_ms);
}

/*
 * A patient receive comm (a control channel): a receive waits past
 * RINGWAY_TIMEOUT_MS for a message that begins late, and still fails at
 * once when the peer closes.  The plain receive of silent_sender_times_out
 * is the counterpart that must time out.
 */
void patient_receive_outlasts_the_timeout(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2] = {0};
	uint64_t t0;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(rw_net_patient(pr.r), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 4096), 0);
	memset(sb.p, 0x5a, 64);
	memset(rb.p, 0, 64);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 4096, 7, &ops[1]), 0);
	/* nothing comes for longer than the timeout: still waiting, no error */
	t0 = rw_now_ms();
	assert_int_equal(conf_drive(&ops[1], 1, conf_cfg.timeout_ms + 500), -ETIMEDOUT);
	assert_false(ops[1].done);
	assert_true(rw_now_ms() - t0 > (uint64_t)conf_cfg.timeout_ms);
	/* then the message: it lands whole */
	assert_int_equal(conf_send_post(pr.s, sb.p, 64, 7, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 64);
	/* a patient receive still learns at once that its peer closed */
	ops[1] = (struct op){0};
	assert_int_equal(conf_recv1_post(pr.r, &rb, 4096, 7, &ops[1]), 0);
	conf_buf_put(pr.s, &sb);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	fails_for_close(&ops[1], rw_now_ms(), false);
	conf_buf_put(pr.r, &rb);
	assert_int_equal(rw_net_close_recv(pr.r), 0);
}

/*
 * A peer that closes mid-pipeline: every request outstanding on the other
 * side fails with a connection error (well before RINGWAY_TIMEOUT_MS), and
 * later calls fail at once.
 */
void peer_close_fails_outstanding_requests(void **state)
{
	const size_t big = 16 * MIB;
	struct pair pr;
	struct buf sb, rb;
	struct op ops[4];
	struct rw_net_req *req = NULL;
	uint64_t t0, deadline;
	size_t size = 64;
	int tag = 0, rc = 0;
	void *d;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);

	/* the sender closes: the receives it will never fill fail */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 3 * 4096), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(conf_recv1_post(pr.r, &(struct buf){rb.p + i * 4096, 0, rb.mr},
						 4096, 0, &ops[i]),
				 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 100, 0, sb.mr, &ops[3]), 0);
	assert_int_equal(conf_drive(&ops[3], 1, WAIT_MS), 0);
	assert_int_equal(ops[3].rc, 0);
	assert_int_equal(conf_drive(&ops[0], 1, WAIT_MS), 0);
	assert_int_equal(ops[0].rc, 0);
	conf_buf_put(pr.s, &sb);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	t0 = rw_now_ms();
	fails_for_close(&ops[1], t0, false);
	t0 = rw_now_ms();
	{
		int done = 0;

		assert_true(rw_net_test(ops[2].req, &done, ops[2].sizes) < 0);
	}
	d = rb.p;
	assert_true(rw_net_irecv(pr.r, 1, &d, &size, &tag, &rb.mr, &req) < 0);
	assert_null(req);
	assert_true(rw_now_ms() - t0 < CALL_MS);
	conf_buf_put(pr.r, &rb);
	assert_int_equal(rw_net_close_recv(pr.r), 0);

	/* the receiver closes: the next isend fails instead of waiting for a
	 * receive that cannot come (even before the sends in flight were
	 * tested), and those sends fail (or had finished) */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, big), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, big), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(conf_recv1_post(pr.r, &rb, big, 0, &ops[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(conf_send_post(pr.s, sb.p, big, 0, sb.mr, &ops[2 + i]), 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0); /* drops its registrations */
	free(rb.p);				      /* no write lands after the close */
	t0 = rw_now_ms();
	deadline = t0 + (uint64_t)conf_cfg.timeout_ms + 3000;
	req = NULL;
	while (!rc && !req && rw_now_ms() < deadline)
		rc = rw_net_isend(pr.s, sb.p, 64, 0, sb.mr, &req);
	assert_null(req);
	if (!conn_closed_error(rc))
		fail_msg("isend to a closed receiver: expected a connection error, got %d", rc);
	if (rw_now_ms() - t0 >= (uint64_t)conf_cfg.timeout_ms)
		fail_msg("the close was noticed after %llu ms (RINGWAY_TIMEOUT_MS=%lld)",
			 (unsigned long long)(rw_now_ms() - t0), (long long)conf_cfg.timeout_ms);
	fails_for_close(&ops[2], t0, true);
	fails_for_close(&ops[3], t0, true);
	t0 = rw_now_ms();
	assert_true(rw_net_isend(pr.s, sb.p, 64, 0, sb.mr, &req) < 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
	conf_buf_put(pr.s, &sb);
	assert_int_equal(rw_net_close_send(pr.s), 0);
}

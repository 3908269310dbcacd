/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Case 1: sub-connections sharing one comm, grouped receives with tags.
 *
 * With maxRecvs > 1 NCCL shares one send/recv comm per (device, peer,
 * channel) between the connections behind it (NCCL_NET_SHARED_COMMS, on by
 * default); each connection's sends carry its own tag (tpRank) on its own
 * schedule, and the receiving proxy groups up to maxRecvs of them into one
 * irecv(n, tags[]).  Ops of different sizes run at once on that comm, so a
 * send can come whose tag has no free buffer in the oldest receive (receive
 * #0 = {8}, receive #1 = {0..7}, the first send has tag 0): NCCL's IB
 * transport answers NULL until it can be matched, and the proxy retries.
 * With maxRecvs = 1 NCCL does not share comms: each tag gets its own comm,
 * and the same scripts run that way.
 *
 * A receives, B sends.  Every isend and irecv the plugin took is written to
 * a shared log that the parent checks against NCCL's rule afterwards
 * (rp_log_check); every byte and size is checked as it arrives.
 *
 *   scripted  one to three receives posted in order (n = 1..8 tags each, a
 *             tag of a later receive, a tag in two receives), the sends
 *             first tried in every order (all orders up to 4 sends, ten
 *             random ones above);
 *   random    8 tags, ops of 1..8 subs with 1..4 steps each, up to 4 ops
 *             at once on the comm, 10 000 sends, random schedules.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define G_TAGS	    8
#define G_ACTIVE    4 /* receive ops at once: 4 x maxDepth <= NCCL_NET_MAX_REQUESTS */
#define G_SENDS	    10000
#define G_MAX_SCEN  320
#define G_MAX_TURNS (3 * G_TAGS)
#define G_MAX_OPS   G_SENDS

struct gplan {
	size_t cap;
};

static size_t g_size(const void *plan, uint32_t conn, int tag, uint32_t k)
{
	const struct gplan *p = plan;
	uint64_t st = rp_msg_seed(conn, tag, k) ^ 0x5151;
	uint64_t r = rp_rand(&st);

	switch (r % 16) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return p->cap;
	}
	return (size_t)((r >> 8) % (p->cap + 1));
}

/* --- the scripts ------------------------------------------------------------------- */

struct scen {
	int nrecv;
	int n[3];
	int8_t tags[3][G_TAGS];
	int nturns;
	int8_t turns[G_MAX_TURNS]; /* the order in which the senders first try */
};

/* An op of the random script: nsubs tags, steps each. */
struct gop {
	int n;
	int8_t tags[G_TAGS];
	uint32_t nsteps[G_TAGS];
};

struct gcase {
	int random;
	struct rp_match_log *logs; /* G_TAGS: [0] when shared, [tag] when not */
	struct scen *scen;
	int nscen;
	struct gop *ops;
	int nops;
	uint32_t per_tag[G_TAGS];
};

static void shuffle8(int8_t *a, int n, uint64_t *rng)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rp_rand_below(rng, (uint32_t)i + 1);
		int8_t t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

static int factorial(int m)
{
	return m <= 1 ? 1 : m * factorial(m - 1);
}

/* The idx-th permutation of items[0..m) (factorial number system). */
static void nth_perm(const int8_t *items, int m, int idx, int8_t *out)
{
	int8_t left[G_MAX_TURNS];

	memcpy(left, items, (size_t)m);
	for (int i = 0; i < m; i++) {
		int f = factorial(m - 1 - i), q = idx / f;

		idx %= f;
		out[i] = left[q];
		memmove(left + q, left + q + 1, (size_t)(m - 1 - i - q));
	}
}

/* Add scenarios for receives r[0..nrecv): every order of the sends up to 4
 * of them, else ten random orders plus the given extra order (if any). */
static void add_orders(struct scen *list, int *cnt, const struct scen *base, const int8_t *extra,
		       uint64_t *rng)
{
	int8_t items[G_MAX_TURNS];
	int m = 0, orders;

	for (int r = 0; r < base->nrecv; r++)
		for (int i = 0; i < base->n[r]; i++)
			items[m++] = base->tags[r][i];
	orders = m <= 4 ? factorial(m) : 10 + (extra != NULL);
	for (int o = 0; o < orders; o++) {
		struct scen *s = &list[(*cnt)++];

		H_CHECK(*cnt <= G_MAX_SCEN, "too many scenarios");
		*s = *base;
		s->nturns = m;
		if (m <= 4) {
			nth_perm(items, m, o, s->turns);
		} else if (extra && o == 10) {
			memcpy(s->turns, extra, (size_t)m);
		} else {
			memcpy(s->turns, items, (size_t)m);
			shuffle8(s->turns, m, rng);
		}
	}
}

static void set_recv(struct scen *s, int r, int n, int first, uint64_t *rng)
{
	s->n[r] = n;
	for (int i = 0; i < n; i++)
		s->tags[r][i] = (int8_t)(first + i);
	shuffle8(s->tags[r], n, rng); /* the order of tags[] in irecv is free */
}

static int scen_build(struct scen *list)
{
	uint64_t rng = rp_seed ^ 0x5ce0ull;
	int8_t extra[G_MAX_TURNS];
	struct scen b;
	int cnt = 0;

	/* One receive of n tags. */
	for (int n = 1; n <= G_TAGS; n++) {
		memset(&b, 0, sizeof(b));
		b.nrecv = 1;
		set_recv(&b, 0, n, 0, &rng);
		add_orders(list, &cnt, &b, NULL, &rng);
	}
	/* Receive #0 = {n}, receive #1 = {0..n-1}: the sends of #1 first. */
	for (int n = 1; n < G_TAGS; n++) {
		memset(&b, 0, sizeof(b));
		b.nrecv = 2;
		set_recv(&b, 0, 1, n, &rng);
		set_recv(&b, 1, n, 0, &rng);
		for (int i = 0; i < n; i++)
			extra[i] = (int8_t)i;
		extra[n] = (int8_t)n;
		add_orders(list, &cnt, &b, extra, &rng);
	}
	/* Receive #0 = {n-1}, receive #1 = {0..n-1}: one tag in both. */
	for (int n = 1; n <= G_TAGS; n++) {
		memset(&b, 0, sizeof(b));
		b.nrecv = 2;
		set_recv(&b, 0, 1, n - 1, &rng);
		set_recv(&b, 1, n, 0, &rng);
		for (int i = 0; i < n; i++)
			extra[i] = (int8_t)(n - 1 - i);
		extra[n] = (int8_t)(n - 1);
		add_orders(list, &cnt, &b, extra, &rng);
	}
	/* Three receives: {0..n-1}, a random subset, {0..n-1}. */
	for (int n = 2; n <= G_TAGS; n++) {
		for (int rep = 0; rep < 4; rep++) {
			int8_t all[G_TAGS] = {0, 1, 2, 3, 4, 5, 6, 7};
			int k = 1 + (int)rp_rand_below(&rng, G_TAGS);
			struct scen *s = &list[cnt++];

			H_CHECK(cnt <= G_MAX_SCEN, "too many scenarios");
			memset(s, 0, sizeof(*s));
			s->nrecv = 3;
			set_recv(s, 0, n, 0, &rng);
			shuffle8(all, G_TAGS, &rng);
			s->n[1] = k;
			memcpy(s->tags[1], all, (size_t)k);
			set_recv(s, 2, n, 0, &rng);
			for (int r = 0; r < 3; r++)
				for (int i = 0; i < s->n[r]; i++)
					s->turns[s->nturns++] = s->tags[r][i];
			shuffle8(s->turns, s->nturns, &rng);
		}
	}
	return cnt;
}

/* 10 000 sends over ops of 1..8 tags, 1..4 steps each. */
static int ops_build(struct gop *ops, uint32_t *per_tag)
{
	uint64_t rng = rp_seed ^ 0x0b5ull;
	uint32_t total = 0;
	int nops = 0;

	memset(per_tag, 0, sizeof(uint32_t) * G_TAGS);
	while (total < G_SENDS) {
		struct gop *op = &ops[nops++];
		int8_t all[G_TAGS] = {0, 1, 2, 3, 4, 5, 6, 7};

		op->n = rp_rand_below(&rng, 3) == 0 ? G_TAGS : 1 + (int)rp_rand_below(&rng, G_TAGS);
		shuffle8(all, G_TAGS, &rng);
		for (int i = 0; i < op->n; i++) {
			uint32_t steps = 1 + rp_rand_below(&rng, 4);

			steps = RW_MIN(steps, G_SENDS - total);
			if (!steps) {
				op->n = i;
				break;
			}
			op->tags[i] = all[i];
			op->nsteps[i] = steps;
			per_tag[all[i]] += steps;
			total += steps;
		}
	}
	return nops;
}

/* --- both sides ---------------------------------------------------------------------- */

struct gside {
	struct gcase *gc;
	struct gplan plan;
	void *ctx;
	struct h_props props;
	struct rp_link link;
	int shared, nch;
	unsigned char *pool;
	size_t pool_len;
	void *mh[RP_MAX_CH];
	uint32_t outstanding[RP_MAX_CH];
};

static int comm_of(const struct gside *g, int tag)
{
	return g->shared ? 0 : tag;
}

static void side_open(struct rp_ctl *ctl, struct gside *g, int recv)
{
	memset(g, 0, sizeof(*g));
	g->gc = ctl->pair->arg;
	g->plan.cap = g->gc->random ? 32768 : 8192;
	rp_child_setup(ctl->pair->version, &g->ctx, &g->props);
	g->shared = g->props.max_recvs > 1;
	g->nch = g->shared ? 1 : G_TAGS;
	rp_link_open(ctl, g->ctx, g->nch, &g->link);
	g->pool_len = (size_t)(recv ? G_ACTIVE : 1) * G_TAGS * RP_STEPS * g->plan.cap;
	g->pool = rp_alloc(g->pool_len);
	for (int c = 0; c < g->nch; c++) {
		void *comm = recv ? g->link.recv[c] : g->link.send[c];

		H_CHECK(h_reg_mr(comm, g->pool, g->pool_len, NCCL_PTR_HOST, &g->mh[c]) ==
				ncclSuccess,
			"v%d regMr", h_version);
	}
	if (recv)
		g->gc->logs[0].shared = (uint32_t)g->shared;
}

static void side_close(struct gside *g, int recv)
{
	H_CHECK(h_log.warns == 0, "v%d: %d plugin warning(s), last: %s", h_version, h_log.warns,
		h_log.last_warn);
	for (int c = 0; c < g->nch; c++)
		H_CHECK(h_dereg_mr(recv ? g->link.recv[c] : g->link.send[c], g->mh[c]) ==
				ncclSuccess,
			"v%d deregMr", h_version);
	rp_link_close(&g->link);
	h_child_finalize(g->ctx);
	free(g->pool);
}

/* The receive ops standing for one script op in pool slot `slot`: one op
 * on the shared comm, or one per tag on the tag's own comm. */
static int make_ops(struct gside *g, struct rp_recv_op *ops, int slot, int n, const int8_t *tags,
		    const uint32_t *nsteps, uint32_t *next_k)
{
	int nops = 0;

	for (int i = 0; i < n; i++) {
		int t = tags[i], c = comm_of(g, t);
		unsigned char *slots =
			g->pool + ((size_t)slot * G_TAGS + (size_t)i) * RP_STEPS * g->plan.cap;
		struct rp_recv_op *op = &ops[g->shared ? 0 : nops];

		if (!g->shared || i == 0) {
			rp_recv_op_init(op, g->link.recv[c], 0, g->props.max_recvs, g->plan.cap,
					&g->outstanding[c]);
			op->plan = &g->plan;
			op->size_of = g_size;
			op->log = &g->gc->logs[c];
			nops++;
		}
		rp_recv_op_add(op, t, nsteps[i], next_k[t], slots, g->mh[c]);
		next_k[t] += nsteps[i];
	}
	for (int i = 0; i < nops; i++)
		rp_recv_op_start(&ops[i]);
	return nops;
}

static void send_subs_init(struct gside *g, struct rp_send_sub *subs, const uint32_t *total)
{
	for (int t = 0; t < G_TAGS; t++) {
		int c = comm_of(g, t);

		rp_send_sub_init(&subs[t], g->link.send[c], g->mh[c],
				 g->pool + (size_t)t * RP_STEPS * g->plan.cap, g->plan.cap, 0, t,
				 total ? total[t] : 0, RP_STEPS);
		subs[t].plan = &g->plan;
		subs[t].size_of = g_size;
		subs[t].log = &g->gc->logs[c];
	}
}

/* --- scripted ---------------------------------------------------------------------------- */

static void scripted_receiver(struct rp_ctl *ctl)
{
	struct gside g;
	uint32_t next_k[G_TAGS] = {0};
	struct rp_recv_op *ops = calloc(3 * G_TAGS, sizeof(*ops));
	uint64_t last = 0;
	unsigned spins = 0;

	side_open(ctl, &g, 1);
	for (int si = 0; si < g.gc->nscen; si++) {
		const struct scen *s = &g.gc->scen[si];
		int nops = 0;
		char what[96];

		snprintf(what, sizeof(what), "v%d grouped scenario %d (receiver)", h_version, si);
		/* Post the receives in order, each before the next. */
		for (int r = 0; r < s->nrecv; r++) {
			uint32_t ones[G_TAGS] = {1, 1, 1, 1, 1, 1, 1, 1};
			int first = nops;

			nops += make_ops(&g, ops + nops, r, s->n[r], s->tags[r], ones, next_k);
			for (int o = first; o < nops; o++) {
				int groups =
					(ops[o].nsubs + ops[o].group_size - 1) / ops[o].group_size;

				for (int gi = 0; gi < groups; gi++)
					while (!ops[o].g_posted[gi])
						rp_idle(rp_recv_progress(&ops[o]), &last, &spins,
							what);
			}
		}
		rp_ctl_send(ctl->out, &si, sizeof(si));
		for (int left = nops; left > 0;) {
			int did = 0;

			left = 0;
			for (int o = 0; o < nops; o++) {
				did |= rp_recv_progress(&ops[o]);
				left += !rp_recv_finished(&ops[o]);
			}
			rp_idle(did, &last, &spins, what);
		}
	}
	free(ops);
	side_close(&g, 1);
}

static void scripted_sender(struct rp_ctl *ctl)
{
	struct gside g;
	struct rp_send_sub subs[G_TAGS];
	uint64_t last = 0;
	unsigned spins = 0;

	side_open(ctl, &g, 0);
	send_subs_init(&g, subs, NULL);
	for (int si = 0; si < g.gc->nscen; si++) {
		const struct scen *s = &g.gc->scen[si];
		int go = -1, released = 0, busy = 1;
		char what[96];

		snprintf(what, sizeof(what), "v%d grouped scenario %d (sender)", h_version, si);
		rp_ctl_recv(ctl->in, &go, sizeof(go));
		H_CHECK(go == si, "scenario %d started as %d", si, go);
		/* Round r lets the r-th sender in the order try for the first
		 * time; those that got NULL keep trying. */
		while (busy) {
			int did = 0;

			if (released < s->nturns)
				subs[s->turns[released++]].total++;
			busy = released < s->nturns;
			for (int i = 0; i < s->nturns; i++) {
				struct rp_send_sub *sub = &subs[s->turns[i]];

				if (i && memchr(s->turns, s->turns[i], (size_t)i))
					continue; /* each sender once per round */
				did |= rp_send_progress(sub);
				busy |= !rp_send_finished(sub);
			}
			rp_idle(did, &last, &spins, what);
		}
	}
	side_close(&g, 0);
}

/* --- random ---------------------------------------------------------------------------------- */

struct active {
	int used;
	int nops;
	uint32_t tags; /* mask */
	struct rp_recv_op ops[G_TAGS];
};

static void random_receiver(struct rp_ctl *ctl)
{
	struct gside g;
	struct active *act = calloc(G_ACTIVE, sizeof(*act));
	uint32_t next_k[G_TAGS] = {0}, busy_tags = 0;
	int next = 0, left;
	uint64_t last = 0;
	unsigned spins = 0;

	side_open(ctl, &g, 1);
	do {
		int did = 0;

		/* Start the next ops in script order while there is room and
		 * none of their tags is still in an earlier op. */
		for (int a = 0; a < G_ACTIVE && next < g.gc->nops; a++) {
			const struct gop *op = &g.gc->ops[next];
			uint32_t mask = 0;

			if (act[a].used)
				continue;
			for (int i = 0; i < op->n; i++)
				mask |= 1u << op->tags[i];
			if (mask & busy_tags)
				break;
			act[a].used = 1;
			act[a].tags = mask;
			act[a].nops =
				make_ops(&g, act[a].ops, a, op->n, op->tags, op->nsteps, next_k);
			busy_tags |= mask;
			next++;
			did = 1;
		}
		left = next < g.gc->nops;
		for (int a = 0; a < G_ACTIVE; a++) {
			int done = 1;

			if (!act[a].used)
				continue;
			for (int o = 0; o < act[a].nops; o++) {
				did |= rp_recv_progress(&act[a].ops[o]);
				done &= rp_recv_finished(&act[a].ops[o]);
			}
			if (done) {
				act[a].used = 0;
				busy_tags &= ~act[a].tags;
			}
			left |= act[a].used;
		}
		rp_idle(did, &last, &spins, "grouped random run (receiver)");
	} while (left);
	free(act);
	side_close(&g, 1);
}

static void random_sender(struct rp_ctl *ctl)
{
	static const uint32_t everies[] = {1, 1, 2, 4, 16};
	struct gside g;
	struct rp_send_sub subs[G_TAGS];
	uint64_t rng = rp_seed ^ 0x5e4dull, last = 0;
	unsigned spins = 0;
	uint32_t rounds = 0;
	int busy;

	side_open(ctl, &g, 0);
	send_subs_init(&g, subs, g.gc->per_tag);
	do {
		int8_t order[G_TAGS] = {0, 1, 2, 3, 4, 5, 6, 7};
		int did = 0;

		/* Each sender on its own clock, in a new order every round. */
		if (rounds++ % 512 == 0)
			for (int t = 0; t < G_TAGS; t++)
				subs[t].sched.every =
					everies[rp_rand_below(&rng, RW_ARRAY_SIZE(everies))];
		shuffle8(order, G_TAGS, &rng);
		busy = 0;
		for (int i = 0; i < G_TAGS; i++) {
			did |= rp_send_progress(&subs[order[i]]);
			busy |= !rp_send_finished(&subs[order[i]]);
		}
		rp_idle(did, &last, &spins, "grouped random run (sender)");
	} while (busy);
	side_close(&g, 0);
}

/* --- the tests ----------------------------------------------------------------------------------
 */

static void check_logs(const struct gcase *gc, const char *what)
{
	int shared = (int)gc->logs[0].shared, n = shared ? 1 : G_TAGS;
	uint32_t sends = 0, nulls = 0;

	for (int c = 0; c < n; c++) {
		rp_log_check(&gc->logs[c], what);
		sends += gc->logs[c].naccepts;
		nulls += gc->logs[c].nulls;
	}
	print_message("[          ] %s over %s: %u sends on %d comm(s), %u NULL isend(s) retried, "
		      "seed %llu\n",
		      what, rp_transport_name, sends, n, nulls, (unsigned long long)rp_seed);
	/* Scripts where the oldest receive cannot take the first send exist
	 * only on a shared comm: there a NULL must have come back. */
	if (shared && !gc->random && nulls == 0)
		fail_msg("%s: no isend ever returned NULL, yet sends were tried before the "
			 "oldest receive had a buffer with their tag",
			 what);
}

static void run_scripted(int version)
{
	struct gcase gc = {0};
	struct rp_pair p;
	char what[64];

	gc.logs = rp_log_create(G_TAGS);
	gc.scen = calloc(G_MAX_SCEN, sizeof(*gc.scen));
	gc.nscen = scen_build(gc.scen);
	snprintf(what, sizeof(what), "v%d grouped receives, %d scripts", version, gc.nscen);
	rp_pair_init(&p, version, &gc);
	rp_pair_run(&p, scripted_receiver, scripted_sender, what);
	check_logs(&gc, what);
	free(gc.scen);
	rp_log_destroy(gc.logs, G_TAGS);
}

void rp_case_grouped_scripted(void **state)
{
	(void)state;
	run_scripted(11);
}

void rp_case_grouped_legacy(void **state)
{
	(void)state;
	run_scripted(8);
	run_scripted(12);
}

void rp_case_grouped_random(void **state)
{
	struct gcase gc = {0};
	struct rp_pair p;

	(void)state;
	gc.random = 1;
	gc.logs = rp_log_create(G_TAGS);
	gc.ops = calloc(G_MAX_OPS, sizeof(*gc.ops));
	gc.nops = ops_build(gc.ops, gc.per_tag);
	rp_pair_init(&p, 11, &gc);
	rp_pair_run(&p, random_receiver, random_sender, "v11 grouped random run, 10000 sends");
	check_logs(&gc, "v11 grouped random run");
	free(gc.ops);
	rp_log_destroy(gc.logs, G_TAGS);
}

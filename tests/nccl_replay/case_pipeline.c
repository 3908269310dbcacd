/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cases 2 and 3: NCCL's step pipeline, on one channel and on several.
 *
 * Each direction of a connection carries NCCL ops one after the other; an
 * op of nbytes is cut into Simple-protocol steps of stepSize x sliceSteps
 * (stepSize = NCCL_BUFFSIZE / NCCL_STEPS = 512 KiB), the last one short.
 * The sender keeps up to NCCL_STEPS / sliceSteps isends in flight, the
 * receiver as many irecvs (n = 1, tag = the peer's rank), each with a
 * buffer of the full step; "the GPU" fills and drains slots on its own
 * random clock, so receives are posted before, during and after the sends
 * they match.  Both processes send and receive at once, every channel from
 * one thread, the proxy's progress loop calling test() round-robin
 * (src/proxy.cc progressOps over the active ops).
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

struct pplan {
	size_t step;
	int nops;
	size_t nbytes[8];
	uint32_t first[9]; /* stream index of each op's first step */
};

static void pplan_init(struct pplan *p, const struct rp_pipe_spec *spec)
{
	memset(p, 0, sizeof(*p));
	p->step = (size_t)RP_STEP_BYTES * (size_t)spec->slice;
	p->nops = spec->nops;
	for (int j = 0; j < spec->nops; j++) {
		size_t steps = (spec->nbytes[j] + p->step - 1) / p->step;

		p->nbytes[j] = spec->nbytes[j];
		p->first[j + 1] = p->first[j] + (uint32_t)RW_MAX(steps, 1); /* 0 bytes: 1 step */
	}
}

static size_t p_size(const void *plan, uint32_t conn, int tag, uint32_t k)
{
	const struct pplan *p = plan;
	int j = 0;

	(void)conn, (void)tag;
	while (j + 1 < p->nops && k >= p->first[j + 1])
		j++;
	H_CHECK(k < p->first[j + 1], "plan: step %u past the last op", k);
	return RW_MIN(p->step, p->nbytes[j] - (size_t)(k - p->first[j]) * p->step);
}

struct pchan {
	void *scomm, *rcomm;
	unsigned char *sbuf, *rbuf;
	void *smh, *rmh;
	struct rp_send_sub send;
	struct rp_recv_op recv;
	int op; /* the receive side's current op */
	uint32_t outstanding;
};

struct rp_pipes {
	struct pplan plan;
	struct rp_pipe_spec spec;
	int nch, rank;
	uint32_t conn_base;
	uint64_t start_ms, rounds, rng;
	struct pchan ch[];
};

static void recv_op_begin(struct rp_pipes *p, struct pchan *c, uint32_t conn)
{
	int j = c->op;

	rp_recv_op_init(&c->recv, c->rcomm, conn, 1, p->plan.step, &c->outstanding);
	c->recv.plan = &p->plan;
	c->recv.size_of = p_size;
	c->recv.flush = p->spec.flush;
	rp_recv_op_add(&c->recv, 1 - p->rank, p->plan.first[j + 1] - p->plan.first[j],
		       p->plan.first[j], c->rbuf, c->rmh);
	rp_recv_op_start(&c->recv);
	c->recv.depth = (uint32_t)(RP_STEPS / p->spec.slice); /* non-shared: NCCL_STEPS slots */
	c->recv.sched.rng ^= p->rng + (uint64_t)j;
}

struct rp_pipes *rp_pipes_start(struct rp_link *const *links, int nlinks, uint32_t conn_base,
				int rank, const struct rp_pipe_spec *spec)
{
	struct rp_pipes *p;
	size_t slots;
	int nch = 0, i = 0;

	for (int l = 0; l < nlinks; l++)
		nch += links[l]->nch;
	p = calloc(1, sizeof(*p) + (size_t)nch * sizeof(struct pchan));
	H_CHECK(p && spec->nops >= 1 && spec->nops <= 8 && (spec->slice == 1 || spec->slice == 2),
		"pipes: %d ops, slice %d", spec->nops, spec->slice);
	pplan_init(&p->plan, spec);
	p->spec = *spec;
	p->nch = nch;
	p->rank = rank;
	p->conn_base = conn_base;
	p->rng = rp_seed ^ ((uint64_t)conn_base << 8) ^ (uint64_t)rank;
	p->start_ms = rw_now_ms();
	slots = (size_t)RP_STEPS * p->plan.step;
	for (int l = 0; l < nlinks; l++) {
		for (int k = 0; k < links[l]->nch; k++, i++) {
			struct pchan *c = &p->ch[i];
			uint32_t conn = conn_base + (uint32_t)i;

			c->scomm = links[l]->send[k];
			c->rcomm = links[l]->recv[k];
			c->sbuf = rp_alloc(slots);
			c->rbuf = rp_alloc(slots);
			H_CHECK(h_reg_mr(c->scomm, c->sbuf, slots, NCCL_PTR_HOST, &c->smh) ==
					ncclSuccess,
				"v%d regMr(send, channel %d): %s", h_version, i, h_log.last_warn);
			H_CHECK(h_reg_mr(c->rcomm, c->rbuf, slots, NCCL_PTR_HOST, &c->rmh) ==
					ncclSuccess,
				"v%d regMr(recv, channel %d): %s", h_version, i, h_log.last_warn);
			rp_send_sub_init(&c->send, c->scomm, c->smh, c->sbuf, p->plan.step, conn,
					 rank, p->plan.first[p->plan.nops],
					 (uint32_t)(RP_STEPS / spec->slice));
			c->send.plan = &p->plan;
			c->send.size_of = p_size;
			c->send.sched.rng ^= p->rng;
			recv_op_begin(p, c, conn);
		}
	}
	return p;
}

int rp_pipes_finished(const struct rp_pipes *p)
{
	for (int i = 0; i < p->nch; i++)
		if (!rp_send_finished(&p->ch[i].send) || p->ch[i].op < p->plan.nops)
			return 0;
	return 1;
}

int rp_pipes_progress(struct rp_pipes *p)
{
	static const uint32_t everies[] = {1, 1, 2, 3, 8};
	int recv_ok = rw_now_ms() >= p->start_ms + (uint64_t)p->spec.recv_delay_ms;
	int did = 0;

	/* The GPU's pace changes now and then, per channel and direction. */
	if (p->rounds++ % 256 == 0) {
		for (int i = 0; i < p->nch; i++) {
			p->ch[i].send.sched.every =
				everies[rp_rand_below(&p->rng, RW_ARRAY_SIZE(everies))];
			p->ch[i].recv.sched.every =
				everies[rp_rand_below(&p->rng, RW_ARRAY_SIZE(everies))];
		}
	}
	for (int i = 0; i < p->nch; i++) {
		struct pchan *c = &p->ch[i];

		did |= rp_send_progress(&c->send);
		if (!recv_ok || c->op >= p->plan.nops)
			continue;
		did |= rp_recv_progress(&c->recv);
		if (rp_recv_finished(&c->recv)) {
			uint32_t every = c->recv.sched.every;

			if (++c->op < p->plan.nops) {
				recv_op_begin(p, c, p->conn_base + (uint32_t)i);
				c->recv.sched.every = every;
			}
			did = 1;
		}
	}
	return did;
}

void rp_pipes_end(struct rp_pipes *p)
{
	for (int i = 0; i < p->nch; i++) {
		struct pchan *c = &p->ch[i];

		H_CHECK(c->outstanding == 0, "channel %d: %u receive request(s) left", i,
			c->outstanding);
		H_CHECK(h_dereg_mr(c->scomm, c->smh) == ncclSuccess, "v%d deregMr(send)",
			h_version);
		H_CHECK(h_dereg_mr(c->rcomm, c->rmh) == ncclSuccess, "v%d deregMr(recv)",
			h_version);
		free(c->sbuf);
		free(c->rbuf);
	}
	free(p);
}

void rp_pipes_run(struct rp_link *const *links, int nlinks, uint32_t conn_base, int rank,
		  const struct rp_pipe_spec *spec, const char *what)
{
	struct rp_pipes *p = rp_pipes_start(links, nlinks, conn_base, rank, spec);
	uint64_t last = 0;
	unsigned spins = 0;

	while (!rp_pipes_finished(p))
		rp_idle(rp_pipes_progress(p), &last, &spins, what);
	rp_pipes_end(p);
}

/* --- the tests ----------------------------------------------------------------------- */

struct pcase {
	int nch;
	int nspecs;
	struct rp_pipe_spec specs[3];
};

static void pipeline_child(struct rp_ctl *ctl)
{
	struct pcase *pc = ctl->pair->arg;
	struct rp_link link, *lp = &link;
	struct h_props props;
	void *ctx = NULL;
	int rank = ctl->name == 'A' ? 0 : 1;
	char what[96];

	rp_child_setup(ctl->pair->version, &ctx, &props);
	rp_link_open(ctl, ctx, pc->nch, &link);
	for (int s = 0; s < pc->nspecs; s++) {
		snprintf(what, sizeof(what), "v%d pipeline %d on %d channel(s), rank %d", h_version,
			 s, pc->nch, rank);
		rp_pipes_run(&lp, 1, (uint32_t)s * 64, rank, &pc->specs[s], what);
	}
	/* Both are done before either closes (NCCL closes after its ops). */
	rp_ctl_sync(ctl);
	rp_link_close(&link);
	h_child_finalize(ctx);
	H_CHECK(h_log.warns == 0, "v%d: %d plugin warning(s), last: %s", h_version, h_log.warns,
		h_log.last_warn);
}

static void run_pipeline(int version, struct pcase *pc, const char *what)
{
	struct rp_pair p;
	char msg[96];

	snprintf(msg, sizeof(msg), "v%d %s", version, what);
	rp_pair_init(&p, version, pc);
	rp_pair_run(&p, pipeline_child, pipeline_child, msg);
}

#define MIB (1u << 20)

void rp_case_pipeline(void **state)
{
	/* Sizes around the step: one byte, a step less one, a step, nothing,
	 * a buffer and then some, and a long op. */
	struct pcase pc = {
		.nch = 1,
		.nspecs = 3,
		.specs =
			{
				{.nops = 6,
				 .nbytes = {1, RP_STEP_BYTES - 1, RP_STEP_BYTES, 0, 4 * MIB + 3,
					    24 * MIB},
				 .slice = 1,
				 .flush = 1},
				{.nops = 3,
				 .nbytes = {8 * MIB + 5, 1, 2 * RP_STEP_BYTES},
				 .slice = 2,
				 .flush = 1},
				/* Every send before its receive exists. */
				{.nops = 2,
				 .nbytes = {4 * MIB, 17},
				 .slice = 1,
				 .recv_delay_ms = 100},
			},
	};

	(void)state;
	run_pipeline(11, &pc, "step pipeline");
}

void rp_case_pipeline_legacy(void **state)
{
	struct pcase pc = {
		.nch = 1,
		.nspecs = 1,
		.specs = {{.nops = 3, .nbytes = {1, 4 * MIB + 3, MIB - 1}, .slice = 1, .flush = 1}},
	};

	(void)state;
	run_pipeline(8, &pc, "step pipeline");
	run_pipeline(9, &pc, "step pipeline");
	run_pipeline(12, &pc, "step pipeline");
}

void rp_case_channels(void **state)
{
	struct pcase two = {
		.nch = 2,
		.nspecs = 1,
		.specs = {{.nops = 3, .nbytes = {8 * MIB + 1, 0, 3 * MIB}, .slice = 1, .flush = 1}},
	};
	struct pcase eight = {
		.nch = RP_MAX_CH,
		.nspecs = 1,
		.specs = {{.nops = 2, .nbytes = {2 * MIB + 7, 1}, .slice = 1, .flush = 1}},
	};

	(void)state;
	run_pipeline(11, &two, "2 channels from one thread");
	run_pipeline(11, &eight, "8 channels from one thread");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's communicator: its links and staging, user registrations,
 * the queue of collectives and their progress, and what happens when a
 * peer fails (see rw_coll.h).
 *
 * The control links (tokens, failure notices) are coll_ctl.c's.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "coll/coll_place.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

static_assert((int)RW_COLL_ALLREDUCE == (int)RW_RING_ALLREDUCE &&
		      (int)RW_COLL_REDUCE_SCATTER == (int)RW_RING_REDUCE_SCATTER &&
		      (int)RW_COLL_ALLGATHER == (int)RW_RING_ALLGATHER &&
		      (int)RW_COLL_BROADCAST == (int)RW_RING_BROADCAST,
	      "collective kinds are the ring's");

static int next_rank(const struct rw_coll_comm *c)
{
	return rw_coll_next(c);
}

static int prev_rank(const struct rw_coll_comm *c)
{
	return rw_coll_prev(c);
}

/* The ring order: a's permutation, else rank order. */
static int order_set(struct rw_coll_comm *c, const int *order)
{
	bool *seen, same = true;

	c->pos = c->rank;
	for (int p = 0; order && p < c->nranks; p++)
		same &= order[p] == p;
	if (same)
		return 0; /* rank order: c->order stays NULL */
	c->order = calloc((size_t)c->nranks, sizeof(*c->order));
	seen = calloc((size_t)c->nranks, sizeof(*seen));
	if (!c->order || !seen) {
		free(seen);
		return -ENOMEM;
	}
	for (int p = 0; p < c->nranks; p++) {
		int r = order[p];

		if (r < 0 || r >= c->nranks || seen[r]) {
			RW_WARN(RW_LOG_COLL | RW_LOG_INIT,
				"coll: comm_create: the ring order is not a permutation of the %d "
				"ranks (position %d: %d)",
				c->nranks, p, r);
			free(seen);
			return -EINVAL;
		}
		seen[r] = true;
		c->order[p] = r;
		if (r == c->rank)
			c->pos = p;
	}
	free(seen);
	return 0;
}

int rw_coll_ring_args(const struct rw_coll_req *r, struct rw_ring_plan_args *pa, size_t **tmp)
{
	const struct rw_coll_comm *c = r->comm;
	int n = c->nranks;
	size_t *seg;

	*tmp = NULL;
	if (!c->order)
		return 0;
	pa->rank = c->pos;
	if (pa->kind == RW_RING_BROADCAST) {
		for (int p = 0; p < n; p++)
			if (c->order[p] == r->a.root)
				pa->root = p;
		return 0; /* one segment */
	}
	seg = calloc(2 * (size_t)n, sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	for (int p = 0; p < n; p++) {
		seg[p] = r->a.seg_off[c->order[p]];
		seg[n + p] = r->a.seg_count[c->order[p]];
	}
	pa->seg_off = seg;
	pa->seg_count = seg + n;
	*tmp = seg;
	return 0;
}

int rw_coll_comm_nranks(const struct rw_coll_comm *c)
{
	return c->nranks;
}

int rw_coll_comm_rank(const struct rw_coll_comm *c)
{
	return c->rank;
}

int rw_coll_comm_error(const struct rw_coll_comm *c)
{
	return c->error;
}

void rw_coll_comm_settings(const struct rw_coll_comm *c, struct rw_coll_settings *out)
{
	*out = (struct rw_coll_settings){
		.algo = c->algo,
		.nchannels = c->nchannels,
		.chunk_bytes = c->chunk_bytes,
		.dev_chunk_bytes = c->dev_chunk_bytes,
		.timeout_ms = c->timeout_ms,
	};
}

/*
 * The device chunk: where every rank is on this host (CUDA IPC), device
 * collectives have a stride and table of their own (tune.c's ring_dev_shm[],
 * with the figures that set them); other links stage device buffers at
 * chunk_bytes.  A RINGWAY_CHUNK_BYTES given alone sets both.
 */
static void dev_chunk_set(struct rw_coll_comm *c, const struct rw_config *cfg)
{
	bool dev_set = cfg->set[RW_PARAM_ID_dev_chunk_bytes];

	if (!c->links_shm || (c->chunk_set && !dev_set))
		return;
	c->dev_chunk_bytes = (RW_MAX(cfg->dev_chunk_bytes, (size_t)4096) + 63) & ~(size_t)63;
	c->dev_chunk_set = dev_set;
}

/* --- links and staging -------------------------------------------------------- */

static void set_link(struct rw_coll_link *l, int peer, bool is_send, int id)
{
	*l = (struct rw_coll_link){.peer = peer, .is_send = is_send, .id = id};
}

static int links_alloc(struct rw_coll_comm *c)
{
	int next = next_rank(c), prev = prev_rank(c), n;

	int *peers = calloc((size_t)c->nranks, sizeof(*peers));
	int nmesh = peers ? rw_coll_p2p_peers(c->nranks, c->rank, c->algo, peers) : 0;

	if (!peers)
		return -ENOMEM;
	c->nps = 0;
	c->ps_first = -1;
	c->p2p_first = -1;
	if (c->algo == RW_COLL_ALGO_PS)
		c->nps = c->rank == 0 ? c->nranks - 1 : 1;
	c->nlinks = 2 * c->nchannels + 4 + 2 * c->nps + 2 * nmesh;
	c->links = calloc((size_t)c->nlinks, sizeof(*c->links));
	if (!c->links) {
		free(peers);
		return -ENOMEM;
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		set_link(&c->links[rw_link_send(ch)], next, true, ch);
		set_link(&c->links[rw_link_recv(ch)], prev, false, ch);
	}
	set_link(&c->links[rw_link_ctrl(c, 0)], next, true, RW_LINK_CTRL_FWD);
	set_link(&c->links[rw_link_ctrl(c, 1)], prev, false, RW_LINK_CTRL_FWD);
	set_link(&c->links[rw_link_ctrl(c, 2)], prev, true, RW_LINK_CTRL_BWD);
	set_link(&c->links[rw_link_ctrl(c, 3)], next, false, RW_LINK_CTRL_BWD);
	n = rw_link_ctrl(c, 4);
	if (c->nps)
		c->ps_first = n;
	for (int i = 0; i < c->nps; i++) {
		int peer = c->rank == 0 ? i + 1 : 0;

		set_link(&c->links[n + 2 * i], peer, true, RW_LINK_PS);
		set_link(&c->links[n + 2 * i + 1], peer, false, RW_LINK_PS);
	}
	/* the latency algorithms' links: a pair per peer (small_op.c) */
	n += 2 * c->nps;
	if (nmesh)
		c->p2p_first = n;
	c->np2p = nmesh;
	for (int i = 0; i < nmesh; i++) {
		set_link(&c->links[n + 2 * i], peers[i], true, RW_LINK_P2P);
		set_link(&c->links[n + 2 * i + 1], peers[i], false, RW_LINK_P2P);
	}
	free(peers);
	return 0;
}

static void stage_free(struct rw_coll_comm *c, struct rw_coll_stage *s, int send_link,
		       int recv_link)
{
	struct rw_net_comm *sc = send_link >= 0 ? c->links[send_link].comm : NULL;
	struct rw_net_comm *rc = recv_link >= 0 ? c->links[recv_link].comm : NULL;

	if (s->mr_send && sc)
		rw_net_dereg_mr(sc, s->mr_send);
	if (s->mr_recv && rc)
		rw_net_dereg_mr(rc, s->mr_recv);
	if (s->out_mr && sc)
		rw_net_dereg_mr(sc, s->out_mr);
	rw_coll_stage_device_free(s); /* its stream's copies into host slots end first */
	free(s->buf);
	if (s->wide) {
		stage_free(c, s->wide, send_link, recv_link);
		free(s->wide);
	}
	memset(s, 0, sizeof(*s));
}

/* Staging of NSLOTS slots of stride bytes, registered on the given links
 * (-1: none). */
static int stage_alloc(struct rw_coll_comm *c, struct rw_coll_stage *s, size_t stride,
		       int send_link, int recv_link)
{
	size_t bytes = RW_COLL_NSLOTS * stride;
	int rc;

	/* aligned_alloc wants a multiple of the alignment: a chunk need only be
	 * one of 64 bytes */
	s->buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	if (!s->buf)
		return -ENOMEM;
	s->buf_bytes = bytes;
	if (send_link >= 0) {
		rc = rw_net_reg_mr(c->links[send_link].comm, s->buf, bytes, RW_PTR_HOST,
				   &s->mr_send);
		if (rc)
			goto err_free;
	}
	if (recv_link >= 0) {
		rc = rw_net_reg_mr(c->links[recv_link].comm, s->buf, bytes, RW_PTR_HOST,
				   &s->mr_recv);
		if (rc)
			goto err_free;
	}
	return 0;

err_free:
	stage_free(c, s, send_link, recv_link);
	return rc;
}

int rw_coll_stage_wide(struct rw_coll_comm *c, int ch)
{
	struct rw_coll_stage *s = &c->stage[ch];
	int rc;

	if (s->wide || RW_COLL_NSLOTS * c->dev_chunk_bytes <= s->buf_bytes)
		return 0;
	s->wide = calloc(1, sizeof(*s->wide));
	if (!s->wide)
		return -ENOMEM;
	rc = stage_alloc(c, s->wide, c->dev_chunk_bytes, rw_link_send(ch), rw_link_recv(ch));
	if (rc) {
		free(s->wide);
		s->wide = NULL;
	}
	return rc;
}

int rw_coll_stage_ps(struct rw_coll_comm *c)
{
	int rc;

	if (c->ps_stage || c->rank != 0 || c->nps == 0)
		return 0;
	c->ps_stage = calloc((size_t)c->nps, sizeof(*c->ps_stage));
	if (!c->ps_stage)
		return -ENOMEM;
	for (int i = 0; i < c->nps; i++) {
		rc = stage_alloc(c, &c->ps_stage[i], c->chunk_bytes, -1, c->ps_first + 2 * i + 1);
		if (rc) {
			while (i-- > 0)
				stage_free(c, &c->ps_stage[i], -1, c->ps_first + 2 * i + 1);
			free(c->ps_stage);
			c->ps_stage = NULL;
			return rc;
		}
	}
	return 0;
}

static void stages_free(struct rw_coll_comm *c)
{
	rw_coll_small_free(c);
	rw_coll_win_drop(c);
	if (c->stage) {
		for (int ch = 0; ch < c->nchannels; ch++)
			stage_free(c, &c->stage[ch], rw_link_send(ch), rw_link_recv(ch));
	}
	if (c->ps_stage) {
		for (int i = 0; i < c->nps; i++)
			stage_free(c, &c->ps_stage[i], -1, c->ps_first + 2 * i + 1);
	}
	free(c->stage);
	free(c->ps_stage);
	c->stage = c->ps_stage = NULL;
}

/* --- create / destroy ----------------------------------------------------- */

/* Do nranks ranks fit the cores, so that a wait may spin?  Yes when our
 * affinity mask has a CPU for each; also when a launcher bound us to one
 * CPU (mpirun --bind-to core, srun --cpu-bind) and the host has one for
 * each: it bound the others elsewhere, or the blocking wait's back-off
 * (coll_start.c) stops the spinning. */
static bool ranks_fit_cores(int nranks)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	int mine;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return online > 0 && nranks <= online;
	mine = CPU_COUNT(&set);
	return nranks <= mine || (mine == 1 && online > 0 && nranks <= online);
}

int rw_coll_comm_create(const struct rw_coll_comm_args *a, struct rw_coll_comm **out)
{
	struct rw_coll_comm *c;
	int rc;

	if (!a || !a->net || !a->cfg || !out || a->nranks < 1 || a->rank < 0 ||
	    a->rank >= a->nranks || (a->nranks > 1 && (!a->handles || !a->listen))) {
		RW_WARN(RW_LOG_COLL | RW_LOG_INIT,
			"coll: comm_create: bad arguments (rank %d of %d)", a ? a->rank : -1,
			a ? a->nranks : -1);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->net = a->net;
	c->dev = a->dev;
	c->nranks = a->nranks;
	c->rank = a->rank;
	c->nchannels = (int)a->cfg->nchannels;
	c->algo = (unsigned)a->cfg->algo < RW_COLL_ALGO_COUNT ? (enum rw_coll_algo)a->cfg->algo
							      : RW_COLL_ALGO_AUTO;
	c->nch_set = a->cfg->set[RW_PARAM_ID_nchannels];
	c->chunk_set = a->cfg->set[RW_PARAM_ID_chunk_bytes];
	c->p2p_first = -1;
	c->chunk_bytes = RW_MAX(a->cfg->chunk_bytes, (size_t)4096);
	c->chunk_bytes = (c->chunk_bytes + 63) & ~(size_t)63;
	c->dev_chunk_bytes = c->chunk_bytes; /* one rank; links other than shm */
	c->dev_chunk_set = c->chunk_set;
	c->timeout_ms = (int)a->cfg->timeout_ms;
	c->failed_rank = -1;
	c->ctl_lost.peer = -1;
	c->names = calloc((size_t)c->nranks, sizeof(*c->names));
	if (!c->names) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (int r = 0; r < c->nranks; r++)
		snprintf(c->names[r], sizeof(c->names[r]), "%s",
			 a->peer_names && a->peer_names[r] ? a->peer_names[r] : "no address");
	rc = order_set(c, a->order);
	if (rc)
		goto err_free;
	if (c->nranks == 1) {
		*out = c;
		return 0;
	}
	rc = links_alloc(c);
	if (rc)
		goto err_free;
	rc = rw_coll_links_connect_args(c, a);
	if (rc)
		goto err_close;
	/* The choice reads it per call, and every rank must choose alike (the
	 * ring's channels cut the buffer; nothing in a message says how): it
	 * holds only where this rank's links reach every other rank, so that
	 * "all shm" here means all ranks on one host, as it does on each of
	 * them.  Ring-only links (3+ ranks without the p2p mesh) see just two
	 * neighbours, which may be on the host while others are not. */
	c->links_shm = rw_coll_links_on_shm(c) && (c->nranks == 2 || c->np2p == c->nranks - 1);
	c->spin = c->links_shm && ranks_fit_cores(c->nranks);
	dev_chunk_set(c, a->cfg);
	rw_coll_nontemporal_init(c, a->cfg);
	rc = rw_coll_win_setup(c);
	if (rc)
		goto err_close;
	c->stage = calloc((size_t)c->nchannels, sizeof(*c->stage));
	if (!c->stage) {
		rc = -ENOMEM;
		goto err_close;
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		rc = stage_alloc(c, &c->stage[ch], c->chunk_bytes, rw_link_send(ch),
				 rw_link_recv(ch));
		if (rc)
			goto err_close;
	}
	RW_INFO(RW_LOG_INIT | RW_LOG_COLL,
		"coll: rank %d of %d: %d channel(s), next rank %d at %s, ring position %d, "
		"chunk %zu bytes (device buffers %zu), %s",
		c->rank, c->nranks, c->nchannels, next_rank(c), c->names[next_rank(c)], c->pos,
		c->chunk_bytes, c->dev_chunk_bytes, rw_coll_algo_name(c->algo));
	if (c->algo == RW_COLL_ALGO_DIRECT && c->nranks > RW_COLL_DIRECT_MAX)
		RW_INFO(RW_LOG_INIT | RW_LOG_COLL,
			"coll: RINGWAY_ALGO=direct: %d ranks are more than %d (a link to every "
			"peer); recursive doubling runs instead",
			c->nranks, RW_COLL_DIRECT_MAX);
	*out = c;
	return 0;

err_close:
	stages_free(c);
	rw_coll_links_close(c);
err_free:
	free(c->links);
	free(c->names);
	free(c->order);
	free(c);
	return rc;
}

static void req_free(struct rw_coll_req *r)
{
	free(r); /* seg lies in the same allocation */
}

static void finish(struct rw_coll_req *r, enum rw_coll_state state, int rc);

void rw_coll_comm_destroy(struct rw_coll_comm *c)
{
	if (!c)
		return;
	while (c->head) {
		struct rw_coll_req *r = c->head;

		finish(r, RW_COLL_FAILED, -ECANCELED);
		req_free(r);
	}
	rw_coll_quiesce(c);
	stages_free(c);
	rw_coll_links_close(c);
	free(c->links);
	free(c->names);
	free(c->order);
	free(c);
}

/* --- registrations ------------------------------------------------------------ */

static int reg_common(struct rw_coll_comm *c, void *data, size_t size, int type, bool dmabuf,
		      uint64_t offset, int fd, struct rw_coll_mr **out)
{
	struct rw_coll_mr *mr;
	int rc = 0;

	if (!c || !out || (!data && size)) {
		RW_WARN(RW_LOG_COLL, "coll: reg_mr(data=%p, size=%zu): bad arguments", data, size);
		return -EINVAL;
	}
	mr = calloc(1, sizeof(*mr) + (size_t)c->nlinks * sizeof(mr->mrs[0]));
	if (!mr)
		return -ENOMEM;
	mr->data = data;
	mr->size = size;
	mr->type = type;
	mr->nlinks = c->nlinks;
	for (int i = 0; i < c->nlinks && !rc; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->comm || rw_link_is_ctrl(l) || l->id == RW_LINK_P2P)
			continue; /* the mesh sends and receives from its own staging */
		rc = dmabuf ? rw_net_reg_mr_dmabuf(l->comm, data, size, type, offset, fd,
						   &mr->mrs[i])
			    : rw_net_reg_mr(l->comm, data, size, type, &mr->mrs[i]);
	}
	if (rc) {
		rw_coll_dereg_mr(c, mr);
		return rc;
	}
	*out = mr;
	return 0;
}

int rw_coll_reg_mr(struct rw_coll_comm *c, void *data, size_t size, int type,
		   struct rw_coll_mr **mr)
{
	return reg_common(c, data, size, type, false, 0, -1, mr);
}

int rw_coll_reg_mr_dmabuf(struct rw_coll_comm *c, void *data, size_t size, int type,
			  uint64_t offset, int fd, struct rw_coll_mr **mr)
{
	return reg_common(c, data, size, type, true, offset, fd, mr);
}

int rw_coll_dereg_mr(struct rw_coll_comm *c, struct rw_coll_mr *mr)
{
	int rc = 0;

	if (!mr)
		return 0;
	for (int i = 0; i < mr->nlinks && i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		/* a closed link took its registrations with it */
		if (mr->mrs[i] && l->comm) {
			int r = rw_net_dereg_mr(l->comm, mr->mrs[i]);

			rc = rc ? rc : r;
		}
	}
	free(mr);
	return rc;
}

/* --- the queue ------------------------------------------------------------- */

/* Leave the queue: release what the collective held. */
static void finish(struct rw_coll_req *r, enum rw_coll_state state, int rc)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_req **link;

	for (link = &c->head; *link && *link != r; link = &(*link)->next)
		;
	if (*link) {
		*link = r->next;
		if (c->tail == r) {
			c->tail = NULL;
			for (struct rw_coll_req *q = c->head; q; q = q->next)
				c->tail = q;
		}
	}
	r->next = NULL;
	if (r->algo)
		r->ops->fini(r);
	r->algo = NULL;
	if (r->own_send_mr)
		rw_coll_dereg_mr(c, r->a.send_mr);
	if (r->own_recv_mr)
		rw_coll_dereg_mr(c, r->a.recv_mr);
	r->own_send_mr = r->own_recv_mr = false;
	while (r->nvtx_depth > 0) {
		RW_NVTX_POP();
		r->nvtx_depth--;
	}
	r->state = state;
	r->rc = rc;
}

static void fail_queue(struct rw_coll_comm *c)
{
	while (c->head)
		finish(c->head, RW_COLL_FAILED, c->error);
}

static void progress_comm(struct rw_coll_comm *c)
{
	struct rw_coll_req *r;

	while ((r = c->head) != NULL) {
		bool progressed = false;
		uint64_t now;
		int rc;

		if (c->error) {
			fail_queue(c);
			return;
		}
		if (r->state == RW_COLL_QUEUED) {
			rc = rw_coll_activate(r);
			if (rc) {
				finish(r, RW_COLL_FAILED, rc); /* nothing was sent */
				continue;
			}
			r->state = RW_COLL_RUNNING;
			r->last_progress_ms = 0; /* read at its first idle check */
			r->idle_polls = 0;
			r->coll_no = ++c->colls;
			if (c->nranks > 1 && !r->no_tokens)
				r->token_no = ++c->tokens_due;
		}
		if (c->nranks > 1 && rw_coll_ctl_progress(r))
			continue; /* the loop fails the queue */
		rc = r->ops->progress(r, &progressed);
		if (rc < 0) {
			if (!c->error) /* a local failure: the others must hear of it */
				rw_coll_fail(r, rc, c->rank, "local", -1, 0);
			finish(r, RW_COLL_FAILED, c->error ? c->error : rc);
			continue;
		}
		if (rc == 1 && c->nranks > 1 && !r->no_tokens &&
		    (rw_coll_tokens_send(r) == -EAGAIN || !rw_coll_tokens_in(r)))
			rc = 0; /* done once the tokens have left and the neighbours'
				 * came (one collective behind when the data proved
				 * that the ranks agree) */
		if (rc == 1) {
			c->moves++;
			finish(r, RW_COLL_DONE, 0);
			continue;
		}
		/* The clock costs more than a poll that finds nothing: it is
		 * read every RW_COLL_CLOCK_POLLS idle polls, and a collective
		 * that moved restarts its idle spell without reading it (the
		 * spell is then measured from the next reading, late by at most
		 * that many polls). */
		if (progressed) {
			c->moves++;
			r->last_progress_ms = 0;
			r->idle_polls = 0;
			r->win_suspect = false;
			return;
		}
		if (++r->idle_polls % RW_COLL_CLOCK_POLLS)
			return;
		if (rw_coll_win_stray(r))
			continue; /* the peer called another collective: the loop fails the queue */
		now = rw_now_ms();
		if (!r->last_progress_ms) {
			r->last_progress_ms = now;
		} else if (now - r->last_progress_ms > (uint64_t)c->timeout_ms) {
			int peer = c->rank, step = -1;
			size_t chunk = 0;
			const char *what = "waiting on";

			r->ops->waiting(r, &peer, &step, &chunk, &what);
			rw_coll_fail(r, -ETIMEDOUT, peer, what, step, chunk);
			continue; /* the loop fails the queue */
		}
		return;
	}
}

int rw_coll_test(struct rw_coll_req *r, int *done, size_t *bytes)
{
	int rc;

	if (!r || !done) {
		RW_WARN(RW_LOG_COLL, "coll: test(req=%p, done=%p): bad arguments", (void *)r,
			(void *)done);
		return -EINVAL;
	}
	if (r->state == RW_COLL_QUEUED || r->state == RW_COLL_RUNNING)
		progress_comm(r->comm);
	switch (r->state) {
	case RW_COLL_DONE:
		*done = 1;
		if (bytes)
			*bytes = r->bytes;
		req_free(r);
		return 0;
	case RW_COLL_FAILED:
		rc = r->rc;
		req_free(r);
		return rc;
	default:
		*done = 0;
		return 0;
	}
}

int rw_coll_enqueue(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;

	r->state = RW_COLL_QUEUED;
	r->next = NULL;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	return 0;
}

void rw_coll_req_free(struct rw_coll_req *r)
{
	req_free(r);
}

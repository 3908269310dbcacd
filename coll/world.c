/* SPDX-License-Identifier: Apache-2.0 */
/* The public communicator: transport + rendezvous + engine (world.h). */
#include "coll/world.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/bootstrap.h"
#include "coll/coll_internal.h"
#include "coll/place.h"
#include "coll/rw_coll.h"
#include "common/rw_log.h"
#include "include/ringway.h"
#include "transport/rw_net.h"

#define NAME_BYTES 64

/* What each rank contributes at the rendezvous: this, then an
 * rw_place_wire_chan per channel. */
struct world_blob {
	char handle[RW_NET_HANDLE_MAXSIZE];
	char name[NAME_BYTES]; /* "host pid 123", for messages */
	struct rw_topo_place_rank place;
	int32_t by_topo, nchannels;
};

struct rw_comm {
	struct rw_config cfg;
	struct rw_net *net;
	struct rw_bootstrap *boot;
	struct rw_coll_comm *coll;
	struct rw_topo_place place;
};

struct rw_coll_comm *rw_world_coll(struct rw_comm *w)
{
	return w->coll;
}

const struct rw_topo_place *rw_world_place(const struct rw_comm *w)
{
	return &w->place;
}

int rw_world_default_root(const struct rw_config *cfg, char *buf, size_t len)
{
	const char *addr = rw_launcher_get(RW_LAUNCHER_MASTER_ADDR);
	const char *port = rw_launcher_get(RW_LAUNCHER_MASTER_PORT);
	char *end;
	long p;

	if (cfg->root[0]) {
		snprintf(buf, len, "%s", cfg->root);
		return 0;
	}
	if (!addr || !*addr || !port || !*port)
		return -ENOENT;
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || *end || p < 1 || p >= 65535) {
		RW_WARN(RW_LOG_INIT, "MASTER_PORT='%s' is not a port", port);
		return -EINVAL;
	}
	snprintf(buf, len, strchr(addr, ':') ? "[%s]:%ld" : "%s:%ld", addr, p + 1);
	return 0;
}

/* --- the public configuration (rw_config_t) ------------------------------------ */

/* The first version of rw_config_t ends after `secret`; later versions only
 * add fields behind it. */
#define CONFIG_V1_END (offsetof(rw_config_t, secret) + sizeof(const char *))
#define FIELD_END(f)  (offsetof(rw_config_t, f) + sizeof(((rw_config_t *)0)->f))
#define HAS(c, f)     ((c)->size >= FIELD_END(f))

/* Each public field and the registry's variable it stands for. */
static const struct pub_field {
	const char *name, *env;
	size_t offset, end;
	bool is_str, secret;
} pub_fields[] = {
#define PUB(f, var, ...)                                                                           \
	{                                                                                          \
		.name = #f, .env = var, .offset = offsetof(rw_config_t, f), .end = FIELD_END(f),   \
		__VA_ARGS__                                                                        \
	}
	PUB(algo, "RINGWAY_ALGO", .is_str = true),
	PUB(nchannels, "RINGWAY_NCHANNELS", .is_str = false),
	PUB(chunk_bytes, "RINGWAY_CHUNK_BYTES", .is_str = false),
	PUB(transport, "RINGWAY_TRANSPORT", .is_str = true),
	PUB(timeout_ms, "RINGWAY_TIMEOUT_MS", .is_str = false),
	PUB(secret, "RINGWAY_SECRET", .is_str = true, .secret = true),
#undef PUB
};

/* c is an rw_config_t that RW_CONFIG_INIT set up, of a size this library
 * knows; `arg` names it in the warning ("config", "out"). */
static int config_check(const char *call, const char *arg, const rw_config_t *c)
{
	if (c->size < CONFIG_V1_END || c->size > sizeof(rw_config_t)) {
		RW_WARN(RW_LOG_INIT,
			"%s: %s->size = %zu, but this library knows rw_config_t of %zu bytes%s "
			"(initialise it with RW_CONFIG_INIT; a program built against a newer "
			"ringway.h needs a newer libringway)",
			call, arg, c->size, sizeof(rw_config_t),
			CONFIG_V1_END < sizeof(rw_config_t) ? " and older sizes" : "");
		return -EINVAL;
	}
	if (c->magic != RW_CONFIG_MAGIC) {
		RW_WARN(RW_LOG_INIT,
			"%s: %s->magic = 0x%x, not RW_CONFIG_MAGIC 0x%x (initialise it with "
			"RW_CONFIG_INIT)",
			call, arg, c->magic, RW_CONFIG_MAGIC);
		return -EINVAL;
	}
	return 0;
}

int rw_world_config_apply(struct rw_config *cfg, const rw_config_t *pub)
{
	static const char call[] = "rw_comm_init_config";
	int rc, bad = 0;

	if (!pub)
		return 0;
	rc = config_check(call, "config", pub);
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(pub_fields) / sizeof(pub_fields[0]); i++) {
		const struct pub_field *f = &pub_fields[i];
		const struct rw_param_desc *d;
		const void *field = (const char *)pub + f->offset;
		const char *value;
		char num[32], shown[80], want[128];

		if (pub->size < f->end)
			continue; /* a field newer than the caller's rw_config_t */
		if (f->is_str) {
			value = *(const char *const *)field;
			if (!value)
				continue;
			if (f->secret)
				snprintf(shown, sizeof(shown), "(hidden, %zu bytes)",
					 strlen(value));
			else
				snprintf(shown, sizeof(shown), "\"%.64s\"", value);
		} else {
			int64_t v = *(const int64_t *)field;

			if (v == RW_CONFIG_UNSET)
				continue;
			snprintf(num, sizeof(num), "%" PRId64, v);
			value = num;
			snprintf(shown, sizeof(shown), "%s", num);
		}
		rc = rw_config_set(cfg, f->env, value);
		if (rc == 0) {
			RW_INFO(RW_LOG_INIT | RW_LOG_ENV, "%s: config->%s = %s (wins over %s)",
				call, f->name, f->secret ? "(hidden)" : shown, f->env);
			continue;
		}
		d = rw_param_find(f->env);
		if (d && !f->is_str)
			snprintf(want, sizeof(want), "an integer in [%" PRId64 ", %" PRId64 "]",
				 d->min, d->max);
		else if (d)
			rw_param_describe(d, want, sizeof(want));
		else
			snprintf(want, sizeof(want), "a variable of the registry");
		RW_WARN(RW_LOG_INIT, "%s: config->%s = %s rejected (expected %s, as %s)", call,
			f->name, shown, want, f->env);
		bad++;
	}
	return bad ? -EINVAL : 0;
}

int rw_world_get_config(const struct rw_comm *w, rw_config_t *out)
{
	struct rw_coll_settings s;
	int rc;

	if (!w || !out) {
		RW_WARN(RW_LOG_INIT, "rw_comm_get_config(comm=%p, out=%p): NULL argument",
			(const void *)w, (void *)out);
		return -EINVAL;
	}
	rc = config_check("rw_comm_get_config", "out", out);
	if (rc)
		return rc;
	rw_coll_comm_settings(w->coll, &s);
	if (HAS(out, algo))
		out->algo = rw_coll_algo_name(s.algo);
	if (HAS(out, nchannels))
		out->nchannels = s.nchannels;
	if (HAS(out, chunk_bytes))
		out->chunk_bytes = (int64_t)s.chunk_bytes;
	if (HAS(out, transport))
		out->transport = w->net->ops->name;
	if (HAS(out, timeout_ms))
		out->timeout_ms = s.timeout_ms;
	if (HAS(out, secret))
		out->secret = NULL;
	return 0;
}

/* One rank's blob, rounded up so that the next one is aligned too. */
static size_t blob_bytes(int nch)
{
	size_t n = sizeof(struct world_blob) + (size_t)nch * sizeof(struct rw_place_wire_chan);

	return (n + 7) & ~(size_t)7;
}

static struct rw_place_wire_chan *blob_chan(void *blob, int nch, int r, int c)
{
	return (struct rw_place_wire_chan *)((char *)blob + (size_t)r * blob_bytes(nch) +
					     sizeof(struct world_blob)) +
	       c;
}

static int exchange(struct rw_comm *w, const struct rw_world_args *a, struct rw_place_listens *ls,
		    void *mine, int nch)
{
	size_t bytes = blob_bytes(nch);
	struct rw_topo_place *p = &w->place;
	char *all;
	const void **handles, **chan_handles;
	const char **names;
	struct rw_net_listen **chan_listen;
	int *chan_dev;
	bool by_topo = true;
	struct rw_coll_comm_args ca = {
		.net = w->net,
		.dev = 0,
		.nranks = a->nranks,
		.rank = a->rank,
		.listen = ls->main,
		.cfg = &w->cfg,
	};
	int rc = -ENOMEM;

	all = calloc((size_t)a->nranks, bytes);
	handles = calloc((size_t)a->nranks, sizeof(*handles));
	names = calloc((size_t)a->nranks, sizeof(*names));
	chan_handles = calloc((size_t)a->nranks * (size_t)nch, sizeof(*chan_handles));
	chan_listen = calloc((size_t)nch, sizeof(*chan_listen));
	chan_dev = calloc((size_t)nch, sizeof(*chan_dev));
	if (!all || !handles || !names || !chan_handles || !chan_listen || !chan_dev)
		goto out_free;
	rc = rw_bootstrap_allgather(w->boot, mine, all, bytes);
	if (rc)
		goto out_free;
	for (int r = 0; r < a->nranks; r++) {
		struct world_blob *b = (struct world_blob *)(all + (size_t)r * bytes);

		if (b->nchannels != nch) {
			RW_WARN(RW_LOG_INIT,
				"rank %d: rank %d runs %d channel(s), this rank %d: every rank "
				"must set the same RINGWAY_NCHANNELS",
				a->rank, r, (int)b->nchannels, nch);
			rc = -EINVAL;
			goto out_free;
		}
		by_topo &= b->by_topo != 0;
	}
	rc = rw_topo_place_alloc(p, a->nranks, nch, by_topo);
	if (rc)
		goto out_free;
	for (int r = 0; r < a->nranks; r++) {
		struct world_blob *b = (struct world_blob *)(all + (size_t)r * bytes);

		b->name[NAME_BYTES - 1] = '\0';
		b->place.hostname[sizeof(b->place.hostname) - 1] = '\0';
		b->place.gpu[sizeof(b->place.gpu) - 1] = '\0';
		handles[r] = b->handle;
		names[r] = b->name;
		p->rank[r] = b->place;
		for (int c = 0; c < nch; c++) {
			struct rw_place_wire_chan *wc = blob_chan(all, nch, r, c);
			struct rw_topo_place_chan *pc = rw_topo_place_chan_of(p, r, c);

			*pc = wc->place;
			pc->nic[sizeof(pc->nic) - 1] = '\0';
			pc->devname[sizeof(pc->devname) - 1] = '\0';
			pc->reason[sizeof(pc->reason) - 1] = '\0';
			chan_handles[(size_t)r * (size_t)nch + (size_t)c] = wc->handle;
		}
	}
	rc = rw_topo_place_ring(p);
	if (rc)
		goto out_free;
	rw_place_log(p, a->rank);
	for (int c = 0; c < nch; c++) {
		chan_dev[c] = rw_topo_place_chan_of(p, a->rank, c)->dev;
		chan_listen[c] = rw_place_listener(ls, chan_dev[c]);
	}
	ca.handles = handles;
	ca.peer_names = names;
	ca.order = p->order;
	ca.chan_dev = chan_dev;
	ca.chan_handles = chan_handles;
	ca.chan_listen = chan_listen;
	rc = rw_coll_comm_create(&ca, &w->coll);

out_free:
	free(all);
	free(handles);
	free(names);
	free(chan_handles);
	free(chan_listen);
	free(chan_dev);
	return rc;
}

/* This rank's rank on its host: a first round of the rendezvous with
 * every rank's host id (8 bytes each). */
static int local_rank(struct rw_comm *w, const struct rw_world_args *a, int *out)
{
	uint64_t id = rw_place_host_id(), *ids = calloc((size_t)a->nranks, sizeof(*ids));
	int rc = -ENOMEM;

	if (ids)
		rc = rw_bootstrap_allgather(w->boot, &id, ids, sizeof(id));
	if (!rc)
		*out = rw_place_local_rank(ids, a->rank);
	free(ids);
	return rc;
}

int rw_world_create(const struct rw_world_args *a, struct rw_comm **out)
{
	struct rw_topo_place_chan chans[RW_TOPO_MAX_CHANNELS];
	struct rw_place_listens ls = {0};
	struct world_blob *mine = NULL;
	struct rw_comm *w;
	char host[48] = "?";
	int listen_fd = a ? a->listen_fd : -1, nch, local = -1, rc;

	if (!a || !out || a->nranks < 1 || a->nranks > RW_MAX_RANKS || a->rank < 0 ||
	    a->rank >= a->nranks) {
		RW_WARN(RW_LOG_INIT, "rw_world_create: bad arguments (rank %d of %d, at most %d)",
			a ? a->rank : -1, a ? a->nranks : -1, RW_MAX_RANKS);
		rw_close_fd(&listen_fd);
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		rw_close_fd(&listen_fd);
		return -ENOMEM;
	}
	if (a->cfg)
		w->cfg = *a->cfg;
	else
		rw_config_load(&w->cfg, NULL, NULL);
	rc = rw_bootstrap_create(a->root, listen_fd, a->nranks, a->rank, (int)w->cfg.timeout_ms,
				 w->cfg.secret, &w->boot);
	if (rc)
		goto err_free; /* closed listen_fd */
	rc = rw_net_create(&w->cfg, &w->net);
	if (rc)
		goto err_boot;
	nch = (int)RW_MIN(w->cfg.nchannels, (int64_t)RW_TOPO_MAX_CHANNELS);
	w->cfg.nchannels = nch; /* the registry's bound is the same */
	mine = calloc(1, blob_bytes(nch));
	if (!mine) {
		rc = -ENOMEM;
		goto err_net;
	}
	mine->by_topo = rw_place_by_topo(&w->cfg);
	mine->nchannels = nch;
	rc = local_rank(w, a, &local);
	if (!rc)
		rc = rw_place_local(&w->cfg, w->net, mine->by_topo, nch, local, &mine->place,
				    chans);
	if (rc)
		goto err_net;
	for (int c = 0; c < nch; c++)
		blob_chan(mine, nch, 0, c)->place = chans[c];
	if (a->nranks > 1) {
		rc = rw_net_listen(w->net, 0, mine->handle, &ls.main);
		if (rc)
			goto err_net;
		rc = rw_place_listen(w->net, &ls, mine->handle, blob_chan(mine, nch, 0, 0), nch);
		if (rc)
			goto err_listen;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(mine->name, sizeof(mine->name), "%s pid %d", host, (int)getpid());
	rc = exchange(w, a, &ls, mine, nch);
err_listen:
	rw_place_listens_close(&ls);
	if (ls.main)
		rw_net_close_listen(ls.main); /* every link is up, or none will be */
	if (rc)
		goto err_net;
	rc = rw_bootstrap_barrier(w->boot);
	if (rc)
		goto err_coll;
	free(mine);
	*out = w;
	return 0;

err_coll:
	rw_coll_comm_destroy(w->coll);
err_net:
	free(mine);
	rw_topo_place_free(&w->place);
	rw_net_destroy(w->net);
err_boot:
	rw_bootstrap_destroy(w->boot);
err_free:
	memset(w->cfg.secret, 0, sizeof(w->cfg.secret));
	free(w);
	return rc;
}

int rw_world_destroy(struct rw_comm *w)
{
	int rc = 0;

	if (!w)
		return 0;
	if (!rw_coll_comm_error(w->coll))
		rc = rw_bootstrap_barrier(w->boot);
	rw_coll_comm_destroy(w->coll);
	rw_topo_place_free(&w->place);
	rw_net_destroy(w->net);
	rw_bootstrap_destroy(w->boot);
	memset(w->cfg.secret, 0, sizeof(w->cfg.secret));
	free(w);
	return rc;
}

int rw_world_error(const struct rw_comm *w, int *failed_rank, char *buf, size_t len)
{
	const struct rw_coll_comm *c = w ? w->coll : NULL;
	int err = c ? c->error : 0, who = err ? c->failed_rank : -1;

	if (failed_rank)
		*failed_rank = who;
	if (!buf || len == 0)
		return err;
	buf[0] = '\0';
	if (!err)
		return 0;
	if (who < 0 || who >= c->nranks)
		snprintf(buf, len, "rank %d: the communicator failed (which rank is not known): %s",
			 c->rank, strerror(-err));
	else if (err == -EINVAL)
		snprintf(
			buf, len,
			"rank %d (%s) called another collective than rank %d (every rank must make "
			"the same calls in the same order)",
			who, c->names[who], c->rank);
	else if (err == -ETIMEDOUT)
		snprintf(buf, len,
			 "rank %d: nothing moved for RINGWAY_TIMEOUT_MS=%d ms waiting on rank %d "
			 "(%s): it died or stalled",
			 c->rank, c->timeout_ms, who, c->names[who]);
	else if (who == c->rank)
		snprintf(buf, len, "rank %d (%s) failed here: %s", who, c->names[who],
			 strerror(-err));
	else
		snprintf(buf, len, "rank %d (%s) failed: %s (seen by rank %d)", who, c->names[who],
			 err == -ECONNABORTED ? "it left or broke the ring" : strerror(-err),
			 c->rank);
	return err;
}

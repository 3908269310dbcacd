/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decisions over the graph, all pure functions: GPU -> NIC, the order of a
 * host's GPUs in a ring, channels, and the ring through several hosts.
 */
#include "topo/rw_topo_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- GPU -> NIC ------------------------------------------------------------- */

/* RDMA NICs are preferred to plain Ethernet: lower class first. */
static int nic_class(const struct rw_topo_nic *n)
{
	return n->kind == RW_TOPO_NIC_ETH ? 1 : 0;
}

static bool nic_usable(const struct rw_topo_nic *n)
{
	return n->state != RW_TOPO_LINK_DOWN;
}

/* The NICs GPUs may use: usable ones of the best class (all, if none is up). */
static void candidates(const struct rw_topo *t, bool *cand)
{
	int best = 2;
	bool any_up = false;

	for (int i = 0; i < t->nnics; i++)
		any_up |= nic_usable(&t->nics[i]);
	for (int i = 0; i < t->nnics; i++)
		if ((nic_usable(&t->nics[i]) || !any_up) && nic_class(&t->nics[i]) < best)
			best = nic_class(&t->nics[i]);
	for (int i = 0; i < t->nnics; i++)
		cand[i] = (nic_usable(&t->nics[i]) || !any_up) && nic_class(&t->nics[i]) == best;
}

struct pick {
	int nic;
	struct rw_topo_path path;
};

/* a better than b for one GPU: closer, then less loaded, wider, faster. */
static bool better(const struct rw_topo *t, const int *load, const struct pick *a,
		   const struct pick *b)
{
	if (a->path.type != b->path.type)
		return a->path.type < b->path.type;
	if (load[a->nic] != load[b->nic])
		return load[a->nic] < load[b->nic];
	if (a->path.bw_gbps != b->path.bw_gbps)
		return a->path.bw_gbps > b->path.bw_gbps;
	if (t->nics[a->nic].speed_mbps != t->nics[b->nic].speed_mbps)
		return t->nics[a->nic].speed_mbps > t->nics[b->nic].speed_mbps;
	return a->nic < b->nic;
}

static size_t append(char *buf, size_t len, size_t off, const char *fmt, ...) RW_PRINTF(4, 5);

static size_t append(char *buf, size_t len, size_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (off >= len)
		return off;
	va_start(ap, fmt);
	n = vsnprintf(buf + off, len - off, fmt, ap);
	va_end(ap);
	return n < 0 ? off : off + (size_t)n;
}

static void explain(const struct rw_topo *t, int gpu, const bool *cand, const int *load,
		    const struct pick *chosen, struct rw_topo_nic_choice *out)
{
	const struct rw_topo_nic *c = &t->nics[chosen->nic];
	char *r = out->reason;
	size_t len = sizeof(out->reason), off;
	struct pick runner = {.nic = -1};
	enum rw_topo_path_type lost_type = RW_TOPO_PATH_SYS;
	int ncand = 0, lost = -1;

	off = append(r, len, 0, "%s (%s, %.1f GB/s)", rw_topo_path_desc(chosen->path.type),
		     rw_topo_path_name(chosen->path.type), chosen->path.bw_gbps);
	for (int i = 0; i < t->nnics; i++) {
		struct pick p = {.nic = i};

		if (!cand[i])
			continue;
		ncand++;
		if (i == chosen->nic)
			continue;
		rw_topo_path(t, RW_TOPO_GPU(gpu), RW_TOPO_NIC(i), &p.path);
		if (p.path.type == chosen->path.type &&
		    (runner.nic < 0 || better(t, load, &p, &runner)))
			runner = p;
	}
	if (runner.nic >= 0) {
		const char *rn = t->nics[runner.nic].name;

		if (load[runner.nic] > load[chosen->nic])
			off = append(r, len, off, "; %s is as close but already serves %d GPU%s",
				     rn, load[runner.nic], load[runner.nic] > 1 ? "s" : "");
		else if (runner.path.bw_gbps != chosen->path.bw_gbps)
			off = append(r, len, off, "; wider PCIe path than %s", rn);
		else if (t->nics[runner.nic].speed_mbps != c->speed_mbps)
			off = append(r, len, off, "; faster than %s", rn);
		else
			off = append(r, len, off, "; as close as %s, first in PCI order", rn);
	} else if (t->nnics == 1) {
		off = append(r, len, off, "; the only NIC");
	} else if (ncand == 1) {
		off = append(r, len, off, "; the only usable %s NIC",
			     nic_class(c) ? "Ethernet" : "RDMA");
	}
	if (load[chosen->nic] > 0 && (runner.nic < 0 || load[runner.nic] <= load[chosen->nic]))
		off = append(r, len, off, "; also serves %d other GPU%s", load[chosen->nic],
			     load[chosen->nic] > 1 ? "s" : "");
	/* say why a NIC at least as close lost (the closest one only) */
	for (int i = 0, best = -1; i < t->nnics; i++) {
		struct rw_topo_path p;

		if (cand[i])
			continue;
		rw_topo_path(t, RW_TOPO_GPU(gpu), RW_TOPO_NIC(i), &p);
		if (p.type > chosen->path.type || (best >= 0 && (int)p.type >= best))
			continue;
		best = (int)p.type;
		lost = i;
		lost_type = p.type;
	}
	if (lost >= 0)
		off = append(r, len, off, "; %s is %s but %s", t->nics[lost].name,
			     lost_type < chosen->path.type ? "closer" : "as close",
			     !nic_usable(&t->nics[lost]) ? "its port is down" : "has no RDMA");
	if (off >= len)
		memcpy(r + len - 4, "...", 4);
}

/* Choices for GPUs 0..upto, in GPU order (earlier GPUs load NICs). */
static int assign(const struct rw_topo *t, int upto, struct rw_topo_nic_choice *out)
{
	bool *cand = calloc((size_t)t->nnics + 1, sizeof(bool));
	int *load = calloc((size_t)t->nnics + 1, sizeof(int));
	struct pick best = {.nic = -1};

	if (!cand || !load) {
		free(cand);
		free(load);
		return -ENOMEM;
	}
	candidates(t, cand);
	for (int g = 0; g <= upto; g++) {
		best.nic = -1;
		for (int i = 0; i < t->nnics; i++) {
			struct pick p = {.nic = i};

			if (!cand[i])
				continue;
			rw_topo_path(t, RW_TOPO_GPU(g), RW_TOPO_NIC(i), &p.path);
			if (best.nic < 0 || better(t, load, &p, &best))
				best = p;
		}
		if (g == upto) {
			memset(out, 0, sizeof(*out));
			out->nic = best.nic;
			if (best.nic < 0) {
				out->path.type = RW_TOPO_PATH_SYS;
				snprintf(out->reason, sizeof(out->reason), "no NIC on this host");
			} else {
				out->path = best.path;
				explain(t, g, cand, load, &best, out);
			}
		}
		if (best.nic >= 0)
			load[best.nic]++;
	}
	free(cand);
	free(load);
	return 0;
}

int rw_topo_nic_for_gpu(const struct rw_topo *t, int gpu, struct rw_topo_nic_choice *out)
{
	if (gpu < 0 || gpu >= t->ngpus)
		return -EINVAL;
	return assign(t, gpu, out);
}

/* NICs of a host without GPU, one per channel: usable NICs of the best
 * class, fastest first, then in PCI order. */
static int cpu_nics(const struct rw_topo *t, int *nics, int max)
{
	bool *cand = calloc((size_t)t->nnics + 1, sizeof(bool));
	int n = 0;

	if (!cand)
		return -ENOMEM;
	candidates(t, cand);
	while (n < max) {
		int best = -1;

		for (int i = 0; i < t->nnics; i++)
			if (cand[i] &&
			    (best < 0 || t->nics[i].speed_mbps > t->nics[best].speed_mbps))
				best = i;
		if (best < 0)
			break;
		cand[best] = false;
		nics[n++] = best;
	}
	free(cand);
	return n;
}

/* --- the NIC of each channel of a rank ------------------------------------- */

int rw_topo_channel_nic(const struct rw_topo *t, int gpu, int channel,
			struct rw_topo_nic_choice *out)
{
	int nics[RW_TOPO_MAX_CHANNELS], k, m = 0, at, rc;
	bool *cand;
	int *ties;

	if (!out || channel < 0 || gpu >= t->ngpus)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->nic = -1;
	out->path.type = RW_TOPO_PATH_SYS;
	if (!t->nnics) {
		snprintf(out->reason, sizeof(out->reason), "no NIC on this host");
		return 0;
	}
	if (gpu < 0) {
		k = cpu_nics(t, nics, (int)RW_ARRAY_SIZE(nics));
		if (k < 0)
			return k;
		if (k == 0) {
			snprintf(out->reason, sizeof(out->reason), "no usable NIC on this host");
			return 0;
		}
		out->nic = nics[channel % k];
		out->path.type = RW_TOPO_PATH_PHB;
		snprintf(out->reason, sizeof(out->reason),
			 "no GPU: the host's %d usable NIC%s in turn, fastest first", k,
			 k > 1 ? "s" : "");
		return 0;
	}
	rc = rw_topo_nic_for_gpu(t, gpu, out);
	if (rc || out->nic < 0)
		return rc;
	cand = calloc((size_t)t->nnics, sizeof(bool));
	ties = calloc((size_t)t->nnics, sizeof(int));
	if (!cand || !ties) {
		free(cand);
		free(ties);
		return -ENOMEM;
	}
	candidates(t, cand);
	/* the NICs as near as the chosen one, starting from it in PCI order */
	for (int j = 0; j < t->nnics; j++) {
		int i = (out->nic + j) % t->nnics;
		struct rw_topo_path p;

		if (!cand[i] && i != out->nic)
			continue;
		rw_topo_path(t, RW_TOPO_GPU(gpu), RW_TOPO_NIC(i), &p);
		if (i == out->nic || (p.type == out->path.type && p.bw_gbps == out->path.bw_gbps))
			ties[m++] = i;
	}
	at = channel % m;
	if (at) {
		out->nic = ties[at];
		rw_topo_path(t, RW_TOPO_GPU(gpu), RW_TOPO_NIC(out->nic), &out->path);
		snprintf(out->reason, sizeof(out->reason),
			 "%s (%s, %.1f GB/s); spread: channel %d on NIC %d of %d equally near",
			 rw_topo_path_desc(out->path.type), rw_topo_path_name(out->path.type),
			 out->path.bw_gbps, channel, at + 1, m);
	} else if (m > 1 && channel > 0) {
		size_t off = strlen(out->reason);

		append(out->reason, sizeof(out->reason), off,
		       "; spread: channel %d on NIC 1 of %d equally near", channel, m);
	}
	free(cand);
	free(ties);
	return 0;
}

int rw_topo_ring_rank(const struct rw_topo *t, int gpu, int *out)
{
	struct rw_topo_channel ch[RW_TOPO_MAX_CHANNELS];
	int g = t->ngpus, n = 0, first = 0, rc, *order;

	if (!out || gpu >= g)
		return -EINVAL;
	*out = -1;
	if (gpu < 0)
		return 0;
	order = calloc((size_t)g, sizeof(int));
	if (!order)
		return -ENOMEM;
	rc = rw_topo_ring_order(t, order, g, &g);
	if (!rc && t->nnics && rw_topo_channels(t, ch, RW_TOPO_MAX_CHANNELS, &n) == 0 && n > 0)
		first = ch[0].first;
	for (int i = 0; !rc && i < g; i++)
		if (order[i] == gpu)
			*out = (i - first + g) % g;
	free(order);
	return rc;
}

/* --- ring order inside a host ----------------------------------------------- */

#define RING_EXACT_MAX	  10 /* exhaustive search up to this many GPUs */
#define RING_SEARCH_STEPS 4000000L

/* Cost of a hop: its class dominates, its bandwidth breaks ties. */
static long hop_cost(const struct rw_topo *t, int a, int b)
{
	static const long weight[RW_TOPO_PATH_COUNT] = {
		[RW_TOPO_PATH_LOC] = 0, [RW_TOPO_PATH_NVL] = 1, [RW_TOPO_PATH_PIX] = 2,
		[RW_TOPO_PATH_PXB] = 3, [RW_TOPO_PATH_PHB] = 4, [RW_TOPO_PATH_NODE] = 5,
		[RW_TOPO_PATH_SYS] = 6,
	};
	struct rw_topo_path p;

	rw_topo_path(t, RW_TOPO_GPU(a), RW_TOPO_GPU(b), &p);
	return weight[p.type] * 10000 - lroundf(fminf(p.bw_gbps, 999.0f) * 10.0f);
}

struct search {
	int n;
	const long *cost;
	int *cur, *best;
	bool *used;
	long best_cost, min_hop, steps;
};

static void dfs(struct search *s, int depth, long acc)
{
	if (++s->steps > RING_SEARCH_STEPS)
		return;
	if (depth == s->n) {
		long total = acc + s->cost[s->cur[s->n - 1] * s->n + s->cur[0]];

		if (total < s->best_cost) {
			s->best_cost = total;
			memcpy(s->best, s->cur, (size_t)s->n * sizeof(int));
		}
		return;
	}
	for (int v = 0; v < s->n; v++) {
		long c;

		if (s->used[v])
			continue;
		c = acc + s->cost[s->cur[depth - 1] * s->n + v];
		if (c + (long)(s->n - depth) * s->min_hop >= s->best_cost)
			continue;
		s->used[v] = true;
		s->cur[depth] = v;
		dfs(s, depth + 1, c);
		s->used[v] = false;
	}
}

static long ring_cost(const long *cost, int n, const int *order)
{
	long c = 0;

	for (int i = 0; i < n; i++)
		c += cost[order[i] * n + order[(i + 1) % n]];
	return c;
}

/* Nearest neighbour from GPU 0, for hosts too large to search exhaustively. */
static void greedy(const long *cost, int n, int *order, bool *used)
{
	order[0] = 0;
	used[0] = true;
	for (int i = 1; i < n; i++) {
		int best = -1;

		for (int v = 0; v < n; v++)
			if (!used[v] && (best < 0 || cost[order[i - 1] * n + v] <
							     cost[order[i - 1] * n + best]))
				best = v;
		order[i] = best;
		used[best] = true;
	}
}

int rw_topo_ring_order(const struct rw_topo *t, int *order, int max, int *n)
{
	int g = t->ngpus;
	struct search s = {.n = g};
	long *cost;
	int rc = 0;

	if (max < g)
		return -ENOSPC;
	if (g <= 2) {
		for (int i = 0; i < g; i++)
			order[i] = i;
		*n = g;
		return 0;
	}
	cost = calloc((size_t)g * (size_t)g, sizeof(long));
	s.cur = calloc((size_t)g, sizeof(int));
	s.best = calloc((size_t)g, sizeof(int));
	s.used = calloc((size_t)g, sizeof(bool));
	if (!cost || !s.cur || !s.best || !s.used) {
		rc = -ENOMEM;
		goto out_free;
	}
	s.cost = cost;
	s.min_hop = LONG_MAX;
	for (int a = 0; a < g; a++)
		for (int b = 0; b < g; b++)
			if (a != b) {
				cost[a * g + b] = hop_cost(t, a, b);
				s.min_hop = RW_MIN(s.min_hop, cost[a * g + b]);
			}
	/* PCI order is the baseline: only a strictly cheaper ring replaces it */
	for (int i = 0; i < g; i++)
		s.best[i] = i;
	s.best_cost = ring_cost(cost, g, s.best);
	if (g <= RING_EXACT_MAX) {
		s.cur[0] = 0;
		s.used[0] = true;
		dfs(&s, 1, 0);
	} else {
		greedy(cost, g, s.cur, s.used);
		if (ring_cost(cost, g, s.cur) < s.best_cost)
			memcpy(s.best, s.cur, (size_t)g * sizeof(int));
	}
	memcpy(order, s.best, (size_t)g * sizeof(int));
	*n = g;
out_free:
	free(cost);
	free(s.cur);
	free(s.best);
	free(s.used);
	return rc;
}

/* --- channels ------------------------------------------------------------------ */

struct cut {
	int first; /* position entered first */
	long cost;
};

static int cmp_cut(const void *pa, const void *pb)
{
	const struct cut *a = pa, *b = pb;

	if (a->cost != b->cost)
		return a->cost > b->cost ? -1 : 1; /* slowest hop first */
	return a->first - b->first;		   /* then the wrap-around hop */
}

int rw_topo_channels(const struct rw_topo *t, struct rw_topo_channel *ch, int max, int *n)
{
	struct rw_topo_nic_choice *choice = NULL;
	bool *sends = NULL, *recvs = NULL;
	struct cut *cuts = NULL;
	int *order = NULL;
	int g = t->ngpus, nch = 0, rc;

	if (max < 1)
		return -EINVAL;
	if (!t->nnics)
		return -ENODEV;
	if (!g) {
		int nics[RW_TOPO_MAX_CHANNELS];
		int k = cpu_nics(t, nics, RW_MIN(max, (int)RW_ARRAY_SIZE(nics)));

		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			ch[i] = (struct rw_topo_channel){.first = 0,
							 .gpu_in = -1,
							 .gpu_out = -1,
							 .nic_in = nics[i],
							 .nic_out = nics[i],
							 .cut = RW_TOPO_PATH_LOC};
		*n = k;
		return 0;
	}
	order = calloc((size_t)g, sizeof(int));
	choice = calloc((size_t)g, sizeof(*choice));
	cuts = calloc((size_t)g, sizeof(*cuts));
	sends = calloc((size_t)t->nnics, sizeof(bool));
	recvs = calloc((size_t)t->nnics, sizeof(bool));
	rc = -ENOMEM;
	if (!order || !choice || !cuts || !sends || !recvs)
		goto out_free;
	rc = rw_topo_ring_order(t, order, g, &g);
	for (int i = 0; !rc && i < g; i++)
		rc = rw_topo_nic_for_gpu(t, i, &choice[i]);
	if (rc)
		goto out_free;
	for (int i = 0; i < g; i++) {
		cuts[i].first = (i + 1) % g;
		cuts[i].cost = g > 1 ? hop_cost(t, order[i], order[(i + 1) % g]) : 0;
	}
	qsort(cuts, (size_t)g, sizeof(*cuts), cmp_cut);
	/* each NIC sends for at most one channel and receives for at most one */
	for (int i = 0; i < g && nch < max; i++) {
		int in = order[cuts[i].first], out = order[(cuts[i].first + g - 1) % g];
		int nin = choice[in].nic, nout = choice[out].nic;
		struct rw_topo_path p = {.type = RW_TOPO_PATH_LOC};

		if (nch && (recvs[nin] || sends[nout]))
			continue;
		recvs[nin] = sends[nout] = true;
		if (g > 1)
			rw_topo_path(t, RW_TOPO_GPU(out), RW_TOPO_GPU(in), &p);
		ch[nch++] = (struct rw_topo_channel){.first = cuts[i].first,
						     .gpu_in = in,
						     .gpu_out = out,
						     .nic_in = nin,
						     .nic_out = nout,
						     .cut = p.type};
	}
	*n = nch;
	rc = 0;
out_free:
	free(order);
	free(choice);
	free(cuts);
	free(sends);
	free(recvs);
	return rc;
}

/* --- the ring through several hosts -------------------------------------------- */

int rw_topo_multihost_ring(const struct rw_topo *const *hosts, int nhosts, int channel,
			   struct rw_topo_hop *hops, int max, int *n)
{
	struct rw_topo_channel ch[RW_TOPO_MAX_CHANNELS];
	int count = 0, total = 0;

	if (!hosts || nhosts < 1 || channel < 0)
		return -EINVAL;
	/* first every host must be reachable, and the ring must fit */
	for (int h = 0; h < nhosts; h++) {
		int nch, rc = rw_topo_channels(hosts[h], ch, RW_TOPO_MAX_CHANNELS, &nch);

		if (rc)
			return rc;
		total += RW_MAX(hosts[h]->ngpus, 1);
	}
	if (total > max)
		return -ENOSPC;
	for (int h = 0; h < nhosts; h++) {
		const struct rw_topo *t = hosts[h];
		int nch, g = t->ngpus, rc, *order;
		struct rw_topo_channel c;

		rc = rw_topo_channels(t, ch, RW_TOPO_MAX_CHANNELS, &nch);
		if (rc)
			return rc;
		c = ch[channel % nch];
		if (!g) {
			hops[count++] = (struct rw_topo_hop){
				.host = h, .gpu = -1, .nic_in = c.nic_in, .nic_out = c.nic_out};
			continue;
		}
		order = calloc((size_t)g, sizeof(int));
		if (!order)
			return -ENOMEM;
		rc = rw_topo_ring_order(t, order, g, &g);
		for (int i = 0; !rc && i < g; i++)
			hops[count++] = (struct rw_topo_hop){
				.host = h,
				.gpu = order[(c.first + i) % g],
				.nic_in = i == 0 ? c.nic_in : -1,
				.nic_out = i == g - 1 ? c.nic_out : -1,
			};
		free(order);
		if (rc)
			return rc;
	}
	*n = count;
	return 0;
}

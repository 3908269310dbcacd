/* SPDX-License-Identifier: Apache-2.0 */
/* Placement of a job's ranks from what each said (rw_topo_place.h). */
#include "topo/rw_topo_place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rw_topo_place_alloc(struct rw_topo_place *p, int nranks, int nchannels, bool by_topo)
{
	memset(p, 0, sizeof(*p));
	if (nranks < 1 || nchannels < 1)
		return -EINVAL;
	p->nranks = nranks;
	p->nchannels = nchannels;
	p->by_topo = by_topo;
	p->order = calloc((size_t)nranks, sizeof(int));
	p->pos = calloc((size_t)nranks, sizeof(int));
	p->host_of = calloc((size_t)nranks, sizeof(int));
	p->rank = calloc((size_t)nranks, sizeof(*p->rank));
	p->chan = calloc((size_t)nranks * (size_t)nchannels, sizeof(*p->chan));
	if (!p->order || !p->pos || !p->host_of || !p->rank || !p->chan) {
		rw_topo_place_free(p);
		return -ENOMEM;
	}
	return 0;
}

void rw_topo_place_free(struct rw_topo_place *p)
{
	if (!p)
		return;
	free(p->order);
	free(p->pos);
	free(p->host_of);
	free(p->rank);
	free(p->chan);
	memset(p, 0, sizeof(*p));
}

struct sort_key {
	uint64_t host;
	int hidx, ring, rank;
};

static int cmp_host(const void *pa, const void *pb)
{
	const struct sort_key *a = pa, *b = pb;

	if (a->host != b->host)
		return a->host < b->host ? -1 : 1;
	return a->rank - b->rank;
}

/* Hosts by their index, then the host's ring (ranks without GPU after
 * those with one), then rank. */
static int cmp_ring(const void *pa, const void *pb)
{
	const struct sort_key *a = pa, *b = pb;

	if (a->hidx != b->hidx)
		return a->hidx - b->hidx;
	if (a->ring != b->ring)
		return a->ring < 0 ? 1 : b->ring < 0 ? -1 : a->ring - b->ring;
	return a->rank - b->rank;
}

int rw_topo_place_ring(struct rw_topo_place *p)
{
	int n = p->nranks;
	struct sort_key *keys = calloc((size_t)n, sizeof(*keys));
	int *leader = calloc((size_t)n, sizeof(*leader));

	if (!keys || !leader) {
		free(keys);
		free(leader);
		return -ENOMEM;
	}
	/* each rank's host leader (its lowest rank); hosts numbered by it */
	for (int r = 0; r < n; r++)
		keys[r] = (struct sort_key){.host = p->rank[r].host, .rank = r};
	qsort(keys, (size_t)n, sizeof(*keys), cmp_host);
	for (int i = 0, first = 0; i < n; i++) {
		if (i == 0 || keys[i].host != keys[i - 1].host)
			first = keys[i].rank;
		leader[keys[i].rank] = first;
	}
	p->nhosts = 0;
	for (int r = 0; r < n; r++)
		p->host_of[r] = leader[r] == r ? p->nhosts++ : p->host_of[leader[r]];
	for (int r = 0; r < n; r++)
		keys[r] = (struct sort_key){
			.hidx = p->host_of[r], .ring = p->rank[r].ring_rank, .rank = r};
	if (p->by_topo)
		qsort(keys, (size_t)n, sizeof(*keys), cmp_ring);
	for (int i = 0; i < n; i++) {
		p->order[i] = keys[i].rank;
		p->pos[p->order[i]] = i;
	}
	free(keys);
	free(leader);
	return 0;
}

int rw_topo_place_crossings(const struct rw_topo_place *p)
{
	int k = 0;

	for (int i = 0; i < p->nranks; i++)
		k += p->host_of[p->order[i]] != p->host_of[p->order[(i + 1) % p->nranks]];
	return k;
}

const char *rw_topo_place_line_rank(const struct rw_topo_place *p, int rank, char *buf, size_t len)
{
	const struct rw_topo_place_rank *r = &p->rank[rank];

	snprintf(buf, len, "place: rank %d of %d: host %d of %d (%.64s), GPU %s, ring position %d",
		 rank, p->nranks, p->host_of[rank], p->nhosts, r->hostname,
		 r->gpu[0] ? r->gpu : "none", p->pos[rank]);
	return buf;
}

const char *rw_topo_place_line_ring(const struct rw_topo_place *p, int ch, char *buf, size_t len)
{
	size_t off;
	int n;

	n = snprintf(buf, len, "place: channel %d ring", ch);
	off = n < 0 ? 0 : (size_t)n;
	for (int i = 0; i < p->nranks && off < len; i++) {
		n = snprintf(buf + off, len - off, " %d", p->order[i]);
		off += n < 0 ? 0 : (size_t)n;
	}
	if (off < len)
		snprintf(buf + off, len - off, " (%d host crossings)", rw_topo_place_crossings(p));
	return buf;
}

const char *rw_topo_place_line_hop(const struct rw_topo_place *p, int ch, int rank, char *buf,
				   size_t len)
{
	const struct rw_topo_place_chan *c = rw_topo_place_chan_of(p, rank, ch);
	int next = p->order[(p->pos[rank] + 1) % p->nranks];

	char dev[16];

	if (c->dev < 0)
		snprintf(dev, sizeof(dev), "-");
	else
		snprintf(dev, sizeof(dev), "%d", (int)c->dev);
	snprintf(buf, len, "place: channel %d rank %d -> rank %d over NIC %s (net dev %s %s): %s",
		 ch, rank, next, c->nic[0] ? c->nic : "none", dev, c->devname[0] ? c->devname : "?",
		 c->reason);
	return buf;
}

int rw_topo_place_write(const struct rw_topo_place *p, const char *prefix, FILE *f)
{
	char line[RW_TOPO_REASON_MAX + 256];
	size_t ringlen = 64 + (size_t)p->nranks * 8;
	char *ring = malloc(ringlen);
	int rc = 0;

	if (!ring)
		return -ENOMEM;
	for (int r = 0; r < p->nranks; r++)
		fprintf(f, "%s%s\n", prefix, rw_topo_place_line_rank(p, r, line, sizeof(line)));
	for (int c = 0; c < p->nchannels; c++) {
		fprintf(f, "%s%s\n", prefix, rw_topo_place_line_ring(p, c, ring, ringlen));
		for (int i = 0; i < p->nranks; i++)
			fprintf(f, "%s%s\n", prefix,
				rw_topo_place_line_hop(p, c, p->order[i], line, sizeof(line)));
	}
	free(ring);
	if (fflush(f) || ferror(f))
		rc = -EIO;
	return rc;
}

int rw_topo_place_simulate(const struct rw_topo *t, int nhosts, int nranks, int nchannels,
			   struct rw_topo_place *p)
{
	int ngpus = rw_topo_gpu_count(t), rc;

	if (nhosts < 1 || nranks < 1)
		return -EINVAL;
	rc = rw_topo_place_alloc(p, nranks, nchannels, true);
	if (rc)
		return rc;
	for (int r = 0; r < nranks; r++) {
		struct rw_topo_place_rank *pr = &p->rank[r];
		int gpu = ngpus ? (r / nhosts) % ngpus : -1;

		pr->host = (uint64_t)(r % nhosts) + 1;
		snprintf(pr->hostname, sizeof(pr->hostname), "host%d", r % nhosts);
		if (gpu >= 0)
			snprintf(pr->gpu, sizeof(pr->gpu), "%s", rw_topo_gpu_get(t, gpu)->busid);
		rc = rw_topo_ring_rank(t, gpu, &pr->ring_rank);
		for (int c = 0; !rc && c < nchannels; c++) {
			struct rw_topo_place_chan *pc = rw_topo_place_chan_of(p, r, c);
			struct rw_topo_nic_choice nc;
			const struct rw_topo_nic *nic;

			rc = rw_topo_channel_nic(t, gpu, c, &nc);
			if (rc)
				break;
			pc->dev = -1;
			snprintf(pc->reason, sizeof(pc->reason), "%s", nc.reason);
			nic = rw_topo_nic_get(t, nc.nic);
			snprintf(pc->nic, sizeof(pc->nic), "%s", nic ? nic->name : "none");
			snprintf(pc->devname, sizeof(pc->devname), "%s",
				 !nic		  ? "-"
				 : nic->netdev[0] ? nic->netdev
						  : nic->name);
		}
		if (rc) {
			rw_topo_place_free(p);
			return rc;
		}
	}
	rc = rw_topo_place_ring(p);
	if (rc)
		rw_topo_place_free(p);
	return rc;
}

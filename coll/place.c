/* SPDX-License-Identifier: Apache-2.0 */
/* What this rank says about itself for placement (place.h). */
#include "coll/place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/rw_coll.h"
#include "common/rw_common.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "transport/shm/shm.h"

/* A launcher variable by name: NULL when unset or not in the registry. */
static const char *launcher(const char *name)
{
	for (int v = 0; v < RW_LAUNCHER_COUNT; v++) {
		const char *n = rw_launcher_name((enum rw_launcher_var)v);

		if (n && strcmp(n, name) == 0)
			return rw_launcher_get((enum rw_launcher_var)v);
	}
	return NULL;
}

/* A parameter's value as text, "" when the registry has no such variable. */
static const char *param(const struct rw_config *cfg, const char *env, char *buf, size_t len)
{
	const struct rw_param_desc *d = rw_param_find(env);

	buf[0] = '\0';
	if (d)
		rw_param_format(cfg, d, buf, len);
	return buf;
}

bool rw_place_by_topo(const struct rw_config *cfg)
{
	char v[32];

	return strcmp(param(cfg, "RINGWAY_PLACEMENT", v, sizeof(v)), "rank") != 0;
}

static bool parse_int(const char *s, long *out)
{
	char *end;

	if (!s || !*s)
		return false;
	*out = strtol(s, &end, 10);
	return *end == '\0' && *out >= 0;
}

/* FNV-1a over the host identity, so that ranks of one host agree. */
static uint64_t host_hash(const struct rw_shm_host_id *id)
{
	const uint8_t *b = (const uint8_t *)id;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < sizeof(*id); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

uint64_t rw_place_host_id(void)
{
	struct rw_shm_host_id id;
	char host[RW_TOPO_HOSTNAME_MAX] = "?";

	if (rw_shm_host_id_get(&id) == 0)
		return host_hash(&id);
	memset(&id, 0, sizeof(id));
	gethostname(host, sizeof(host) - 1);
	snprintf((char *)id.boot_id, sizeof(id.boot_id), "%.15s", host);
	return host_hash(&id); /* the hostname alone */
}

int rw_place_local_rank(const uint64_t *ids, int rank)
{
	int n = 0;

	for (int r = 0; r < rank; r++)
		n += ids[r] == ids[rank];
	return n;
}

/*
 * The GPU this process already works on, as NCCL takes it (the current CUDA
 * device), when the topology has it: -1 without CUDA, or when the current
 * device is 0 and LOCAL_RANK says otherwise (device 0 is what a process that
 * never chose one gets, so it proves nothing there).
 */
static int current_gpu(const struct rw_topo *t, long local_rank, char *how, size_t len)
{
	char busid[32];
	int n = 0, dev = -1, g;

	if (rw_cuda_device_count(&n) || n < 1 || rw_cuda_get_device(&dev) || dev < 0)
		return -1;
	if (dev == 0 && local_rank > 0)
		return -1;
	if (rw_cuda_device_busid(dev, busid, sizeof(busid)))
		return -1;
	g = rw_topo_gpu_find(t, busid);
	if (g >= 0)
		snprintf(how, len, "the current CUDA device %d (%s)", dev, busid);
	return g;
}

/* This rank's GPU in t (-1: none); *how says where it came from. */
static int pick_gpu(const struct rw_config *cfg, const struct rw_topo *t, int hint, char *how,
		    size_t len)
{
	int ngpus = rw_topo_gpu_count(t);
	const char *local = launcher("LOCAL_RANK"), *cvd = launcher("CUDA_VISIBLE_DEVICES");
	char v[RW_PARAM_STR_MAX];
	long lr = 0, idx;
	bool have_local;

	if (!local)
		local = launcher("OMPI_COMM_WORLD_LOCAL_RANK");
	have_local = parse_int(local, &lr);
	if (!have_local && hint >= 0)
		lr = hint;
	if (!ngpus) {
		snprintf(how, len, "no GPU in the topology");
		return -1;
	}
	if (*param(cfg, "RINGWAY_GPU", v, sizeof(v))) {
		int g = rw_topo_gpu_find(t, v);

		if (g < 0 && parse_int(v, &idx) && idx < ngpus)
			g = (int)idx;
		if (g >= 0) {
			snprintf(how, len, "RINGWAY_GPU=%.64s", v);
			return g;
		}
		RW_WARN(RW_LOG_INIT,
			"place: RINGWAY_GPU='%s' is neither a bus id nor an index of the "
			"topology's %d GPUs; ignored",
			v, ngpus);
	}
	{
		int g = current_gpu(t, have_local ? lr : 0, how, len);

		if (g >= 0)
			return g;
	}
	if (cvd && *cvd) {
		long list[64];
		int n = 0;
		char buf[256], *save = NULL;

		snprintf(buf, sizeof(buf), "%s", cvd);
		for (char *tok = strtok_r(buf, ",", &save); tok && n < 64;
		     tok = strtok_r(NULL, ",", &save))
			if (parse_int(tok, &list[n]) && list[n] < ngpus)
				n++;
		if (n) {
			int g = (int)list[lr % n];

			snprintf(how, len, "CUDA_VISIBLE_DEVICES=%.64s, local rank %ld", cvd, lr);
			return g;
		}
	}
	if (have_local) {
		snprintf(how, len, "local rank %ld of the topology's %d GPUs", lr, ngpus);
		return (int)(lr % ngpus);
	}
	if (hint >= 0) {
		snprintf(how, len,
			 "rank %d of this host at the rendezvous, of the topology's %d GPUs", hint,
			 ngpus);
		return hint % ngpus;
	}
	snprintf(how, len, "no LOCAL_RANK, CUDA_VISIBLE_DEVICES or RINGWAY_GPU");
	return -1;
}

/* The rw_net device of topology NIC `nic`, -1 when none matches. */
static int net_dev_of(struct rw_net *net, const struct rw_topo_nic *nic)
{
	int ndev = 0;

	if (rw_net_devices(net, &ndev))
		return -1;
	for (int pass = 0; pass < 2; pass++) {
		for (int d = 0; d < ndev; d++) {
			struct rw_net_props props;

			if (rw_net_get_properties(net, d, &props) || !props.name)
				continue;
			if (pass == 0 && ((nic->netdev[0] && !strcmp(props.name, nic->netdev)) ||
					  (nic->ibdev[0] && !strcmp(props.name, nic->ibdev)) ||
					  !strcmp(props.name, nic->name)))
				return d;
			if (pass == 1 && nic->pci_path[0] && props.pci_path &&
			    !strcmp(props.pci_path, nic->pci_path))
				return d;
		}
	}
	return -1;
}

static void dev_name(struct rw_net *net, int dev, char *buf, size_t len)
{
	struct rw_net_props props;

	if (rw_net_get_properties(net, dev, &props) || !props.name)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s", props.name);
}

static void append(char *buf, size_t len, const char *what)
{
	size_t off = strlen(buf);

	if (off < len)
		snprintf(buf + off, len - off, "%s", what);
}

int rw_place_local(const struct rw_config *cfg, struct rw_net *net, bool by_topo, int nchannels,
		   int local_rank, struct rw_topo_place_rank *me, struct rw_topo_place_chan *ch)
{
	struct rw_topo *t = NULL;
	char host[RW_TOPO_HOSTNAME_MAX] = "?", how[160] = "", dev0[RW_TOPO_NAME_MAX];
	int gpu = -1, rc;

	memset(me, 0, sizeof(*me));
	memset(ch, 0, (size_t)nchannels * sizeof(*ch));
	me->ring_rank = -1;
	gethostname(host, sizeof(host) - 1);
	snprintf(me->hostname, sizeof(me->hostname), "%s", host);
	me->host = rw_place_host_id();
	dev_name(net, 0, dev0, sizeof(dev0));
	for (int c = 0; c < nchannels; c++) {
		ch[c].dev = 0;
		snprintf(ch[c].nic, sizeof(ch[c].nic), "none");
		snprintf(ch[c].devname, sizeof(ch[c].devname), "%s", dev0);
		snprintf(ch[c].reason, sizeof(ch[c].reason),
			 "placement off (RINGWAY_PLACEMENT=rank)");
	}
	if (!by_topo)
		return 0;
	rc = rw_topo_create(cfg, &t);
	if (rc) {
		for (int c = 0; c < nchannels; c++)
			snprintf(ch[c].reason, sizeof(ch[c].reason), "no topology (%s): net dev 0",
				 strerror(-rc));
		return rc == -ENOMEM ? rc : 0;
	}
	gpu = pick_gpu(cfg, t, local_rank, how, sizeof(how));
	if (gpu >= 0) {
		snprintf(me->gpu, sizeof(me->gpu), "%s", rw_topo_gpu_get(t, gpu)->busid);
		rc = rw_topo_ring_rank(t, gpu, &me->ring_rank);
		if (rc)
			goto out;
	}
	RW_INFO(RW_LOG_INIT, "place: topology %s; GPU %s (%s)", rw_topo_source(t),
		gpu >= 0 ? me->gpu : "none", how);
	for (int c = 0; c < nchannels; c++) {
		struct rw_topo_nic_choice nc;
		const struct rw_topo_nic *nic;
		char note[96];
		int d;

		rc = rw_topo_channel_nic(t, gpu, c, &nc);
		if (rc)
			goto out;
		snprintf(ch[c].reason, sizeof(ch[c].reason), "%s", nc.reason);
		if (nc.nic < 0)
			continue; /* "none" on dev 0 */
		nic = rw_topo_nic_get(t, nc.nic);
		snprintf(ch[c].nic, sizeof(ch[c].nic), "%s", nic->name);
		d = net_dev_of(net, nic);
		if (d < 0) {
			snprintf(note, sizeof(note), "; no net device named %s, using dev 0",
				 nic->netdev[0] ? nic->netdev : nic->name);
			append(ch[c].reason, sizeof(ch[c].reason), note);
			continue;
		}
		ch[c].dev = d;
		dev_name(net, d, ch[c].devname, sizeof(ch[c].devname));
	}
out:
	rw_topo_destroy(t);
	return rc == -ENOMEM ? rc : 0;
}

void rw_place_log(const struct rw_topo_place *p, int rank)
{
	char line[RW_TOPO_REASON_MAX + 256];
	size_t ringlen = 64 + (size_t)p->nranks * 8;
	char *ring = malloc(ringlen);

	RW_INFO(RW_LOG_INIT, "%s", rw_topo_place_line_rank(p, rank, line, sizeof(line)));
	for (int c = 0; c < p->nchannels; c++) {
		if (ring)
			RW_INFO(RW_LOG_INIT, "%s", rw_topo_place_line_ring(p, c, ring, ringlen));
		RW_INFO(RW_LOG_INIT, "%s", rw_topo_place_line_hop(p, c, rank, line, sizeof(line)));
	}
	free(ring);
}

/* --- listeners of the channels' devices ------------------------------------ */

int rw_place_listen(struct rw_net *net, struct rw_place_listens *ls, const void *main_handle,
		    struct rw_place_wire_chan *ch, int nch)
{
	for (int c = 0; c < nch; c++) {
		struct rw_place_wire_chan *wc = &ch[c];
		int k = 0, rc;

		memcpy(wc->handle, main_handle, RW_NET_HANDLE_MAXSIZE);
		if (wc->place.dev == ls->main_dev || !ls->main)
			continue;
		while (k < ls->n && ls->dev[k] != wc->place.dev)
			k++;
		if (k == ls->n) {
			rc = rw_net_listen(net, wc->place.dev, ls->handle[k], &ls->l[k]);
			if (rc == -ENOMEM)
				return rc;
			if (rc) {
				char note[64];

				RW_WARN(RW_LOG_INIT,
					"place: listen on net dev %d (%s): %s; dev %d used",
					(int)wc->place.dev, wc->place.devname, strerror(-rc),
					ls->main_dev);
				snprintf(note, sizeof(note),
					 "; listen on dev %d failed, using dev %d",
					 (int)wc->place.dev, ls->main_dev);
				append(wc->place.reason, sizeof(wc->place.reason), note);
				wc->place.dev = ls->main_dev;
				dev_name(net, ls->main_dev, wc->place.devname,
					 sizeof(wc->place.devname));
				continue;
			}
			ls->dev[ls->n++] = wc->place.dev;
		}
		memcpy(wc->handle, ls->handle[k], RW_NET_HANDLE_MAXSIZE);
	}
	return 0;
}

struct rw_net_listen *rw_place_listener(const struct rw_place_listens *ls, int dev)
{
	for (int k = 0; k < ls->n; k++)
		if (ls->dev[k] == dev)
			return ls->l[k];
	return ls->main;
}

void rw_place_listens_close(struct rw_place_listens *ls)
{
	for (int k = 0; k < ls->n; k++)
		rw_net_close_listen(ls->l[k]);
	ls->n = 0;
}

/* --- a comm made in rank order (CollNet) ------------------------------------ */

/* What a rank sends over the rank-order comm. */
struct coll_blob {
	struct rw_topo_place_rank place;
	int32_t by_topo, nchannels;
	struct rw_place_wire_chan ch[];
};

/* Rounded up so that the next rank's is aligned too. */
static size_t coll_blob_bytes(int nch)
{
	size_t n = sizeof(struct coll_blob) + (size_t)nch * sizeof(struct rw_place_wire_chan);

	return (n + 7) & ~(size_t)7;
}

static int allgather_bytes(struct rw_coll_comm *c, const void *mine, void *all, size_t bytes)
{
	return rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_ALLGATHER,
						     .sendbuf = mine,
						     .recvbuf = all,
						     .count = bytes,
						     .dtype = RW_DTYPE_UINT8});
}

/* This rank's rank on its host, from everyone's host id. */
static int host_local_rank(struct rw_coll_comm *c, int n, int rank, int *out)
{
	uint64_t id = rw_place_host_id(), *ids = calloc((size_t)n, sizeof(*ids));
	int rc = -ENOMEM;

	if (ids)
		rc = allgather_bytes(c, &id, ids, sizeof(id));
	if (!rc)
		*out = rw_place_local_rank(ids, rank);
	free(ids);
	return rc;
}

int rw_place_coll_comm(const struct rw_coll_comm_args *a, struct rw_coll_comm **c,
		       struct rw_topo_place *p)
{
	int n = a->nranks, nch = (int)RW_MIN(a->cfg->nchannels, (int64_t)RW_TOPO_MAX_CHANNELS);
	size_t bytes = coll_blob_bytes(nch);
	struct rw_place_listens ls = {.main = a->listen, .main_dev = a->dev};
	struct rw_topo_place_chan chans[RW_TOPO_MAX_CHANNELS];
	struct rw_coll_comm_args pa = *a;
	struct rw_coll_comm *placed = NULL;
	struct coll_blob *mine, *b;
	const void **chan_handles = NULL;
	struct rw_net_listen **chan_listen = NULL;
	int chan_dev[RW_TOPO_MAX_CHANNELS];
	char *all;
	bool by_topo = true, same = true;
	int rc = -ENOMEM, local = -1;

	memset(p, 0, sizeof(*p));
	mine = calloc(1, bytes);
	all = calloc((size_t)n, bytes);
	if (!mine || !all)
		goto out;
	mine->by_topo = rw_place_by_topo(a->cfg);
	mine->nchannels = nch;
	rc = host_local_rank(*c, n, a->rank, &local);
	if (!rc)
		rc = rw_place_local(a->cfg, a->net, mine->by_topo, nch, local, &mine->place, chans);
	for (int ch = 0; !rc && ch < nch; ch++) {
		mine->ch[ch].place = chans[ch];
		if (chans[ch].dev != a->dev && chans[ch].nic[0] && strcmp(chans[ch].nic, "none") &&
		    !strstr(chans[ch].reason, "no net device"))
			continue;
		/* no NIC of its own: the device NCCL gave */
		mine->ch[ch].place.dev = a->dev;
		dev_name(a->net, a->dev, mine->ch[ch].place.devname,
			 sizeof(mine->ch[ch].place.devname));
	}
	if (!rc)
		rc = rw_place_listen(a->net, &ls, a->handles[a->rank], mine->ch, nch);
	if (!rc)
		rc = allgather_bytes(*c, mine, all, bytes);
	if (!rc)
		rc = rw_topo_place_alloc(p, n, nch, true);
	if (rc)
		goto out;
	for (int r = 0; r < n; r++) {
		b = (struct coll_blob *)(all + (size_t)r * bytes);
		by_topo &= b->by_topo != 0;
		b->place.hostname[sizeof(b->place.hostname) - 1] = '\0';
		b->place.gpu[sizeof(b->place.gpu) - 1] = '\0';
		p->rank[r] = b->place;
		for (int ch = 0; ch < nch; ch++) {
			struct rw_topo_place_chan *pc = rw_topo_place_chan_of(p, r, ch);

			*pc = b->ch[ch].place;
			pc->nic[sizeof(pc->nic) - 1] = '\0';
			pc->devname[sizeof(pc->devname) - 1] = '\0';
			pc->reason[sizeof(pc->reason) - 1] = '\0';
			same &= pc->dev == a->dev;
		}
	}
	p->by_topo = by_topo;
	rc = rw_topo_place_ring(p);
	if (rc)
		goto out;
	rw_place_log(p, a->rank);
	for (int i = 0; i < n; i++)
		same &= p->order[i] == i;
	if (same)
		goto out; /* the rank-order comm is the placed one */
	chan_handles = calloc((size_t)n * (size_t)nch, sizeof(*chan_handles));
	chan_listen = calloc((size_t)nch, sizeof(*chan_listen));
	rc = -ENOMEM;
	if (!chan_handles || !chan_listen)
		goto out;
	for (int r = 0; r < n; r++) {
		b = (struct coll_blob *)(all + (size_t)r * bytes);
		for (int ch = 0; ch < nch; ch++)
			chan_handles[(size_t)r * (size_t)nch + (size_t)ch] = b->ch[ch].handle;
	}
	for (int ch = 0; ch < nch; ch++) {
		chan_dev[ch] = rw_topo_place_chan_of(p, a->rank, ch)->dev;
		chan_listen[ch] = rw_place_listener(&ls, chan_dev[ch]);
	}
	pa.order = p->order;
	pa.chan_dev = chan_dev;
	pa.chan_handles = chan_handles;
	pa.chan_listen = chan_listen;
	rc = rw_coll_comm_create(&pa, &placed);
	if (rc)
		goto out;
	rw_coll_comm_destroy(*c);
	*c = placed;
out:
	rw_place_listens_close(&ls);
	free(chan_handles);
	free(chan_listen);
	free(mine);
	free(all);
	if (rc)
		rw_topo_place_free(p);
	return rc;
}

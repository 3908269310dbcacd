/* SPDX-License-Identifier: Apache-2.0 */
/* What this rank says about itself for placement (place.h). */
#include "coll/place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_log.h"
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

/* This rank's GPU in t (-1: none); *how says where it came from. */
static int pick_gpu(const struct rw_config *cfg, const struct rw_topo *t, char *how, size_t len)
{
	int ngpus = rw_topo_gpu_count(t);
	const char *local = launcher("LOCAL_RANK"), *cvd = launcher("CUDA_VISIBLE_DEVICES");
	char v[RW_PARAM_STR_MAX];
	long lr = 0, idx;
	bool have_local;

	if (!local)
		local = launcher("OMPI_COMM_WORLD_LOCAL_RANK");
	have_local = parse_int(local, &lr);
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
		   struct rw_topo_place_rank *me, struct rw_topo_place_chan *ch)
{
	struct rw_shm_host_id id;
	struct rw_topo *t = NULL;
	char host[RW_TOPO_HOSTNAME_MAX] = "?", how[160] = "", dev0[RW_TOPO_NAME_MAX];
	int gpu = -1, rc;

	memset(me, 0, sizeof(*me));
	memset(ch, 0, (size_t)nchannels * sizeof(*ch));
	me->ring_rank = -1;
	gethostname(host, sizeof(host) - 1);
	snprintf(me->hostname, sizeof(me->hostname), "%s", host);
	if (rw_shm_host_id_get(&id) == 0) {
		me->host = host_hash(&id);
	} else {
		memset(&id, 0, sizeof(id));
		snprintf((char *)id.boot_id, sizeof(id.boot_id), "%.15s", host);
		me->host = host_hash(&id); /* the hostname alone */
	}
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
	gpu = pick_gpu(cfg, t, how, sizeof(how));
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

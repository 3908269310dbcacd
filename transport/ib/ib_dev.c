/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HCAs and ports of the ib transport: which ones RINGWAY_IB_HCA selects,
 * which GID each port uses, what getProperties reports, whether GPUDirect
 * RDMA works (dma-buf or nvidia-peermem), and the async-event thread that
 * logs port and QP events.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gpu/rw_cuda_dmabuf.h"
#include "topo/rw_topo.h"

/* --- GIDs ------------------------------------------------------------------------ */

/* The GID table of an Ethernet port, with types. */
static int read_gids(struct rw_ib_net *net, struct rw_ib_hca *h, uint8_t port, int n,
		     struct rw_ib_gid *out)
{
	const char *root = net->base.cfg.sysfs_root;

	for (int i = 0; i < n; i++) {
		union ibv_gid g;

		memset(&out[i], 0, sizeof(out[i]));
		if (net->v.query_gid_ex) {
			struct ibv_gid_entry e;

			if (net->v.query_gid_ex(h->ctx, port, (uint32_t)i, &e, 0, sizeof(e)))
				continue; /* empty entry (ENODATA) */
			memcpy(out[i].raw, e.gid.raw, 16);
			out[i].type = e.gid_type == IBV_GID_TYPE_ROCE_V2   ? RW_IB_GID_ROCE_V2
				      : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? RW_IB_GID_ROCE_V1
									   : RW_IB_GID_IB;
			continue;
		}
		/* an older library: the GID, and its type from sysfs */
		if (net->v.query_gid(h->ctx, port, i, &g))
			continue;
		memcpy(out[i].raw, g.raw, 16);
		out[i].type = rw_topo_ib_gid_roce(root, h->name, port, i) == 2 ? RW_IB_GID_ROCE_V2
									       : RW_IB_GID_ROCE_V1;
	}
	return 0;
}

static const char *gid_type_str(enum rw_ib_gid_type t)
{
	return t == RW_IB_GID_ROCE_V2 ? "RoCE v2" : t == RW_IB_GID_ROCE_V1 ? "RoCE v1" : "IB";
}

/* Choose the port's GID (RINGWAY_IB_GID_INDEX or automatically).  0, or
 * -ENODEV with why set. */
static int choose_gid(struct rw_ib_net *net, struct rw_ib_dev *d, const struct ibv_port_attr *pa,
		      char *why, size_t len)
{
	const struct rw_config *cfg = &net->base.cfg;
	bool eth = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	int n = RW_MIN(pa->gid_tbl_len, RW_IB_MAX_GIDS);
	struct rw_ib_gid *gids = calloc((size_t)RW_MAX(n, 1), sizeof(*gids));
	int idx;

	if (!gids)
		return -ENOMEM;
	if (eth)
		read_gids(net, d->hca, d->port, n, gids);
	else if (n > 0 && net->v.query_gid(d->hca->ctx, d->port, 0, &d->gid) == 0)
		memcpy(gids[0].raw, d->gid.raw, 16);
	if (cfg->ib_gid_index >= 0) {
		idx = (int)cfg->ib_gid_index;
		if (eth && idx < n && net->v.query_gid(d->hca->ctx, d->port, idx, &d->gid) == 0)
			memcpy(gids[idx].raw, d->gid.raw, 16);
		if (idx >= n || rw_ib_gid_pick(&gids[idx], 1, eth) != 0) {
			snprintf(why, len,
				 "%s port %u has no usable GID at RINGWAY_IB_GID_INDEX=%d",
				 d->hca->name, d->port, idx);
			free(gids);
			return -ENODEV;
		}
	} else {
		idx = rw_ib_gid_pick(gids, n, eth);
		if (idx < 0) {
			snprintf(why, len, "%s port %u has no usable GID", d->hca->name, d->port);
			free(gids);
			return -ENODEV;
		}
	}
	d->gid_index = idx;
	memcpy(d->gid.raw, gids[idx].raw, 16);
	inet_ntop(AF_INET6, d->gid.raw, d->gid_str, sizeof(d->gid_str));
	RW_INFO(RW_LOG_INIT | RW_LOG_NET, "NET/IB: %s port %u: %s, GID %d %s (%s)%s", d->hca->name,
		d->port, eth ? "RoCE" : "InfiniBand", idx, d->gid_str,
		eth ? gid_type_str(gids[idx].type) : "IB",
		cfg->ib_gid_index >= 0 ? " set by RINGWAY_IB_GID_INDEX" : "");
	free(gids);
	return 0;
}

/* --- GPUDirect RDMA ----------------------------------------------------------------- */

/* Decide the HCA's GPUDirect mode and say why, once. */
static void gdr_detect(struct rw_ib_net *net, struct rw_ib_hca *h)
{
	char dmabuf_why[320] = "", cuda_why[128] = "";
	const char *pm_evidence = NULL;
	bool pm = rw_topo_peermem_loaded(net->base.cfg.sysfs_root, &pm_evidence);
	bool nic_dmabuf = false;

	if (!net->v.reg_dmabuf_mr) {
		snprintf(dmabuf_why, sizeof(dmabuf_why), "%s has no ibv_reg_dmabuf_mr",
			 net->v.path);
	} else {
		/* NCCL's probe: fd -1 fails with EBADF where dma-buf is supported */
		struct ibv_mr *mr = net->v.reg_dmabuf_mr(h->pd, 0, 0, 0, -1, 0);
		int e = errno;

		if (mr)
			net->v.dereg_mr(mr);
		nic_dmabuf = mr || (e != EOPNOTSUPP && e != EPROTONOSUPPORT);
		if (!nic_dmabuf)
			snprintf(dmabuf_why, sizeof(dmabuf_why),
				 "%s: the NIC driver refuses dma-buf (%s)", h->name, strerror(e));
	}
	if (nic_dmabuf && rw_cuda_dmabuf_supported(cuda_why, sizeof(cuda_why)) != 0) {
		nic_dmabuf = false;
		snprintf(dmabuf_why, sizeof(dmabuf_why), "%s", cuda_why);
	}
	if (nic_dmabuf)
		h->gdr = RW_IB_GDR_DMABUF;
	else if (pm)
		h->gdr = RW_IB_GDR_PEERMEM;
	else
		h->gdr = RW_IB_GDR_OFF;
	switch (h->gdr) {
	case RW_IB_GDR_DMABUF:
		RW_INFO(RW_LOG_INIT | RW_LOG_NET, "NET/IB: %s: GPUDirect RDMA on, by dma-buf%s",
			h->name, pm ? " (nvidia-peermem also loaded)" : "");
		break;
	case RW_IB_GDR_PEERMEM:
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"NET/IB: %s: GPUDirect RDMA on, by nvidia-peermem (%s); dma-buf: %s",
			h->name, pm_evidence, dmabuf_why);
		break;
	default:
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"NET/IB: %s: GPUDirect RDMA off (host memory only): nvidia-peermem not "
			"loaded, "
			"dma-buf: %s",
			h->name, dmabuf_why);
		break;
	}
}

/* --- the async-event thread ----------------------------------------------------------- */

static bool event_is_error(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_SRQ_ERR:
		return true;
	default:
		return false;
	}
}

static bool event_is_qp(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

static void mark_ports(struct rw_ib_net *net, struct rw_ib_hca *h, int port, bool down)
{
	for (int i = 0; i < net->ndev; i++)
		if (net->devs[i].hca == h && (port < 0 || net->devs[i].port == port))
			atomic_store(&net->devs[i].port_down, down);
}

static void async_event(struct rw_ib_hca *h, const struct ibv_async_event *ev)
{
	struct rw_ib_net *net = h->net;
	enum rw_log_level lvl = event_is_error(ev->event_type) ? RW_LOG_WARN : RW_LOG_INFO;
	const char *what = net->v.event_type_str(ev->event_type);

	if (event_is_qp(ev->event_type)) {
		struct rw_ib_comm *c;

		pthread_mutex_lock(&net->lock);
		c = rw_ib_comm_by_qp(net, ev->element.qp);
		if (c) {
			RW_LOG(lvl, RW_LOG_NET,
			       "NET/IB: %s: async event on QP %#x to peer %s (GID %s, LID %u): %s",
			       h->name, ev->element.qp->qp_num, c->peer, c->peer_gid, c->peer_lid,
			       what);
			/* a QP in the error state moves nothing more: its comm
			 * fails at its next test, even with no work request
			 * outstanding to be flushed */
			if (ev->event_type == IBV_EVENT_QP_FATAL ||
			    ev->event_type == IBV_EVENT_QP_REQ_ERR ||
			    ev->event_type == IBV_EVENT_QP_ACCESS_ERR)
				atomic_store(&c->async_err,
					     ev->event_type == IBV_EVENT_QP_ACCESS_ERR ? -EPROTO
										       : -EIO);
		} else
			RW_LOG(lvl, RW_LOG_NET, "NET/IB: %s: async event on a closed QP: %s",
			       h->name, what);
		pthread_mutex_unlock(&net->lock);
		return;
	}
	switch (ev->event_type) {
	case IBV_EVENT_PORT_ERR:
		mark_ports(net, h, ev->element.port_num, true);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		mark_ports(net, h, ev->element.port_num, false);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		mark_ports(net, h, -1, true);
		break;
	default:
		break;
	}
	if (ev->event_type == IBV_EVENT_CQ_ERR) {
		struct rw_ib_comm *c;

		/* a CQ in error delivers no completion again: its comm fails
		 * at once rather than at RINGWAY_TIMEOUT_MS */
		pthread_mutex_lock(&net->lock);
		c = rw_ib_comm_by_cq(net, ev->element.cq);
		RW_LOG(lvl, RW_LOG_NET,
		       "NET/IB: %s: async event: %s (a completion queue overflowed%s%s)", h->name,
		       what, c ? "; peer " : "", c ? c->peer : "");
		if (c)
			atomic_store(&c->async_err, -EIO);
		pthread_mutex_unlock(&net->lock);
	} else if (ev->event_type == IBV_EVENT_DEVICE_FATAL)
		RW_LOG(lvl, RW_LOG_NET, "NET/IB: %s: async event: %s", h->name, what);
	else
		RW_LOG(lvl, RW_LOG_NET, "NET/IB: %s port %d: async event: %s%s", h->name,
		       ev->element.port_num, what,
		       ev->event_type == IBV_EVENT_PORT_ERR ? "; its connections will fail" : "");
}

/* Async events still reported after a stop was asked for (async_main). */
#define RW_IB_ASYNC_DRAIN 64

static void *async_main(void *arg)
{
	struct rw_ib_hca *h = arg;
	struct pollfd p[2] = {
		{.fd = h->ctx->async_fd, .events = POLLIN},
		{.fd = h->stop_fd, .events = POLLIN},
	};
	unsigned drained = 0;

	atomic_store_explicit(&h->async_running, true, memory_order_release);
	for (;;) {
		struct ibv_async_event ev;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			RW_WARN(RW_LOG_NET, "NET/IB: %s: async-event thread: poll: %s", h->name,
				strerror(errno));
			break;
		}
		/* Events the NIC queued before the stop are still reported (a
		 * QP that went to the error state as its connection failed is
		 * often closed at once), but no more than a queue's worth, so a
		 * NIC that keeps raising them cannot hold the close up. */
		if (p[1].revents && (!(p[0].revents & POLLIN) || ++drained > RW_IB_ASYNC_DRAIN))
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		if (h->net->v.get_async_event(h->ctx, &ev))
			continue;
		async_event(h, &ev);
		h->net->v.ack_async_event(&ev);
	}
	return NULL;
}

static int async_start(struct rw_ib_hca *h)
{
	h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->stop_fd < 0)
		return -errno;
	if (pthread_create(&h->async, NULL, async_main, h)) {
		rw_close_fd(&h->stop_fd);
		return -EAGAIN;
	}
	/* Return once the thread runs: a fork() right after (a test's peer, a
	 * launcher) then never copies it half-way through its start-up, which
	 * allocates (under ASan a child inherited that allocator lock held and
	 * its own threads hung at their first allocation).  The thread's own
	 * first statement ends the wait. */
	while (!atomic_load_explicit(&h->async_running, memory_order_acquire))
		sched_yield();
	h->async_started = true;
	rw_ib_live_add(RW_IB_LIVE_THREADS, 1);
	return 0;
}

static void async_stop(struct rw_ib_hca *h)
{
	uint64_t one = 1;

	if (!h->async_started)
		return;
	if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
		RW_WARN(RW_LOG_NET, "NET/IB: %s: cannot stop the async-event thread: %s", h->name,
			strerror(errno));
	pthread_join(h->async, NULL);
	rw_close_fd(&h->stop_fd);
	h->async_started = false;
	rw_ib_live_add(RW_IB_LIVE_THREADS, -1);
}

/* --- opening ------------------------------------------------------------------------ */

static void hca_close(struct rw_ib_net *net, struct rw_ib_hca *h)
{
	async_stop(h);
	rw_ib_hca_regs_free(h);
	if (h->pd)
		net->v.dealloc_pd(h->pd);
	if (h->ctx)
		net->v.close_device(h->ctx);
	pthread_mutex_destroy(&h->reg_lock);
	free(h->pci_path);
	free(h);
}

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	default:
		return "not active";
	}
}

/* Append "; " + text to a reason being collected. */
static void why_add(char *why, size_t len, const char *text)
{
	size_t used = strlen(why);

	if (used + 3 < len)
		snprintf(why + used, len - used, "%s%s", used ? "; " : "", text);
}

/* The usable ports of one opened HCA. */
static void hca_ports(struct rw_ib_net *net, struct rw_ib_hca *h, const struct rw_ib_spec *sp,
		      char *why, size_t len)
{
	for (int p = 1; p <= h->attr.phys_port_cnt && net->ndev < RW_IB_MAX_DEVS; p++) {
		struct rw_ib_dev *d = &net->devs[net->ndev];
		struct ibv_port_attr pa;
		char msg[160];

		if (!rw_ib_spec_match(sp, h->name, p))
			continue;
		if (rw_ibv_query_port(&net->v, h->ctx, (uint8_t)p, &pa)) {
			snprintf(msg, sizeof(msg), "%s port %d: ibv_query_port failed", h->name, p);
			why_add(why, len, msg);
			continue;
		}
		if (pa.state != IBV_PORT_ACTIVE) {
			snprintf(msg, sizeof(msg), "%s port %d is %s", h->name, p,
				 port_state_str(pa.state));
			why_add(why, len, msg);
			continue;
		}
		if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND &&
		    pa.link_layer != IBV_LINK_LAYER_ETHERNET &&
		    pa.link_layer != IBV_LINK_LAYER_UNSPECIFIED) {
			snprintf(msg, sizeof(msg),
				 "%s port %d: link layer %d is neither IB nor Ethernet", h->name, p,
				 pa.link_layer);
			why_add(why, len, msg);
			continue;
		}
		memset(d, 0, sizeof(*d));
		d->hca = h;
		d->port = (uint8_t)p;
		d->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET
					? IBV_LINK_LAYER_ETHERNET
					: IBV_LINK_LAYER_INFINIBAND;
		d->lid = pa.lid;
#ifdef IBV_QPF_GRH_REQUIRED
		d->grh_required = pa.flags & IBV_QPF_GRH_REQUIRED;
#endif
		d->mtu = pa.active_mtu;
		d->speed_mbps = rw_ib_speed_mbps(pa.active_speed, pa.active_width);
		if (d->speed_mbps <= 0)
			d->speed_mbps = 10000;
		if (h->attr.phys_port_cnt > 1)
			snprintf(d->name, sizeof(d->name), "%s:%d", h->name, p);
		else
			snprintf(d->name, sizeof(d->name), "%s", h->name);
		if (choose_gid(net, d, &pa, msg, sizeof(msg))) {
			why_add(why, len, msg);
			continue;
		}
		net->ndev++;
	}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Open one HCA by name; keep it when one of its ports is usable. */
static int hca_open(struct rw_ib_net *net, struct ibv_device *dev, const struct rw_ib_spec *sp,
		    char *why, size_t len)
{
	const struct rw_config *cfg = &net->base.cfg;
	struct rw_ib_hca *h;
	int before = net->ndev, rc;
	char msg[160];

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->net = net;
	h->stop_fd = -1;
	pthread_mutex_init(&h->reg_lock, NULL);
	snprintf(h->name, sizeof(h->name), "%s", net->v.get_device_name(dev));
	h->ctx = net->v.open_device(dev);
	if (!h->ctx) {
		snprintf(msg, sizeof(msg), "ibv_open_device(%s): %s", h->name, strerror(errno));
		why_add(why, len, msg);
		hca_close(net, h);
		return 0;
	}
	rc = net->v.query_device(h->ctx, &h->attr);
	if (rc) {
		snprintf(msg, sizeof(msg), "ibv_query_device(%s): %s", h->name, strerror(rc));
		why_add(why, len, msg);
		hca_close(net, h);
		return 0;
	}
	hca_ports(net, h, sp, why, len);
	if (net->ndev == before) {
		hca_close(net, h);
		return 0;
	}
	h->guid = be64toh(h->attr.node_guid);
	{
		struct rw_topo_nic_facts f; /* topo reads sysfs: the PCI path */

		if (rw_topo_nic_facts(cfg->sysfs_root, h->name, &f) == 0 && f.pci_path[0])
			h->pci_path = strdup(f.pci_path);
	}
	h->pd = net->v.alloc_pd(h->ctx);
	if (!h->pd) {
		snprintf(msg, sizeof(msg), "ibv_alloc_pd(%s): %s", h->name, strerror(errno));
		goto err_drop;
	}
	h->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (net->v.reg_mr_iova2)
		h->access |= IBV_ACCESS_RELAXED_ORDERING;
	gdr_detect(net, h);
	rc = async_start(h);
	if (rc) {
		snprintf(msg, sizeof(msg), "%s: cannot start the async-event thread: %s", h->name,
			 strerror(-rc));
		goto err_drop;
	}
	net->hcas[net->nhcas++] = h;
	return 0;

err_drop:
	why_add(why, len, msg);
	net->ndev = before;
	hca_close(net, h);
	return 0;
}

int rw_ib_devs_open(struct rw_ib_net *net, char *why, size_t len)
{
	const struct rw_config *cfg = &net->base.cfg;
	struct ibv_device **list;
	struct rw_ib_spec sp;
	const char **names;
	int n = 0, rc = 0;
	char found[256] = "", reasons[512] = "";

	if (rw_ib_spec_parse(cfg->ib_hca, &sp)) {
		snprintf(why, len,
			 "RINGWAY_IB_HCA='%s' does not parse (name[:port],... with "
			 "optional ^ or =)",
			 cfg->ib_hca);
		return -EINVAL;
	}
	list = net->v.get_device_list(&n);
	if (!list || n == 0) {
		snprintf(why, len, "no RDMA device (ibv_get_device_list: %s)",
			 list ? "none found" : strerror(errno));
		if (list)
			net->v.free_device_list(list);
		return -ENODEV;
	}
	/* in name order, so device numbers do not depend on discovery order */
	names = calloc((size_t)n, sizeof(*names));
	if (!names) {
		net->v.free_device_list(list);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		names[i] = net->v.get_device_name(list[i]);
	qsort(names, (size_t)n, sizeof(*names), name_cmp);
	for (int k = 0; k < n && net->nhcas < RW_IB_MAX_HCAS && !rc; k++) {
		bool any = false;

		why_add(found, sizeof(found), names[k]);
		for (int p = 1; p <= 255 && !any; p++)
			any = rw_ib_spec_match(&sp, names[k], p);
		if (!any)
			continue;
		for (int i = 0; i < n; i++)
			if (!strcmp(net->v.get_device_name(list[i]), names[k]))
				rc = hca_open(net, list[i], &sp, reasons, sizeof(reasons));
	}
	free(names);
	net->v.free_device_list(list);
	if (rc)
		return rc;
	if (net->ndev == 0) {
		if (reasons[0])
			snprintf(why, len, "no usable port: %s", reasons);
		else
			snprintf(why, len, "no device matches RINGWAY_IB_HCA='%s' (found %s)",
				 cfg->ib_hca, found);
		return -ENODEV;
	}
	return 0;
}

void rw_ib_devs_close(struct rw_ib_net *net)
{
	for (int i = 0; i < net->nhcas; i++)
		hca_close(net, net->hcas[i]);
	net->nhcas = 0;
	net->ndev = 0;
}

void rw_ib_dev_props(const struct rw_ib_dev *d, struct rw_net_props *p)
{
	const struct rw_ib_hca *h = d->hca;

	memset(p, 0, sizeof(*p));
	p->name = d->name;
	p->pci_path = h->pci_path;
	p->guid = h->guid;
	p->ptr_support = RW_PTR_HOST;
	if (h->gdr != RW_IB_GDR_OFF)
		p->ptr_support |= RW_PTR_CUDA;
	if (h->gdr == RW_IB_GDR_DMABUF)
		p->ptr_support |= RW_PTR_DMABUF;
	/* the registration cache is per HCA: a regMr inside a live earlier
	 * registration (e.g. NCCL's ncclCommRegister on another comm) only
	 * takes a reference, as in NCCL's own IB transport (regIsGlobal 1);
	 * dma-buf registrations are not cached, so not where device memory
	 * comes as dma-bufs */
	p->reg_is_global = h->gdr != RW_IB_GDR_DMABUF;
	p->force_flush = 0;
	p->speed_mbps = d->speed_mbps;
	p->port = d->port;
	p->latency_us = 0; /* unknown here (fabric-dependent): NCCL's default, as its IB */
	p->max_comms = RW_IB_MAX_COMMS;
	p->max_recvs = RW_NET_MAX_RECVS;
	p->vdev_ndevs = 1;
	p->max_p2p_bytes = RW_IB_MAX_MSG;
	p->max_coll_bytes = RW_IB_MAX_MSG;
	p->max_multi_request_size = 1;
	p->rail_id = RW_NET_ID_UNDEF;
	p->plane_id = RW_NET_ID_UNDEF;
}

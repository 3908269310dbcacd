/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process-wide plugin state: creation at the first init, contexts,
 * the bridge from ringway's logger to NCCL's, the startup message, and the
 * comm wrappers handed to NCCL.
 */
#include "plugin/rw_plugin.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "plugin/rw_vdev.h"
#include "transport/fuse/fuse.h"

/* ringway's log levels and flags are NCCL's, so the sink forwards them. */
static_assert(RW_LOG_WARN == (int)NCCL_LOG_WARN, "log levels differ");
static_assert(RW_LOG_INFO == (int)NCCL_LOG_INFO, "log levels differ");
static_assert(RW_LOG_TRACE == (int)NCCL_LOG_TRACE, "log levels differ");
static_assert(RW_LOG_INIT == (int)NCCL_INIT, "log flags differ");
static_assert(RW_LOG_NET == (int)NCCL_NET, "log flags differ");
static_assert(RW_LOG_PROXY == (int)NCCL_PROXY, "log flags differ");
static_assert(RW_PTR_HOST == NCCL_PTR_HOST && RW_PTR_CUDA == NCCL_PTR_CUDA &&
		      RW_PTR_DMABUF == NCCL_PTR_DMABUF,
	      "memory types differ");
static_assert(RW_NET_HANDLE_MAXSIZE <= NCCL_NET_HANDLE_MAXSIZE,
	      "a transport handle must fit NCCL's buffer");
static_assert(RW_NET_ID_UNDEF == NCCL_NET_ID_UNDEF, "undefined ids differ");

/*
 * The only mutable process-wide state: the plugin, for the ABI calls that
 * carry no context (devices, getProperties, all of v6..v10), and NCCL's
 * logger, which the log sink reads.  Everything else hangs off the plugin.
 */
static struct {
	pthread_mutex_t lock;
	struct rw_plugin *plugin; /* lock */
	ncclDebugLogger_t logger; /* written under lock, read atomically */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* --- logging ------------------------------------------------------------- */

static void nccl_log_sink(void *arg, enum rw_log_level level, unsigned long flags, const char *file,
			  int line, const char *msg)
{
	ncclDebugLogger_t logger = __atomic_load_n(&g.logger, __ATOMIC_ACQUIRE);

	(void)arg;
	if (logger)
		logger((ncclDebugLogLevel)level, flags, file, line, "%s", msg);
}

/* Called with g.lock held.  NULL (standalone) leaves stderr in place. */
static void install_logger(ncclDebugLogger_t logger)
{
	if (!logger)
		return;
	__atomic_store_n(&g.logger, logger, __ATOMIC_RELEASE);
	rw_log_set_sink(nccl_log_sink, NULL);
}

static void describe_device(const struct rw_net_props *pr, char *buf, size_t len)
{
	const char *bdf = pr->pci_path ? strrchr(pr->pci_path, '/') : NULL;

	if (bdf)
		snprintf(buf, len, "%s (%s, %d Mbps)", pr->name, bdf + 1, pr->speed_mbps);
	else if (strncmp(pr->name, "lo", 2) == 0)
		snprintf(buf, len, "%s (loopback)", pr->name);
	else
		snprintf(buf, len, "%s (no PCI device, %d Mbps)", pr->name, pr->speed_mbps);
}

/* The one startup line, tagged INIT so plain NCCL_DEBUG=INFO shows it. */
static void announce(const struct rw_plugin *p)
{
	char devs[768] = "";
	size_t used = 0;

	for (int d = 0; d < p->ndev && used < sizeof(devs); d++) {
		char one[256];
		int n;

		describe_device(&p->props[d], one, sizeof(one));
		n = snprintf(devs + used, sizeof(devs) - used, "%s%s", d ? ", " : "", one);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	RW_INFO(RW_LOG_INIT | RW_LOG_NET,
		"ringway %s: NET/%s ABI v%d, transport %s, %d device(s): %s", RW_VERSION_STRING,
		RW_PLUGIN_NAME, p->abi_version, rw_net_name(p->net), p->ndev, devs);
}

/* --- creation and destruction -------------------------------------------- */

/*
 * What NCCL needs but a transport may leave unset: every field gets a
 * value NCCL accepts (it does not zero the struct it hands us).
 */
static int load_props(struct rw_plugin *p, int dev, struct rw_net_props *pr)
{
	int rc;

	memset(pr, 0, sizeof(*pr));
	pr->rail_id = RW_NET_ID_UNDEF;
	pr->plane_id = RW_NET_ID_UNDEF;
	rc = rw_net_get_properties(p->net, dev, pr);
	if (rc)
		return rc;
	if (!pr->name || !pr->name[0]) {
		RW_WARN(RW_LOG_INIT | RW_LOG_NET, "transport %s: device %d has no name",
			rw_net_name(p->net), dev);
		return -EINVAL;
	}
	if (pr->speed_mbps <= 0)
		pr->speed_mbps = 10000; /* what NCCL assumes for <= 0 */
	if (pr->latency_us < 0)
		pr->latency_us = 0;
	if (pr->max_comms < 1)
		pr->max_comms = 65536;
	pr->max_recvs = RW_MAX(1, RW_MIN(pr->max_recvs, RW_NET_MAX_RECVS));
	if (pr->vdev_ndevs < 1) {
		pr->vdev_ndevs = 1;
		pr->vdev_devs[0] = dev;
	}
	if (pr->max_p2p_bytes == 0 || pr->max_p2p_bytes > RW_PLUGIN_MAX_P2P_BYTES)
		pr->max_p2p_bytes = RW_PLUGIN_MAX_P2P_BYTES;
	if (pr->max_coll_bytes == 0)
		pr->max_coll_bytes = MAX_COLLNET_SIZE;
	if (pr->max_coll_bytes > NCCL_MAX_NET_SIZE_BYTES)
		pr->max_coll_bytes = NCCL_MAX_NET_SIZE_BYTES;
	if (pr->max_multi_request_size < 1)
		pr->max_multi_request_size = 1;
	return 0;
}

/*
 * The transports take a NIC's PCI path, speed and GUID from topo already
 * (rw_topo_nic_facts); the model adds only what it infers: the rail (v12
 * railId/planeId).
 */
static void apply_topo(struct rw_plugin *p, struct rw_net_props *pr)
{
	struct rw_topo_net_props tp;

	if (!p->topo || rw_topo_net_props(p->topo, pr->name, &tp) != 0)
		return;
	pr->rail_id = tp.rail_id;
	pr->plane_id = tp.plane_id;
}

/* Called with g.lock held.  Closes what NCCL left open, then frees. */
static void plugin_destroy(struct rw_plugin *p)
{
	struct rw_pcomm *pc, *next;
	int left = 0;

	for (pc = p->pcomms; pc; pc = pc->next_all) {
		if (rw_obj_state(&pc->obj) != RW_OBJ_OPEN)
			continue;
		rw_prof_stop_all(pc); /* no event outlives its comm */
		switch (pc->obj.kind & 0xffff) {
		case RW_PCOMM_LISTEN:
			rw_net_close_listen(pc->u.listen);
			left++;
			break;
		case RW_PCOMM_SEND:
			rw_net_close_send(pc->u.comm);
			left++;
			break;
		case RW_PCOMM_RECV:
			rw_net_close_recv(pc->u.comm);
			left++;
			break;
		default:
			break;
		}
	}
	if (left)
		RW_WARN(RW_LOG_NET, "finalize: %d comm(s) were still open; closed them", left);
	for (pc = p->pcomms; pc; pc = next) {
		next = pc->next_all;
		rw_live_del(rw_pcomm_handle(pc), NULL, true);
		rw_live_del_owned(pc);
		rw_prof_free(pc);
		free(pc);
	}
	rw_net_destroy(p->net);
	rw_topo_destroy(p->topo);
	free(p->props);
	free(p);
}

/* Called with g.lock held: the plugin, created if this is the first init. */
static int plugin_get_or_create(int abi_version, ncclDebugLogger_t logger, struct rw_plugin **out)
{
	struct rw_plugin *p;
	int rc;

	install_logger(logger);
	if (g.plugin) {
		*out = g.plugin;
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rw_config_load(&p->cfg, NULL, NULL);
	if (!logger)
		rw_log_set_level((enum rw_log_level)p->cfg.debug);
	p->abi_version = abi_version;
	p->legacy.plugin = p;
	rw_grave_init(&p->pcomm_grave, RW_GRAVE_MAX, NULL, 0);
	p->legacy.traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;

	rc = rw_net_create(&p->cfg, &p->net);
	if (rc == 0)
		rc = rw_vdev_attach(p); /* NIC fusion in front (rw_vdev.c) */
	if (rc)
		goto err_free;
	rc = rw_net_devices(p->net, &p->ndev);
	if (rc)
		goto err_destroy_net;
	if (p->ndev <= 0) {
		RW_WARN(RW_LOG_INIT | RW_LOG_NET,
			"transport %s found no device (RINGWAY_SOCKET_IFNAME='%s')",
			rw_net_name(p->net), p->cfg.socket_ifname);
		rc = -ENODEV;
		goto err_destroy_net;
	}
	/* room for the virtual devices makeVDevice may add */
	p->props = calloc((size_t)p->ndev + RW_FUSE_MAX_VDEVS, sizeof(*p->props));
	if (!p->props) {
		rc = -ENOMEM;
		goto err_free_props;
	}
	/* Without a topology the transport's own view of its devices stands;
	 * topo logged why. */
	if (rw_topo_create(&p->cfg, &p->topo) != 0)
		p->topo = NULL;
	for (int d = 0; d < p->ndev; d++) {
		rc = load_props(p, d, &p->props[d]);
		if (rc)
			goto err_free_props;
		apply_topo(p, &p->props[d]);
	}
	announce(p);
	g.plugin = p;
	*out = p;
	return 0;

err_free_props:
	rw_topo_destroy(p->topo);
	free(p->props);
err_destroy_net:
	rw_net_destroy(p->net);
err_free:
	free(p);
	return rc;
}

/* Called with g.lock held, after a reference went away. */
static void plugin_put(struct rw_plugin *p)
{
	if (--p->refs > 0)
		return;
	g.plugin = NULL;
	plugin_destroy(p);
	rw_log_set_sink(NULL, NULL);
	__atomic_store_n(&g.logger, NULL, __ATOMIC_RELEASE);
}

int rw_plugin_init_legacy(int abi_version, ncclDebugLogger_t logger)
{
	struct rw_plugin *p;
	int rc;

	pthread_mutex_lock(&g.lock);
	rc = plugin_get_or_create(abi_version, logger, &p);
	if (rc == 0 && !p->legacy_ready) {
		p->legacy_ready = 1;
		p->refs++;
	}
	pthread_mutex_unlock(&g.lock);
	return rc;
}

int rw_plugin_ctx_create(int abi_version, uint64_t comm_id, int traffic_class,
			 ncclDebugLogger_t logger, void **ctx)
{
	struct rw_plugin_ctx *c;
	struct rw_plugin *p;
	int rc;

	if (!ctx) {
		RW_WARN(RW_LOG_INIT | RW_LOG_NET, "init(commId=%#llx): ctx is NULL",
			(unsigned long long)comm_id);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->comm_id = comm_id;
	c->traffic_class = traffic_class;

	pthread_mutex_lock(&g.lock);
	rc = plugin_get_or_create(abi_version, logger, &p);
	if (rc == 0) {
		c->plugin = p;
		c->next = p->ctxs;
		p->ctxs = c;
		p->refs++;
	}
	pthread_mutex_unlock(&g.lock);
	if (rc) {
		free(c);
		return rc;
	}
	*ctx = c;
	return 0;
}

/* Called with g.lock held: the link that points to ctx, or NULL. */
static struct rw_plugin_ctx **find_ctx(const void *ctx)
{
	struct rw_plugin_ctx **link;

	if (!g.plugin)
		return NULL;
	for (link = &g.plugin->ctxs; *link; link = &(*link)->next)
		if (*link == ctx)
			return link;
	return NULL;
}

int rw_plugin_ctx_destroy(void *ctx)
{
	struct rw_plugin_ctx **link, *c;

	if (!ctx)
		return 0;
	pthread_mutex_lock(&g.lock);
	link = find_ctx(ctx);
	if (!link) {
		pthread_mutex_unlock(&g.lock);
		RW_WARN(RW_LOG_INIT | RW_LOG_NET, "finalize(ctx=%p): not a live ringway context",
			ctx);
		return -EINVAL;
	}
	c = *link;
	*link = c->next;
	plugin_put(c->plugin);
	pthread_mutex_unlock(&g.lock);
	free(c);
	return 0;
}

int rw_plugin_from_ctx(void *ctx, const char *call, struct rw_plugin **out)
{
	struct rw_plugin_ctx **link;

	pthread_mutex_lock(&g.lock);
	link = ctx ? find_ctx(ctx) : NULL;
	if (link)
		*out = (*link)->plugin;
	pthread_mutex_unlock(&g.lock);
	if (!link) {
		RW_WARN(RW_LOG_NET, "%s(ctx=%p): not a live ringway context", call, ctx);
		return -EINVAL;
	}
	return 0;
}

int rw_plugin_from_legacy(const char *call, struct rw_plugin **out)
{
	struct rw_plugin *p;

	pthread_mutex_lock(&g.lock);
	p = g.plugin && g.plugin->legacy_ready ? g.plugin : NULL;
	pthread_mutex_unlock(&g.lock);
	if (!p) {
		RW_WARN(RW_LOG_NET, "%s called before init", call);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

void rw_plugin_set_legacy_prof(ncclProfilerCallback_t prof)
{
	pthread_mutex_lock(&g.lock);
	if (g.plugin)
		__atomic_store_n(&g.plugin->legacy.prof, prof, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g.lock);
}

void rw_plugin_ctx_set_prof(void *ctx, ncclProfilerCallback_t prof)
{
	struct rw_plugin_ctx *c = ctx;

	__atomic_store_n(&c->prof, prof, __ATOMIC_RELEASE);
}

/* --- the process-wide view for calls without a context --------------------- */

int rw_plugin_devices(int *ndev)
{
	struct rw_plugin *p;

	pthread_mutex_lock(&g.lock);
	p = g.plugin;
	pthread_mutex_unlock(&g.lock);
	if (!p || !ndev) {
		RW_WARN(RW_LOG_NET, "devices(ndev=%p): %s", (void *)ndev,
			p ? "NULL output" : "called before init");
		return -EINVAL;
	}
	*ndev = __atomic_load_n(&p->ndev, __ATOMIC_ACQUIRE); /* makeVDevice adds */
	return 0;
}

int rw_plugin_props(int dev, struct rw_net_props *out)
{
	struct rw_plugin *p;

	pthread_mutex_lock(&g.lock);
	p = g.plugin;
	pthread_mutex_unlock(&g.lock);
	if (!p) {
		RW_WARN(RW_LOG_NET, "getProperties(dev=%d) called before init", dev);
		return -EINVAL;
	}
	if (dev < 0 || dev >= __atomic_load_n(&p->ndev, __ATOMIC_ACQUIRE)) {
		RW_WARN(RW_LOG_NET, "getProperties(dev=%d): ringway has %d device(s)", dev,
			p->ndev);
		return -EINVAL;
	}
	*out = p->props[dev];
	return 0;
}

/* makeVDevice (rw_vdev.c): the fuse transport makes the device, the plugin
 * counts it once its properties are loaded. */
int rw_plugin_make_vdev(int ndevs, const int *devs, int *d)
{
	struct rw_plugin *p;
	int rc, nd = -1;

	pthread_mutex_lock(&g.lock);
	p = g.plugin;
	if (!p) {
		rc = -EINVAL;
	} else if (ndevs == 1 && devs[0] >= 0 && devs[0] < rw_fuse_nphys(p->net)) {
		nd = devs[0]; /* one NIC is that NIC */
		rc = 0;
	} else {
		rc = rw_fuse_make_vdev(p->net, ndevs, devs, &nd);
		if (rc == 0 && nd != p->ndev)
			rc = -EPROTO; /* not reached: both count physical, then virtual */
		if (rc == 0)
			rc = load_props(p, nd, &p->props[nd]);
		if (rc == 0) {
			apply_topo(p, &p->props[nd]);
			__atomic_store_n(&p->ndev, nd + 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&g.lock);
	if (!p)
		RW_WARN(RW_LOG_NET, "makeVDevice called before init");
	if (rc == 0)
		*d = nd;
	return rc;
}

/* --- wrappers ------------------------------------------------------------ */

int rw_pcomm_alloc(struct rw_plugin *p, enum rw_pcomm_kind kind, int dev, struct rw_pcomm **out)
{
	struct rw_list *shell;
	struct rw_pcomm *pc;

	pthread_mutex_lock(&g.lock);
	/* Closed wrappers are reused oldest first, once RW_GRAVE_MAX wait:
	 * a stale handle then aliases a new comm only after that many closes,
	 * and its generation tells them apart even so. */
	shell = rw_grave_reuse(&p->pcomm_grave);
	if (shell) {
		pc = rw_list_entry(shell, struct rw_pcomm, link);
	} else {
		pc = rw_obj_zalloc(sizeof(*pc));
		if (!pc) {
			pthread_mutex_unlock(&g.lock);
			return -ENOMEM;
		}
		rw_list_init(&pc->link);
		pc->next_all = p->pcomms;
		p->pcomms = pc;
	}
	pc->plugin = p;
	pc->dev = dev;
	pc->ptr_support = p->props[dev].ptr_support;
	pc->u.comm = NULL;
	pc->prof_fn = NULL;
	if (pc->prof) /* a reused wrapper: its old comm's events ended at close */
		rw_prof_attach(pc, NULL);
	rw_obj_open(&pc->obj, RW_PCOMM_OBJ(kind));
	if (rw_live_add(rw_pcomm_handle(pc), NULL) != 0) {
		rw_obj_close(&pc->obj);
		rw_grave_bury(&p->pcomm_grave, &pc->link);
		pthread_mutex_unlock(&g.lock);
		return -ENOMEM;
	}
	pthread_mutex_unlock(&g.lock);
	*out = pc;
	return 0;
}

void rw_pcomm_retire(struct rw_pcomm *pc)
{
	struct rw_plugin *p = pc->plugin;

	pthread_mutex_lock(&g.lock);
	/* Its requests and memory handles went with the transport's comm. */
	rw_live_del(rw_pcomm_handle(pc), NULL, true);
	rw_live_del_owned(pc);
	rw_obj_close(&pc->obj);
	pc->u.comm = NULL;
	rw_grave_bury(&p->pcomm_grave, &pc->link);
	pthread_mutex_unlock(&g.lock);
}

void *rw_pcomm_handle(struct rw_pcomm *pc)
{
	return rw_obj_handle(&pc->obj);
}

struct rw_pcomm *rw_pcomm_check(void *handle, enum rw_pcomm_kind kind)
{
	struct rw_pcomm *pc;

	/* Closed wrappers, handles of an older generation and wrappers freed
	 * by the last finalize are not live: never read through them. */
	if (!rw_live_has(handle, NULL, true))
		return NULL;
	pc = rw_container_of(rw_obj_from_handle(handle), struct rw_pcomm, obj);
	if (rw_obj_handle_check(&pc->obj, handle) || rw_obj_check(&pc->obj, RW_PCOMM_OBJ(kind)))
		return NULL;
	return pc;
}

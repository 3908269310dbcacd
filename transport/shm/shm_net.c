/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same-host transport instance: one device ("shm"), its properties, the
 * doorbell page peers ring, the host identity, and the live counters.
 */
#include "transport/shm/shm_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "topo/rw_sysfs.h"

/* --- live counters ---------------------------------------------------- */

struct rw_live rw_shm_live = {.name = "shm", .nkinds = RW_SHM_LIVE_COUNT};
struct rw_shm_stats rw_shm_stats_g;

void rw_shm_stat_add(long *counter, long delta)
{
	__atomic_add_fetch(counter, delta, __ATOMIC_RELAXED);
}

void rw_shm_stats_get(struct rw_shm_stats *out)
{
	long *dst = (long *)out;
	long *src = (long *)&rw_shm_stats_g;

	for (size_t i = 0; i < sizeof(*out) / sizeof(long); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void rw_shm_close_fd(int *fd)
{
	if (*fd >= 0) {
		rw_close_fd(fd);
		rw_shm_live_add(RW_SHM_LIVE_FDS, -1);
	}
}

void rw_shm_live_objects(struct rw_shm_live *out)
{
	out->nets = rw_live_get(&rw_shm_live, RW_SHM_LIVE_NETS);
	out->listeners = rw_live_get(&rw_shm_live, RW_SHM_LIVE_LISTENERS);
	out->comms = rw_live_get(&rw_shm_live, RW_SHM_LIVE_COMMS);
	out->reqs = rw_live_get(&rw_shm_live, RW_SHM_LIVE_REQS);
	out->mrs = rw_live_get(&rw_shm_live, RW_SHM_LIVE_MRS);
	out->maps = rw_live_get(&rw_shm_live, RW_SHM_LIVE_MAPS);
	out->fds = rw_live_get(&rw_shm_live, RW_SHM_LIVE_FDS);
}

long rw_shm_live_total(void)
{
	return rw_live_sum(&rw_shm_live, 1u << RW_SHM_LIVE_SHELLS);
}

/* --- host identity ------------------------------------------------------ */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "e1eb66a1-2436-48fb-a6c7-e0751df71193" -> 16 bytes. */
static int parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;

	for (const char *p = s; *p && n < 32; p++) {
		int v = hexval(*p);

		if (*p == '-')
			continue;
		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			out[n / 2] = (uint8_t)(v << 4);
		else
			out[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -EINVAL;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

int rw_shm_host_id_get(struct rw_shm_host_id *out)
{
	struct rw_shm_host_id id;
	char buf[64], host[256];
	struct stat st;
	int rc;

	memset(&id, 0, sizeof(id));
	rc = rw_sysfs_read("", "proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	if (rc == 0)
		rc = parse_uuid(buf, id.boot_id);
	if (rc) {
		RW_WARN(RW_LOG_INIT | RW_LOG_SHM,
			"shm: cannot read the boot id (/proc/sys/kernel/random/boot_id): %s",
			strerror(-rc));
		return rc;
	}
	if (gethostname(host, sizeof(host)) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	id.host_hash = fnv1a(host);
	if (stat("/proc/self/ns/net", &st) == 0)
		id.netns = (uint64_t)st.st_ino;
	*out = id;
	return 0;
}

void rw_shm_share_thread(struct rw_net *base)
{
	struct rw_shm_net *net = rw_shm_net_from(base);

	net->sleep_ns = RW_SHM_SLEEP_SHARED_NS;
}

bool rw_shm_host_id_equal(const struct rw_shm_host_id *a, const struct rw_shm_host_id *b)
{
	return memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) == 0 &&
	       a->host_hash == b->host_hash && a->netns == b->netns;
}

/* --- handles -------------------------------------------------------------- */

/* Handles arrive in any buffer (NCCL's are char arrays): copy, never cast. */
int rw_shm_handle_check(const void *handle)
{
	struct rw_shm_handle h;

	if (!handle)
		return -EINVAL;
	memcpy(&h, handle, sizeof(h));
	if (h.magic != RW_SHM_MAGIC)
		return -EINVAL;
	if (h.version != RW_SHM_VERSION)
		return -EPROTO;
	return 0;
}

int rw_shm_handle_addr(const void *handle, struct sockaddr_un *addr, socklen_t *len)
{
	struct rw_shm_handle h;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int rc = rw_shm_handle_check(handle), n;

	if (rc)
		return rc;
	memcpy(&h, handle, sizeof(h));
	/* abstract name: a leading NUL, no terminator */
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "%s%016llx", RW_SHM_SOCK_PREFIX,
		     (unsigned long long)h.nonce);
	*addr = a;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* --- the instance --------------------------------------------------------- */

static int shm_devices(struct rw_net *net, int *ndev)
{
	(void)net;
	if (!ndev)
		return -EINVAL;
	*ndev = 1;
	return 0;
}

static int shm_get_properties(struct rw_net *base, int dev, struct rw_net_props *props)
{
	struct rw_shm_net *net = rw_shm_net_from(base);

	if (!props)
		return -EINVAL;
	if (dev != 0) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: getProperties(dev=%d): only device 0", dev);
		return -EINVAL;
	}
	*props = net->props;
	return 0;
}

long rw_shm_live_shells(void)
{
	return rw_live_get(&rw_shm_live, RW_SHM_LIVE_SHELLS);
}

void rw_shm_bury(struct rw_shm_net *net, struct rw_grave *g, struct rw_list *link)
{
	pthread_mutex_lock(&net->lock);
	rw_grave_bury(g, link);
	pthread_mutex_unlock(&net->lock);
}

static void shm_destroy(struct rw_net *base)
{
	struct rw_shm_net *net = rw_shm_net_from(base);

	rw_grave_free_all(&net->dead_comms, offsetof(struct rw_shm_comm, link),
			  offsetof(struct rw_shm_comm, reqs));
	rw_grave_free_all(&net->dead_listeners, offsetof(struct rw_shm_listen, link), 0);
	pthread_mutex_destroy(&net->lock);
	rw_shm_unmap(net->db, RW_SHM_DB_BYTES);
	rw_shm_close_fd(&net->db_fd);
	free(net);
	rw_shm_live_add(RW_SHM_LIVE_NETS, -1);
}

/* Sorted in the order of struct rw_net_ops (the NCCL net ABI). */
static const struct rw_net_ops shm_ops = {
	.name = "shm",
	.devices = shm_devices,
	.get_properties = shm_get_properties,
	.listen = rw_shm_listen,
	.connect = rw_shm_connect,
	.accept = rw_shm_accept,
	.reg_mr = rw_shm_reg_mr,
	.reg_mr_dmabuf = rw_shm_reg_mr_dmabuf,
	.dereg_mr = rw_shm_dereg_mr,
	.isend = rw_shm_isend,
	.irecv = rw_shm_irecv,
	.iflush = rw_shm_iflush,
	.test = rw_shm_test,
	.close_send = rw_shm_close_send,
	.close_recv = rw_shm_close_recv,
	.close_listen = rw_shm_close_listen,
	.destroy = shm_destroy,
	.describe = rw_shm_describe,
	.window = rw_shm_window,
	.check = rw_shm_check,
	.patient = rw_shm_patient,
	.irecv_sink = rw_shm_irecv_sink,
};

/*
 * What NCCL is told (README, "getProperties per transport"):
 *   speed    100 Gb/s: what one connection moves, one or two cores copying
 *            (a current server; 6.6-9.6 GB/s at 64 MiB on the 2-core CI VM);
 *   latency  1 us: the measured 8-byte round trip is 1.0-2.0 us (NCCL keeps
 *            whole microseconds);
 *   maxRecvs 8: the sender sees the posted receives (post ring), so a send
 *            is taken only when a buffer of the oldest receive takes it;
 *   regIsGlobal 0: a registration belongs to its comm (every regMr is
 *            immediate anyway: nothing is pinned);
 *   maxP2pBytes 1 TiB, NCCL's ceiling: nothing in the protocol is smaller.
 */
static void fill_props(struct rw_shm_net *net)
{
	struct rw_net_props *p = &net->props;

	memset(p, 0, sizeof(*p));
	p->name = "shm";
	p->pci_path = NULL;
	memcpy(&p->guid, net->host.boot_id, sizeof(p->guid));
	p->ptr_support = RW_PTR_HOST | (net->cuda ? RW_PTR_CUDA : 0);
	p->reg_is_global = 0;
	p->speed_mbps = 100000;
	p->latency_us = 1.0f;
	p->max_comms = 65536;
	p->max_recvs = RW_NET_MAX_RECVS;
	p->vdev_ndevs = 1;
	p->vdev_devs[0] = 0;
	p->max_p2p_bytes = RW_SHM_MAX_P2P_BYTES;
	p->max_coll_bytes = RW_SHM_MAX_P2P_BYTES;
	p->max_multi_request_size = 1;
	p->rail_id = RW_NET_ID_UNDEF;
	p->plane_id = RW_NET_ID_UNDEF;
}

int rw_shm_create(const struct rw_config *cfg, struct rw_net **out)
{
	struct rw_shm_net *net;
	int rc, ngpu;

	net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	net->base.ops = &shm_ops;
	net->base.cfg = *cfg;
	net->db_fd = -1;
	pthread_mutex_init(&net->lock, NULL);
	rw_grave_init(&net->dead_comms, RW_GRAVE_MAX, &rw_shm_live, RW_SHM_LIVE_SHELLS);
	rw_grave_init(&net->dead_listeners, RW_GRAVE_MAX, NULL, 0);
	net->uid = (uint32_t)geteuid();
	net->pid = getpid();
	net->nslots = (uint32_t)cfg->shm_nslots;
	net->slot_bytes = (uint32_t)RW_DIV_UP(cfg->shm_slot_bytes, 4096) * 4096;
	net->spin_ns = (uint64_t)cfg->shm_spin_us * 1000;
	net->last_progress_ns = rw_now_ns();
	net->sleep_ns = RW_SHM_SLEEP_MAX_NS;
	rc = rw_shm_host_id_get(&net->host);
	if (rc)
		goto err_free;
	rc = rw_shm_memfd_create("ringway-shm-doorbell", RW_SHM_DB_BYTES, &net->db_fd);
	if (rc)
		goto err_free;
	rc = rw_shm_map(net->db_fd, RW_SHM_DB_BYTES, (void **)&net->db);
	if (rc)
		goto err_close_db;
	net->db->magic = RW_SHM_DB_MAGIC;
	net->db->version = RW_SHM_VERSION;
	net->db->owner_uid = net->uid;
	net->db->owner_pid = net->pid;
	net->cuda = rw_cuda_device_count(&ngpu) == 0;
	fill_props(net);
	rw_shm_live_add(RW_SHM_LIVE_NETS, 1);
	RW_INFO(RW_LOG_NET | RW_LOG_SHM,
		"shm: ready (pid %d, %u slots x %u bytes per connection, CMA %s, CUDA IPC %s)",
		(int)net->pid, net->nslots, net->slot_bytes, cfg->shm_cma ? "allowed" : "off",
		net->cuda ? "yes" : "no");
	*out = &net->base;
	return 0;

err_close_db:
	rw_shm_close_fd(&net->db_fd);
err_free:
	pthread_mutex_destroy(&net->lock);
	free(net);
	return rc;
}

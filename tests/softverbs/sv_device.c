/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: registration with libibverbs, devices, contexts, the device and
 * port queries (from the fake sysfs tree libibverbs itself reads), async
 * events, fault knobs and QP numbers.
 */
#define _GNU_SOURCE
#include "sv_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read "<dir>/<rel>" into buf, newline stripped.  0 or -errno. */
static int read_text(const char *dir, const char *rel, char *buf, size_t len)
{
	char path[IBV_SYSFS_PATH_MAX + 64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

static int parse_gid(const char *s, union ibv_gid *gid)
{
	for (int i = 0; i < 8; i++) {
		unsigned int v;

		if (sscanf(s + i * 5, "%4x", &v) != 1)
			return -EINVAL;
		gid->raw[2 * i] = (uint8_t)(v >> 8);
		gid->raw[2 * i + 1] = (uint8_t)v;
	}
	return 0;
}

int sv_read_port(struct sv_dev *dev, int port, struct sv_port *out)
{
	char rel[64], buf[128];
	struct sv_port p = {0};

	snprintf(rel, sizeof(rel), "ports/%d/link_layer", port);
	if (read_text(dev->path, rel, buf, sizeof(buf)))
		return -ENOENT;
	p.link_layer =
		strcmp(buf, "Ethernet") == 0 ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	snprintf(rel, sizeof(rel), "ports/%d/lid", port);
	if (read_text(dev->path, rel, buf, sizeof(buf)) == 0)
		p.lid = (uint16_t)strtoul(buf, NULL, 0);
	snprintf(rel, sizeof(rel), "ports/%d/rate", port);
	p.rate_gbps = read_text(dev->path, rel, buf, sizeof(buf)) == 0 ? atoi(buf) : 100;
	for (int i = 0; i < SV_MAX_GIDS; i++) {
		snprintf(rel, sizeof(rel), "ports/%d/gids/%d", port, i);
		if (read_text(dev->path, rel, buf, sizeof(buf)))
			break;
		if (parse_gid(buf, &p.gids[i]))
			break;
		p.ngids = i + 1;
	}
	*out = p;
	return 0;
}

int sv_port_state(struct sv_ctx *ctx, int port)
{
	char rel[64], buf[64];

	if (ctx->port_down)
		return IBV_PORT_DOWN;
	snprintf(rel, sizeof(rel), "ports/%d/state", port);
	if (read_text(ctx->dev->path, rel, buf, sizeof(buf)))
		return IBV_PORT_DOWN;
	return atoi(buf); /* "4: ACTIVE" */
}

void sv_async_event(struct sv_ctx *ctx, uint64_t element, enum ibv_event_type type)
{
	struct sv_async_desc d = {.element = element, .event_type = type};

	if (write(ctx->async_wr, &d, sizeof(d)) != (ssize_t)sizeof(d))
		fprintf(stderr, "softverbs: async event %d lost: %s\n", (int)type, strerror(errno));
}

/* Called with ctx->lock held: every port goes down, every link dies. */
void sv_fault_port_down(struct sv_ctx *ctx)
{
	if (ctx->port_down)
		return;
	ctx->port_down = true;
	for (int p = 1; p <= ctx->dev->nports; p++)
		sv_async_event(ctx, (uint64_t)p, IBV_EVENT_PORT_ERR);
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next)
		qp->link_dead = true;
}

int sv_alloc_qpn(struct sv_ctx *ctx, uint32_t *qpn)
{
	char path[IBV_SYSFS_PATH_MAX + 16];
	uint32_t v = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/qpn", ctx->fabric);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		rc = -errno;
		goto out_close;
	}
	if (pread(fd, &v, sizeof(v), 0) != (ssize_t)sizeof(v) || v < 0x100 || v >= 0xffffff)
		v = 0x100;
	*qpn = v;
	v++;
	if (pwrite(fd, &v, sizeof(v), 0) != (ssize_t)sizeof(v))
		rc = -EIO;
	flock(fd, LOCK_UN);
out_close:
	close(fd);
	return rc;
}

/*
 * SOFTVERBS_FAULTS: comma-separated knobs, each counted per context in the
 * order things happen (data messages sent, memory registrations), from 1;
 * the table is in tests/softverbs/README.md:
 *   retry_exceeded=N   message N and everything after it on that QP is
 *                      never delivered: IBV_WC_RETRY_EXC_ERR after the
 *                      QP's timeout x (retry_cnt + 1)
 *   remote_access=N    message N carries a corrupt rkey: the responder
 *                      refuses it, IBV_WC_REM_ACCESS_ERR
 *   conn_drop=N        at message N (lost) the QP's streams are closed,
 *                      both directions: the link is gone
 *   port_down=N        at message N (lost) every port reports DOWN, a
 *                      PORT_ERR async event is raised and no link works;
 *                      port_down=0: down from the start
 *   mr_no_remote=N     registration N silently loses its remote access
 *                      flags (a buffer registered without remote write)
 *   qp_fatal=N         at message N (lost) the QP raises IBV_EVENT_QP_FATAL
 *                      and stops: no work request of it completes again,
 *                      no timer runs (a NIC that can write no completion)
 *   rtr_timeout=N      the first N moves of a QP to RTR fail with
 *                      ETIMEDOUT, the state unchanged (RoCE: the kernel
 *                      could not resolve the peer's MAC address yet)
 *   dmabuf=unsupported ibv_reg_dmabuf_mr fails with EOPNOTSUPP
 *   placement=reverse  payloads land back to front, 64 bytes at a time
 */
static void faults_parse(struct sv_faults *f, const char *spec)
{
	char buf[512], *save = NULL;

	*f = (struct sv_faults){.retry_exceeded = -1,
				.remote_access = -1,
				.conn_drop = -1,
				.port_down = -1,
				.mr_no_remote = -1,
				.qp_fatal = -1};
	if (!spec)
		return;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		const char *val = eq ? eq + 1 : "1";
		long n = strtol(val, NULL, 0);

		if (eq)
			*eq = '\0';
		if (!strcmp(t, "retry_exceeded"))
			f->retry_exceeded = n;
		else if (!strcmp(t, "remote_access"))
			f->remote_access = n;
		else if (!strcmp(t, "conn_drop"))
			f->conn_drop = n;
		else if (!strcmp(t, "port_down"))
			f->port_down = n;
		else if (!strcmp(t, "mr_no_remote"))
			f->mr_no_remote = n;
		else if (!strcmp(t, "qp_fatal"))
			f->qp_fatal = n;
		else if (!strcmp(t, "rtr_timeout"))
			f->rtr_timeout = n;
		else if (!strcmp(t, "dmabuf"))
			f->dmabuf_unsupported = !strcmp(val, "unsupported");
		else if (!strcmp(t, "placement"))
			f->placement_reverse = !strcmp(val, "reverse");
		else
			fprintf(stderr, "softverbs: unknown fault knob '%s'\n", t);
	}
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The fabric directory: SOFTVERBS_FABRIC, else "softverbs" next to the
 * sysfs tree ($SYSFS_PATH/../softverbs). */
static int fabric_dir(struct sv_ctx *ctx)
{
	const char *env = getenv("SOFTVERBS_FABRIC");
	char *p;

	if (env && *env) {
		snprintf(ctx->fabric, sizeof(ctx->fabric), "%s", env);
	} else {
		/* path = <sysfs>/class/infiniband/<name>: up four levels */
		snprintf(ctx->fabric, sizeof(ctx->fabric), "%s", ctx->dev->path);
		for (int i = 0; i < 4; i++) {
			p = strrchr(ctx->fabric, '/');
			if (!p)
				return -EINVAL;
			*p = '\0';
		}
		strncat(ctx->fabric, "/softverbs", sizeof(ctx->fabric) - strlen(ctx->fabric) - 1);
	}
	if (mkdir(ctx->fabric, 0700) && errno != EEXIST)
		return -errno;
	ctx->fabric_hash = fnv1a(ctx->fabric);
	return 0;
}

/* --- context ops ---------------------------------------------------------------- */

static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct ibv_device_attr *a = &attr->orig_attr;

	(void)input;
	if (attr_size < sizeof(*a))
		return EINVAL;
	memset(attr, 0, attr_size);
	snprintf(a->fw_ver, sizeof(a->fw_ver), "softverbs 1.0");
	a->node_guid = htobe64(ctx->dev->node_guid);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = 4096;
	a->vendor_id = 0x5356;
	a->vendor_part_id = 1;
	a->max_qp = 65536;
	a->max_qp_wr = SV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
	a->max_sge = SV_MAX_SGE;
	a->max_sge_rd = SV_MAX_SGE;
	a->max_cq = 65536;
	a->max_cqe = SV_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_pd = 65536;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_res_rd_atom = 16 * 65536;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = (uint8_t)ctx->dev->nports;
	return 0;
}

/* Speed and width codes of a rate in Gb/s (4X lanes where they divide). */
static void rate_codes(int gbps, uint8_t *speed, uint8_t *width)
{
	static const struct {
		int gbps;
		uint8_t speed, width;
	} t[] = {
		{400, 128, 2}, {200, 64, 2}, {100, 32, 2}, {56, 16, 2},
		{40, 4, 2},    {25, 32, 1},  {10, 4, 1},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (gbps >= t[i].gbps) {
			*speed = t[i].speed;
			*width = t[i].width;
			return;
		}
	}
	*speed = 1;
	*width = 1;
}

static int sv_query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *pa)
{
	struct sv_ctx *ctx = sv_ctx_of(context);
	struct sv_port *p;

	if (port < 1 || port > ctx->dev->nports)
		return EINVAL;
	p = &ctx->ports[port];
	memset(pa, 0, sizeof(*pa));
	pthread_mutex_lock(&ctx->lock);
	pa->state = (enum ibv_port_state)sv_port_state(ctx, port);
	pthread_mutex_unlock(&ctx->lock);
	pa->phys_state = pa->state == IBV_PORT_ACTIVE ? 5 : 3; /* LinkUp / Disabled */
	pa->max_mtu = IBV_MTU_4096;
	pa->active_mtu = IBV_MTU_4096;
	pa->gid_tbl_len = p->ngids;
	pa->max_msg_sz = SV_MAX_MSG;
	pa->pkey_tbl_len = 1;
	pa->lid = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? p->lid : 0;
	pa->sm_lid = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? 1 : 0;
	pa->max_vl_num = 1;
	pa->link_layer = (uint8_t)p->link_layer;
	if (p->link_layer == IBV_LINK_LAYER_ETHERNET)
		pa->port_cap_flags = IBV_PORT_IP_BASED_GIDS;
	rate_codes(p->rate_gbps, &pa->active_speed, &pa->active_width);
	return 0;
}

/*
 * fork() while progress threads run: the child inherits every lock as it
 * was, and a progress thread caught inside malloc leaves an allocator lock
 * held for good in the child (ASan's allocator has no fork handler in
 * GCC 12): the child's own progress threads then hung at their first
 * allocation, so its NIC never answered (a forked test peer, under load).
 * Progress threads allocate only under their context's lock, so fork
 * takes every context's lock first: none of them is inside then.
 */
static pthread_mutex_t ctx_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_ctx *ctx_list;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&ctx_list_lock);
	for (struct sv_ctx *c = ctx_list; c; c = c->fork_next)
		pthread_mutex_lock(&c->lock);
}

/* In the parent and in the child alike: the forking thread holds them. */
static void fork_done(void)
{
	for (struct sv_ctx *c = ctx_list; c; c = c->fork_next)
		pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&ctx_list_lock);
}

static void fork_setup(void)
{
	if (pthread_atfork(fork_prepare, fork_done, fork_done))
		fprintf(stderr, "softverbs: pthread_atfork failed: fork may hang the child\n");
}

static void ctx_list_add(struct sv_ctx *ctx)
{
	pthread_once(&fork_once, fork_setup);
	pthread_mutex_lock(&ctx_list_lock);
	ctx->fork_next = ctx_list;
	ctx_list = ctx;
	pthread_mutex_unlock(&ctx_list_lock);
}

static void ctx_list_remove(struct sv_ctx *ctx)
{
	pthread_mutex_lock(&ctx_list_lock);
	for (struct sv_ctx **p = &ctx_list; *p; p = &(*p)->fork_next) {
		if (*p == ctx) {
			*p = ctx->fork_next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx_list_lock);
}

static void sv_free_context(struct ibv_context *context)
{
	struct sv_ctx *ctx = sv_ctx_of(context);

	ctx_list_remove(ctx);
	sv_wire_stop(ctx);
	close(ctx->async_wr);
	close(ctx->wake_fd);
	close(ctx->epfd);
	free(ctx->mrs);
	pthread_mutex_destroy(&ctx->lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static int sv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

static int sv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

static struct verbs_context *sv_alloc_context(struct ibv_device *ibdev, int cmd_fd,
					      void *private_data)
{
	struct sv_dev *dev = sv_dev_of(ibdev);
	struct verbs_context_ops ops = sv_ctx_ops;
	struct sv_ctx *ctx;
	int pfd[2];

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct sv_ctx *)NULL)->vctx, 0);
	if (!ctx)
		return NULL;
	ctx->dev = dev;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->async_wr = ctx->wake_fd = ctx->epfd = -1;
	faults_parse(&ctx->faults, getenv("SOFTVERBS_FAULTS"));
	for (int p = 1; p <= dev->nports; p++)
		if (sv_read_port(dev, p, &ctx->ports[p]))
			goto err_uninit;
	if (fabric_dir(ctx))
		goto err_uninit;
	if (pipe2(pfd, O_CLOEXEC))
		goto err_uninit;
	fcntl(pfd[1], F_SETFL, O_NONBLOCK);
	ctx->vctx.context.async_fd = pfd[0];
	ctx->async_wr = pfd[1];
	ctx->vctx.context.num_comp_vectors = 1;
	if (ctx->faults.port_down == 0)
		sv_fault_port_down(ctx);
	ops.query_device_ex = sv_query_device_ex;
	ops.query_port = sv_query_port;
	ops.free_context = sv_free_context;
	ops.query_ece = sv_query_ece;
	ops.set_ece = sv_set_ece;
	if (sv_wire_start(ctx))
		goto err_close;
	verbs_set_ops(&ctx->vctx, &ops);
	ctx_list_add(ctx);
	return &ctx->vctx;

err_close:
	close(ctx->async_wr);
err_uninit:
	pthread_mutex_destroy(&ctx->lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = ENODEV;
	return NULL;
}

/* --- device ops -------------------------------------------------------------- */

/* Ours when the device's sysfs directory says so ("hca_type" = softverbs). */
static bool sv_match_device(struct verbs_sysfs_dev *sdev)
{
	char buf[64];

	return read_text(sdev->ibdev_path, "hca_type", buf, sizeof(buf)) == 0 &&
	       strcmp(buf, "softverbs") == 0;
}

static struct verbs_device *sv_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct sv_dev *dev = calloc(1, sizeof(*dev));
	char buf[64], rel[32];
	struct stat st;

	if (!dev)
		return NULL;
	snprintf(dev->path, sizeof(dev->path), "%s", sdev->ibdev_path);
	for (int p = 1; p <= SV_MAX_PORTS; p++) {
		char path[IBV_SYSFS_PATH_MAX + 32];

		snprintf(rel, sizeof(rel), "ports/%d", p);
		snprintf(path, sizeof(path), "%s/%s", dev->path, rel);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			break;
		dev->nports = p;
	}
	if (read_text(dev->path, "node_guid", buf, sizeof(buf)) == 0) {
		unsigned int g[4] = {0};

		if (sscanf(buf, "%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3]) == 4)
			dev->node_guid = (uint64_t)g[0] << 48 | (uint64_t)g[1] << 32 |
					 (uint64_t)g[2] << 16 | g[3];
	}
	dev->vdev.core_support = SV_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
	return &dev->vdev;
}

static void sv_uninit_device(struct verbs_device *vdev)
{
	free(vdev);
}

static const struct verbs_device_ops sv_dev_ops = {
	.name = "softverbs",
	.match_min_abi_version = 1,
	.match_max_abi_version = 0x7fffffff,
	.match_device = sv_match_device,
	.alloc_context = sv_alloc_context,
	.alloc_device = sv_alloc_device,
	.uninit_device = sv_uninit_device,
};

static __attribute__((constructor)) void sv_register(void)
{
	verbs_register_driver_34(&sv_dev_ops);
}

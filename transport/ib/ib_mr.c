/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory registration for the ib transport.
 *
 * The registration cache: one per HCA (protection domain), shared by every
 * comm on it.  A request is widened to whole pages; an existing
 * registration of the same memory type that covers it is reused (reference
 * counted), otherwise the pages are registered and kept sorted by address.
 * The last reference deregisters at once, so memory freed and reused by the
 * application is never served from a stale registration.  The rw_net_mr a
 * caller gets is the comm's own handle on a cache entry (the comm drops its
 * handles when it closes).
 *
 * Device memory: with nvidia-peermem, ibv_reg_mr takes the device pointer
 * (cached like host memory); with dma-buf, the handle gets its own
 * ibv_reg_dmabuf_mr on an fd from CUDA (kernels/rw_cuda_dmabuf.h).
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/rw_cuda_dmabuf.h"

static const char *type_str(int type)
{
	return type == RW_PTR_CUDA ? "device" : "host";
}

/* A comm that may register: 0, -EINVAL or -EBADF. */
static int comm_check(struct rw_net_comm *base, struct rw_ib_comm **out)
{
	return rw_ib_comm_check(base, 0, out);
}

struct rw_ib_mr *rw_ib_mr_of(struct rw_ib_comm *c, struct rw_net_mr *mr)
{
	struct rw_ib_mr *m;

	if (!mr)
		return NULL;
	m = rw_container_of(mr, struct rw_ib_mr, base);
	return rw_obj_check(&m->obj, RW_IB_MR_MAGIC) == 0 && m->base.comm == &c->base ? m : NULL;
}

/* ibv_reg_mr with the HCA's access flags (relaxed ordering when the
 * library can pass it).  NULL with errno set. */
static struct ibv_mr *reg_verbs(struct rw_ib_net *net, struct rw_ib_hca *h, void *addr, size_t len,
				int access)
{
	if (net->v.reg_mr_iova2)
		return net->v.reg_mr_iova2(h->pd, addr, len, (uintptr_t)addr, (unsigned int)access);
	return net->v.reg_mr(h->pd, addr, len, access & ~IBV_ACCESS_RELAXED_ORDERING);
}

struct ibv_mr *rw_ib_reg_internal(struct rw_ib_dev *d, void *buf, size_t len, int access,
				  const char *what)
{
	struct rw_ib_net *net = d->hca->net;
	struct ibv_mr *mr = net->v.reg_mr(d->hca->pd, buf, len, access);

	if (!mr)
		RW_WARN(RW_LOG_NET, "NET/IB: %s: ibv_reg_mr(%s, %zu bytes) failed: %s", d->name,
			what, len, strerror(errno));
	return mr;
}

/* Called with h->reg_lock held: a cache entry covering [start, end). */
static int cache_get(struct rw_ib_net *net, struct rw_ib_hca *h, uintptr_t start, uintptr_t end,
		     int type, struct rw_ib_reg **out)
{
	struct rw_ib_reg *r;
	int pos = 0;

	for (int i = 0; i < h->nregs; i++) {
		r = h->regs[i];
		if (r->type == type && r->start <= start && r->end >= end) {
			r->refs++;
			*out = r;
			return 0;
		}
		if (r->start <= start)
			pos = i + 1;
	}
	if (h->nregs == h->regs_cap) {
		int cap = h->regs_cap ? 2 * h->regs_cap : 64;
		struct rw_ib_reg **a = realloc(h->regs, (size_t)cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		h->regs = a;
		h->regs_cap = cap;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mr = reg_verbs(net, h, (void *)start, end - start, h->access);
	if (!r->mr) {
		int rc = errno ? -errno : -ENOMEM;

		RW_WARN(RW_LOG_NET, "NET/IB: %s: ibv_reg_mr(%p, %zu bytes, %s memory) failed: %s",
			h->name, (void *)start, (size_t)(end - start), type_str(type),
			strerror(-rc));
		free(r);
		return rc;
	}
	r->start = start;
	r->end = end;
	r->type = type;
	r->refs = 1;
	memmove(&h->regs[pos + 1], &h->regs[pos], (size_t)(h->nregs - pos) * sizeof(*h->regs));
	h->regs[pos] = r;
	h->nregs++;
	rw_ib_live_add(RW_IB_LIVE_REGS, 1);
	*out = r;
	return 0;
}

/* Called with h->reg_lock held. */
static void cache_put(struct rw_ib_net *net, struct rw_ib_hca *h, struct rw_ib_reg *r)
{
	if (--r->refs > 0)
		return;
	for (int i = 0; i < h->nregs; i++) {
		if (h->regs[i] == r) {
			memmove(&h->regs[i], &h->regs[i + 1],
				(size_t)(h->nregs - i - 1) * sizeof(*h->regs));
			h->nregs--;
			break;
		}
	}
	if (net->v.dereg_mr(r->mr))
		RW_WARN(RW_LOG_NET, "NET/IB: %s: ibv_dereg_mr(%p, %zu bytes) failed", h->name,
			(void *)r->start, (size_t)(r->end - r->start));
	free(r);
	rw_ib_live_add(RW_IB_LIVE_REGS, -1);
}

void rw_ib_hca_regs_free(struct rw_ib_hca *h)
{
	pthread_mutex_lock(&h->reg_lock);
	while (h->nregs) {
		h->regs[0]->refs = 1;
		cache_put(h->net, h, h->regs[0]);
	}
	free(h->regs);
	h->regs = NULL;
	h->regs_cap = 0;
	pthread_mutex_unlock(&h->reg_lock);
}

static int handle_new(struct rw_ib_comm *c, int type, struct rw_ib_reg *reg, struct ibv_mr *own,
		      struct rw_net_mr **out)
{
	struct rw_ib_mr *m = calloc(1, sizeof(*m));
	struct ibv_mr *mr = reg ? reg->mr : own;

	if (!m)
		return -ENOMEM;
	m->base.comm = &c->base;
	rw_obj_open(&m->obj, RW_IB_MR_MAGIC);
	m->reg = reg;
	m->own = own;
	m->type = type;
	m->lkey = mr->lkey;
	m->rkey = mr->rkey;
	pthread_mutex_lock(&c->mr_lock);
	rw_list_add(&c->mrs, &m->link);
	pthread_mutex_unlock(&c->mr_lock);
	rw_ib_live_add(RW_IB_LIVE_MRS, 1);
	*out = &m->base;
	return 0;
}

/* Device memory by dma-buf: an fd from CUDA, a registration of its own. */
static int reg_cuda_dmabuf(struct rw_ib_comm *c, void *data, size_t size, struct ibv_mr **out)
{
	struct rw_ib_hca *h = c->dev->hca;
	uint64_t offset = 0;
	struct ibv_mr *mr;
	int fd = -1, rc;

	rc = rw_cuda_dmabuf_fd(data, size, &fd, &offset);
	if (rc)
		return rc;
	mr = c->net->v.reg_dmabuf_mr(h->pd, offset, size ? size : 1, (uintptr_t)data, fd,
				     h->access);
	rc = mr ? 0 : errno ? -errno : -EIO;
	if (!mr)
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: ibv_reg_dmabuf_mr(%p, %zu bytes, fd %d) failed: %s", h->name,
			data, size, fd, strerror(-rc));
	close(fd);
	if (mr)
		*out = mr;
	return rc;
}

int rw_ib_reg_mr(struct rw_net_comm *base, void *data, size_t size, int type,
		 struct rw_net_mr **out)
{
	struct rw_ib_comm *c;
	struct rw_ib_hca *h;
	struct rw_ib_reg *reg = NULL;
	struct ibv_mr *own = NULL;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), start, end;
	int rc = comm_check(base, &c);

	if (rc)
		return rc;
	if (!out || !data || (type != RW_PTR_HOST && type != RW_PTR_CUDA))
		return -EINVAL;
	h = c->dev->hca;
	if (type == RW_PTR_CUDA && h->gdr == RW_IB_GDR_OFF) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: cannot register device memory %p: GPUDirect RDMA "
			"is off (ptrSupport says host memory only)",
			h->name, data);
		return -ENOTSUP;
	}
	if (type == RW_PTR_CUDA && h->gdr == RW_IB_GDR_DMABUF) {
		rc = reg_cuda_dmabuf(c, data, size, &own);
	} else {
		start = (uintptr_t)data & ~(pg - 1);
		end = ((uintptr_t)data + RW_MAX(size, 1) + pg - 1) & ~(pg - 1);
		pthread_mutex_lock(&h->reg_lock);
		rc = cache_get(c->net, h, start, end, type, &reg);
		pthread_mutex_unlock(&h->reg_lock);
	}
	if (rc)
		return rc;
	rc = handle_new(c, type, reg, own, out);
	if (rc) {
		if (own)
			c->net->v.dereg_mr(own);
		if (reg) {
			pthread_mutex_lock(&h->reg_lock);
			cache_put(c->net, h, reg);
			pthread_mutex_unlock(&h->reg_lock);
		}
	}
	return rc;
}

int rw_ib_reg_mr_dmabuf(struct rw_net_comm *base, void *data, size_t size, int type,
			uint64_t offset, int fd, struct rw_net_mr **out)
{
	struct rw_ib_comm *c;
	struct rw_ib_hca *h;
	struct ibv_mr *mr;
	int rc = comm_check(base, &c);

	if (rc)
		return rc;
	if (!out || (type != RW_PTR_HOST && type != RW_PTR_CUDA))
		return -EINVAL;
	h = c->dev->hca;
	if (!c->net->v.reg_dmabuf_mr) {
		RW_WARN_ONCE(RW_LOG_NET,
			     "NET/IB: %s has no ibv_reg_dmabuf_mr: regMrDmaBuf is not "
			     "supported",
			     c->net->v.path);
		return -ENOTSUP;
	}
	mr = c->net->v.reg_dmabuf_mr(h->pd, offset, size, (uintptr_t)data, fd, h->access);
	if (!mr) {
		rc = errno ? -errno : -EIO;
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: ibv_reg_dmabuf_mr(%p, %zu bytes, fd %d, offset "
			"%llu) failed: %s",
			h->name, data, size, fd, (unsigned long long)offset, strerror(-rc));
		return rc;
	}
	rc = handle_new(c, type, NULL, mr, out);
	if (rc)
		c->net->v.dereg_mr(mr);
	return rc;
}

/* Drop one handle (its comm's mr_lock is not held). */
static void handle_free(struct rw_ib_comm *c, struct rw_ib_mr *m)
{
	struct rw_ib_hca *h = c->dev->hca;

	rw_obj_close(&m->obj);
	if (m->own)
		c->net->v.dereg_mr(m->own);
	if (m->reg) {
		pthread_mutex_lock(&h->reg_lock);
		cache_put(c->net, h, m->reg);
		pthread_mutex_unlock(&h->reg_lock);
	}
	free(m);
	rw_ib_live_add(RW_IB_LIVE_MRS, -1);
}

int rw_ib_dereg_mr(struct rw_net_comm *base, struct rw_net_mr *mr)
{
	struct rw_ib_comm *c;
	struct rw_ib_mr *m;
	int rc = comm_check(base, &c);

	if (rc)
		return rc;
	m = rw_ib_mr_of(c, mr);
	if (!m)
		return -EINVAL;
	pthread_mutex_lock(&c->mr_lock);
	rw_list_del(&m->link);
	pthread_mutex_unlock(&c->mr_lock);
	handle_free(c, m);
	return 0;
}

void rw_ib_mr_drop_all(struct rw_ib_comm *c)
{
	for (;;) {
		struct rw_ib_mr *m = NULL;

		pthread_mutex_lock(&c->mr_lock);
		if (!rw_list_empty(&c->mrs)) {
			m = rw_container_of(c->mrs.next, struct rw_ib_mr, link);
			rw_list_del(&m->link);
		}
		pthread_mutex_unlock(&c->mr_lock);
		if (!m)
			return;
		handle_free(c, m);
	}
}

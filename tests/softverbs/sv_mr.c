/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: protection domains and memory regions (keys, bounds, access
 * flags, dma-buf), the verbs behind sv_ctx_ops' PD and MR slots.
 */
#define _GNU_SOURCE
#include "sv_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* --- PD ------------------------------------------------------------------- */

struct ibv_pd *sv_alloc_pd(struct ibv_context *context)
{
	struct sv_pd *pd = calloc(1, sizeof(*pd));
	static atomic_uint handles;

	(void)context;
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.handle = atomic_fetch_add(&handles, 1) + 1;
	return &pd->pd;
}

int sv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sv_ctx *ctx = sv_ctx_of(ibpd->context);
	int busy = 0;

	pthread_mutex_lock(&ctx->lock);
	for (uint32_t i = 0; i < ctx->nmrs_cap; i++)
		busy |= ctx->mrs[i] && ctx->mrs[i]->pd == (struct sv_pd *)ibpd;
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next)
		busy |= qp->vqp.qp.pd == ibpd;
	pthread_mutex_unlock(&ctx->lock);
	if (busy)
		return EBUSY;
	free(ibpd);
	return 0;
}

/* --- MR ------------------------------------------------------------------- */

#define SV_ACCESS_KNOWN                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)

struct sv_mr *sv_mr_lookup(struct sv_ctx *ctx, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct sv_mr *mr;

	if (idx >= ctx->nmrs_cap)
		return NULL;
	mr = ctx->mrs[idx];
	return mr && mr->vmr.ibv_mr.lkey == key ? mr : NULL;
}

/* Called with ctx->lock held: give mr a key.  0 or an errno value. */
static int mr_insert(struct sv_ctx *ctx, struct sv_mr *mr)
{
	uint32_t idx = 0;

	while (idx < ctx->nmrs_cap && ctx->mrs[idx])
		idx++;
	if (idx == ctx->nmrs_cap) {
		uint32_t cap = ctx->nmrs_cap ? ctx->nmrs_cap * 2 : 64;
		struct sv_mr **m = realloc(ctx->mrs, cap * sizeof(*m));

		if (!m || cap > (1u << 24))
			return ENOMEM;
		memset(m + ctx->nmrs_cap, 0, (cap - ctx->nmrs_cap) * sizeof(*m));
		ctx->mrs = m;
		ctx->nmrs_cap = cap;
	}
	ctx->mrs[idx] = mr;
	mr->vmr.ibv_mr.lkey = idx << 8 | ++ctx->mr_gen;
	mr->vmr.ibv_mr.rkey = mr->vmr.ibv_mr.lkey;
	return 0;
}

static struct ibv_mr *mr_create(struct ibv_pd *pd, uint8_t *host, size_t len, uint64_t iova,
				int access, int type)
{
	struct sv_ctx *ctx = sv_ctx_of(pd->context);
	struct sv_mr *mr;
	int rc;

	if (len == 0 || (access & ~SV_ACCESS_KNOWN) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	if (++ctx->nregs == ctx->faults.mr_no_remote)
		access &= ~(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	mr->pd = (struct sv_pd *)pd;
	mr->iova = iova;
	mr->len = len;
	mr->host = host;
	mr->access = access;
	mr->vmr.mr_type = type;
	mr->vmr.access = access;
	rc = mr_insert(ctx, mr);
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		free(mr);
		errno = rc;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

struct ibv_mr *sv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t hca_va, int access)
{
	if (!addr) {
		errno = EFAULT;
		return NULL;
	}
	return mr_create(pd, addr, len, hca_va, access, SV_MR_TYPE_MR);
}

/*
 * A dma-buf MR.  Without a GPU the dma-buf is any mmap-able fd (a memfd in
 * the tests): the memory is mapped here and remote addresses are relative
 * to iova, as on a NIC.
 */
struct ibv_mr *sv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				int fd, int access)
{
	struct sv_ctx *ctx = sv_ctx_of(pd->context);
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start = offset & ~(uint64_t)(pg - 1);
	size_t maplen = len + (offset - start);
	struct ibv_mr *ibmr;
	struct sv_mr *mr;
	void *map;

	if (ctx->faults.dmabuf_unsupported) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	if (len == 0) {
		errno = EINVAL;
		return NULL;
	}
	map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
	if (map == MAP_FAILED)
		return NULL;
	ibmr = mr_create(pd, (uint8_t *)map + (offset - start), len, iova, access,
			 SV_MR_TYPE_DMABUF_MR);
	if (!ibmr) {
		int e = errno;

		munmap(map, maplen);
		errno = e;
		return NULL;
	}
	mr = (struct sv_mr *)ibmr;
	mr->dmabuf_map = map;
	mr->dmabuf_map_len = maplen;
	return ibmr;
}

int sv_dereg_mr(struct verbs_mr *vmr)
{
	struct sv_mr *mr = (struct sv_mr *)vmr;
	struct sv_ctx *ctx = sv_ctx_of(vmr->ibv_mr.context);

	pthread_mutex_lock(&ctx->lock);
	ctx->mrs[vmr->ibv_mr.lkey >> 8] = NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (mr->dmabuf_map)
		munmap(mr->dmabuf_map, mr->dmabuf_map_len);
	free(mr);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libibverbs, loaded with dlopen and resolved with dlvsym: ringway links
 * no verbs library.  Only the pure-dispatch inlines of <infiniband/verbs.h>
 * (ibv_post_send, ibv_post_recv, ibv_poll_cq and verbs_get_ctx_op) are
 * used directly; every exported function goes through struct rw_ibv.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct sym {
	const char *name;
	const char *version;
	size_t offset;
	bool required;
};

#define REQ(f, name)                                                                               \
	{                                                                                          \
		name, "IBVERBS_1.1", offsetof(struct rw_ibv, f), true                              \
	}
#define OPT(f, name, ver)                                                                          \
	{                                                                                          \
		name, ver, offsetof(struct rw_ibv, f), false                                       \
	}

static const struct sym syms[] = {
	REQ(get_device_list, "ibv_get_device_list"),
	REQ(free_device_list, "ibv_free_device_list"),
	REQ(get_device_name, "ibv_get_device_name"),
	REQ(open_device, "ibv_open_device"),
	REQ(close_device, "ibv_close_device"),
	REQ(get_async_event, "ibv_get_async_event"),
	REQ(ack_async_event, "ibv_ack_async_event"),
	REQ(query_device, "ibv_query_device"),
	REQ(query_port_compat, "ibv_query_port"),
	REQ(query_gid, "ibv_query_gid"),
	REQ(alloc_pd, "ibv_alloc_pd"),
	REQ(dealloc_pd, "ibv_dealloc_pd"),
	REQ(reg_mr, "ibv_reg_mr"),
	REQ(dereg_mr, "ibv_dereg_mr"),
	REQ(create_cq, "ibv_create_cq"),
	REQ(destroy_cq, "ibv_destroy_cq"),
	REQ(create_qp, "ibv_create_qp"),
	REQ(modify_qp, "ibv_modify_qp"),
	REQ(destroy_qp, "ibv_destroy_qp"),
	REQ(event_type_str, "ibv_event_type_str"),
	REQ(wc_status_str, "ibv_wc_status_str"),
	REQ(fork_init, "ibv_fork_init"),
	OPT(is_fork_initialized, "ibv_is_fork_initialized", "IBVERBS_1.13"),
	OPT(reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8"),
	OPT(query_gid_ex, "_ibv_query_gid_ex", "IBVERBS_1.11"),
	OPT(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12"),
};

int rw_ibv_load(const char *path, struct rw_ibv *out, char *why, size_t why_len)
{
	struct rw_ibv v;
	const char *err;

	memset(&v, 0, sizeof(v));
	snprintf(v.path, sizeof(v.path), "%s", path && *path ? path : "libibverbs.so.1");
	v.lib = dlopen(v.path, RTLD_NOW | RTLD_LOCAL);
	if (!v.lib) {
		err = dlerror();
		snprintf(why, why_len, "cannot load %s (RINGWAY_IBVERBS_LIB): %s", v.path,
			 err ? err : "unknown error");
		return -ENOENT;
	}
	for (size_t i = 0; i < RW_ARRAY_SIZE(syms); i++) {
		void *fn = dlvsym(v.lib, syms[i].name, syms[i].version);

		if (!fn && syms[i].required) {
			snprintf(why, why_len, "%s has no %s@%s: not a usable libibverbs", v.path,
				 syms[i].name, syms[i].version);
			dlclose(v.lib);
			return -ENOSYS;
		}
		/* a function pointer of the slot's own type, from dlvsym's void * */
		memcpy((char *)&v + syms[i].offset, &fn, sizeof(fn));
	}
	*out = v;
	return 0;
}

void rw_ibv_unload(struct rw_ibv *v)
{
	if (v->lib)
		dlclose(v->lib);
	v->lib = NULL;
}

int rw_ibv_query_port(const struct rw_ibv *v, struct ibv_context *ctx, uint8_t port,
		      struct ibv_port_attr *attr)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);

	if (vctx)
		return vctx->query_port(ctx, port, attr, sizeof(*attr));
	/* an old provider: the exported compat call fills the old layout */
	memset(attr, 0, sizeof(*attr));
	return v->query_port_compat(ctx, port, attr);
}

int rw_ibv_status_errno(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_RETRY_EXC_ERR: /* no ACK: the peer or the path is gone */
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IBV_WC_REM_ACCESS_ERR: /* the peer refused our key or range */
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return -EPROTO;
	case IBV_WC_WR_FLUSH_ERR: /* the QP failed earlier */
	case IBV_WC_REM_ABORT_ERR:
		return -ECONNRESET;
	default: /* local protection, length, fatal */
		return -EIO;
	}
}

const char *rw_ibv_mtu_str(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256:
		return "256";
	case IBV_MTU_512:
		return "512";
	case IBV_MTU_1024:
		return "1024";
	case IBV_MTU_2048:
		return "2048";
	case IBV_MTU_4096:
		return "4096";
	default:
		return "?";
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport instance: create and destroy, the ops table, devices and
 * properties, and the TCP address the connection set-up uses.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/rw_tcp.h"

/*
 * The address the set-up listens on: the first interface the socket
 * transport's rules pick (RINGWAY_SOCKET_IFNAME, RINGWAY_SOCKET_FAMILY), as
 * NCCL's IB transport uses NCCL_SOCKET_IFNAME for its handshake.
 */
static int boot_addr(struct rw_ib_net *net, char *why, size_t len)
{
	const struct rw_config *cfg = &net->base.cfg;
	struct rw_tcp_ifaddr out;
	size_t nout = 0;
	int rc;

	rc = rw_tcp_if_pick(cfg->socket_ifname, cfg->socket_family, &out, 1, &nout, NULL, NULL, 0);
	if (rc) {
		snprintf(why, len, "getifaddrs: %s", strerror(-rc));
		return rc;
	}
	if (nout == 0) {
		snprintf(why, len,
			 "no interface for the connection set-up (RINGWAY_SOCKET_IFNAME='%s')",
			 cfg->socket_ifname);
		return -ENODEV;
	}
	net->boot = out.addr;
	rw_tcp_addr_set_port(&net->boot, 0);
	rw_tcp_host_str(&net->boot, net->boot_str, sizeof(net->boot_str)); /* no port yet */
	return 0;
}

/* 4.096 us x 2^t x (retry_cnt + 1) within half of RINGWAY_TIMEOUT_MS. */
static uint8_t auto_ib_timeout(int64_t timeout_ms, int retry_cnt)
{
	uint8_t t = 8;

	while (t < 20 && 4.096e-3 * (double)(1u << (t + 1)) * (retry_cnt + 1) <= timeout_ms / 2.0)
		t++;
	return t;
}

/*
 * fork(): a child of this process (a data loader's workers, system()) must
 * not end up with the pages the NIC writes into.  Kernels from 5.13 copy
 * registered pages at fork() and libibverbs says so (IBV_FORK_UNNEEDED);
 * on older ones it keeps registered pages from the children
 * (ibv_fork_init(), as NCCL calls it), which must happen before the first
 * registration in the process.  Once per process.
 */
static void fork_support(const struct rw_ibv *v)
{
	static int done;
	struct ibv_device **list;
	int rc, n = 0;

	/* without a device nothing is ever registered (and libibverbs'
	 * fork state would outlive the library, unloaded again) */
	list = v->get_device_list(&n);
	if (list)
		v->free_device_list(list);
	if (n <= 0 || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	if (v->is_fork_initialized && v->is_fork_initialized() == IBV_FORK_UNNEEDED) {
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"NET/IB: the kernel copies registered pages at fork(): no fork support "
			"needed");
		return;
	}
	rc = v->fork_init();
	if (rc)
		RW_WARN(RW_LOG_INIT | RW_LOG_NET,
			"NET/IB: ibv_fork_init: %s: on this kernel a fork() after memory is "
			"registered (system(), a data loader's workers) can corrupt transfers",
			strerror(rc));
	else
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"NET/IB: fork support on (ibv_fork_init): registered pages are kept from "
			"fork()'s children");
}

static int ib_devices(struct rw_net *base, int *ndev)
{
	if (!ndev)
		return -EINVAL;
	*ndev = rw_ib_net_from(base)->ndev;
	return 0;
}

static int ib_get_properties(struct rw_net *base, int dev, struct rw_net_props *props)
{
	struct rw_ib_net *net = rw_ib_net_from(base);

	if (!props || dev < 0 || dev >= net->ndev)
		return -EINVAL;
	rw_ib_dev_props(&net->devs[dev], props);
	props->vdev_devs[0] = dev;
	return 0;
}

static void ib_destroy(struct rw_net *base)
{
	struct rw_ib_net *net = rw_ib_net_from(base);

	rw_ib_conn_destroy_all(net);
	rw_ib_devs_close(net);
	rw_ibv_unload(&net->v);
	pthread_mutex_destroy(&net->lock);
	free(net);
	rw_ib_live_add(RW_IB_LIVE_NETS, -1);
}

/* Sorted in the order of struct rw_net_ops (the NCCL net ABI). */
static const struct rw_net_ops ib_ops = {
	.name = "ib",
	.devices = ib_devices,
	.get_properties = ib_get_properties,
	.listen = rw_ib_listen,
	.connect = rw_ib_connect,
	.accept = rw_ib_accept,
	.reg_mr = rw_ib_reg_mr,
	.reg_mr_dmabuf = rw_ib_reg_mr_dmabuf,
	.dereg_mr = rw_ib_dereg_mr,
	.isend = rw_ib_isend,
	.irecv = rw_ib_irecv,
	.iflush = rw_ib_iflush,
	.test = rw_ib_test,
	.close_send = rw_ib_close_send,
	.close_recv = rw_ib_close_recv,
	.close_listen = rw_ib_close_listen,
	.destroy = ib_destroy,
	.describe = rw_ib_describe,
	.patient = rw_ib_patient,
	.connect_tc = rw_ib_connect_tc,
};

int rw_ib_create_why(const struct rw_config *cfg, struct rw_net **out, char *why, size_t why_len)
{
	char tc_str[32];
	struct rw_ib_net *net;
	char buf[768] = "";
	int rc;

	if (!cfg || !out)
		return -EINVAL;
	net = calloc(1, sizeof(*net));
	if (!net)
		return -ENOMEM;
	net->base.ops = &ib_ops;
	net->base.cfg = *cfg;
	pthread_mutex_init(&net->lock, NULL);
	rw_list_init(&net->listeners);
	rw_grave_init(&net->dead_listeners, RW_GRAVE_MAX, NULL, 0);
	rw_list_init(&net->comms);
	rw_grave_init(&net->dead_comms, RW_GRAVE_MAX, NULL, 0);
	rw_list_init(&net->connecting);
	net->nqps = (int)cfg->ib_qps_per_conn;
	net->retry_cnt = (uint8_t)cfg->ib_retry_cnt;
	net->ib_timeout = cfg->ib_timeout ? (uint8_t)cfg->ib_timeout
					  : auto_ib_timeout(cfg->timeout_ms, net->retry_cnt);
	net->tc = (int)cfg->ib_tc;
	net->sl = (uint8_t)cfg->ib_sl;
	rw_ib_live_add(RW_IB_LIVE_NETS, 1);

	rc = rw_ibv_load(cfg->ibverbs_lib, &net->v, buf, sizeof(buf));
	if (rc)
		goto err_free;
	rc = boot_addr(net, buf, sizeof(buf));
	if (rc)
		goto err_unload;
	fork_support(&net->v);
	rc = rw_ib_devs_open(net, buf, sizeof(buf));
	if (rc)
		goto err_unload;
	if (net->tc >= 0)
		snprintf(tc_str, sizeof(tc_str), "%d", net->tc);
	else
		snprintf(tc_str, sizeof(tc_str), "the communicator's, else 0");
	RW_INFO(RW_LOG_INIT | RW_LOG_NET,
		"NET/IB: %d device(s) from %s, %d QP(s) per connection, timeout %u "
		"(%.0f ms per try), retry count %u, traffic class %s, service level %u, "
		"set-up over %s",
		net->ndev, net->v.path, net->nqps, net->ib_timeout,
		4.096e-3 * (double)(1u << net->ib_timeout), net->retry_cnt, tc_str, net->sl,
		net->boot_str);
	*out = &net->base;
	return 0;

err_unload:
	rw_ibv_unload(&net->v);
err_free:
	pthread_mutex_destroy(&net->lock);
	free(net);
	rw_ib_live_add(RW_IB_LIVE_NETS, -1);
	if (why && why_len)
		snprintf(why, why_len, "%s", buf);
	return rc;
}

int rw_ib_create(const struct rw_config *cfg, struct rw_net **out)
{
	char why[768] = "";
	int rc = rw_ib_create_why(cfg, out, why, sizeof(why));

	if (rc)
		RW_WARN(RW_LOG_INIT | RW_LOG_NET, "NET/IB: the ib transport is unusable: %s", why);
	return rc;
}

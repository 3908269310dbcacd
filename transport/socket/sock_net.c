/* SPDX-License-Identifier: Apache-2.0 */
/* Socket transport instance: devices, properties, the ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/rw_topo.h"
#include "transport/socket/sock_internal.h"
#include "transport/tcp/rw_tcp.h"

static const char *family_name(int family)
{
	switch (family) {
	case RW_SOCKET_FAMILY_IPV4:
		return "ipv4";
	case RW_SOCKET_FAMILY_IPV6:
		return "ipv6";
	default:
		return "any";
	}
}

/*
 * A device's PCI path, speed and GUID, from topo (the one reader of sysfs).
 * The GUID is stable and unique per interface: the MAC in the low 48 bits
 * and the ifindex above (VLANs and macvlans share a MAC).  Interfaces
 * without a MAC (loopback) get their index alone; without sysfs, the
 * position in the device list stands in for the ifindex.  A speed sysfs
 * does not know is NCCL's assumption, RW_SOCK_DEFAULT_SPEED_MBPS.
 */
static int dev_facts(const char *root, struct rw_sock_dev *d, int index)
{
	struct rw_topo_nic_facts f;
	long idx;

	if (rw_topo_nic_facts(root, d->name, &f))
		memset(&f, 0, sizeof(f));
	if (f.pci_path[0]) {
		d->pci_path = strdup(f.pci_path);
		if (!d->pci_path)
			return -ENOMEM;
	}
	d->speed_mbps = f.speed_mbps > 0 ? f.speed_mbps : RW_SOCK_DEFAULT_SPEED_MBPS;
	idx = f.ifindex > 0 ? f.ifindex : index + 1; /* ifindex starts at 1 too */
	d->guid = ((uint64_t)(idx & 0xffff) << 48) | (f.guid & 0xffffffffffffull);
	return 0;
}

static int sock_devices(struct rw_net *net, int *ndev)
{
	if (!net || !ndev)
		return -EINVAL;
	*ndev = rw_sock_net_from(net)->ndev;
	return 0;
}

static int sock_get_properties(struct rw_net *net, int dev, struct rw_net_props *props)
{
	struct rw_sock_net *sn;
	struct rw_sock_dev *d;

	if (!net || !props)
		return -EINVAL;
	sn = rw_sock_net_from(net);
	if (dev < 0 || dev >= sn->ndev) {
		RW_WARN(RW_LOG_NET, "socket: get_properties(dev=%d): %d devices", dev, sn->ndev);
		return -EINVAL;
	}
	d = &sn->devs[dev];
	memset(props, 0, sizeof(*props));
	props->name = d->name;
	props->pci_path = d->pci_path;
	props->guid = d->guid;
	props->ptr_support = RW_PTR_HOST;
	props->reg_is_global = 0; /* a registration belongs to one comm */
	props->force_flush = 0;
	props->speed_mbps = d->speed_mbps;
	props->port = 0;
	props->latency_us = 0; /* unknown: NCCL's tuning uses its default */
	props->max_comms = RW_SOCK_MAX_COMMS;
	props->max_recvs = RW_NET_MAX_RECVS;
	props->vdev_ndevs = 1;
	props->vdev_devs[0] = dev;
	props->max_p2p_bytes = RW_SOCK_MAX_BYTES;
	props->max_coll_bytes = RW_SOCK_MAX_BYTES;
	props->max_multi_request_size = 1;
	props->rail_id = RW_NET_ID_UNDEF;
	props->plane_id = RW_NET_ID_UNDEF;
	return 0;
}

static void sock_destroy(struct rw_net *net)
{
	struct rw_sock_net *sn = rw_sock_net_from(net);
	int open_comms = 0, open_listeners = 0;

	/* Objects the caller forgot: close them so nothing leaks. */
	while (!rw_list_empty(&sn->connecting)) {
		struct rw_sock_comm *c =
			rw_container_of(sn->connecting.next, struct rw_sock_comm, link);

		rw_list_del(&c->link);
		rw_sock_connect_abandon(c);
	}
	while (!rw_list_empty(&sn->comms)) {
		rw_sock_comm_close(rw_container_of(sn->comms.next, struct rw_sock_comm, link));
		open_comms++;
	}
	while (!rw_list_empty(&sn->listeners)) {
		struct rw_sock_listen *l =
			rw_container_of(sn->listeners.next, struct rw_sock_listen, link);

		rw_sock_close_listen(&l->base);
		open_listeners++;
	}
	if (open_comms || open_listeners)
		RW_WARN(RW_LOG_NET,
			"socket: destroy with %d comm(s) and %d listener(s) still open; closed "
			"them",
			open_comms, open_listeners);
	rw_grave_free_all(&sn->dead_comms, offsetof(struct rw_sock_comm, link),
			  offsetof(struct rw_sock_comm, reqs));
	rw_grave_free_all(&sn->dead_listeners, offsetof(struct rw_sock_listen, link), 0);
	for (int i = 0; i < sn->ndev; i++)
		free(sn->devs[i].pci_path);
	pthread_mutex_destroy(&sn->lock);
	free(sn);
	rw_sock_live_add(RW_SOCK_LIVE_NETS, -1);
}

/* Sorted as in struct rw_net_ops (the NCCL net ABI order). */
static const struct rw_net_ops sock_ops = {
	.name = "socket",
	.devices = sock_devices,
	.get_properties = sock_get_properties,
	.listen = rw_sock_listen,
	.connect = rw_sock_connect,
	.accept = rw_sock_accept,
	.reg_mr = rw_sock_reg_mr,
	.reg_mr_dmabuf = rw_net_unsupported_reg_mr_dmabuf,
	.dereg_mr = rw_sock_dereg_mr,
	.isend = rw_sock_isend,
	.irecv = rw_sock_irecv,
	.iflush = rw_sock_iflush,
	.test = rw_sock_test,
	.close_send = rw_sock_close_send,
	.close_recv = rw_sock_close_recv,
	.close_listen = rw_sock_close_listen,
	.destroy = sock_destroy,
	.describe = rw_sock_describe,
	.patient = rw_sock_patient,
	.ahead = rw_sock_ahead,
};

int rw_sock_create(const struct rw_config *cfg, struct rw_net **out)
{
	struct rw_tcp_ifaddr sel[RW_SOCK_MAX_DEVS];
	enum rw_tcp_if_rule rule;
	struct rw_sock_net *sn;
	size_t nsel = 0;
	char names[256];
	int rc;

	if (!cfg || !out)
		return -EINVAL;
	rc = rw_tcp_if_pick(cfg->socket_ifname, cfg->socket_family, sel, RW_ARRAY_SIZE(sel), &nsel,
			    &rule, names, sizeof(names));
	if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_INIT, "socket: getifaddrs failed: %s", strerror(-rc));
		return rc;
	}
	if (nsel == 0) {
		RW_WARN(RW_LOG_NET | RW_LOG_INIT,
			"socket: no interface matches RINGWAY_SOCKET_IFNAME='%s' with family %s "
			"(interfaces with addresses: %s)",
			cfg->socket_ifname, family_name(cfg->socket_family), names);
		return -ENODEV;
	}
	if (rule == RW_TCP_IF_RULE_LOOPBACK || rule == RW_TCP_IF_RULE_DOCKER)
		RW_INFO(RW_LOG_NET | RW_LOG_INIT,
			"socket: no interface besides %s; using it (set RINGWAY_SOCKET_IFNAME to "
			"choose)",
			rule == RW_TCP_IF_RULE_LOOPBACK ? "loopback" : "docker*");

	sn = calloc(1, sizeof(*sn));
	if (!sn)
		return -ENOMEM;
	sn->base.ops = &sock_ops;
	sn->base.cfg = *cfg;
	pthread_mutex_init(&sn->lock, NULL);
	rw_list_init(&sn->comms);
	rw_list_init(&sn->connecting);
	rw_list_init(&sn->listeners);
	rw_grave_init(&sn->dead_comms, RW_GRAVE_MAX, &rw_sock_live, RW_SOCK_LIVE_SHELLS);
	rw_grave_init(&sn->dead_listeners, RW_GRAVE_MAX, NULL, 0);
	sn->ndev = (int)nsel;
	for (int i = 0; i < sn->ndev; i++) {
		struct rw_sock_dev *d = &sn->devs[i];

		memcpy(d->name, sel[i].name, sizeof(d->name));
		d->addr = sel[i].addr;
		rw_tcp_host_str(&d->addr, d->addr_str, sizeof(d->addr_str));
		rc = dev_facts(cfg->sysfs_root, d, i);
		if (rc)
			goto err_free_devs;
		RW_INFO(RW_LOG_NET, "socket: dev %d: %s %s, %d Mb/s, pci %s", i, d->name,
			d->addr_str, d->speed_mbps, d->pci_path ? d->pci_path : "none");
	}
	rw_sock_live_add(RW_SOCK_LIVE_NETS, 1);
	*out = &sn->base;
	return 0;

err_free_devs:
	for (int i = 0; i < sn->ndev; i++)
		free(sn->devs[i].pci_path);
	pthread_mutex_destroy(&sn->lock);
	free(sn);
	return rc;
}

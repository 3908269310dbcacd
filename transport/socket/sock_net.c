/* SPDX-License-Identifier: Apache-2.0 */
/* Socket transport instance: devices, properties, the ops table. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/rw_sysfs.h"
#include "transport/socket/sock_internal.h"

#define MAX_DISCOVERED 128

static const char *family_name(int family)
{
	switch (family) {
	case RW_SOCKET_FAMILY_IPV4: return "ipv4";
	case RW_SOCKET_FAMILY_IPV6: return "ipv6";
	default: return "any";
	}
}

/* "0000:00:03.0" */
static bool is_pci_bdf(const char *s, size_t len)
{
	static const char pat[] = "xxxx:xx:xx.x";

	if (len != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (pat[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != pat[i])
			return false;
	}
	return true;
}

/*
 * The PCI directory behind an interface: sys/class/net/<if>/device resolved,
 * cut after its last PCI address component (virtio NICs resolve to
 * .../0000:00:03.0/virtio2).  NULL for loopback and virtual interfaces.
 */
static char *dev_pci_path(const char *root, const char *ifname)
{
	char rel[64 + IF_NAMESIZE], path[PATH_MAX];
	char *p, *cut = NULL;

	snprintf(rel, sizeof(rel), "sys/class/net/%s/device", ifname);
	if (rw_sysfs_realpath(root, rel, path, sizeof(path)))
		return NULL;
	for (p = path; *p; ) {
		char *end = strchr(p + 1, '/');
		size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);

		if (*p == '/' && is_pci_bdf(p + 1, len))
			cut = p + 1 + len;
		if (!end)
			break;
		p = end;
	}
	if (!cut)
		return NULL;
	*cut = '\0';
	return strdup(path);
}

static int dev_speed(const char *root, const char *ifname)
{
	char rel[64 + IF_NAMESIZE];
	long v;

	snprintf(rel, sizeof(rel), "sys/class/net/%s/speed", ifname);
	if (rw_sysfs_read_long(root, rel, &v) || v <= 0 || v > INT_MAX)
		return RW_SOCK_DEFAULT_SPEED_MBPS;
	return (int)v;
}

/*
 * Stable and unique per interface: its MAC in the low 48 bits and its
 * ifindex above (VLANs and macvlans share a MAC).  Interfaces without a MAC
 * (loopback) get their index alone; without sysfs, the position in the
 * device list stands in for the ifindex.
 */
static uint64_t dev_guid(const char *root, const char *ifname, int fallback_index)
{
	char rel[64 + IF_NAMESIZE], mac[64];
	unsigned b[6];
	uint64_t guid = 0;
	long idx = fallback_index + 1; /* ifindex starts at 1 too */

	snprintf(rel, sizeof(rel), "sys/class/net/%s/ifindex", ifname);
	if (rw_sysfs_read_long(root, rel, &idx) || idx < 0)
		idx = fallback_index + 1;
	snprintf(rel, sizeof(rel), "sys/class/net/%s/address", ifname);
	if (!rw_sysfs_read(root, rel, mac, sizeof(mac)) &&
	    sscanf(mac, "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5]) == 6) {
		for (int i = 0; i < 6; i++)
			guid = guid << 8 | (b[i] & 0xff);
	}
	return ((uint64_t)(idx & 0xffff) << 48) | guid;
}

static int sock_devices(struct rw_net *net, int *ndev)
{
	if (!net || !ndev)
		return -EINVAL;
	*ndev = rw_sock_net_from(net)->ndev;
	return 0;
}

static int sock_get_properties(struct rw_net *net, int dev,
			       struct rw_net_props *props)
{
	struct rw_sock_net *sn;
	struct rw_sock_dev *d;

	if (!net || !props)
		return -EINVAL;
	sn = rw_sock_net_from(net);
	if (dev < 0 || dev >= sn->ndev) {
		RW_WARN(RW_LOG_NET, "socket: get_properties(dev=%d): %d devices",
			dev, sn->ndev);
		return -EINVAL;
	}
	d = &sn->devs[dev];
	memset(props, 0, sizeof(*props));
	props->name = d->name;
	props->pci_path = d->pci_path;
	props->guid = d->guid;
	props->ptr_support = RW_PTR_HOST;
	props->reg_is_global = 0;  /* a registration belongs to one comm */
	props->force_flush = 0;
	props->speed_mbps = d->speed_mbps;
	props->port = 0;
	props->latency_us = 0;     /* unknown: NCCL's tuning uses its default */
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
	while (!rw_sock_list_empty(&sn->connecting)) {
		struct rw_sock_comm *c = rw_container_of(sn->connecting.next,
							 struct rw_sock_comm, link);

		rw_sock_list_del(&c->link);
		rw_sock_connect_abandon(c);
	}
	while (!rw_sock_list_empty(&sn->comms)) {
		rw_sock_comm_close(rw_container_of(sn->comms.next,
						   struct rw_sock_comm, link));
		open_comms++;
	}
	while (!rw_sock_list_empty(&sn->listeners)) {
		struct rw_sock_listen *l = rw_container_of(sn->listeners.next,
							   struct rw_sock_listen, link);

		rw_sock_close_listen(&l->base);
		open_listeners++;
	}
	if (open_comms || open_listeners)
		RW_WARN(RW_LOG_NET,
			"socket: destroy with %d comm(s) and %d listener(s) still open; closed them",
			open_comms, open_listeners);
	while (!rw_sock_list_empty(&sn->dead_comms)) {
		struct rw_sock_comm *c = rw_container_of(sn->dead_comms.next,
							 struct rw_sock_comm, link);

		rw_sock_list_del(&c->link);
		rw_sock_comm_free(c);
	}
	while (!rw_sock_list_empty(&sn->dead_listeners)) {
		struct rw_sock_listen *l = rw_container_of(sn->dead_listeners.next,
							   struct rw_sock_listen, link);

		rw_sock_list_del(&l->link);
		rw_sock_listen_free(l);
	}
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
};

static void list_names(const struct rw_sock_ifaddr *a, size_t n, char *buf,
		       size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "",
				 a[i].name);

		used += w > 0 ? (size_t)w : 0;
	}
	if (!n)
		snprintf(buf, len, "none");
}

int rw_sock_create(const struct rw_config *cfg, struct rw_net **out)
{
	struct rw_sock_ifaddr *found, sel[RW_SOCK_MAX_DEVS];
	enum rw_sock_if_rule rule;
	struct rw_sock_net *sn;
	size_t nfound = 0, nsel = 0;
	char names[256];
	int rc;

	if (!cfg || !out)
		return -EINVAL;
	found = calloc(MAX_DISCOVERED, sizeof(*found));
	if (!found)
		return -ENOMEM;
	rc = rw_sock_if_discover(found, MAX_DISCOVERED, &nfound);
	if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_INIT, "socket: getifaddrs failed: %s",
			strerror(-rc));
		goto err_free_found;
	}
	rw_sock_if_select(cfg->socket_ifname, cfg->socket_family, found, nfound,
			  sel, RW_ARRAY_SIZE(sel), &nsel, &rule);
	if (nsel == 0) {
		list_names(found, nfound, names, sizeof(names));
		RW_WARN(RW_LOG_NET | RW_LOG_INIT,
			"socket: no interface matches RINGWAY_SOCKET_IFNAME='%s' with family %s (interfaces with addresses: %s)",
			cfg->socket_ifname, family_name(cfg->socket_family), names);
		rc = -ENODEV;
		goto err_free_found;
	}
	if (rule == RW_SOCK_IF_RULE_LOOPBACK || rule == RW_SOCK_IF_RULE_DOCKER)
		RW_INFO(RW_LOG_NET | RW_LOG_INIT,
			"socket: no interface besides %s; using it (set RINGWAY_SOCKET_IFNAME to choose)",
			rule == RW_SOCK_IF_RULE_LOOPBACK ? "loopback" : "docker*");

	sn = calloc(1, sizeof(*sn));
	if (!sn) {
		rc = -ENOMEM;
		goto err_free_found;
	}
	sn->base.ops = &sock_ops;
	sn->base.cfg = *cfg;
	pthread_mutex_init(&sn->lock, NULL);
	rw_sock_list_init(&sn->comms);
	rw_sock_list_init(&sn->connecting);
	rw_sock_list_init(&sn->listeners);
	rw_sock_list_init(&sn->dead_comms);
	rw_sock_list_init(&sn->dead_listeners);
	sn->ndev = (int)nsel;
	for (int i = 0; i < sn->ndev; i++) {
		struct rw_sock_dev *d = &sn->devs[i];
		char host[RW_SOCK_ADDRSTRLEN], *colon;

		memcpy(d->name, sel[i].name, sizeof(d->name));
		d->addr = sel[i].addr;
		rw_sock_addr_str(&d->addr, host, sizeof(host));
		colon = strrchr(host, ':'); /* drop the ":0" port */
		if (colon)
			*colon = '\0';
		snprintf(d->addr_str, sizeof(d->addr_str), "%s", host);
		d->pci_path = dev_pci_path(cfg->sysfs_root, d->name);
		d->speed_mbps = dev_speed(cfg->sysfs_root, d->name);
		d->guid = dev_guid(cfg->sysfs_root, d->name, i);
		RW_INFO(RW_LOG_NET,
			"socket: dev %d: %s %s, %d Mb/s, pci %s", i, d->name,
			d->addr_str, d->speed_mbps, d->pci_path ? d->pci_path : "none");
	}
	free(found);
	rw_sock_live_add(RW_SOCK_LIVE_NETS, 1);
	*out = &sn->base;
	return 0;

err_free_found:
	free(found);
	return rc;
}

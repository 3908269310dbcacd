/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net_create(): the transport RINGWAY_TRANSPORT names.
 *
 *   socket  the TCP transport alone;
 *   shm     the same-host transport alone (every peer must be on this host);
 *   ib      the verbs transport alone (transport/ib.h); when it cannot be
 *           used here that is an error, logged with the reason;
 *   auto    a composite: the network transport's devices, and a listen
 *           handle (net_auto_proto.h) that carries both a network listener
 *           and an shm listener.  The network transport is ib when this
 *           host can use it (library, device, active port), else socket
 *           (one INFO line says why not ib); its handle takes the socket
 *           slot, so every host of a job must agree (set
 *           RINGWAY_TRANSPORT=socket for a job that mixes hosts with and
 *           without RDMA).  connect picks shm when the peer's host
 *           identity (boot id, hostname, network namespace) and uid match
 *           ours, else the network transport, and
 *           says which at INFO once per connection; accept takes whichever
 *           arrives.  The comms are the chosen transport's own, so the data
 *           path goes straight to it: only device, listen, connect and
 *           accept calls pass through here.  getProperties is the network
 *           device's, with every limit an shm comm has to meet too
 *           (auto_get_properties).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_log.h"
#include "transport/base/rw_base.h"
#include "transport/ib/ib.h"
#include "transport/net_auto_proto.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"

#define AUTO_LISTEN_KIND 0x4c4f5541u /* a listener (struct rw_obj kind) */

struct rw_auto_listen {
	struct rw_net_listen base;
	struct rw_obj obj;	   /* AUTO_LISTEN_KIND */
	struct rw_net_listen *net; /* the network transport's listener */
	struct rw_net_listen *shm;
	struct rw_list link; /* the graveyard, once closed */
};

struct rw_auto_net {
	struct rw_net base;
	struct rw_net *net; /* the network transport (ib or socket); NULL: no device */
	struct rw_net *shm; /* NULL if shared memory is unusable here */
	struct rw_shm_host_id host;
	uint32_t uid;
	pthread_mutex_t lock;
	struct rw_grave dead; /* closed listeners, so a late call gets -EBADF */
};

static struct rw_auto_net *auto_from(struct rw_net *n)
{
	return rw_container_of(n, struct rw_auto_net, base);
}

/* An open listener of ours, or -EBADF (closed) / -EINVAL; logged. */
static int listen_check(struct rw_net_listen *base, const char *call, struct rw_auto_listen **out)
{
	struct rw_auto_listen *l;
	int rc;

	if (!base)
		return -EINVAL;
	l = rw_container_of(base, struct rw_auto_listen, base);
	rc = rw_obj_check(&l->obj, AUTO_LISTEN_KIND);
	if (rc == 0) {
		*out = l;
		return 0;
	}
	RW_WARN(RW_LOG_NET, "auto: %s on a %s listener", call, rc == -EBADF ? "closed" : "foreign");
	return rc;
}

static int dev_count(struct rw_auto_net *a)
{
	int n = 1;

	if (a->net && rw_net_devices(a->net, &n))
		n = 0;
	return n;
}

static int auto_devices(struct rw_net *base, int *ndev)
{
	struct rw_auto_net *a = auto_from(base);

	if (a->net)
		return rw_net_devices(a->net, ndev);
	*ndev = 1;
	return 0;
}

/*
 * A device of the composite is the network transport's device, but a comm
 * made on it may be an shm one: NCCL uses one set of properties for both,
 * so what a comm may be asked must hold for both.  The network's identity,
 * speed and latency; the smaller of each limit (maxRecvs, maxP2pBytes,
 * maxCollBytes, maxMultiRequestSize, maxComms); regIsGlobal only if both;
 * device memory only if shm can take it too (shm takes dma-buf
 * registrations as plain device pointers).
 */
static int auto_get_properties(struct rw_net *base, int dev, struct rw_net_props *props)
{
	struct rw_auto_net *a = auto_from(base);
	struct rw_net_props p, q;
	int rc;

	if (!a->net)
		return rw_net_get_properties(a->shm, dev, props);
	if (!props)
		return -EINVAL;
	rc = rw_net_get_properties(a->net, dev, &p);
	if (rc || !a->shm)
		goto out;
	rc = rw_net_get_properties(a->shm, 0, &q);
	if (rc)
		return rc;
	p.max_recvs = RW_MIN(p.max_recvs, q.max_recvs);
	p.max_p2p_bytes = RW_MIN(p.max_p2p_bytes, q.max_p2p_bytes);
	p.max_coll_bytes = RW_MIN(p.max_coll_bytes, q.max_coll_bytes);
	p.max_multi_request_size = RW_MIN(p.max_multi_request_size, q.max_multi_request_size);
	p.max_comms = RW_MIN(p.max_comms, q.max_comms);
	p.reg_is_global = p.reg_is_global && q.reg_is_global;
	if (!(q.ptr_support & RW_PTR_CUDA))
		p.ptr_support &= ~(RW_PTR_CUDA | RW_PTR_DMABUF);
out:
	if (rc == 0)
		*props = p;
	return rc;
}

/* A new listener: the oldest shell once the graveyard is full, else new memory. */
static struct rw_auto_listen *listen_alloc(struct rw_auto_net *a)
{
	struct rw_auto_listen *l = rw_grave_alloc(&a->dead, &a->lock, sizeof(*l),
						  offsetof(struct rw_auto_listen, link),
						  offsetof(struct rw_auto_listen, obj), 0);

	if (l)
		rw_obj_open(&l->obj, AUTO_LISTEN_KIND);
	return l;
}

/* Keep a closed listener's shell until destroy. */
static void bury(struct rw_auto_net *a, struct rw_auto_listen *l)
{
	rw_obj_close(&l->obj);
	pthread_mutex_lock(&a->lock);
	rw_grave_bury(&a->dead, &l->link);
	pthread_mutex_unlock(&a->lock);
}

static int auto_listen(struct rw_net *base, int dev, void *handle,
		       struct rw_net_listen **listen_comm)
{
	struct rw_auto_net *a = auto_from(base);
	struct rw_auto_handle h = {.magic = RW_AUTO_MAGIC, .version = RW_AUTO_VERSION};
	char part[RW_NET_HANDLE_MAXSIZE];
	struct rw_auto_listen *l;
	int rc;

	if (!handle || !listen_comm)
		return -EINVAL;
	l = listen_alloc(a);
	if (!l)
		return -ENOMEM;
	l->base.net = base;
	if (a->net) {
		memset(part, 0, sizeof(part));
		rc = rw_net_listen(a->net, dev, part, &l->net);
		if (rc)
			goto err_free;
		memcpy(h.sock, part, sizeof(h.sock));
		h.flags |= RW_AUTO_HAS_SOCK;
	}
	if (a->shm) {
		memset(part, 0, sizeof(part));
		rc = rw_net_listen(a->shm, 0, part, &l->shm);
		if (rc == 0) {
			memcpy(&h.shm, part, sizeof(h.shm));
			h.flags |= RW_AUTO_HAS_SHM;
		} else if (!a->net) {
			goto err_free;
		} else {
			RW_INFO(RW_LOG_NET,
				"auto: no shm listener (%s); peers on this host will use socket",
				strerror(-rc));
		}
	}
	memcpy(handle, &h, sizeof(h));
	*listen_comm = &l->base;
	return 0;

err_free:
	if (l->net)
		rw_net_close_listen(l->net);
	l->net = l->shm = NULL;
	bury(a, l); /* never handed out, but perhaps a reused shell */
	return rc;
}

/* Can a connection to the listener of h go through shared memory? */
static bool same_host(const struct rw_auto_net *a, const struct rw_auto_handle *h, const char **why)
{
	if (a->base.cfg.transport != RW_TRANSPORT_AUTO) {
		*why = "RINGWAY_TRANSPORT";
		return false;
	}
	if (!(h->flags & RW_AUTO_HAS_SHM) || !a->shm) {
		*why = "no shm listener on one side";
		return false;
	}
	if (rw_shm_handle_check(&h->shm)) {
		*why = "the peer's shm handle is of another version";
		return false;
	}
	if (!rw_shm_host_id_equal(&h->shm.host, &a->host)) {
		*why = "peer on another host or network namespace";
		return false;
	}
	if (h->shm.uid != a->uid) {
		*why = "peer runs as another user";
		return false;
	}
	*why = "peer on this host";
	return true;
}

/* "pid 1234" for shm, "10.0.0.2:4711" for socket. */
static void describe_peer(const struct rw_auto_handle *h, bool shm, const void *sock_handle,
			  char *buf, size_t len)
{
	struct sockaddr_storage ss;
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (shm) {
		snprintf(buf, len, "pid %d", h->shm.pid);
		return;
	}
	if (rw_sock_handle_addr(sock_handle, &ss) == 0 ||
	    rw_ib_handle_addr(sock_handle, &ss) == 0) {
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(buf, len, "%s:%u", host, port);
}

static int auto_connect_tc(struct rw_net *base, int dev, const void *handle, int traffic_class,
			   struct rw_net_comm **send_comm)
{
	struct rw_auto_net *a = auto_from(base);
	struct rw_auto_handle h;
	char part[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_comm *c = NULL;
	const char *why;
	bool shm;
	int rc;

	if (!handle || !send_comm)
		return -EINVAL;
	if (dev < 0 || dev >= dev_count(a)) {
		RW_WARN(RW_LOG_NET, "auto: connect(dev=%d): no such device (%d)", dev,
			dev_count(a));
		return -EINVAL;
	}
	memcpy(&h, handle, sizeof(h));
	if (h.magic != RW_AUTO_MAGIC || h.version != RW_AUTO_VERSION) {
		RW_WARN(RW_LOG_NET,
			"auto: connect(dev=%d): not an auto-transport handle of version %d (magic "
			"%#x, "
			"version %u); every rank must run with the same RINGWAY_TRANSPORT",
			dev, RW_AUTO_VERSION, h.magic, h.version);
		return -EINVAL;
	}
	shm = same_host(a, &h, &why);
	memset(part, 0, sizeof(part));
	if (shm) {
		memcpy(part, &h.shm, sizeof(h.shm));
		rc = rw_net_connect(a->shm, 0, part, &c);
	} else if (a->net && (h.flags & RW_AUTO_HAS_SOCK)) {
		memcpy(part, h.sock, sizeof(h.sock));
		rc = rw_net_connect_tc(a->net, dev, part, traffic_class, &c);
	} else {
		RW_WARN(RW_LOG_NET, "auto: connect(dev=%d): no transport reaches the peer (%s, %s)",
			dev, why, a->net ? "it has no socket listener" : "no socket device here");
		return -EHOSTUNREACH;
	}
	if (rc)
		return rc;
	if (c) {
		char peer[INET6_ADDRSTRLEN + 16];

		describe_peer(&h, shm, part, peer, sizeof(peer));
		RW_INFO(RW_LOG_NET, "auto: connection to %s uses %s (%s)", peer,
			shm ? "shm" : rw_net_name(a->net), why);
	}
	*send_comm = c;
	return 0;
}

static int auto_connect(struct rw_net *base, int dev, const void *handle,
			struct rw_net_comm **send_comm)
{
	return auto_connect_tc(base, dev, handle, -1, send_comm);
}

static int auto_accept(struct rw_net_listen *base, struct rw_net_comm **recv_comm)
{
	struct rw_auto_listen *l;
	struct rw_net_comm *c = NULL;
	int rc = listen_check(base, "accept", &l);

	if (rc)
		return rc;
	if (!recv_comm)
		return -EINVAL;
	if (l->shm) {
		rc = rw_net_accept(l->shm, &c);
		if (rc)
			return rc;
	}
	if (!c && l->net) {
		rc = rw_net_accept(l->net, &c);
		if (rc)
			return rc;
	}
	if (c)
		RW_INFO(RW_LOG_NET, "auto: accepted a connection over %s", rw_net_name(c->net));
	*recv_comm = c;
	return 0;
}

static int auto_close_listen(struct rw_net_listen *base)
{
	struct rw_auto_listen *l;
	int rc = listen_check(base, "closeListen", &l), rc2 = 0;

	if (rc)
		return rc;
	if (l->net)
		rc = rw_net_close_listen(l->net);
	if (l->shm)
		rc2 = rw_net_close_listen(l->shm);
	l->net = l->shm = NULL;
	bury(auto_from(base->net), l);
	return rc ? rc : rc2;
}

static void auto_destroy(struct rw_net *base)
{
	struct rw_auto_net *a = auto_from(base);

	struct rw_list *l;

	while ((l = rw_grave_pop(&a->dead)))
		free(rw_list_entry(l, struct rw_auto_listen, link));
	rw_net_destroy(a->net);
	rw_net_destroy(a->shm);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/*
 * Comm-level calls never reach the composite: connect and accept hand out
 * the chosen transport's comms, whose net is that transport.  These stubs
 * fill the slots and catch a caller that mixed objects up.
 */
static int misrouted(const char *call)
{
	RW_WARN(RW_LOG_NET, "auto: %s on an object the composite transport did not create", call);
	return -EINVAL;
}

static int auto_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		       struct rw_net_mr **mr)
{
	(void)comm, (void)data, (void)size, (void)type, (void)mr;
	return misrouted("regMr");
}

static int auto_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr)
{
	(void)comm, (void)mr;
	return misrouted("deregMr");
}

static int auto_isend(struct rw_net_comm *comm, void *data, size_t size, int tag,
		      struct rw_net_mr *mr, struct rw_net_req **req)
{
	(void)comm, (void)data, (void)size, (void)tag, (void)mr, (void)req;
	return misrouted("isend");
}

static int auto_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		      const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req)
{
	(void)comm, (void)n, (void)data, (void)sizes, (void)tags, (void)mrs, (void)req;
	return misrouted("irecv");
}

static int auto_test(struct rw_net_req *req, int *done, size_t *sizes)
{
	(void)req, (void)done, (void)sizes;
	return misrouted("test");
}

static int auto_close_comm(struct rw_net_comm *comm)
{
	(void)comm;
	return misrouted("close");
}

/* Sorted in the order of struct rw_net_ops (the NCCL net ABI). */
static const struct rw_net_ops auto_ops = {
	.name = "auto",
	.devices = auto_devices,
	.get_properties = auto_get_properties,
	.listen = auto_listen,
	.connect = auto_connect,
	.accept = auto_accept,
	.reg_mr = auto_reg_mr,
	.reg_mr_dmabuf = rw_net_unsupported_reg_mr_dmabuf,
	.dereg_mr = auto_dereg_mr,
	.isend = auto_isend,
	.irecv = auto_irecv,
	.iflush = rw_net_unsupported_iflush,
	.test = auto_test,
	.close_send = auto_close_comm,
	.close_recv = auto_close_comm,
	.close_listen = auto_close_listen,
	.destroy = auto_destroy,
	.connect_tc = auto_connect_tc,
};

static int auto_create(const struct rw_config *cfg, struct rw_net **out)
{
	struct rw_auto_net *a = calloc(1, sizeof(*a));
	int rc_net, rc_shm;
	char ib_why[512] = "";

	if (!a)
		return -ENOMEM;
	a->base.ops = &auto_ops;
	a->base.cfg = *cfg;
	pthread_mutex_init(&a->lock, NULL);
	rw_grave_init(&a->dead, RW_GRAVE_MAX, NULL, 0);
	a->uid = (uint32_t)geteuid();
	/* The network transport: ib when this host can use it, else socket.
	 * Either one's listen handle travels in the handle's socket slot. */
	rc_net = rw_ib_create_why(cfg, &a->net, ib_why, sizeof(ib_why));
	if (rc_net) {
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"auto: ib not usable (%s); socket for peers on "
			"other hosts",
			ib_why);
		rc_net = rw_sock_create(cfg, &a->net);
	}
	rc_shm = rw_shm_host_id_get(&a->host);
	if (rc_shm == 0)
		rc_shm = rw_shm_create(cfg, &a->shm);
	if (a->shm && a->net)
		rw_shm_share_thread(a->shm); /* its sleeps must not starve the other */
	if (rc_net && rc_shm) {
		RW_WARN(RW_LOG_INIT | RW_LOG_NET,
			"auto: neither the socket transport (%s) nor shm (%s) is usable",
			strerror(-rc_net), strerror(-rc_shm));
		pthread_mutex_destroy(&a->lock);
		free(a);
		return rc_net;
	}
	snprintf(a->base.label, sizeof(a->base.label), "auto (%s%s%s)", a->shm ? "shm" : "",
		 a->shm && a->net ? " + " : "", a->net ? a->net->ops->name : "");
	RW_INFO(RW_LOG_INIT | RW_LOG_NET, "auto: shm for peers on this host%s, %s %s",
		a->shm ? "" : " unavailable", a->net ? rw_net_name(a->net) : "network",
		a->net ? "for the others" : "unavailable");
	*out = &a->base;
	return 0;
}

int rw_net_create(const struct rw_config *cfg, struct rw_net **out)
{
	switch (cfg->transport) {
	case RW_TRANSPORT_SOCKET:
		return rw_sock_create(cfg, out);
	case RW_TRANSPORT_SHM:
		return rw_shm_create(cfg, out);
	case RW_TRANSPORT_IB:
		return rw_ib_create(cfg, out); /* unusable: a warning with the reason */
	case RW_TRANSPORT_AUTO:
		return auto_create(cfg, out);
	default:
		RW_WARN(RW_LOG_INIT | RW_LOG_NET, "RINGWAY_TRANSPORT=%d: unknown transport",
			cfg->transport);
		return -EINVAL;
	}
}

struct rw_net *rw_net_wire(struct rw_net *net)
{
	if (net && net->ops == &auto_ops)
		return auto_from(net)->net;
	return net;
}

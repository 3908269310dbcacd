/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fuse net: its device list (physical devices of its bases, then the
 * virtual ones), makeVDevice, merged properties, and the set-up of fused
 * connections: one listener per member connection, their handles packed
 * into one, connect and accept polled until every member connection is up.
 * The data path is fuse_data.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "transport/fuse/fuse_internal.h"

static const struct rw_net_ops fuse_ops;

/* The handle: this header, then each member listener's handle with runs of
 * zero bytes squeezed out (pack_handle), so four IPv4 handles fit. */
struct fuse_handle {
	uint32_t magic;	 /* 0: RW_FUSE_MAGIC */
	uint8_t version; /* 4: RW_FUSE_VERSION */
	uint8_t nsubs;	 /* 5: connections: control + one per member */
	uint16_t len;	 /* 6: bytes of packed handles that follow */
	uint8_t packed[RW_NET_HANDLE_MAXSIZE - 8];
};
_Static_assert(sizeof(struct fuse_handle) == RW_NET_HANDLE_MAXSIZE, "fuse handle layout");

struct fuse_pconn {
	struct fuse_pconn *next;
	int dev;
	uint8_t handle[RW_NET_HANDLE_MAXSIZE];
	int nsubs;
	uint8_t subh[FUSE_SUBS][RW_NET_HANDLE_MAXSIZE];
	struct rw_net_comm *subc[FUSE_SUBS];
};

int rw_fuse_is(const struct rw_net *net)
{
	return net && net->ops == &fuse_ops;
}

int rw_fuse_nphys(const struct rw_net *net)
{
	return rw_fuse_is(net) ? rw_container_of(net, struct rw_fuse_net, base)->nphys : 0;
}

static int total_devs(struct rw_fuse_net *f)
{
	return f->nphys + atomic_load(&f->nvdev);
}

/* --- handle packing ------------------------------------------------------- */

/* A control byte: 0 ends the handle (the rest is zero), 1..127 that many
 * literal bytes follow, 128..255 (c & 127) + 1 zero bytes. */
static int pack_handle(const uint8_t *h, uint8_t *out, int room)
{
	int end = RW_NET_HANDLE_MAXSIZE, i = 0, o = 0;

	while (end > 0 && h[end - 1] == 0)
		end--;
	while (i < end) {
		int run = 0;

		while (i + run < end && h[i + run] == 0 && run < 128)
			run++;
		if (run) {
			if (o + 1 > room)
				return -ENOSPC;
			out[o++] = (uint8_t)(0x80 | (run - 1));
			i += run;
			continue;
		}
		while (i + run < end && run < 127 && h[i + run] != 0)
			run++;
		if (o + 1 + run > room)
			return -ENOSPC;
		out[o++] = (uint8_t)run;
		memcpy(out + o, h + i, (size_t)run);
		o += run;
		i += run;
	}
	if (o + 1 > room)
		return -ENOSPC;
	out[o++] = 0;
	return o;
}

/* Inverse of pack_handle; returns the bytes consumed or -EPROTO. */
static int unpack_handle(const uint8_t *in, int len, uint8_t *h)
{
	int i = 0, o = 0;

	memset(h, 0, RW_NET_HANDLE_MAXSIZE);
	while (i < len) {
		uint8_t c = in[i++];

		if (c == 0)
			return i;
		if (c & 0x80) {
			o += (c & 0x7f) + 1;
		} else {
			if (i + c > len || o + c > RW_NET_HANDLE_MAXSIZE)
				return -EPROTO;
			memcpy(h + o, in + i, c);
			i += c;
			o += c;
		}
		if (o > RW_NET_HANDLE_MAXSIZE)
			return -EPROTO;
	}
	return -EPROTO;
}

/* --- devices ------------------------------------------------------------------ */

static int fuse_devices(struct rw_net *net, int *ndev)
{
	*ndev = total_devs(fuse_net_from(net));
	return 0;
}

static struct fuse_vdev *vdev_of(struct rw_fuse_net *f, int dev)
{
	if (dev < f->nphys || dev >= total_devs(f))
		return NULL;
	return &f->vdevs[dev - f->nphys];
}

static int fuse_get_properties(struct rw_net *net, int dev, struct rw_net_props *props)
{
	struct rw_fuse_net *f = fuse_net_from(net);
	struct fuse_vdev *v;

	if (dev >= 0 && dev < f->nphys)
		return rw_net_get_properties(f->bases[f->phys[dev].base], f->phys[dev].local,
					     props);
	v = vdev_of(f, dev);
	if (!v) {
		RW_WARN(RW_LOG_NET, "fuse: getProperties(dev=%d): %d device(s)", dev,
			total_devs(f));
		return -EINVAL;
	}
	*props = v->props;
	return 0;
}

/* Which transport carries a physical device's member connections. */
static const char *phys_transport(const struct fuse_phys *p)
{
	return p->wire ? p->wire->ops->name : "none";
}

static int check_members(struct rw_fuse_net *f, int n, const int *devs)
{
	if (n < 2 || n > RW_FUSE_MAX_MEMBERS) {
		RW_WARN(RW_LOG_NET,
			"fuse: makeVDevice(ndevs=%d): a virtual device fuses 2 to %d devices", n,
			RW_FUSE_MAX_MEMBERS);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		int d = devs[i];

		if (d < 0 || d >= total_devs(f)) {
			RW_WARN(RW_LOG_NET,
				"fuse: makeVDevice: device %d is out of range (%d physical "
				"device(s), "
				"0..%d)",
				d, f->nphys, f->nphys - 1);
			return -EINVAL;
		}
		if (d >= f->nphys) {
			RW_WARN(RW_LOG_NET,
				"fuse: makeVDevice: device %d is itself a virtual device; only "
				"physical "
				"devices (0..%d) fuse",
				d, f->nphys - 1);
			return -EINVAL;
		}
		for (int j = 0; j < i; j++)
			if (devs[j] == d) {
				RW_WARN(RW_LOG_NET, "fuse: makeVDevice: device %d is listed twice",
					d);
				return -EINVAL;
			}
		const char *t = phys_transport(&f->phys[d]);
		if (strcmp(t, "socket") != 0 && strcmp(t, "ib") != 0) {
			RW_WARN(RW_LOG_NET,
				"fuse: makeVDevice: device %d (%s) is on transport %s: only ib and "
				"socket NICs fuse",
				d, f->phys[d].name, t);
			return -EINVAL;
		}
		if (i > 0 && strcmp(t, phys_transport(&f->phys[devs[0]])) != 0) {
			RW_WARN(RW_LOG_NET,
				"fuse: makeVDevice: device %d (%s, %s) and device %d (%s, %s) are "
				"of "
				"different transports",
				devs[0], f->phys[devs[0]].name, phys_transport(&f->phys[devs[0]]),
				d, f->phys[d].name, t);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The merged properties, as NCCL's IB transport merges devices: the first
 * member's identity (PCI path, GUID, port), the name "a+b", the speeds
 * summed; the slowest latency; every limit the smallest; device memory only
 * if every member takes it; one buffer per receive.
 */
static int merge_props(struct rw_fuse_net *f, struct fuse_vdev *v)
{
	struct rw_net_props *m = &v->props;
	size_t used = 0;

	for (int i = 0; i < v->n; i++) {
		const struct fuse_phys *p = &f->phys[v->members[i]];
		struct rw_net_props q;
		int rc;

		memset(&q, 0, sizeof(q));
		q.rail_id = q.plane_id = RW_NET_ID_UNDEF;
		rc = rw_net_get_properties(f->bases[p->base], p->local, &q);
		if (rc)
			return rc;
		used += (size_t)snprintf(v->name + used,
					 sizeof(v->name) - RW_MIN(used, sizeof(v->name)), "%s%s",
					 i ? "+" : "", q.name ? q.name : p->name);
		if (i == 0) {
			*m = q;
			m->speed_mbps = 0;
			m->max_multi_request_size = 1;
		} else {
			m->ptr_support &= q.ptr_support;
			m->reg_is_global = 0;
			m->force_flush |= q.force_flush;
			m->latency_us = RW_MAX(m->latency_us, q.latency_us);
			if (q.max_comms > 0)
				m->max_comms = m->max_comms > 0 ? RW_MIN(m->max_comms, q.max_comms)
								: q.max_comms;
			if (q.max_p2p_bytes)
				m->max_p2p_bytes =
					m->max_p2p_bytes ? RW_MIN(m->max_p2p_bytes, q.max_p2p_bytes)
							 : q.max_p2p_bytes;
			if (q.max_coll_bytes)
				m->max_coll_bytes = m->max_coll_bytes ? RW_MIN(m->max_coll_bytes,
									       q.max_coll_bytes)
								      : q.max_coll_bytes;
			if (q.rail_id != m->rail_id)
				m->rail_id = RW_NET_ID_UNDEF;
			m->plane_id = RW_NET_ID_UNDEF;
		}
		if (q.speed_mbps > 0)
			m->speed_mbps += q.speed_mbps;
	}
	m->name = v->name;
	m->reg_is_global = 0; /* a registration belongs to one fused comm */
	m->max_recvs = 1;
	m->vdev_ndevs = v->n;
	for (int i = 0; i < RW_NET_MAX_DEVS_PER_NIC; i++)
		m->vdev_devs[i] = i < v->n ? v->members[i] : -1;
	return 0;
}

int rw_fuse_make_vdev(struct rw_net *net, int n, const int *devs, int *d)
{
	struct rw_fuse_net *f;
	struct fuse_vdev *v;
	int rc, nv;

	if (!rw_fuse_is(net) || !devs || !d) {
		RW_WARN(RW_LOG_NET, "fuse: makeVDevice(devs=%p, d=%p) on %s", (const void *)devs,
			(void *)d, net ? rw_net_name(net) : "no net");
		return -EINVAL;
	}
	f = fuse_net_from(net);
	pthread_mutex_lock(&f->lock);
	rc = check_members(f, n, devs);
	nv = atomic_load(&f->nvdev);
	if (rc == 0 && nv == RW_FUSE_MAX_VDEVS) {
		RW_WARN(RW_LOG_NET, "fuse: makeVDevice: already %d virtual devices, the most",
			RW_FUSE_MAX_VDEVS);
		rc = -ENOSPC;
	}
	if (rc == 0) {
		v = &f->vdevs[nv];
		memset(v, 0, sizeof(*v));
		v->n = n;
		memcpy(v->members, devs, sizeof(int) * (size_t)n);
		rc = merge_props(f, v);
	}
	if (rc == 0) {
		atomic_store(&f->nvdev, nv + 1);
		*d = f->nphys + nv;
		RW_INFO(RW_LOG_INIT | RW_LOG_NET,
			"fuse: virtual device %d = %s (%d devices, %d Mbps, %s)", *d, v->name, n,
			v->props.speed_mbps, phys_transport(&f->phys[devs[0]]));
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* --- set-up ----------------------------------------------------------------------- */

/* The physical device that member connection i of virtual device v uses:
 * the control connection (0) on the first member, data connection i on
 * member i - 1 (wrapping when the peer has more members than v). */
static const struct fuse_phys *sub_phys(struct rw_fuse_net *f, const struct fuse_vdev *v, int i)
{
	return &f->phys[v->members[i == 0 ? 0 : (i - 1) % v->n]];
}

static int fuse_listen(struct rw_net *net, int dev, void *handle, struct rw_net_listen **out)
{
	struct rw_fuse_net *f = fuse_net_from(net);
	struct fuse_handle *h = handle;
	struct rw_fuse_listen *l;
	struct fuse_vdev *v;
	int rc = 0, used = 0;

	if (dev >= 0 && dev < f->nphys)
		return rw_net_listen(f->bases[f->phys[dev].base], f->phys[dev].local, handle, out);
	v = vdev_of(f, dev);
	if (!v || !handle || !out) {
		RW_WARN(RW_LOG_NET, "fuse: listen(dev=%d): %d device(s)", dev, total_devs(f));
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->base.net = net;
	l->vdev = dev;
	l->nsubs = v->n + 1;
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < l->nsubs && rc == 0; i++) {
		const struct fuse_phys *p = sub_phys(f, v, i);
		uint8_t sh[RW_NET_HANDLE_MAXSIZE] = {0};

		rc = rw_net_listen(p->wire, p->local, sh, &l->subl[i]);
		if (rc) {
			RW_WARN(RW_LOG_NET, "fuse: listen on %s (NIC %s of %s): %s", p->name,
				p->name, v->name, strerror(-rc));
			break;
		}
		rc = pack_handle(sh, h->packed + used, (int)sizeof(h->packed) - used);
		if (rc < 0) {
			RW_WARN(RW_LOG_NET,
				"fuse: listen on %s: the %d member handles do not fit NCCL's "
				"%d-byte "
				"handle",
				v->name, l->nsubs, RW_NET_HANDLE_MAXSIZE);
			break;
		}
		used += rc;
		rc = 0;
	}
	if (rc) {
		for (int i = 0; i < l->nsubs; i++)
			if (l->subl[i])
				rw_net_close_listen(l->subl[i]);
		free(l);
		return rc;
	}
	h->magic = RW_FUSE_MAGIC;
	h->version = RW_FUSE_VERSION;
	h->nsubs = (uint8_t)l->nsubs;
	h->len = (uint16_t)used;
	rw_obj_open(&l->obj, FUSE_LISTEN_KIND);
	*out = &l->base;
	return 0;
}

static void pconn_drop(struct rw_fuse_net *f, struct fuse_pconn *pc, bool close_subs)
{
	struct fuse_pconn **link;

	for (link = &f->pconns; *link; link = &(*link)->next)
		if (*link == pc) {
			*link = pc->next;
			break;
		}
	if (close_subs)
		for (int i = 0; i < pc->nsubs; i++)
			if (pc->subc[i])
				rw_net_close_send(pc->subc[i]);
	free(pc);
}

/* Called with f->lock: the connect in progress for (dev, handle), or a new one. */
static int pconn_get(struct rw_fuse_net *f, int dev, const void *handle, struct fuse_pconn **out)
{
	const struct fuse_handle *h = handle;
	struct fuse_pconn *pc;
	int used = 0;

	for (pc = f->pconns; pc; pc = pc->next)
		if (pc->dev == dev && memcmp(pc->handle, handle, RW_NET_HANDLE_MAXSIZE) == 0) {
			*out = pc;
			return 0;
		}
	if (h->magic != RW_FUSE_MAGIC || h->version != RW_FUSE_VERSION || h->nsubs < 2 ||
	    h->nsubs > FUSE_SUBS || h->len > sizeof(h->packed)) {
		RW_WARN(RW_LOG_NET,
			"fuse: connect(dev=%d): the peer's handle is not a fused device's (magic "
			"%#x, version %u, %u connections): both sides must fuse",
			dev, h->magic, h->version, h->nsubs);
		return -EPROTO;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->dev = dev;
	memcpy(pc->handle, handle, RW_NET_HANDLE_MAXSIZE);
	pc->nsubs = h->nsubs;
	for (int i = 0; i < pc->nsubs; i++) {
		int rc = unpack_handle(h->packed + used, h->len - used, pc->subh[i]);

		if (rc < 0) {
			RW_WARN(RW_LOG_NET, "fuse: connect(dev=%d): member handle %d is garbled",
				dev, i);
			free(pc);
			return -EPROTO;
		}
		used += rc;
	}
	pc->next = f->pconns;
	f->pconns = pc;
	*out = pc;
	return 0;
}

static int fuse_connect_tc(struct rw_net *net, int dev, const void *handle, int traffic_class,
			   struct rw_net_comm **send_comm)
{
	struct rw_fuse_net *f = fuse_net_from(net);
	struct fuse_pconn *pc = NULL;
	struct fuse_vdev *v;
	int rc, up = 0;

	if (dev >= 0 && dev < f->nphys)
		return rw_net_connect_tc(f->bases[f->phys[dev].base], f->phys[dev].local, handle,
					 traffic_class, send_comm);
	v = vdev_of(f, dev);
	if (!v || !handle || !send_comm) {
		RW_WARN(RW_LOG_NET, "fuse: connect(dev=%d): %d device(s)", dev, total_devs(f));
		return -EINVAL;
	}
	*send_comm = NULL;
	pthread_mutex_lock(&f->lock);
	rc = pconn_get(f, dev, handle, &pc);
	for (int i = 0; rc == 0 && i < pc->nsubs; i++) {
		const struct fuse_phys *p = sub_phys(f, v, i);

		if (!pc->subc[i])
			rc = rw_net_connect_tc(p->wire, p->local, pc->subh[i], traffic_class,
					       &pc->subc[i]);
		if (rc)
			RW_WARN(RW_LOG_NET, "fuse: connect over NIC %s (connection %d of %s): %s",
				p->name, i, v->name, strerror(-rc));
		else if (pc->subc[i])
			up++;
	}
	if (rc && pc) {
		pconn_drop(f, pc, true);
	} else if (rc == 0 && up == pc->nsubs) {
		rc = rw_fuse_comm_new(f, dev, true, pc->nsubs, pc->subc, send_comm);
		pconn_drop(f, pc, false); /* the comm owns them now (closed on failure) */
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static int listen_check(struct rw_net_listen *base, const char *call, struct rw_fuse_listen **out)
{
	struct rw_fuse_listen *l = rw_container_of(base, struct rw_fuse_listen, base);
	int rc = base ? rw_obj_check(&l->obj, FUSE_LISTEN_KIND) : -EINVAL;

	if (rc) {
		RW_WARN(RW_LOG_NET, "fuse: %s on a listener the fuse transport did not make", call);
		return rc;
	}
	*out = l;
	return 0;
}

static int fuse_connect(struct rw_net *net, int dev, const void *handle,
			struct rw_net_comm **send_comm)
{
	return fuse_connect_tc(net, dev, handle, -1, send_comm);
}

static int fuse_accept(struct rw_net_listen *base, struct rw_net_comm **recv_comm)
{
	struct rw_fuse_net *f = fuse_net_from(base->net);
	struct rw_fuse_listen *l;
	int rc, up = 0;

	rc = listen_check(base, "accept", &l);
	if (rc)
		return rc;
	*recv_comm = NULL;
	for (int i = 0; i < l->nsubs; i++) {
		if (!l->subc[i]) {
			rc = rw_net_accept(l->subl[i], &l->subc[i]);
			if (rc) {
				RW_WARN(RW_LOG_NET,
					"fuse: accept on connection %d of device %d: %s", i,
					l->vdev, strerror(-rc));
				return rc;
			}
		}
		up += l->subc[i] != NULL;
	}
	if (up < l->nsubs)
		return 0;
	rc = rw_fuse_comm_new(f, l->vdev, false, l->nsubs, l->subc, recv_comm);
	memset(l->subc, 0, sizeof(l->subc)); /* taken over (or closed) */
	return rc;
}

static int fuse_close_listen(struct rw_net_listen *base)
{
	struct rw_fuse_listen *l;
	int rc = listen_check(base, "closeListen", &l);

	if (rc)
		return rc;
	for (int i = 0; i < l->nsubs; i++) {
		if (l->subc[i])
			rw_net_close_recv(l->subc[i]);
		rw_net_close_listen(l->subl[i]);
	}
	rw_obj_close(&l->obj);
	free(l);
	return 0;
}

static void fuse_destroy(struct rw_net *net)
{
	struct rw_fuse_net *f = fuse_net_from(net);

	while (f->pconns)
		pconn_drop(f, f->pconns, true);
	for (int b = 0; b < f->nbases; b++)
		rw_net_destroy(f->bases[b]);
	pthread_mutex_destroy(&f->lock);
	free(f->phys);
	free(f);
}

static const struct rw_net_ops fuse_ops = {
	.name = "fuse",
	.devices = fuse_devices,
	.get_properties = fuse_get_properties,
	.listen = fuse_listen,
	.connect = fuse_connect,
	.accept = fuse_accept,
	.reg_mr = rw_fuse_reg_mr,
	.reg_mr_dmabuf = rw_fuse_reg_mr_dmabuf,
	.dereg_mr = rw_fuse_dereg_mr,
	.isend = rw_fuse_isend,
	.irecv = rw_fuse_irecv,
	.iflush = rw_fuse_iflush,
	.test = rw_fuse_test,
	.close_send = rw_fuse_close_comm,
	.close_recv = rw_fuse_close_comm,
	.close_listen = fuse_close_listen,
	.destroy = fuse_destroy,
	.connect_tc = fuse_connect_tc,
};

int rw_fuse_create(const struct rw_config *cfg, struct rw_net *const *bases, int nbases,
		   struct rw_net **out)
{
	struct rw_fuse_net *f;
	int rc = 0, total = 0;

	if (nbases < 1 || nbases > RW_FUSE_MAX_BASES || !out) {
		RW_WARN(RW_LOG_NET, "fuse: create over %d transport(s): 1 to %d", nbases,
			RW_FUSE_MAX_BASES);
		rc = -EINVAL;
		goto err_bases;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = -ENOMEM;
		goto err_bases;
	}
	f->base.ops = &fuse_ops;
	f->base.cfg = *cfg;
	pthread_mutex_init(&f->lock, NULL);
	for (int b = 0; b < nbases; b++) {
		int n = 0;

		f->bases[f->nbases++] = bases[b];
		rc = rw_net_devices(bases[b], &n);
		if (rc)
			break;
		total += n;
	}
	f->phys = rc ? NULL : calloc((size_t)RW_MAX(total, 1), sizeof(*f->phys));
	if (!rc && !f->phys)
		rc = -ENOMEM;
	for (int b = 0; rc == 0 && b < nbases; b++) {
		int n = 0;

		rw_net_devices(bases[b], &n);
		for (int d = 0; d < n; d++) {
			struct fuse_phys *p = &f->phys[f->nphys++];
			struct rw_net_props q = {0};

			p->base = b;
			p->local = d;
			p->wire = rw_net_wire(bases[b]);
			if (rw_net_get_properties(bases[b], d, &q) == 0 && q.name)
				snprintf(p->name, sizeof(p->name), "%s", q.name);
			else
				snprintf(p->name, sizeof(p->name), "dev%d", f->nphys - 1);
		}
	}
	if (rc) {
		fuse_destroy(&f->base); /* destroys the bases */
		return rc;
	}
	snprintf(f->base.label, sizeof(f->base.label), "%s", rw_net_name(bases[0]));
	*out = &f->base;
	return 0;

err_bases:
	for (int b = 0; b < nbases && bases; b++)
		rw_net_destroy(bases[b]);
	return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fused comm's life and its registrations: creation over connected
 * member comms, the handle check every call makes, close (which frees the
 * registrations left on it, as every transport's close does), the member
 * statistics, and registrations made on every member at once.  The data
 * path is fuse_data.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "transport/fuse/fuse_internal.h"

int rw_fuse_comm_check(struct rw_net_comm *base, const char *call, int want_send,
		       struct rw_fuse_comm **out)
{
	static const uint32_t kinds[] = {FUSE_SEND_KIND, FUSE_RECV_KIND};
	struct rw_fuse_comm *c = base ? rw_fuse_comm_of(base) : NULL;
	int rc;

	if (!c)
		rc = -EINVAL;
	else if (want_send < 0)
		rc = rw_obj_check_any(&c->obj, kinds, 2);
	else
		rc = rw_obj_check(&c->obj, want_send ? FUSE_SEND_KIND : FUSE_RECV_KIND);
	if (rc) {
		RW_WARN(RW_LOG_NET, "fuse: %s(comm=%p): not an open fused %s comm", call,
			(void *)base,
			want_send < 0 ? "send or receive"
			: want_send   ? "send"
				      : "receive");
		return rc;
	}
	*out = c;
	return 0;
}

/* --- comms ------------------------------------------------------------------ */

static void close_subs(bool send, int n, struct rw_net_comm *const *subs)
{
	for (int i = 0; i < n; i++)
		if (subs[i]) {
			if (send)
				rw_net_close_send(subs[i]);
			else
				rw_net_close_recv(subs[i]);
		}
}

int rw_fuse_comm_new(struct rw_fuse_net *f, int vdev, bool send, int nsubs,
		     struct rw_net_comm *const *subs, struct rw_net_comm **out)
{
	const struct fuse_vdev *v = &f->vdevs[vdev - f->nphys];
	struct rw_fuse_comm *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		close_subs(send, nsubs, subs);
		return -ENOMEM;
	}
	c->base.net = &f->base;
	c->send = send;
	c->nsubs = nsubs;
	c->timeout_ms = f->base.cfg.timeout_ms;
	rw_list_init(&c->mrs);
	c->moved_ms = rw_now_ms();
	snprintf(c->vname, sizeof(c->vname), "%s", v->name);
	for (int i = 0; i < nsubs; i++) {
		const struct fuse_phys *p = &f->phys[v->members[i == 0 ? 0 : (i - 1) % v->n]];

		c->sub[i].c = subs[i];
		snprintf(c->sub[i].nic, sizeof(c->sub[i].nic), "%s", p->name);
	}
	c->ctrl = calloc(FUSE_MAX_REQS, sizeof(*c->ctrl));
	rc = c->ctrl ? rw_net_reg_mr(subs[0], c->ctrl, FUSE_MAX_REQS * sizeof(*c->ctrl),
				     RW_PTR_HOST, &c->ctrl_mr)
		     : -ENOMEM;
	if (rc) {
		RW_WARN(RW_LOG_NET, "fuse: %s: registering the control buffer on %s: %s", v->name,
			c->sub[0].nic, strerror(-rc));
		close_subs(send, nsubs, subs);
		free(c->ctrl);
		free(c);
		return rc;
	}
	rw_obj_open(&c->obj, send ? FUSE_SEND_KIND : FUSE_RECV_KIND);
	RW_INFO(RW_LOG_NET, "fuse: %s comm on %s: %d connections (control on %s)",
		send ? "send" : "receive", v->name, nsubs, c->sub[0].nic);
	*out = &c->base;
	return 0;
}

int rw_fuse_close_comm(struct rw_net_comm *base)
{
	struct rw_fuse_comm *c;
	struct rw_net_comm *subs[FUSE_SUBS];
	int rc = rw_fuse_comm_check(base, "close", -1, &c);

	if (rc)
		return rc;
	rw_net_dereg_mr(c->sub[0].c, c->ctrl_mr);
	while (!rw_list_empty(&c->mrs)) { /* as every transport's close: the
					     registrations go with the comm */
		struct rw_fuse_mr *m =
			rw_container_of(rw_list_pop(&c->mrs), struct rw_fuse_mr, link);

		for (int i = 0; i < c->nsubs; i++)
			rw_net_dereg_mr(c->sub[i].c, m->sub[i]);
		rw_obj_close(&m->obj);
		free(m);
	}
	for (int i = 0; i < c->nsubs; i++)
		subs[i] = c->sub[i].c;
	close_subs(c->send, c->nsubs, subs); /* cancels what is in flight */
	for (int i = 0; i < FUSE_MAX_REQS; i++)
		free(c->reqs[i].taken);
	rw_obj_close(&c->obj);
	free(c->ctrl);
	free(c);
	return 0;
}

int rw_fuse_comm_stats(struct rw_net_comm *base, int *n, struct rw_fuse_member_stats *out)
{
	struct rw_fuse_comm *c;
	int rc = rw_fuse_comm_check(base, "stats", -1, &c);

	if (rc)
		return rc;
	*n = c->nsubs;
	for (int i = 0; i < c->nsubs; i++) {
		snprintf(out[i].nic, sizeof(out[i].nic), "%s", c->sub[i].nic);
		out[i].bytes = c->sub[i].bytes;
		out[i].pieces = c->sub[i].pieces;
	}
	return 0;
}

/* --- registration -------------------------------------------------------------- */

static int mr_new(struct rw_fuse_comm *c, void *data, size_t size, int type, bool dmabuf,
		  uint64_t offset, int fd, struct rw_net_mr **out)
{
	struct rw_fuse_mr *m = calloc(1, sizeof(*m));
	int rc = 0, i;

	if (!m)
		return -ENOMEM;
	m->base.comm = &c->base;
	m->type = type;
	for (i = 0; i < c->nsubs && rc == 0; i++) {
		rc = dmabuf ? rw_net_reg_mr_dmabuf(c->sub[i].c, data, size, type, offset, fd,
						   &m->sub[i])
			    : rw_net_reg_mr(c->sub[i].c, data, size, type, &m->sub[i]);
		if (rc)
			RW_WARN(RW_LOG_NET, "fuse: %s: registering %zu bytes on NIC %s: %s",
				c->vname, size, c->sub[i].nic, strerror(-rc));
	}
	if (rc) {
		while (--i > 0)
			rw_net_dereg_mr(c->sub[i - 1].c, m->sub[i - 1]);
		free(m);
		return rc;
	}
	rw_obj_open(&m->obj, FUSE_MR_KIND);
	rw_list_add(&c->mrs, &m->link);
	*out = &m->base;
	return 0;
}

int rw_fuse_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		   struct rw_net_mr **mr)
{
	struct rw_fuse_comm *c;
	int rc = rw_fuse_comm_check(comm, "regMr", -1, &c);

	return rc ? rc : mr_new(c, data, size, type, false, 0, -1, mr);
}

int rw_fuse_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
			  uint64_t offset, int fd, struct rw_net_mr **mr)
{
	struct rw_fuse_comm *c;
	int rc = rw_fuse_comm_check(comm, "regMrDmaBuf", -1, &c);

	return rc ? rc : mr_new(c, data, size, type, true, offset, fd, mr);
}

int rw_fuse_mr_check(struct rw_fuse_comm *c, struct rw_net_mr *base, const char *call,
		     struct rw_fuse_mr **out)
{
	struct rw_fuse_mr *m = base ? rw_container_of(base, struct rw_fuse_mr, base) : NULL;

	if (!m) { /* no registration: the members decide (socket needs none) */
		*out = NULL;
		return 0;
	}
	if (rw_obj_check(&m->obj, FUSE_MR_KIND) || base->comm != &c->base) {
		RW_WARN(RW_LOG_NET, "fuse: %s: %s(mr=%p): not a registration of this comm",
			c->vname, call, (void *)base);
		return -EINVAL;
	}
	*out = m;
	return 0;
}

int rw_fuse_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *base)
{
	struct rw_fuse_comm *c;
	struct rw_fuse_mr *m;
	int rc = rw_fuse_comm_check(comm, "deregMr", -1, &c);

	if (rc == 0)
		rc = rw_fuse_mr_check(c, base, "deregMr", &m);
	if (rc || !m)
		return rc ? rc : -EINVAL;
	for (int i = 0; i < c->nsubs; i++) {
		int r = rw_net_dereg_mr(c->sub[i].c, m->sub[i]);

		rc = rc ? rc : r;
	}
	rw_list_del(&m->link);
	rw_obj_close(&m->obj);
	free(m);
	return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a collective's data lives and how it moves.  Host buffers are
 * reduced in place by the host kernels.  Device buffers stay on the device
 * wherever the channel's links can move device memory (the transport's
 * ptr_support has RW_PTR_CUDA: shm by CUDA IPC, ib by dma-buf/peer memory):
 * a chunk is received into the channel's device staging, reduced there by
 * the CUDA kernels and forwarded from there, with no host copy.  A link that
 * moves host memory only gets host staging on its side: a received chunk
 * lands in a host slot and is copied in, a chunk to send is copied out to a
 * host slot first.
 *
 * Never blocking: every device copy and reduction is enqueued on the
 * channel's stream and an event recorded after it; ring_recv.c and
 * ring_send.c poll the event from test().  Only the failure path (rw_coll_dev_drain,
 * rw_coll_act_fini) waits for a stream.  Nothing here calls CUDA directly:
 * gpu/rw_cuda.h and kernels/rw_reduce.h do.  Every copy and kernel is
 * counted in the comm's stats.
 */
#include <errno.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"

/* The public API promises ncclDataType_t / ncclRedOp_t values; the kernels
 * carry them (include/ringway.h's enums are checked in rw_api_coll.c). */
static_assert(RW_DTYPE_FLOAT8E5M2 == 11 && RW_DTYPE_COUNT == 12, "dtype values");
static_assert(RW_OP_AVG == 4 && RW_OP_COUNT == 5, "op values");

static const char *kind_str(enum rw_mem_kind k)
{
	return k == RW_MEM_DEVICE ? "device" : "host";
}

int rw_coll_mem_classify(const void *a, const void *b, enum rw_coll_mem *out)
{
	enum rw_mem_kind ka = a ? rw_cuda_mem_kind(a) : RW_MEM_HOST;
	enum rw_mem_kind kb = b ? rw_cuda_mem_kind(b) : RW_MEM_HOST;
	bool da = ka == RW_MEM_DEVICE, db = kb == RW_MEM_DEVICE;

	/* pinned and managed memory are host-addressable: the host path */
	if (a && b && da != db) {
		RW_WARN(RW_LOG_COLL,
			"coll: sendbuf %p is %s memory but recvbuf %p is %s memory: pass both on "
			"the host or both on a device",
			a, kind_str(ka), b, kind_str(kb));
		return -EINVAL;
	}
	*out = da || db ? RW_COLL_MEM_DEVICE : RW_COLL_MEM_HOST;
	return 0;
}

void rw_coll_comm_stats(const struct rw_coll_comm *c, struct rw_coll_stats *out)
{
	*out = c->stats;
}

/* --- device staging ------------------------------------------------------------ */

void rw_coll_stage_device_free(struct rw_coll_stage *s)
{
	struct rw_coll_comm *c = s->comm;

	if (c) {
		/* a closed link took its registrations with it */
		struct rw_net_comm *sc = c->links[rw_link_send(s->ch)].comm;
		struct rw_net_comm *rc = c->links[rw_link_recv(s->ch)].comm;

		if (s->dmr_send && sc)
			rw_net_dereg_mr(sc, s->dmr_send);
		if (s->dmr_recv && rc)
			rw_net_dereg_mr(rc, s->dmr_recv);
	}
	if (s->stream)
		rw_cuda_stream_sync(s->stream); /* teardown: nothing may outlive what we free */
	for (int i = 0; i < RW_COLL_NEV; i++) {
		if (s->ev[i])
			rw_cuda_event_destroy(s->ev[i]);
		s->ev[i] = NULL;
	}
	if (s->stream)
		rw_cuda_stream_destroy(s->stream);
	rw_cuda_free(s->dev);
	rw_cuda_host_free(s->out);
	s->stream = NULL;
	s->dev = NULL;
	s->out = NULL;
	s->out_mr = NULL;
	s->dmr_send = s->dmr_recv = NULL;
	s->recv_dev = s->send_dev = false;
	s->comm = NULL;
}

/* Can link l move device memory?  Asked of the transport that made its
 * comm (under auto, shm or the network one). */
static bool link_cuda(const struct rw_coll_comm *c, int l)
{
	const struct rw_coll_link *link = &c->links[l];
	struct rw_net_comm *comm = link->comm;
	struct rw_net_props p;
	int ndev = 0, dev;

	if (!comm || rw_net_devices(comm->net, &ndev) || ndev < 1)
		return false;
	/* shm (under auto too) has one device */
	dev = link->dev >= 0 && link->dev < ndev ? link->dev : 0;
	if (rw_net_get_properties(comm->net, dev, &p))
		return false;
	return (p.ptr_support & RW_PTR_CUDA) != 0;
}

static int stage_device_one(struct rw_coll_comm *c, int ch)
{
	size_t slots = RW_COLL_NSLOTS * c->dev_chunk_bytes;
	struct rw_coll_stage *s = &c->stage[ch];
	struct rw_net_comm *send = c->links[rw_link_send(ch)].comm;
	struct rw_net_comm *recv = c->links[rw_link_recv(ch)].comm;
	int rc;

	if (!send || !recv)
		return c->error ? c->error : -ENOTCONN;
	s->comm = c;
	s->ch = ch;
	rc = rw_cuda_malloc((void **)&s->dev, 2 * slots);
	if (!rc)
		rc = rw_cuda_stream_create(&s->stream);
	for (int i = 0; i < RW_COLL_NEV && !rc; i++)
		rc = rw_cuda_event_create(&s->ev[i]);
	if (rc)
		return rc;
	/* each direction on the device when its transport can; a refused
	 * registration falls back to host staging on that side */
	if (link_cuda(c, rw_link_recv(ch)) &&
	    rw_net_reg_mr(recv, s->dev, slots, RW_PTR_CUDA, &s->dmr_recv) == 0)
		s->recv_dev = true;
	if (link_cuda(c, rw_link_send(ch)) &&
	    rw_net_reg_mr(send, s->dev, 2 * slots, RW_PTR_CUDA, &s->dmr_send) == 0)
		s->send_dev = true;
	if (!s->send_dev) {
		rc = rw_cuda_host_alloc((void **)&s->out, slots);
		if (!rc)
			rc = rw_net_reg_mr(send, s->out, slots, RW_PTR_HOST, &s->out_mr);
	}
	/* a side through host memory receives or forwards in the host slots */
	if (!rc && (!s->recv_dev || !s->send_dev))
		rc = rw_coll_stage_wide(c, ch);
	RW_INFO(RW_LOG_COLL,
		"coll: rank %d: channel %d: device collectives receive into %s staging, send "
		"from %s staging",
		c->rank, ch, s->recv_dev ? "device" : "host", s->send_dev ? "device" : "host");
	return rc;
}

int rw_coll_stage_device(struct rw_coll_comm *c, int nch)
{
	int rc;

	for (int ch = 0; ch < nch; ch++) {
		struct rw_coll_stage *s = &c->stage[ch];

		if (s->dev)
			continue;
		rc = stage_device_one(c, ch);
		if (rc) {
			if (s->out_mr && c->links[rw_link_send(ch)].comm)
				rw_net_dereg_mr(c->links[rw_link_send(ch)].comm, s->out_mr);
			rw_coll_stage_device_free(s);
			return rc;
		}
	}
	c->stats.dev_collectives++;
	for (int ch = 0; ch < nch; ch++)
		if (c->stage[ch].recv_dev && c->stage[ch].send_dev)
			c->stats.dev_channels++;
	return 0;
}

char *rw_coll_dslot(const struct rw_coll_comm *c, int ch, int slot)
{
	return c->stage[ch].dev + (size_t)slot * c->dev_chunk_bytes;
}

const struct rw_coll_stage *rw_coll_hstage(const struct rw_coll_comm *c, int ch)
{
	return c->stage[ch].wide ? c->stage[ch].wide : &c->stage[ch];
}

char *rw_coll_hslot(const struct rw_coll_comm *c, int ch, int slot)
{
	return rw_coll_hstage(c, ch)->buf + (size_t)slot * c->dev_chunk_bytes;
}

/* --- copies and reductions, counted ---------------------------------------------- */

static int copy_async(struct rw_coll_comm *c, void *dst, const void *src, size_t bytes,
		      bool host_side, void *stream)
{
	if (!bytes || dst == src)
		return 0;
	if (host_side)
		c->stats.host_copies++;
	else
		c->stats.dev_copies++;
	return rw_cuda_memcpy_async(dst, src, bytes, stream);
}

static int reduce_dev(const struct rw_coll_req *r, void *dst, const void *local, const void *slot,
		      size_t count, bool final, void *stream)
{
	const void *srcs[2] = {local, slot};

	if (!count)
		return 0;
	r->comm->stats.kernels++;
	if (final && r->a.op == RW_OP_AVG)
		return rw_reduce_multi_avg_dev(dst, srcs, 2, count, r->a.dtype,
					       (unsigned int)r->comm->nranks, stream);
	return rw_reduce_multi_dev(dst, srcs, 2, count, r->a.dtype, r->redop, stream);
}

int rw_coll_fold(const struct rw_coll_req *r, void *dst, const void *local, const void *slot,
		 size_t count, bool final)
{
	const void *srcs[2] = {local, slot};

	if (final && r->a.op == RW_OP_AVG)
		return rw_reduce_multi_avg(dst, srcs, 2, count, r->a.dtype,
					   (unsigned int)r->comm->nranks);
	return rw_reduce_multi(dst, srcs, 2, count, r->a.dtype, r->redop);
}

static int sink_put(void *arg, size_t off, const void *src, size_t len)
{
	const struct rw_coll_sink *s = arg;

	if (len % s->r->esize)
		return -EPROTO; /* the transport broke the piece rule */
	if (s->local)
		return rw_coll_fold(s->r, s->dst + off, s->local + off, src, len / s->r->esize,
				    s->final);
	if (s->dst + off == (const char *)src)
		return 0; /* it landed there */
	if (s->nontemporal) {
		rw_copy_nontemporal(s->dst + off, src, len);
		s->r->comm->stats.nontemporal_copied += len;
	} else
		memcpy(s->dst + off, src, len);
	return 0;
}

bool rw_coll_can_sink(const struct rw_coll_req *r, const struct rw_net_comm *comm)
{
	/* every piece but the last is a multiple of RW_NET_SINK_ALIGN bytes,
	 * so it holds whole elements */
	return r->mem == RW_COLL_MEM_HOST && rw_net_has_sink(comm) &&
	       RW_NET_SINK_ALIGN % r->esize == 0;
}

void rw_coll_sink_fold(struct rw_coll_sink *s, const struct rw_coll_req *r, void *dst,
		       const void *local, bool final)
{
	*s = (struct rw_coll_sink){
		.sink = {.put = sink_put, .arg = s},
		.r = r,
		.dst = dst,
		.local = local,
		.final = final,
	};
}

void rw_coll_sink_copy(struct rw_coll_sink *s, const struct rw_coll_req *r, void *dst,
		       bool nontemporal)
{
	rw_coll_sink_fold(s, r, dst, NULL, false); /* no local operand: a copy */
	s->nontemporal = nontemporal;
}

int rw_coll_dev_chunk(struct rw_coll_req *r, int ch, int action, void *out, const void *local,
		      int slot, size_t count, bool forwarded, int ev, bool *fwd_dev)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_stage *s = &c->stage[ch];
	char *d = rw_coll_dslot(c, ch, slot), *h = rw_coll_hslot(c, ch, slot);
	size_t bytes = count * r->esize;
	void *st = s->stream;
	int rc = 0;

	*fwd_dev = false;
	switch (action) {
	case RW_RING_REDUCE_FWD:
	case RW_RING_REDUCE_FINAL: {
		bool fwd = action == RW_RING_REDUCE_FWD;
		void *target = fwd ? d : out;

		if (!s->recv_dev)
			rc = copy_async(c, d, h, bytes, true, st);
		if (!rc)
			rc = reduce_dev(r, target, local, d, count, !fwd, st);
		if (rc || !(fwd || forwarded))
			break;
		/* the result to forward: the device slot if the send link
		 * takes it, else the host slot */
		*fwd_dev = s->send_dev;
		rc = copy_async(c, s->send_dev ? d : h, target, bytes, !s->send_dev, st);
		break;
	}
	case RW_RING_COPY:
	default:
		if (s->recv_dev) {
			rc = copy_async(c, out, d, bytes, false, st);
			*fwd_dev = s->send_dev;
			if (!rc && forwarded && !s->send_dev)
				rc = copy_async(c, h, d, bytes, true, st);
		} else {
			/* forwarded, if at all, from the host slot it arrived in */
			rc = copy_async(c, out, h, bytes, true, st);
		}
		break;
	}
	if (!rc)
		rc = rw_cuda_event_record(s->ev[ev], st);
	return rc;
}

int rw_coll_dev_stage_send(struct rw_coll_req *r, int ch, int k, const void *src, size_t bytes,
			   void **data, struct rw_net_mr **mr)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_stage *s = &c->stage[ch];
	char *dst = s->send_dev ? rw_coll_dslot(c, ch, RW_COLL_NSLOTS + k)
				: s->out + (size_t)k * c->dev_chunk_bytes;
	int rc = copy_async(c, dst, src, bytes, !s->send_dev, s->stream);

	if (!rc)
		rc = rw_cuda_event_record(s->ev[RW_COLL_EV_OUT + k], s->stream);
	*data = dst;
	*mr = s->send_dev ? s->dmr_send : s->out_mr;
	return rc;
}

int rw_coll_dev_poll(const struct rw_coll_comm *c, int ch, int ev)
{
	return rw_cuda_event_query(c->stage[ch].ev[ev]);
}

void rw_coll_dev_drain(const struct rw_coll_comm *c, int ch)
{
	if (c->stage && c->stage[ch].stream)
		rw_cuda_stream_sync(c->stage[ch].stream);
}

/* --- the activation's copies ------------------------------------------------------ */

int rw_coll_copy(struct rw_coll_req *r, void *dst, const void *src, size_t bytes)
{
	struct rw_coll_comm *c = r->comm;
	void *stream;
	int rc;

	if (!bytes || dst == src)
		return 0;
	if (r->mem != RW_COLL_MEM_DEVICE) {
		memmove(dst, src, bytes);
		return 0;
	}
	if (c->nranks > 1) {
		stream = c->stage[0].stream;
	} else {
		if (!r->act_stream) {
			rc = rw_cuda_stream_create(&r->act_stream);
			if (rc)
				return rc;
		}
		stream = r->act_stream;
	}
	if (!r->act_event) {
		rc = rw_cuda_event_create(&r->act_event);
		if (rc)
			return rc;
	}
	c->stats.dev_copies++;
	rc = rw_cuda_memcpy_async(dst, src, bytes, stream);
	return rc ? rc : rw_cuda_event_record(r->act_event, stream);
}

int rw_coll_act_poll(struct rw_coll_req *r)
{
	int rc;

	if (!r->act_event)
		return 0;
	rc = rw_cuda_event_query(r->act_event);
	if (rc)
		return rc;
	rw_cuda_event_destroy(r->act_event);
	r->act_event = NULL;
	return 0;
}

void rw_coll_act_fini(struct rw_coll_req *r)
{
	if (r->act_event) {
		rw_cuda_event_sync(r->act_event); /* failure path: the copy must be over */
		rw_cuda_event_destroy(r->act_event);
		r->act_event = NULL;
	}
	if (r->act_stream)
		rw_cuda_stream_destroy(r->act_stream);
	r->act_stream = NULL;
}

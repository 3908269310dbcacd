/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: the wire between emulated QPs, and the progress thread that
 * drives it (one per context).  See sv_internal.h for the model.
 */
#define _GNU_SOURCE
#include "sv_internal.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

enum sv_ev_kind {
	SV_EV_WAKE = 0,
	SV_EV_LISTEN = 1,
	SV_EV_REQ = 2,
	SV_EV_RSP = 3,
};

#define SV_SOCKBUF (4 << 20)

static uint64_t ev_tag(const struct sv_qp *qp, enum sv_ev_kind kind)
{
	return (uint64_t)qp->vqp.qp.qp_num << 8 | (uint64_t)kind;
}

static socklen_t qp_addr(const struct sv_ctx *ctx, uint32_t qpn, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "softverbs:%08x:%06x",
		     ctx->fabric_hash, qpn);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void ep_add(struct sv_ctx *ctx, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};

	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev))
		fprintf(stderr, "softverbs: epoll_ctl(ADD, fd %d): %s\n", fd, strerror(errno));
}

void sv_close_stream(struct sv_ctx *ctx, int *fd)
{
	if (*fd >= 0) {
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, *fd, NULL);
		close(*fd);
		*fd = -1;
	}
}

void sv_free_responses(struct sv_qp *qp)
{
	while (qp->rsp_head) {
		struct sv_rsp *r = qp->rsp_head;

		qp->rsp_head = r->next;
		free(r->data);
		free(r);
	}
	qp->rsp_tail = NULL;
}

void sv_reset_rx(struct sv_qp *qp)
{
	qp->rx_state = SV_RX_HDR;
	qp->rx_got = 0;
	qp->rx_dst = NULL;
	qp->rx_nak = false;
	qp->rx_acked = false;
	qp->rx_has_rwqe = false;
	qp->rx_stalled_rnr = false;
	qp->rx_rnr_sent = false;
	qp->rx_rnr_deadline_ns = 0;
}

void sv_wire_drop_link(struct sv_qp *qp)
{
	sv_close_stream(qp->ctx, &qp->req_fd);
	sv_close_stream(qp->ctx, &qp->rsp_fd);
	sv_free_responses(qp);
	sv_reset_rx(qp);
	qp->in_rsp_got = 0;
	qp->in_read_got = 0;
	qp->link_dead = true;
	qp->rnr_waiting = false;
}

void sv_wire_close(struct sv_qp *qp)
{
	sv_wire_drop_link(qp);
	sv_close_stream(qp->ctx, &qp->lfd);
}

void sv_wire_kick(struct sv_ctx *ctx)
{
	uint64_t one = 1;

	if (write(ctx->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fprintf(stderr, "softverbs: wake: %s\n", strerror(errno));
}

int sv_wire_listen(struct sv_qp *qp)
{
	struct sockaddr_un sa;
	socklen_t len = qp_addr(qp->ctx, qp->vqp.qp.qp_num, &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 16)) {
		int e = errno;

		close(fd);
		return -e;
	}
	qp->lfd = fd;
	ep_add(qp->ctx, fd, EPOLLIN, ev_tag(qp, SV_EV_LISTEN));
	return 0;
}

/* 4.096 us x 2^timeout x (retry_cnt + 1); 0 = wait forever. */
uint64_t sv_ack_timeout_ns(const struct sv_qp *qp)
{
	if (qp->timeout == 0)
		return 0;
	return 4096ull * (1ull << qp->timeout) * (qp->retry_cnt + 1u);
}

static void timer_progress(struct sv_qp *qp)
{
	uint64_t t = sv_ack_timeout_ns(qp);

	qp->ack_deadline_ns = qp->sq_count && t && !qp->rnr_waiting ? sv_now_ns() + t : 0;
}

/* Called with ctx->lock held, at INIT -> RTR: open our request stream. */
int sv_wire_connect(struct sv_qp *qp)
{
	struct sv_hello h = {
		.magic = SV_MAGIC,
		.src_qpn = qp->vqp.qp.qp_num,
		.dst_qpn = qp->dest_qpn,
		.is_global = qp->ah.is_global,
		.dlid = qp->ah.dlid,
	};
	int size = SV_SOCKBUF;
	struct sockaddr_un sa;
	socklen_t len = qp_addr(qp->ctx, qp->dest_qpn, &sa);
	int fd;

	memcpy(h.dgid, qp->ah.grh.dgid.raw, sizeof(h.dgid));
	qp->link_dead = true;
	if (qp->ctx->port_down)
		return -ENETDOWN;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (connect(fd, (struct sockaddr *)&sa, len) ||
	    write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		int e = errno;

		close(fd); /* nobody there: requests will time out */
		return -e;
	}
	if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
		close(fd);
		return -EIO;
	}
	qp->req_fd = fd;
	qp->req_writable = true;
	qp->req_readable = false;
	qp->link_dead = false;
	ep_add(qp->ctx, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, ev_tag(qp, SV_EV_REQ));
	return 0;
}

static struct sv_qp *find_qp(struct sv_ctx *ctx, uint32_t qpn)
{
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next)
		if (qp->vqp.qp.qp_num == qpn)
			return qp;
	return NULL;
}

/* Is the hello addressed to one of this device's GIDs or LIDs? */
static bool hello_addresses_us(struct sv_ctx *ctx, const struct sv_hello *h)
{
	for (int p = 1; p <= ctx->dev->nports; p++) {
		const struct sv_port *port = &ctx->ports[p];

		if (!h->is_global && port->link_layer == IBV_LINK_LAYER_INFINIBAND &&
		    port->lid == h->dlid)
			return true;
		for (int i = 0; h->is_global && i < port->ngids; i++)
			if (!memcmp(port->gids[i].raw, h->dgid, 16))
				return true;
	}
	return false;
}

static void do_accept(struct sv_qp *qp)
{
	struct sv_ctx *ctx = qp->ctx;
	struct pollfd pfd;
	struct sv_hello h;
	ssize_t n;
	int fd, size = SV_SOCKBUF;

	while ((fd = accept4(qp->lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		/* the hello was written right after connect() */
		pfd = (struct pollfd){.fd = fd, .events = POLLIN};
		n = poll(&pfd, 1, 1000) == 1 ? recv(fd, &h, sizeof(h), MSG_WAITALL) : -1;
		if (n != (ssize_t)sizeof(h) || h.magic != SV_MAGIC ||
		    h.dst_qpn != qp->vqp.qp.qp_num || !hello_addresses_us(ctx, &h) ||
		    ctx->port_down) {
			close(fd); /* wrong address: the requester will time out */
			continue;
		}
		sv_close_stream(ctx, &qp->rsp_fd);
		sv_free_responses(qp);
		sv_reset_rx(qp);
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
		fcntl(fd, F_SETFL, O_NONBLOCK);
		qp->rsp_fd = fd;
		qp->rsp_readable = true;
		qp->rsp_writable = true;
		ep_add(ctx, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, ev_tag(qp, SV_EV_RSP));
	}
}

/* --- requester: sending --------------------------------------------------- */

/* The WQE at the head failed at post time: complete it and fail the QP. */
static bool retire_failed_head(struct sv_qp *qp)
{
	struct sv_swqe *w;

	if (!qp->sq_count)
		return false;
	w = &qp->sq[qp->sq_head];
	if (w->state != SV_SWQE_QUEUED || w->post_status == IBV_WC_SUCCESS)
		return false;
	sv_qp_complete_head(qp, w->post_status, w->post_verr);
	sv_qp_to_error(qp);
	return true;
}

/* Apply the fault knobs to message w.  False: do not send it. */
static bool faults_on_send(struct sv_qp *qp, struct sv_swqe *w)
{
	struct sv_ctx *ctx = qp->ctx;
	long n = ++ctx->nmsgs;

	if (n == ctx->faults.remote_access)
		w->rkey ^= 0x00a5a500;
	if (n == ctx->faults.port_down) {
		sv_fault_port_down(ctx);
		return false;
	}
	if (n == ctx->faults.conn_drop) {
		sv_wire_drop_link(qp);
		return false;
	}
	if (n == ctx->faults.retry_exceeded) {
		qp->link_dead = true;
		return false;
	}
	if (n == ctx->faults.qp_fatal) {
		qp->frozen = true;
		qp->ack_deadline_ns = 0;
		sv_async_event(ctx, (uint64_t)(uintptr_t)&qp->vqp.qp, IBV_EVENT_QP_FATAL);
		return false;
	}
	return true;
}

static size_t payload_len(const struct sv_swqe *w)
{
	return w->op == SV_OP_READ ? 0 : w->len;
}

/* iovecs for the bytes of w from offset `done` on (header, then payload). */
static int tx_iov(struct sv_swqe *w, uint8_t qp_rnr, struct sv_req_hdr *hdr, struct iovec *iov)
{
	size_t skip = w->done;
	int n = 0;

	*hdr = (struct sv_req_hdr){.op = (uint8_t)w->op,
				   .rnr_retry = qp_rnr,
				   .len = w->len,
				   .raddr = w->raddr,
				   .rkey = w->rkey,
				   .imm = w->imm,
				   .seq = w->seq};
	if (skip < sizeof(*hdr)) {
		iov[n++] = (struct iovec){(char *)hdr + skip, sizeof(*hdr) - skip};
		skip = 0;
	} else {
		skip -= sizeof(*hdr);
	}
	if (w->op == SV_OP_READ)
		return n;
	if (w->is_inline) {
		if (skip < w->len)
			iov[n++] = (struct iovec){w->inline_data + skip, w->len - skip};
		return n;
	}
	for (int i = 0; i < w->nsge; i++) {
		size_t l = w->sge[i].length;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		iov[n++] = (struct iovec){(char *)(uintptr_t)w->sge[i].addr + skip, l - skip};
		skip = 0;
	}
	return n;
}

/* Called with ctx->lock held: write queued requests while the stream takes them. */
void sv_wire_pump_tx(struct sv_qp *qp)
{
	while (qp->vqp.qp.state == IBV_QPS_RTS && qp->sq_tx < qp->sq_count) {
		struct sv_swqe *w = &qp->sq[(qp->sq_head + qp->sq_tx) % qp->sq_cap];
		struct iovec iov[SV_MAX_SGE + 1];
		struct sv_req_hdr hdr;
		struct msghdr mh = {.msg_iov = iov};
		ssize_t n;

		if (!qp->ack_deadline_ns)
			timer_progress(qp);
		if (w->post_status != IBV_WC_SUCCESS) {
			if (qp->sq_tx == 0)
				retire_failed_head(qp);
			return;
		}
		if (qp->link_dead || qp->frozen || qp->req_fd < 0 || !qp->req_writable)
			return;
		if (w->state == SV_SWQE_QUEUED) {
			if (!faults_on_send(qp, w))
				return;
			w->state = SV_SWQE_SENDING;
			w->done = 0;
		}
		mh.msg_iovlen = (size_t)tx_iov(w, qp->rnr_retry, &hdr, iov);
		n = sendmsg(qp->req_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				qp->req_writable = false;
			else
				qp->link_dead = true; /* the peer is gone */
			return;
		}
		w->done += (size_t)n;
		timer_progress(qp);
		if (w->done == sizeof(hdr) + payload_len(w)) {
			w->state = SV_SWQE_SENT;
			w->done = 0;
			qp->sq_tx++;
		}
	}
}

/* --- requester: responses ------------------------------------------------- */

static void link_lost(struct sv_qp *qp)
{
	sv_close_stream(qp->ctx, &qp->req_fd);
	qp->link_dead = true;
	qp->rnr_waiting = false;
	timer_progress(qp);
}

/* Receive READ data for the head WQE.  True when all arrived. */
static bool rx_read_data(struct sv_qp *qp, struct sv_swqe *w)
{
	while (qp->in_read_got < w->len) {
		struct iovec iov[SV_MAX_SGE];
		size_t skip = qp->in_read_got;
		int niov = 0;
		ssize_t n;

		for (int i = 0; i < w->nsge; i++) {
			size_t l = w->sge[i].length;

			if (skip >= l) {
				skip -= l;
				continue;
			}
			iov[niov++] =
				(struct iovec){(char *)(uintptr_t)w->sge[i].addr + skip, l - skip};
			skip = 0;
		}
		n = readv(qp->req_fd, iov, niov);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
			link_lost(qp);
			return false;
		}
		if (n < 0) {
			qp->req_readable = false;
			return false;
		}
		qp->in_read_got += (size_t)n;
	}
	return true;
}

static void rx_responses(struct sv_qp *qp)
{
	while (qp->req_fd >= 0 && qp->req_readable) {
		struct sv_rsp_hdr *r = &qp->in_rsp;
		struct sv_swqe *w;
		ssize_t n;

		if (qp->in_rsp_got < sizeof(*r)) {
			n = recv(qp->req_fd, (char *)r + qp->in_rsp_got,
				 sizeof(*r) - qp->in_rsp_got, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				qp->req_readable = false;
				return;
			}
			if (n <= 0) {
				link_lost(qp);
				return;
			}
			qp->in_rsp_got += (size_t)n;
			continue;
		}
		w = qp->sq_count ? &qp->sq[qp->sq_head] : NULL;
		if (!w || w->seq != r->seq || w->state != SV_SWQE_SENT) {
			fprintf(stderr,
				"softverbs: QP 0x%x: response for message %llu "
				"matches nothing outstanding\n",
				qp->vqp.qp.qp_num, (unsigned long long)r->seq);
			link_lost(qp);
			return;
		}
		qp->rnr_waiting = false;
		switch (r->type) {
		case SV_RSP_RNR_WAIT:
			qp->rnr_waiting = true;
			break;
		case SV_RSP_READ:
			if (r->len != w->len) {
				link_lost(qp);
				return;
			}
			if (!rx_read_data(qp, w))
				return;
			qp->in_read_got = 0;
			sv_qp_complete_head(qp, IBV_WC_SUCCESS, 0);
			break;
		case SV_RSP_ACK:
			sv_qp_complete_head(qp, IBV_WC_SUCCESS, 0);
			break;
		default:
			sv_qp_complete_head(qp, (enum ibv_wc_status)r->status, r->vendor_err);
			sv_qp_to_error(qp);
			break;
		}
		qp->in_rsp_got = 0;
		timer_progress(qp);
		retire_failed_head(qp);
	}
}

/* --- the progress thread -------------------------------------------------------- */

static void timers(struct sv_qp *qp, uint64_t now)
{
	if (qp->frozen)
		return;
	if (qp->ack_deadline_ns && now >= qp->ack_deadline_ns && qp->sq_count &&
	    qp->vqp.qp.state == IBV_QPS_RTS) {
		qp->ack_deadline_ns = 0;
		sv_qp_complete_head(qp, IBV_WC_RETRY_EXC_ERR, SV_VERR_TIMEOUT);
		sv_qp_to_error(qp);
	}
	if (qp->rx_stalled_rnr && qp->rx_rnr_deadline_ns && now >= qp->rx_rnr_deadline_ns)
		sv_resp_rnr_expired(qp);
}

static void progress(struct sv_qp *qp)
{
	rx_responses(qp);
	sv_resp_rx(qp);
	sv_resp_tx(qp);
	sv_wire_pump_tx(qp);
}

static void *progress_main(void *arg)
{
	struct sv_ctx *ctx = arg;
	struct epoll_event evs[64];
	int timeout_ms = 10;

	atomic_store(&ctx->running, true);
	while (!atomic_load(&ctx->stop)) {
		int n = epoll_wait(ctx->epfd, evs, 64, timeout_ms);
		uint64_t now, next = 0;

		pthread_mutex_lock(&ctx->lock);
		for (int i = 0; i < n; i++) {
			enum sv_ev_kind kind = (enum sv_ev_kind)(evs[i].data.u64 & 0xff);
			struct sv_qp *qp;
			uint64_t v;

			if (kind == SV_EV_WAKE) {
				if (read(ctx->wake_fd, &v, sizeof(v)) < 0)
					v = 0;
				continue;
			}
			qp = find_qp(ctx, (uint32_t)(evs[i].data.u64 >> 8));
			if (!qp)
				continue;
			if (kind == SV_EV_LISTEN) {
				do_accept(qp);
			} else if (kind == SV_EV_REQ) {
				qp->req_readable |= !!(evs[i].events & (EPOLLIN | EPOLLHUP |
									EPOLLERR | EPOLLRDHUP));
				qp->req_writable |= !!(evs[i].events & EPOLLOUT);
			} else {
				qp->rsp_readable |= !!(evs[i].events & (EPOLLIN | EPOLLHUP |
									EPOLLERR | EPOLLRDHUP));
				qp->rsp_writable |= !!(evs[i].events & EPOLLOUT);
			}
		}
		now = sv_now_ns();
		for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next) {
			progress(qp);
			timers(qp, now);
			if (qp->ack_deadline_ns && (!next || qp->ack_deadline_ns < next))
				next = qp->ack_deadline_ns;
			if (qp->rx_rnr_deadline_ns && (!next || qp->rx_rnr_deadline_ns < next))
				next = qp->rx_rnr_deadline_ns;
			if (qp->rx_stalled_rnr || (qp->rsp_readable && qp->rsp_fd >= 0))
				next = next && next < now + 1000000 ? next : now + 1000000;
		}
		pthread_mutex_unlock(&ctx->lock);
		timeout_ms = 100;
		if (next)
			timeout_ms = next <= now ? 0 : (int)SV_MIN((next - now) / 1000000 + 1, 100);
	}
	return NULL;
}

int sv_wire_start(struct sv_ctx *ctx)
{
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->epfd < 0 || ctx->wake_fd < 0)
		goto err_close;
	ep_add(ctx, ctx->wake_fd, EPOLLIN, SV_EV_WAKE);
	if (pthread_create(&ctx->thread, NULL, progress_main, ctx))
		goto err_close;
	/* back once the thread runs: a fork() right after never copies it
	 * half-way through its start-up, which allocates (sv_device.c, fork) */
	while (!atomic_load(&ctx->running))
		sched_yield();
	return 0;

err_close:
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	ctx->epfd = ctx->wake_fd = -1;
	return -EMFILE;
}

void sv_wire_stop(struct sv_ctx *ctx)
{
	atomic_store(&ctx->stop, true);
	sv_wire_kick(ctx);
	pthread_join(ctx->thread, NULL);
}

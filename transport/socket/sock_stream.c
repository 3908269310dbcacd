/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper threads: one per stream 1..n-1 of a comm (stream 0 is the calling
 * thread's), started the first time the comm stripes a message.  A helper
 * sleeps on its stream's condition variable while its
 * ring is empty; with work, it sleeps in blocking send/recv calls whose
 * time-out (SO_SNDTIMEO/SO_RCVTIMEO) wakes it now and then to notice a peer
 * that stopped moving data.  close and failures wake it with shutdown().
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/rw_nvtx.h"
#include "transport/socket/sock_internal.h"

static bool stalled(struct rw_sock_comm *c, uint64_t last_ms)
{
	return rw_now_ms() - last_ms >= (uint64_t)c->timeout_ms;
}

static int op_send(struct rw_sock_stream *s, struct rw_sock_op *op)
{
	struct rw_sock_comm *c = s->comm;
	struct rw_sock_data *d = c->d;
	uint64_t last = rw_now_ms();

	while (op->hdr_done < op->hdr_len || op->done < op->len) {
		struct iovec iov[2];
		struct msghdr m = {.msg_iov = iov};
		int err = atomic_load_explicit(&d->err, memory_order_acquire);
		ssize_t n;

		if (err)
			return err;
		if (op->hdr_done < op->hdr_len)
			iov[m.msg_iovlen++] = (struct iovec){(char *)&op->hdr + op->hdr_done,
							     op->hdr_len - op->hdr_done};
		if (op->done < op->len)
			iov[m.msg_iovlen++] =
				(struct iovec){op->buf + op->done, op->len - op->done};
		n = sendmsg(s->fd, &m, MSG_NOSIGNAL);
		if (n > 0) {
			size_t h = RW_MIN((size_t)n, (size_t)(op->hdr_len - op->hdr_done));

			op->hdr_done += (uint32_t)h;
			op->done += (size_t)n - h;
			last = rw_now_ms();
			rw_sock_progress(d);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!stalled(c, last))
				continue;
			return rw_sock_comm_fail(c, -ETIMEDOUT,
						 "stream %d: the peer took no data for %lld ms "
						 "(%zu of %zu bytes of a slice sent)",
						 s->index, (long long)c->timeout_ms, op->done,
						 op->len);
		}
		return rw_sock_comm_fail(
			c, n < 0 ? -errno : -EPIPE,
			"stream %d: send of a %zu-byte slice failed after %zu bytes", s->index,
			op->len, op->done);
	}
	return 0;
}

static int op_recv(struct rw_sock_stream *s, struct rw_sock_op *op)
{
	struct rw_sock_comm *c = s->comm;
	struct rw_sock_data *d = c->d;
	uint64_t last = rw_now_ms();

	while (op->done < op->len) {
		int err = atomic_load_explicit(&d->err, memory_order_acquire);
		ssize_t n;

		if (err)
			return err;
		n = recv(s->fd, op->buf + op->done, op->len - op->done, MSG_WAITALL);
		if (n > 0) {
			op->done += (size_t)n;
			last = rw_now_ms();
			rw_sock_progress(d);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!stalled(c, last))
				continue;
			return rw_sock_comm_fail(c, -ETIMEDOUT,
						 "stream %d: no data from the peer for %lld ms "
						 "(%zu of %zu bytes of a slice received)",
						 s->index, (long long)c->timeout_ms, op->done,
						 op->len);
		}
		if (n == 0)
			return rw_sock_comm_fail(
				c, -ECONNRESET,
				"stream %d: the peer closed the connection in the middle of a "
				"message (%zu of %zu bytes of a slice received)",
				s->index, op->done, op->len);
		return rw_sock_comm_fail(
			c, -errno, "stream %d: recv of a %zu-byte slice failed after %zu bytes",
			s->index, op->len, op->done);
	}
	return 0;
}

static void *stream_main(void *arg)
{
	struct rw_sock_stream *s = arg;
	bool sender = s->comm->obj.kind == RW_SOCK_SEND_MAGIC;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct rw_sock_op *op;

		while (s->head == s->tail && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->stop)
			break;
		op = &s->ops[s->head % RW_SOCK_RING];
		pthread_mutex_unlock(&s->lock);

		/* An error is recorded on the comm; the op still completes so
		 * that its request can report it. */
		RW_NVTX_PUSH(sender ? "socket send slice" : "socket recv slice");
		if (sender ? op_send(s, op) : op_recv(s, op))
			atomic_store_explicit(&op->req->cut, true, memory_order_relaxed);
		RW_NVTX_POP();
		atomic_fetch_sub_explicit(&op->req->parts, 1, memory_order_release);

		pthread_mutex_lock(&s->lock);
		s->head++;
		atomic_fetch_sub_explicit(&s->outstanding, 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

void rw_sock_stream_push(struct rw_sock_stream *s, const struct rw_sock_op *op)
{
	pthread_mutex_lock(&s->lock);
	s->ops[s->tail % RW_SOCK_RING] = *op;
	s->tail++;
	atomic_fetch_add_explicit(&s->outstanding, 1, memory_order_release);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool rw_sock_stripe_room(struct rw_sock_data *d, uint64_t size)
{
	for (int j = 1; j < d->nstreams; j++) {
		uint64_t off, len;

		rw_sock_stripe(size, (unsigned)d->nstreams, (unsigned)j, &off, &len);
		if (len && !rw_sock_stream_room(&d->streams[j]))
			return false;
	}
	return true;
}

int rw_sock_streams_start(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	sigset_t all, old;
	int rc = 0;

	if (d->helpers_started || d->nstreams == 1)
		return 0;
	/* Helpers take no signals: they belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 1; i < d->nstreams && !rc; i++) {
		struct rw_sock_stream *s = &d->streams[i];

		rc = -pthread_create(&s->thread, NULL, stream_main, s);
		if (rc) {
			RW_WARN(RW_LOG_NET, "socket: %s %s: starting helper thread %d: %s",
				rw_sock_comm_dir(c), c->peer, i, strerror(-rc));
			break;
		}
		s->thread_running = true;
		rw_sock_live_add(RW_SOCK_LIVE_THREADS, 1);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		rw_sock_streams_stop(c);
		return rc;
	}
	d->helpers_started = true;
	return 0;
}

void rw_sock_streams_stop(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;

	for (int i = 0; i < d->nstreams; i++) {
		struct rw_sock_stream *s = &d->streams[i];

		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	for (int i = 0; i < d->nstreams; i++) {
		struct rw_sock_stream *s = &d->streams[i];

		if (!s->thread_running)
			continue;
		pthread_join(s->thread, NULL);
		s->thread_running = false;
		rw_sock_live_add(RW_SOCK_LIVE_THREADS, -1);
	}
	for (int i = 0; i < d->nstreams; i++)
		d->streams[i].stop = false; /* a later start works again */
	d->helpers_started = false;
}

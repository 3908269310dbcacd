/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The non-blocking connect: an explicit state machine (enum
 * rw_sock_conn_state), one step function per state, each returning
 * RW_SOCK_STEP_DONE (go on), RW_SOCK_STEP_AGAIN (the network has not
 * answered yet: return to the caller with a NULL comm) or -errno.
 *
 * rw_net's connect takes a const handle, so the connect under way is kept
 * on the transport's list, keyed by the device and the handle's bytes, and
 * the next connect call with the same handle resumes it.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "transport/socket/sock_internal.h"
#include "transport/tcp/rw_tcp.h"

static const char *const state_names[] = {
	[RW_SOCK_CONN_START] = "start",
	[RW_SOCK_CONN_CONNECTING] = "TCP connect",
	[RW_SOCK_CONN_HELLO] = "sending the hello",
	[RW_SOCK_CONN_READY] = "ready",
};

static_assert(RW_ARRAY_SIZE(state_names) == RW_SOCK_CONN_READY + 1, "a name per state");

static int conn_fail(struct rw_sock_comm *c, int err, const char *what)
{
	RW_WARN(RW_LOG_NET, "socket: connect to %s: %s: %s", c->peer, what, strerror(-err));
	return err;
}

static int step_start(struct rw_sock_comm *c)
{
	struct rw_sock_connect *k = c->conn;
	const struct rw_config *cfg = &c->net->base.cfg;

	for (int i = 0; i < k->nstreams; i++) {
		int rc = rw_sock_socket(k->peer.ss_family, &k->fds[i]);

		if (rc)
			return conn_fail(c, rc, "socket()");
		rc = rw_sock_tune(k->fds[i], cfg, c->peer);
		if (rc)
			return rc;
		/* No bind to the device's address: routing picks the source,
		 * as in NCCL's socket transport (a loopback device could not
		 * reach a peer's NIC address otherwise). */
		rc = rw_tcp_connect_begin(k->fds[i], &k->peer);
		if (rc)
			return conn_fail(c, rc, "connect()");
	}
	k->state = RW_SOCK_CONN_CONNECTING;
	return RW_SOCK_STEP_DONE;
}

/* Write what is left of stream i's hello.  DONE, AGAIN or -errno. */
static int hello_push(struct rw_sock_comm *c, int i)
{
	struct rw_sock_connect *k = c->conn;
	struct rw_sock_hello h = {
		.magic = RW_SOCK_MAGIC,
		.version = RW_SOCK_PROTO_VERSION,
		.stream = (uint8_t)i,
		.nstreams = (uint8_t)k->nstreams,
		.nonce = k->handle.nonce,
		.conn_id = k->conn_id,
	};

	while (k->sent[i] < sizeof(h)) {
		ssize_t n = send(k->fds[i], (char *)&h + k->sent[i], sizeof(h) - k->sent[i],
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			k->sent[i] += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return RW_SOCK_STEP_AGAIN;
		return conn_fail(c, n < 0 ? -errno : -EPIPE, "sending the hello");
	}
	return RW_SOCK_STEP_DONE;
}

/* Each stream sends its hello as soon as its TCP connect is done: the
 * listener keeps a socket that has not proven the nonce only briefly
 * (RINGWAY_SOCKET_HELLO_MS) and may evict it for newer ones. */
static int step_connecting(struct rw_sock_comm *c)
{
	struct rw_sock_connect *k = c->conn;
	int pending = 0;

	for (int i = 0; i < k->nstreams; i++) {
		int rc;

		if (k->connected[i])
			continue;
		rc = rw_tcp_connect_done(k->fds[i]);
		if (rc == 0) {
			pending++;
			continue;
		}
		if (rc < 0)
			return conn_fail(c, rc, "TCP connect");
		k->connected[i] = true;
		rc = hello_push(c, i);
		if (rc < 0)
			return rc;
	}
	if (pending)
		return RW_SOCK_STEP_AGAIN;
	k->state = RW_SOCK_CONN_HELLO;
	return RW_SOCK_STEP_DONE;
}

static int step_hello(struct rw_sock_comm *c)
{
	struct rw_sock_connect *k = c->conn;
	int pending = 0;

	for (int i = 0; i < k->nstreams; i++) {
		int rc = hello_push(c, i);

		if (rc < 0)
			return rc;
		if (rc == RW_SOCK_STEP_AGAIN)
			pending++;
	}
	if (pending)
		return RW_SOCK_STEP_AGAIN;
	k->state = RW_SOCK_CONN_READY;
	return RW_SOCK_STEP_DONE;
}

/* Run the state machine as far as the network allows. */
static int conn_advance(struct rw_sock_comm *c)
{
	for (;;) {
		int rc;

		switch (c->conn->state) {
		case RW_SOCK_CONN_START:
			rc = step_start(c);
			break;
		case RW_SOCK_CONN_CONNECTING:
			rc = step_connecting(c);
			break;
		case RW_SOCK_CONN_HELLO:
			rc = step_hello(c);
			break;
		case RW_SOCK_CONN_READY:
			return RW_SOCK_STEP_DONE;
		default:
			return -EINVAL;
		}
		if (rc != RW_SOCK_STEP_DONE)
			return rc;
	}
}

static void conn_close_fds(struct rw_sock_connect *k)
{
	for (int i = 0; i < RW_SOCK_MAX_STREAMS; i++)
		rw_sock_close(&k->fds[i]);
}

void rw_sock_connect_abandon(struct rw_sock_comm *c)
{
	conn_close_fds(c->conn);
	rw_sock_comm_free(c);
}

static struct rw_sock_comm *conn_find(struct rw_sock_net *sn, int dev,
				      const struct rw_sock_handle *h)
{
	for (struct rw_list *it = sn->connecting.next; it != &sn->connecting; it = it->next) {
		struct rw_sock_comm *c = rw_container_of(it, struct rw_sock_comm, link);

		if (c->conn->dev == dev && memcmp(&c->conn->handle, h, sizeof(*h)) == 0)
			return c;
	}
	return NULL;
}

static struct rw_sock_comm *conn_new(struct rw_sock_net *sn, int dev,
				     const struct rw_sock_handle *h,
				     const struct sockaddr_storage *peer)
{
	char str[RW_SOCK_ADDRSTRLEN];
	struct rw_sock_comm *c;
	struct rw_sock_connect *k;

	rw_tcp_addr_str(peer, str, sizeof(str));
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	c = rw_sock_comm_alloc(sn, RW_SOCK_SEND_MAGIC, str);
	if (!c) {
		free(k);
		return NULL;
	}
	k->state = RW_SOCK_CONN_START;
	k->dev = dev;
	k->handle = *h;
	k->peer = *peer;
	k->start_ms = rw_now_ms();
	k->conn_id = rw_tcp_nonce64();
	k->nstreams = (int)RW_MIN(RW_MAX(sn->base.cfg.socket_nstreams, 1), RW_SOCK_MAX_STREAMS);
	for (int i = 0; i < RW_SOCK_MAX_STREAMS; i++)
		k->fds[i] = -1;
	c->conn = k;
	return c;
}

int rw_sock_connect(struct rw_net *net, int dev, const void *handle, struct rw_net_comm **send_comm)
{
	struct rw_sock_net *sn;
	struct rw_sock_handle h;
	struct sockaddr_storage peer;
	struct rw_sock_comm *c;
	int rc;

	if (!net || !handle || !send_comm)
		return -EINVAL;
	sn = rw_sock_net_from(net);
	if (dev < 0 || dev >= sn->ndev) {
		RW_WARN(RW_LOG_NET, "socket: connect(dev=%d): %d devices", dev, sn->ndev);
		return -EINVAL;
	}
	if (rw_sock_handle_decode(handle, &h, &peer)) {
		RW_WARN(RW_LOG_NET,
			"socket: connect(dev=%d): not a socket-transport handle of protocol "
			"version %d",
			dev, RW_SOCK_PROTO_VERSION);
		return -EINVAL;
	}
	pthread_mutex_lock(&sn->lock);
	c = conn_find(sn, dev, &h);
	if (c)
		rw_list_del(&c->link); /* ours while we work on it */
	pthread_mutex_unlock(&sn->lock);
	if (!c) {
		c = conn_new(sn, dev, &h, &peer);
		if (!c)
			return -ENOMEM;
	}

	rc = conn_advance(c);
	if (rc == RW_SOCK_STEP_AGAIN &&
	    rw_now_ms() - c->conn->start_ms >= (uint64_t)net->cfg.timeout_ms) {
		RW_WARN(RW_LOG_NET,
			"socket: connect to %s: not established within %lld ms (stuck in: %s)",
			c->peer, (long long)net->cfg.timeout_ms, state_names[c->conn->state]);
		rc = -ETIMEDOUT;
	}
	if (rc == RW_SOCK_STEP_DONE) {
		int err = rw_sock_comm_start(c, c->conn->fds, c->conn->nstreams);

		if (err)
			rc = err;
	}
	if (rc < 0) {
		rw_sock_connect_abandon(c);
		return rc;
	}
	pthread_mutex_lock(&sn->lock);
	if (rc == RW_SOCK_STEP_AGAIN) {
		rw_list_add(&sn->connecting, &c->link);
		pthread_mutex_unlock(&sn->lock);
		*send_comm = NULL;
		return 0;
	}
	rw_list_add(&sn->comms, &c->link);
	pthread_mutex_unlock(&sn->lock);
	free(c->conn);
	c->conn = NULL;
	RW_INFO(RW_LOG_NET, "socket: connected to %s with %d stream(s)", c->peer, c->d->nstreams);
	*send_comm = &c->base;
	return 0;
}

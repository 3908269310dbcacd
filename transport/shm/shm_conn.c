/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* accept4, struct ucred */
/*
 * Rendezvous of the same-host transport (layouts in shm_layout.h).
 *
 * connect completes in one call: it connects to the listener's abstract
 * socket, checks the listener's uid, creates the segment and sends the hello
 * with the segment and doorbell descriptors.  It never waits for accept; the
 * reply is read later by the sender's data path (rw_shm_poll_reply()).
 * accept keeps the kernel's new connections in a pending list until their
 * hello arrives, checks everything, answers, and returns one comm per call.
 */
#include "transport/shm/shm_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/rw_log.h"

#define ACCEPT_BATCH 64

static uint64_t random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = rw_now_ns() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

static int peer_cred(int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0)
		return -errno;
	return 0;
}

/* Send one message with up to two descriptors. */
static int send_with_fds(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	if (nfds > 0) {
		struct cmsghdr *cm;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EPROTO;
}

/*
 * Receive one message and up to max descriptors (counted as ours).
 * \return bytes received, 0 on EOF, or -errno (-EAGAIN: nothing yet).
 */
static ssize_t recv_with_fds(int fd, void *msg, size_t len, int *fds, int max, int *nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf)};
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	int got = 0;

	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		for (int i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
			if (got < max)
				fds[got++] = f;
			else
				rw_shm_close_fd(&f);
		}
	}
	*nfds = got;
	if ((mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) && n > 0)
		return -EPROTO;
	return n;
}

static void set_peer_name(struct rw_shm_comm *c)
{
	snprintf(c->peer, sizeof(c->peer), "pid %d conn %016llx", (int)c->peer_pid,
		 (unsigned long long)c->conn_id);
}

/* --- listen ------------------------------------------------------------ */

/* A new listener: the oldest shell once the graveyard is full, else new memory. */
static struct rw_shm_listen *listen_alloc(struct rw_shm_net *net)
{
	struct rw_shm_listen *l = rw_grave_alloc(&net->dead_listeners, &net->lock, sizeof(*l),
						 offsetof(struct rw_shm_listen, link),
						 offsetof(struct rw_shm_listen, obj), 0);

	if (l)
		rw_obj_open(&l->obj, RW_SHM_LISTEN_MAGIC);
	return l;
}

int rw_shm_listen(struct rw_net *base, int dev, void *handle, struct rw_net_listen **listen_comm)
{
	struct rw_shm_net *net = rw_shm_net_from(base);
	struct rw_shm_handle h = {
		.magic = RW_SHM_MAGIC,
		.version = RW_SHM_VERSION,
		.host = net->host,
		.uid = net->uid,
		.pid = net->pid,
	};
	struct rw_shm_listen *l;
	struct sockaddr_un addr;
	socklen_t alen;
	int rc;

	if (dev != 0 || !handle || !listen_comm) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: listen(dev=%d): only device 0, handle and "
			"listenComm must be set",
			dev);
		return -EINVAL;
	}
	l = listen_alloc(rw_shm_net_from(base));
	if (!l)
		return -ENOMEM;
	l->base.net = base;
	l->nonce = h.nonce = random64();
	rw_shm_handle_addr(&h, &addr, &alen);
	l->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: listen: socket(AF_UNIX, SEQPACKET): %s",
			strerror(errno));
		goto err_free;
	}
	rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
	if (bind(l->fd, (struct sockaddr *)&addr, alen) != 0 || listen(l->fd, 256) != 0) {
		rc = -errno;
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: listen: bind/listen on @%s: %s",
			addr.sun_path + 1, strerror(errno));
		goto err_close;
	}
	memcpy(handle, &h, sizeof(h));
	rw_shm_live_add(RW_SHM_LIVE_LISTENERS, 1);
	*listen_comm = &l->base;
	return 0;

err_close:
	rw_shm_close_fd(&l->fd);
err_free:
	/* never handed out, but perhaps a reused shell: back to the graveyard */
	rw_obj_close(&l->obj);
	rw_shm_bury(rw_shm_net_from(base), &rw_shm_net_from(base)->dead_listeners, &l->link);
	return rc;
}

static void pending_drop(struct rw_shm_pending *p)
{
	rw_shm_close_fd(&p->fd);
	free(p);
}

/* An open listener, or -EBADF (closed) / -EINVAL; logged. */
static int listen_check(struct rw_net_listen *base, const char *call, struct rw_shm_listen **out)
{
	struct rw_shm_listen *l;
	int rc;

	if (!base)
		return -EINVAL;
	l = rw_shm_listen_from(base);
	rc = rw_obj_check(&l->obj, RW_SHM_LISTEN_MAGIC);
	if (rc == 0) {
		*out = l;
		return 0;
	}
	RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: %s on a %s listener", call,
		rc == -EBADF ? "closed" : "foreign");
	return rc;
}

int rw_shm_close_listen(struct rw_net_listen *base)
{
	struct rw_shm_listen *l;
	int rc = listen_check(base, "closeListen", &l);

	if (rc)
		return rc;
	while (l->pending) {
		struct rw_shm_pending *p = l->pending;

		l->pending = p->next;
		pending_drop(p);
	}
	rw_shm_close_fd(&l->fd);
	rw_obj_close(&l->obj);
	rw_shm_live_add(RW_SHM_LIVE_LISTENERS, -1);
	rw_shm_bury(rw_shm_net_from(base->net), &rw_shm_net_from(base->net)->dead_listeners,
		    &l->link);
	return 0;
}

/* --- connect ------------------------------------------------------------- */

static int connect_check_handle(struct rw_shm_net *net, const struct rw_shm_handle *h)
{
	int rc = rw_shm_handle_check(h);

	if (rc == -EINVAL) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect: not an shm listen handle (magic %#x)", h->magic);
		return rc;
	}
	if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect: handle of version %u, this build speaks %u", h->version,
			RW_SHM_VERSION);
		return rc;
	}
	if (!rw_shm_host_id_equal(&h->host, &net->host)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect: listener pid %d is on another host or network namespace "
			"(host hash %016llx netns %llu, here %016llx netns %llu); use "
			"RINGWAY_TRANSPORT=auto or socket",
			h->pid, (unsigned long long)h->host.host_hash,
			(unsigned long long)h->host.netns, (unsigned long long)net->host.host_hash,
			(unsigned long long)net->host.netns);
		return -EHOSTUNREACH;
	}
	if (h->uid != net->uid) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect: listener pid %d runs as uid %u, this process as uid %u",
			h->pid, h->uid, net->uid);
		return -EPERM;
	}
	return 0;
}

/* Connect the rendezvous socket.  0 with *fd == -1: listener busy, retry. */
static int connect_socket(const struct rw_shm_handle *h, int *fd, struct ucred *cred)
{
	struct sockaddr_un addr;
	socklen_t alen;
	int s, rc;

	rw_shm_handle_addr(h, &addr, &alen);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: connect: socket(AF_UNIX, SEQPACKET): %s",
			strerror(errno));
		return rc;
	}
	if (connect(s, (struct sockaddr *)&addr, alen) != 0) {
		rc = -errno;
		close(s);
		if (rc == -EAGAIN) { /* backlog full: come back */
			*fd = -1;
			return 0;
		}
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect to listener pid %d at @%s: %s (closed, or another network "
			"namespace)",
			h->pid, addr.sun_path + 1, strerror(-rc));
		return rc == -ENOENT ? -ECONNREFUSED : rc;
	}
	rc = peer_cred(s, cred);
	if (rc == 0 && cred->uid != (uid_t)h->uid) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connect: the process at @%s is pid %d uid %u, the handle names uid "
			"%u; refused",
			addr.sun_path + 1, (int)cred->pid, (unsigned)cred->uid, h->uid);
		rc = -EPERM;
	} else if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: connect: SO_PEERCRED: %s", strerror(-rc));
	}
	if (rc) {
		close(s);
		return rc;
	}
	rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
	*fd = s;
	return 0;
}

int rw_shm_connect(struct rw_net *base, int dev, const void *handle, struct rw_net_comm **send_comm)
{
	struct rw_shm_net *net = rw_shm_net_from(base);
	struct rw_shm_handle hcopy, *h = &hcopy;
	struct rw_shm_hello hello;
	struct rw_shm_comm *c;
	struct ucred cred;
	int rc, s = -1, fds[2];

	if (dev != 0 || !send_comm || !handle) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: connect(dev=%d): only device 0", dev);
		return -EINVAL;
	}
	memcpy(&hcopy, handle, sizeof(hcopy)); /* any alignment */
	rc = connect_check_handle(net, h);
	if (rc)
		return rc;
	rc = connect_socket(h, &s, &cred);
	if (rc)
		return rc;
	if (s < 0) {
		*send_comm = NULL;
		return 0;
	}
	rc = rw_shm_comm_new(net, true, &c);
	if (rc)
		goto err_close_sock;
	c->d.ctl_fd = s;
	s = -1;
	c->peer_pid = cred.pid;
	c->conn_id = random64();
	c->d.nslots = net->nslots;
	c->d.slot_bytes = net->slot_bytes;
	c->d.seg_bytes = RW_SHM_SLOTS_OFFSET + (size_t)c->d.nslots * c->d.slot_bytes;
	set_peer_name(c);
	rc = rw_shm_memfd_create("ringway-shm", c->d.seg_bytes, &c->d.seg_fd);
	if (rc)
		goto err_free_comm;
	rc = rw_shm_map(c->d.seg_fd, c->d.seg_bytes, (void **)&c->d.seg);
	if (rc)
		goto err_free_comm;
	c->d.post = (struct rw_shm_post *)((char *)c->d.seg + RW_SHM_CTRL_BYTES);
	c->d.slots = (char *)c->d.seg + RW_SHM_SLOTS_OFFSET;
	rw_shm_seg_init(c->d.seg, h->nonce, c->conn_id, c->d.nslots, c->d.slot_bytes,
			c->d.seg_bytes);
	c->d.probe_word = random64();
	hello = (struct rw_shm_hello){
		.magic = RW_SHM_MAGIC,
		.version = RW_SHM_VERSION,
		.kind = RW_SHM_MSG_HELLO,
		.nonce = h->nonce,
		.conn_id = c->conn_id,
		.seg_bytes = c->d.seg_bytes,
		.probe_addr = (uint64_t)(uintptr_t)&c->d.probe_word,
		.probe_val = c->d.probe_word,
		.flags = base->cfg.shm_cma ? RW_SHM_FLAG_CMA : 0,
	};
	fds[0] = c->d.seg_fd;
	fds[1] = net->db_fd;
	rc = send_with_fds(c->d.ctl_fd, &hello, sizeof(hello), fds, 2);
	if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: connect: sending the hello to %s: %s",
			c->peer, strerror(-rc));
		goto err_free_comm;
	}
	c->d.pidfd = rw_shm_pidfd_open(c->peer_pid);
	c->connected_ns = rw_now_ns();
	rw_shm_comm_moved(c, c->connected_ns);
	RW_TRACE(RW_LOG_NET | RW_LOG_SHM, "shm: connected to %s", c->peer);
	*send_comm = &c->base;
	return 0;

err_free_comm:
	rw_shm_comm_close(c);
err_close_sock:
	if (s >= 0)
		rw_shm_close_fd(&s);
	return rc;
}

/* --- the sender reads the reply ------------------------------------------ */

static int reply_fail(struct rw_shm_comm *c, int rc, const char *what)
{
	rw_shm_conn_fail(c, rc, what);
	return rc;
}

int rw_shm_poll_reply(struct rw_shm_comm *c)
{
	struct rw_shm_net *net = rw_shm_comm_net(c);
	struct rw_shm_reply r;
	int fd = -1, nfds = 0, rc;
	ssize_t n;

	if (c->fail || c->d.accepted)
		return c->fail;
	n = recv_with_fds(c->d.ctl_fd, &r, sizeof(r), &fd, 1, &nfds);
	if (n == -EAGAIN) {
		if (rw_now_ns() - c->connected_ns >
		    (uint64_t)c->base.net->cfg.timeout_ms * 1000000ull)
			return reply_fail(c, -ETIMEDOUT,
					  "not accepted within RINGWAY_TIMEOUT_MS (is the peer "
					  "calling accept?)");
		return 0;
	}
	if (n <= 0) {
		char why[96];

		/* say what the socket said: an end of file is the peer's close,
		 * anything else an error of its own */
		if (n < 0)
			snprintf(why, sizeof(why), "reading the peer's reply failed: %s",
				 strerror((int)-n));
		rc = reply_fail(c, n < 0 ? (int)n : -ECONNREFUSED,
				n < 0 ? why : "the peer closed the rendezvous before accepting");
		goto out_close_fd;
	}
	if (n != (ssize_t)sizeof(r) || r.magic != RW_SHM_MAGIC || r.version != RW_SHM_VERSION ||
	    r.kind != RW_SHM_MSG_REPLY || r.conn_id != c->conn_id) {
		rc = reply_fail(c, -EPROTO, "malformed reply");
		goto out_close_fd;
	}
	if (r.status < 0) {
		rc = reply_fail(c, r.status, "the peer refused the connection");
		goto out_close_fd;
	}
	if (nfds != 1 || rw_shm_memfd_check(fd, RW_SHM_DB_BYTES, "doorbell", c->peer)) {
		rc = reply_fail(c, -EPROTO, "reply without a valid doorbell");
		goto out_close_fd;
	}
	rc = rw_shm_map(fd, RW_SHM_DB_BYTES, (void **)&c->d.peer_db);
	if (rc == 0 && rw_shm_db_check(c->d.peer_db, c->peer)) {
		rw_shm_unmap(c->d.peer_db, RW_SHM_DB_BYTES);
		c->d.peer_db = NULL;
		rc = -EPROTO;
	}
	if (rc) {
		rc = reply_fail(c, rc, "cannot map the peer's doorbell");
		goto out_close_fd;
	}
	c->d.cma = (r.flags & RW_SHM_FLAG_CMA) && net->base.cfg.shm_cma;
	c->d.coop = c->d.cma && c->peer_pid > 0 &&
		    rw_shm_cma_probe(c->peer_pid, r.probe_addr, r.probe_val);
	c->d.accepted = true;
	RW_INFO(RW_LOG_NET | RW_LOG_SHM,
		"shm: connection to %s accepted (%u slots x %u bytes; cross-memory attach %s)",
		c->peer, c->d.nslots, c->d.slot_bytes,
		c->d.coop  ? "both ways"
		: c->d.cma ? "receiver reads"
			   : "off");
	rc = 0;
	rw_shm_close_fd(&c->d.ctl_fd);
out_close_fd:
	rw_shm_close_fd(&fd);
	return rc;
}

/* --- accept -------------------------------------------------------------- */

/* Take the kernel's new connections into the pending list. */
static void accept_new(struct rw_shm_listen *l, struct rw_shm_net *net)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct rw_shm_pending *p;
		struct ucred cred = {0};
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				RW_WARN_ONCE(RW_LOG_NET | RW_LOG_SHM,
					     "shm: accept4 on listener %016llx: %s",
					     (unsigned long long)l->nonce, strerror(errno));
			return;
		}
		rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
		if (peer_cred(fd, &cred) != 0 || cred.uid != (uid_t)net->uid) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: listener %016llx: connection from pid %d uid %u refused "
				"(this process is uid %u)",
				(unsigned long long)l->nonce, (int)cred.pid, (unsigned)cred.uid,
				net->uid);
			rw_shm_close_fd(&fd);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			rw_shm_close_fd(&fd);
			return;
		}
		p->fd = fd;
		p->pid = cred.pid;
		p->since_ns = rw_now_ns();
		p->next = l->pending;
		l->pending = p;
	}
}

static int hello_check(const struct rw_shm_hello *h, ssize_t n, uint64_t nonce, pid_t pid)
{
	if (n != (ssize_t)sizeof(*h) || h->magic != RW_SHM_MAGIC || h->kind != RW_SHM_MSG_HELLO) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connection from pid %d refused: not an shm hello (%zd bytes)",
			(int)pid, n);
		return -EPROTO;
	}
	if (h->version != RW_SHM_VERSION) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connection from pid %d refused: it speaks version %u, this build %u",
			(int)pid, h->version, RW_SHM_VERSION);
		return -EPROTO;
	}
	if (h->nonce != nonce) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connection from pid %d refused: its handle is for listener %016llx, "
			"not %016llx",
			(int)pid, (unsigned long long)h->nonce, (unsigned long long)nonce);
		return -EPROTO;
	}
	if (h->seg_bytes < RW_SHM_SLOTS_OFFSET + 2 * 4096 || h->seg_bytes > RW_SHM_MAX_SEG_BYTES) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connection from pid %d refused: segment of %llu bytes", (int)pid,
			(unsigned long long)h->seg_bytes);
		return -EPROTO;
	}
	return 0;
}

/* Build the receive comm of a pending connection whose hello arrived. */
static int accept_one(struct rw_shm_listen *l, struct rw_shm_pending *p,
		      const struct rw_shm_hello *h, ssize_t n, int *fds, int nfds,
		      struct rw_shm_comm **out)
{
	struct rw_shm_net *net = rw_shm_net_from(l->base.net);
	struct rw_shm_reply r = {
		.magic = RW_SHM_MAGIC,
		.version = RW_SHM_VERSION,
		.kind = RW_SHM_MSG_REPLY,
	};
	struct rw_shm_seg_hdr hdr;
	struct rw_shm_comm *c = NULL;
	int rc;

	rc = hello_check(h, n, l->nonce, p->pid);
	if (rc)
		goto err_reply;
	r.conn_id = h->conn_id;
	if (nfds != 2) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: connection from pid %d refused: %d descriptors, expected 2",
			(int)p->pid, nfds);
		rc = -EPROTO;
		goto err_reply;
	}
	rc = rw_shm_comm_new(net, false, &c);
	if (rc)
		goto err_reply;
	c->peer_pid = p->pid;
	c->conn_id = h->conn_id;
	set_peer_name(c);
	rc = rw_shm_memfd_check(fds[0], h->seg_bytes, "segment", c->peer);
	if (rc)
		goto err_free_comm;
	c->d.seg_fd = fds[0];
	fds[0] = -1;
	c->d.seg_bytes = h->seg_bytes;
	rc = rw_shm_map(c->d.seg_fd, c->d.seg_bytes, (void **)&c->d.seg);
	if (rc)
		goto err_free_comm;
	memcpy(&hdr, &c->d.seg->hdr, sizeof(hdr)); /* the peer can still write it */
	rc = rw_shm_seg_check(&hdr, h, l->nonce, c->peer);
	if (rc)
		goto err_free_comm;
	c->d.nslots = hdr.nslots;
	c->d.slot_bytes = hdr.slot_bytes;
	c->d.post = (struct rw_shm_post *)((char *)c->d.seg + RW_SHM_CTRL_BYTES);
	c->d.slots = (char *)c->d.seg + RW_SHM_SLOTS_OFFSET;
	rc = rw_shm_memfd_check(fds[1], RW_SHM_DB_BYTES, "doorbell", c->peer);
	if (rc == 0)
		rc = rw_shm_map(fds[1], RW_SHM_DB_BYTES, (void **)&c->d.peer_db);
	if (rc == 0 && rw_shm_db_check(c->d.peer_db, c->peer))
		rc = -EPROTO;
	if (rc)
		goto err_free_comm;
	c->d.cma = net->base.cfg.shm_cma && (h->flags & RW_SHM_FLAG_CMA) && c->peer_pid > 0 &&
		   rw_shm_cma_probe(c->peer_pid, h->probe_addr, h->probe_val);
	c->d.probe_word = random64();
	r.flags = c->d.cma ? RW_SHM_FLAG_CMA : 0;
	r.probe_addr = (uint64_t)(uintptr_t)&c->d.probe_word;
	r.probe_val = c->d.probe_word;
	rc = send_with_fds(p->fd, &r, sizeof(r), &net->db_fd, 1);
	if (rc == -EPIPE || rc == -ECONNRESET) {
		/* The sender died after its hello (a crash of the segment's
		 * creator): hand the comm out failed, so the caller hears of it
		 * from its first request instead of waiting in accept. */
		rw_shm_conn_fail(c, -ECONNRESET, "the peer went away before the reply");
	} else if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: accept: replying to %s: %s", c->peer,
			strerror(-rc));
		goto err_free_comm;
	}
	c->d.pidfd = rw_shm_pidfd_open(c->peer_pid);
	c->connected_ns = rw_now_ns();
	rw_shm_comm_moved(c, c->connected_ns);
	__atomic_store_n(&c->d.seg->rx.accepted, 1, __ATOMIC_RELEASE);
	rw_shm_ring(c);
	RW_INFO(RW_LOG_NET | RW_LOG_SHM,
		"shm: accepted %s (%u slots x %u bytes; cross-memory attach %s)", c->peer,
		c->d.nslots, c->d.slot_bytes, c->d.cma ? "on" : "off");
	*out = c;
	return 0;

err_free_comm:
	rw_shm_comm_close(c);
err_reply:
	r.status = rc;
	send_with_fds(p->fd, &r, sizeof(r), NULL, 0); /* best effort: tell it why */
	return rc;
}

int rw_shm_accept(struct rw_net_listen *base, struct rw_net_comm **recv_comm)
{
	struct rw_shm_listen *l;
	struct rw_shm_net *net;
	uint64_t now, limit;
	struct rw_shm_pending **pp;
	int rc = listen_check(base, "accept", &l);

	if (rc)
		return rc;
	if (!recv_comm)
		return -EINVAL;
	net = rw_shm_net_from(base->net);
	limit = (uint64_t)base->net->cfg.timeout_ms * 1000000ull;
	pp = &l->pending;
	accept_new(l, net);
	now = rw_now_ns(); /* after accept_new: no pending entry is younger */
	while (*pp) {
		struct rw_shm_pending *p = *pp;
		struct rw_shm_hello h;
		struct rw_shm_comm *c = NULL;
		int fds[2] = {-1, -1}, nfds = 0;
		ssize_t n = recv_with_fds(p->fd, &h, sizeof(h), fds, 2, &nfds);

		if (n == -EAGAIN && now - p->since_ns <= limit) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		if (n == -EAGAIN) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: connection from pid %d sent no hello within %lld ms; dropped",
				(int)p->pid, (long long)base->net->cfg.timeout_ms);
		} else if (n == 0 || n == -ECONNRESET) {
			RW_INFO(RW_LOG_NET | RW_LOG_SHM,
				"shm: connection from pid %d closed before its hello", (int)p->pid);
		} else {
			accept_one(l, p, &h, n, fds, nfds, &c); /* refusals are logged */
		}
		for (int i = 0; i < 2; i++)
			rw_shm_close_fd(&fds[i]);
		pending_drop(p);
		if (c) {
			*recv_comm = &c->base;
			return 0;
		}
	}
	*recv_comm = NULL;
	return 0;
}

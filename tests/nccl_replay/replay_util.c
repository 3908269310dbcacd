/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two processes of a replay: control pipes, set-up of the plugin and of
 * connections the way NCCL's proxy does it, message contents, the seeded
 * RNG, and the shared log the parent checks NCCL's matching rule on.
 */
#include "support/rw_test.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replay.h"

/* --- children ---------------------------------------------------------------- */

static void make_pipe(int fds[2])
{
	assert_int_equal(pipe(fds), 0);
}

void rp_pair_init(struct rp_pair *p, int version, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->version = version;
	p->arg = arg;
	make_pipe(p->a_to_b);
	make_pipe(p->b_to_a);
	make_pipe(p->a_to_parent);
	make_pipe(p->b_to_parent);
	make_pipe(p->parent_to_a);
	make_pipe(p->parent_to_b);
}

struct child_start {
	rp_child_fn fn;
	struct rp_ctl ctl;
};

/* Every pipe end that is not the child's own is closed, so a dead peer
 * reads as EOF. */
static void child_main(void *arg)
{
	struct child_start *cs = arg;
	struct rp_pair *p = cs->ctl.pair;
	int keep[4] = {cs->ctl.in, cs->ctl.out, cs->ctl.parent_in, cs->ctl.parent_out};
	int *all[6] = {p->a_to_b,      p->b_to_a,      p->a_to_parent,
		       p->b_to_parent, p->parent_to_a, p->parent_to_b};

	signal(SIGPIPE, SIG_DFL); /* the parent ignores it; the plugin must not rely on that */
	for (int i = 0; i < 6; i++) {
		for (int e = 0; e < 2; e++) {
			int fd = all[i][e], mine = 0;

			for (int k = 0; k < 4; k++)
				mine |= keep[k] == fd;
			if (!mine)
				close(fd);
		}
	}
	cs->fn(&cs->ctl);
}

void rp_pair_spawn(struct rp_pair *p, rp_child_fn a, rp_child_fn b, pid_t pids[2])
{
	struct child_start ca = {
		.fn = a,
		.ctl = {.in = p->b_to_a[0],
			.out = p->a_to_b[1],
			.parent_in = p->parent_to_a[0],
			.parent_out = p->a_to_parent[1],
			.name = 'A',
			.pair = p},
	};
	struct child_start cb = {
		.fn = b,
		.ctl = {.in = p->a_to_b[0],
			.out = p->b_to_a[1],
			.parent_in = p->parent_to_b[0],
			.parent_out = p->b_to_parent[1],
			.name = 'B',
			.pair = p},
	};

	pids[0] = h_spawn(child_main, &ca);
	pids[1] = h_spawn(child_main, &cb);
	/* The parent keeps what it talks through. */
	close(p->a_to_b[0]), close(p->a_to_b[1]);
	close(p->b_to_a[0]), close(p->b_to_a[1]);
	close(p->a_to_parent[1]), close(p->b_to_parent[1]);
	close(p->parent_to_a[0]), close(p->parent_to_b[0]);
}

void rp_pair_close_parent(struct rp_pair *p)
{
	close(p->a_to_parent[0]), close(p->b_to_parent[0]);
	close(p->parent_to_a[1]), close(p->parent_to_b[1]);
}

void rp_pair_run(struct rp_pair *p, rp_child_fn a, rp_child_fn b, const char *what)
{
	pid_t pids[2];
	char msg[160];

	rp_pair_spawn(p, a, b, pids);
	rp_pair_close_parent(p);
	snprintf(msg, sizeof(msg), "%s over %s (seed %llu)", what, rp_transport_name,
		 (unsigned long long)rp_seed);
	h_wait_children(pids, 2, msg);
}

/* --- control messages -------------------------------------------------------------- */

void rp_ctl_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		H_CHECK(n > 0, "control write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static int ctl_read(int fd, void *buf, size_t len, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char *p = buf;
	size_t got = 0;

	if (poll(&pfd, 1, timeout_ms) != 1)
		return 0;
	while (got < len) {
		ssize_t n;

		/* Once the first byte is there the rest follows (writes of a
		 * message are smaller than PIPE_BUF or back to back). */
		if (got && poll(&pfd, 1, RP_STEP_TIMEOUT_MS) != 1)
			H_CHECK(0, "control read: message cut after %zu of %zu bytes", got, len);
		n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		H_CHECK(n > 0, "control read: %s",
			n == 0 ? "the other end is gone" : strerror(errno));
		got += (size_t)n;
	}
	return 1;
}

void rp_ctl_recv(int fd, void *buf, size_t len)
{
	H_CHECK(ctl_read(fd, buf, len, RP_STEP_TIMEOUT_MS), "control read: nothing in %d ms",
		RP_STEP_TIMEOUT_MS);
}

int rp_ctl_try_recv(int fd, void *buf, size_t len)
{
	return ctl_read(fd, buf, len, 0);
}

void rp_ctl_sync(struct rp_ctl *ctl)
{
	char c = ctl->name, peer;

	rp_ctl_send(ctl->out, &c, 1);
	rp_ctl_recv(ctl->in, &peer, 1);
	H_CHECK(peer != c, "sync: peer says '%c'", peer);
}

void rp_child_setup(int version, void **ctx, struct h_props *props)
{
	h_child_setup(version, ctx, props);
}

/* --- connections ----------------------------------------------------------------- */

/* NCCL hands the context its hints before connect and accept (net.cc
 * setNetAttrs) when the table has setNetAttr (v11+); unknown fields are
 * NCCL_NET_ATTR_UNDEF. */
static_assert(sizeof(ncclNetAttr_v11_t) == sizeof(ncclNetAttr_v12_t), "one attr layout");

static void set_net_attr(void *ctx)
{
	ncclNetAttr_v11_t a;
	int rc = ncclSuccess;

	memset(&a, 0xff, sizeof(a)); /* every field NCCL_NET_ATTR_UNDEF */
	if (h_version == 11 && ((const ncclNet_v11_t *)h_table())->setNetAttr)
		rc = ((const ncclNet_v11_t *)h_table())->setNetAttr(ctx, &a);
	if (h_version == 12 && ((const ncclNet_v12_t *)h_table())->setNetAttr)
		rc = ((const ncclNet_v12_t *)h_table())->setNetAttr(ctx, (ncclNetAttr_v12_t *)&a);
	H_CHECK(rc == ncclSuccess, "v%d setNetAttr: %d", h_version, rc);
}

void rp_link_open(struct rp_ctl *ctl, void *ctx, int nch, struct rp_link *l)
{
	char mine[RP_MAX_CH][NCCL_NET_HANDLE_MAXSIZE], theirs[RP_MAX_CH][NCCL_NET_HANDLE_MAXSIZE];
	void *listen[RP_MAX_CH];
	uint64_t deadline = rw_now_ms() + RP_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	int left;

	H_CHECK(nch >= 1 && nch <= RP_MAX_CH, "nch %d", nch);
	memset(l, 0, sizeof(*l));
	l->nch = nch;
	/* NCCL's handle buffer is not zeroed. */
	memset(mine, 0x5a, sizeof(mine));
	for (int c = 0; c < nch; c++)
		H_CHECK(h_listen(ctx, H_DEV, mine[c], &listen[c]) == ncclSuccess && listen[c],
			"v%d listen (channel %d)", h_version, c);
	rp_ctl_send(ctl->out, mine, (size_t)nch * sizeof(mine[0]));
	rp_ctl_recv(ctl->in, theirs, (size_t)nch * sizeof(theirs[0]));
	set_net_attr(ctx);
	/* One loop, as the proxy's: connect and accept each return NULL until
	 * done; the same handle memory is passed every time. */
	for (left = 2 * nch; left > 0;) {
		for (int c = 0; c < nch; c++) {
			if (!l->send[c]) {
				int rc = h_connect(ctx, H_DEV, theirs[c], &l->send[c]);

				H_CHECK(rc == ncclSuccess, "v%d connect (channel %d): %d (%s)",
					h_version, c, rc, h_log.last_warn);
				if (l->send[c])
					left--;
				else
					l->connect_nulls++;
			}
			if (!l->recv[c]) {
				int rc = h_accept(listen[c], &l->recv[c]);

				H_CHECK(rc == ncclSuccess, "v%d accept (channel %d): %d (%s)",
					h_version, c, rc, h_log.last_warn);
				if (l->recv[c])
					left--;
				else
					l->accept_nulls++;
			}
		}
		H_CHECK(rw_now_ms() < deadline, "v%d: %d of %d comms after %d ms", h_version,
			2 * nch - left, 2 * nch, RP_STEP_TIMEOUT_MS);
		if (left)
			h_backoff(&spins);
	}
	for (int c = 0; c < nch; c++)
		H_CHECK(h_close_listen(listen[c]) == ncclSuccess, "v%d closeListen", h_version);
}

void rp_link_close(struct rp_link *l)
{
	for (int c = 0; c < l->nch; c++) {
		H_CHECK(h_close_send(l->send[c]) == ncclSuccess, "v%d closeSend (channel %d): %s",
			h_version, c, h_log.last_warn);
		H_CHECK(h_close_recv(l->recv[c]) == ncclSuccess, "v%d closeRecv (channel %d): %s",
			h_version, c, h_log.last_warn);
	}
	memset(l, 0, sizeof(*l));
}

/* --- contents --------------------------------------------------------------------- */

uint64_t rp_msg_seed(uint32_t conn, int tag, uint32_t k)
{
	return ((uint64_t)conn << 44) ^ ((uint64_t)(uint32_t)tag << 32) ^ k ^ (rp_seed << 7);
}

void *rp_alloc(size_t len)
{
	return h_alloc(len ? len : 1);
}

/* splitmix64 */
uint64_t rp_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint32_t rp_rand_below(uint64_t *state, uint32_t n)
{
	return n ? (uint32_t)(rp_rand(state) % n) : 0;
}

/* --- the match log ---------------------------------------------------------------------- */

struct rp_match_log *rp_log_create(int n)
{
	void *p = mmap(NULL, (size_t)n * sizeof(struct rp_match_log), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

void rp_log_destroy(struct rp_match_log *logs, int n)
{
	munmap(logs, (size_t)n * sizeof(*logs));
}

static void describe_post(const struct rp_log_post *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < p->n && used + 8 < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "{", p->tags[i]);
	snprintf(buf + used, len - used, "}");
}

void rp_log_check(const struct rp_match_log *log, const char *what)
{
	static uint8_t matched[RP_LOG_MAX];
	uint32_t cursor[256] = {0}; /* per tag: the first post it may still match */
	uint32_t head = 0, buffers = 0;

	assert_true(log->nposts <= RP_LOG_MAX && log->naccepts <= RP_LOG_MAX);
	memset(matched, 0, sizeof(matched));
	for (uint32_t r = 0; r < log->nposts; r++)
		buffers += log->posts[r].n;
	for (uint32_t i = 0; i < log->naccepts; i++) {
		uint8_t t = (uint8_t)log->accepts[i];
		uint32_t r = cursor[t];
		char want[64], got[64];

		while (r < log->nposts && !memchr(log->posts[r].tags, (int8_t)t, log->posts[r].n))
			r++;
		if (r == log->nposts)
			fail_msg("%s (seed %llu): isend #%u (tag %d) was taken, but no receive "
				 "with that tag was left for it",
				 what, (unsigned long long)rp_seed, i, t);
		while (head < log->nposts && matched[head] == log->posts[head].n)
			head++;
		if (r != head) {
			describe_post(&log->posts[head], want, sizeof(want));
			describe_post(&log->posts[r], got, sizeof(got));
			fail_msg("%s (seed %llu): isend #%u (tag %d) was taken into receive #%u %s "
				 "while the oldest receive #%u %s still had %d free buffer(s): "
				 "NCCL's IB transport answers NULL until the oldest receive has a "
				 "free buffer with that tag",
				 what, (unsigned long long)rp_seed, i, t, r, got, head, want,
				 log->posts[head].n - matched[head]);
		}
		matched[r]++;
		cursor[t] = r + 1; /* a receive holds each tag once */
	}
	if (log->naccepts != buffers)
		fail_msg("%s (seed %llu): %u sends taken for %u receive buffers", what,
			 (unsigned long long)rp_seed, log->naccepts, buffers);
}

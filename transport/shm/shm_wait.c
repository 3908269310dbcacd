/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Waiting without burning a core, and noticing a peer that is gone.
 *
 * test() polls.  For the first RW_SHM_PAUSE_NS without progress in the
 * instance it just returns; then, up to spin_ns (RINGWAY_SHM_SPIN_US) from
 * the start of this idle spell, a test that finds nothing yields the core
 * (sched_yield) before returning, so a peer that shares it runs; after that
 * it sleeps on the futex word of our doorbell page for at most sleep_ns
 * (RW_SHM_SLEEP_MAX_NS, or less when other transports share the caller's
 * thread).  Every peer bumps that doorbell's seq after it publishes
 * something we may wait for (an atomic add, no system call) and wakes the
 * futex only when sleepers is non-zero.
 *
 * One doorbell serves every connection of the process, but a test looks at
 * one connection: the peer may have published on another one (the other
 * channel, the other direction) that nobody polled since.  So a wait sleeps
 * only when seq has not moved since the idle spell began (nothing was
 * published to this process meanwhile) and its own connection has nothing
 * either; the sleeper raises sleepers, reads seq, looks once more and sleeps
 * only while seq is unchanged, and the ringer publishes, bumps seq, then
 * reads sleepers before waking (all four seq_cst).  Without the first check two
 * processes each waiting on the other's unpolled connection slept until the
 * timeout: 30-40% of sleeps at 1-16 MiB, the engine's mid-size cliff.
 */
#include "transport/shm/shm_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/rw_log.h"

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

void rw_shm_ring(struct rw_shm_comm *c)
{
	struct rw_shm_doorbell *db = c->d.peer_db;

	if (!db)
		return;
	/* both seq_cst, as the sleeper's raise of sleepers and its read of
	 * seq are: in their single order, either we see the sleeper or it
	 * sees our bump.  No fence between (the bump is a locked add, a
	 * full barrier on x86; a fence after it cost 5% of a 2-rank 8-byte
	 * allreduce) */
	__atomic_add_fetch(&db->seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&db->sleepers, __ATOMIC_SEQ_CST) == 0)
		return;
	/* shared futex: the word lives in a memfd both processes map */
	futex(&db->seq, FUTEX_WAKE, INT32_MAX, NULL);
}

/* Sender: is a send of ours waiting for slots? */
static bool tx_stalled(const struct rw_shm_comm *c)
{
	for (const struct rw_shm_req *r = c->d.q_head; r; r = r->next) {
		if (!r->published)
			return true;
	}
	return false;
}

bool rw_shm_peek(struct rw_shm_comm *c)
{
	struct rw_shm_seg *s = c->d.seg;

	if (c->is_send) {
		struct rw_shm_data *d = &c->d;

		if (!d->accepted)
			return __atomic_load_n(&s->rx.accepted, __ATOMIC_ACQUIRE) != 0;
		if (__atomic_load_n(&s->rx.closed, __ATOMIC_ACQUIRE) != 0 ||
		    __atomic_load_n(&s->rx.failed, __ATOMIC_ACQUIRE) != 0)
			return true;
		/* a receive posted since we last looked: isend may take a send
		 * now (news once: seen_posted counts the receives noticed) */
		if (d->seen_posted <= d->post_cur && rw_shm_post_ready(c, d->post_cur)) {
			d->seen_posted = d->post_cur + 1;
			return true;
		}
		/* what progress reads only while it matters */
		if (tx_stalled(c) && __atomic_load_n(&s->rx.head, __ATOMIC_ACQUIRE) != d->seen_head)
			return true;
		return d->await_ack &&
		       (__atomic_load_n(&s->rx.acked, __ATOMIC_ACQUIRE) != d->seen_acked ||
			__atomic_load_n(&s->job.claim, __ATOMIC_ACQUIRE) != d->seen_claim);
	}
	if (c->d.rx == RW_SHM_RX_CMA || c->d.rx == RW_SHM_RX_CUDA || c->d.rx == RW_SHM_RX_UP ||
	    c->d.rx == RW_SHM_RX_DRAIN)
		return true; /* a copy is ours to drive or to poll: do not sleep */
	return rw_shm_slot_ready(c, c->d.head) ||
	       __atomic_load_n(&s->tx.closed, __ATOMIC_ACQUIRE) != 0 ||
	       __atomic_load_n(&s->tx.failed, __ATOMIC_ACQUIRE) != 0;
}

bool rw_shm_idle(struct rw_shm_comm *c, uint64_t now)
{
	struct rw_shm_net *net = rw_shm_comm_net(c);
	struct rw_shm_doorbell *db = net->db;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)net->sleep_ns};
	uint32_t seq;

	uint64_t last = __atomic_load_n(&net->last_progress_ns, __ATOMIC_RELAXED);
	uint64_t since;

	if (now < last || now - last < RW_SHM_PAUSE_NS)
		return false;	   /* the peer is likely mid-step: poll again at once */
	now = rw_shm_now(c, true); /* the poll loop's clock may lag a few polls */
	if (now < last || now - last < RW_SHM_PAUSE_NS)
		return false;
	/* a new idle spell: spin from now, and remember what was published */
	since = __atomic_load_n(&net->idle_since_ns, __ATOMIC_RELAXED);
	if (since <= last || since > now) {
		since = now;
		__atomic_store_n(&net->idle_since_ns, now, __ATOMIC_RELAXED);
		__atomic_store_n(&net->idle_seq, __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST),
				 __ATOMIC_RELAXED);
	}
	if (now - since < net->spin_ns || c->peer_pid == net->pid) {
		/* still spinning, but let a peer that shares our core run (a
		 * peer in this very process could not ring us awake: it is
		 * likely this thread) */
		sched_yield();
		return true;
	}
	__atomic_add_fetch(&db->sleepers, 1, __ATOMIC_SEQ_CST);
	seq = __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST);
	if (seq != __atomic_load_n(&net->idle_seq, __ATOMIC_RELAXED)) {
		/* published to us since the spell began, maybe on a connection
		 * nobody polled since: poll on, a new spell */
		__atomic_store_n(&net->idle_since_ns, now, __ATOMIC_RELAXED);
		__atomic_store_n(&net->idle_seq, seq, __ATOMIC_RELAXED);
	} else if (!rw_shm_peek(c)) {
		if (futex(&db->seq, FUTEX_WAIT, seq, &ts) < 0 && errno == ETIMEDOUT)
			rw_shm_stat_add(&rw_shm_stats_g.sleep_timeouts, 1);
		rw_shm_stat_add(&rw_shm_stats_g.sleeps, 1);
	}
	__atomic_sub_fetch(&db->sleepers, 1, __ATOMIC_SEQ_CST);
	return true;
}

int rw_shm_pidfd_open(pid_t pid)
{
	int fd;

	if (pid <= 0)
		return -1;
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		rw_shm_live_add(RW_SHM_LIVE_FDS, 1);
		return fd;
	}
	RW_INFO(RW_LOG_NET | RW_LOG_SHM,
		"shm: pidfd_open(%d): %s; watching the peer with kill(pid, 0)", (int)pid,
		strerror(errno));
#endif
	return -1;
}

bool rw_shm_peer_exited(struct rw_shm_comm *c)
{
	if (c->d.pidfd >= 0) {
		struct pollfd p = {.fd = c->d.pidfd, .events = POLLIN};

		return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
	}
	if (c->peer_pid > 0)
		return kill(c->peer_pid, 0) != 0 && errno == ESRCH;
	return false;
}

int rw_shm_check_peer(struct rw_shm_comm *c, uint64_t now, uint64_t since_ns, const char *what)
{
	uint64_t limit = (uint64_t)c->base.net->cfg.timeout_ms * 1000000ull;
	uint64_t last = RW_MAX(c->progress_ns, since_ns);
	char why[200];

	if (c->fail)
		return c->fail;
	if (now - c->last_check_ns < RW_SHM_CHECK_NS)
		return 0;
	c->last_check_ns = now;
	/* a receiver first drains what a departed sender left in the ring,
	 * and finishes a message whose bytes are all on their way up to the
	 * device (which needs nothing more of the sender) */
	if (c->is_send || (!rw_shm_slot_ready(c, c->d.head) && c->d.rx != RW_SHM_RX_DRAIN)) {
		if (__atomic_load_n(c->is_send ? &c->d.seg->rx.closed : &c->d.seg->tx.closed,
				    __ATOMIC_ACQUIRE)) {
			rw_shm_conn_fail(c, -ECONNRESET, "the peer closed its side");
			return c->fail;
		}
		if (rw_shm_peer_exited(c)) {
			rw_shm_conn_fail(c, -ECONNRESET, "the peer process exited");
			return c->fail;
		}
	}
	if (now > last && now - last > limit) {
		snprintf(why, sizeof(why), "nothing moved for %lld ms with %s pending",
			 (long long)c->base.net->cfg.timeout_ms, what);
		rw_shm_conn_fail(c, -ETIMEDOUT, why);
	}
	return c->fail;
}

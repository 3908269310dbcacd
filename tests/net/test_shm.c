/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same-host transport beyond the conformance suite: host identity and
 * handles, which path a message takes (slot, slot pipeline, cross-memory
 * attach, both processes copying one message), refusal of a peer that is
 * not who it should be (version, owner, mode, seals, nonce, uid, host).
 * The auto transport's choice and the properties are test_shm_auto.c.
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include "support/rw_test.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/rw_log.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_layout.h"

#include "net/test_shm_fixture.h"

/* --- identity and handles ---------------------------------------------- */

static void host_identity_and_handle(void **state)
{
	struct rw_shm_host_id a, b;
	struct rw_shm_handle h, bad;
	char raw[RW_NET_HANDLE_MAXSIZE + 1];
	struct rw_net_listen *l;
	struct rw_net_comm *c = NULL;
	struct sockaddr_un addr;
	socklen_t alen;

	(void)state;
	assert_int_equal(rw_shm_host_id_get(&a), 0);
	assert_int_equal(rw_shm_host_id_get(&b), 0);
	assert_true(rw_shm_host_id_equal(&a, &b));
	b.boot_id[3] ^= 1;
	assert_false(rw_shm_host_id_equal(&a, &b));
	b = a;
	b.netns++;
	assert_false(rw_shm_host_id_equal(&a, &b));
	b = a;
	b.host_hash ^= 1;
	assert_false(rw_shm_host_id_equal(&a, &b));

	assert_int_equal(rw_net_listen(net, 0, raw, &l), 0);
	memcpy(&h, raw, sizeof(h));
	assert_int_equal(rw_shm_handle_check(&h), 0);
	assert_int_equal(h.magic, RW_SHM_MAGIC);
	assert_int_equal(h.version, RW_SHM_VERSION);
	assert_true(rw_shm_host_id_equal(&h.host, &a));
	assert_int_equal(h.uid, geteuid());
	assert_int_equal(h.pid, getpid());
	assert_int_equal(rw_shm_handle_addr(&h, &addr, &alen), 0);
	assert_int_equal(addr.sun_path[0], '\0'); /* abstract: nothing on disk */
	assert_memory_equal(addr.sun_path + 1, RW_SHM_SOCK_PREFIX, strlen(RW_SHM_SOCK_PREFIX));

	rw_test_log_expect("shm: connect");
	bad = h;
	bad.version = RW_SHM_VERSION + 1;
	memcpy(raw + 1, &bad, sizeof(bad)); /* handles may sit at any address */
	assert_int_equal(rw_shm_handle_check(raw + 1), -EPROTO);
	assert_int_equal(rw_net_connect(net, 0, raw + 1, &c), -EPROTO);
	bad = h;
	bad.host.boot_id[0] ^= 0x80;
	memcpy(raw + 1, &bad, sizeof(bad));
	assert_int_equal(rw_net_connect(net, 0, raw + 1, &c), -EHOSTUNREACH);
	assert_int_equal(rw_test_log_count("on another host or network namespace"), 1);
	bad = h;
	bad.uid = geteuid() + 1;
	memcpy(raw + 1, &bad, sizeof(bad));
	assert_int_equal(rw_net_connect(net, 0, raw + 1, &c), -EPERM);
	bad = h;
	bad.nonce ^= 1; /* nobody listens there */
	memcpy(raw + 1, &bad, sizeof(bad));
	assert_int_equal(rw_net_connect(net, 0, raw + 1, &c), -ECONNREFUSED);
	assert_null(c);
	assert_int_equal(rw_net_close_listen(l), 0);
}

/* --- paths ---------------------------------------------------------------- */

static void paths_follow_the_parameters(void **state)
{
	static const char *const env_small[] = {
		"RINGWAY_SHM_SLOT_BYTES",
		"16K",
		"RINGWAY_SHM_NSLOTS",
		"4",
		"RINGWAY_SHM_CMA_MIN",
		"64K",
		NULL,
	};
	static const char *const env_nocma[] = {
		"RINGWAY_SHM_SLOT_BYTES",
		"16K",
		"RINGWAY_SHM_NSLOTS",
		"4",
		"RINGWAY_SHM_CMA",
		"0",
		NULL,
	};
	struct rw_shm_stats s0, s1;
	struct pair p;

	(void)state;
	rw_net_destroy(net);
	assert_int_equal(make_net(env_small), 0);
	pair_open(&p);
	rw_shm_stats_get(&s0);
	exchange(&p, 100);	   /* one slot */
	exchange(&p, 40 * 1024);   /* three slots: > payload, < RINGWAY_SHM_CMA_MIN */
	exchange(&p, 3 * MIB + 5); /* cross-memory attach, several chunks */
	rw_shm_stats_get(&s1);
	assert_int_equal(s1.msgs_inline - s0.msgs_inline, 1);
	assert_int_equal(s1.msgs_frag - s0.msgs_frag, 1);
	assert_int_equal(s1.msgs_cma - s0.msgs_cma, 1);
	/* one process plays both sides: every byte was copied exactly once */
	assert_int_equal((s1.cma_read - s0.cma_read) + (s1.cma_written - s0.cma_written),
			 3 * MIB + 5);
	pair_close(&p);
	rw_net_destroy(net);

	assert_int_equal(make_net(env_nocma), 0);
	pair_open(&p);
	rw_shm_stats_get(&s0);
	exchange(&p, 3 * MIB + 5); /* RINGWAY_SHM_CMA=0: the slot pipeline */
	rw_shm_stats_get(&s1);
	assert_int_equal(s1.msgs_cma - s0.msgs_cma, 0);
	assert_int_equal(s1.msgs_frag - s0.msgs_frag, 1);
	assert_int_equal(s1.cma_read - s0.cma_read, 0);
	pair_close(&p);
}

/* Child: receive `count` messages of `size` bytes, check them, report how
 * many bytes this process read by cross-memory attach. */
enum { COOP_COUNT = 6, COOP_SIZE = 24 * MIB };

static void child_coop_receiver(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	struct rw_net_req *req[COOP_COUNT];
	struct rw_shm_stats st0, st;
	char *buf = malloc((size_t)COOP_COUNT * COOP_SIZE), *want = malloc(COOP_SIZE);
	long bad = 0;

	CHILD_CHECK(buf && want);
	rw_shm_stats_get(&st0); /* counters are inherited from the parent */
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	CHILD_CHECK(rw_net_reg_mr(r, buf, (size_t)COOP_COUNT * COOP_SIZE, RW_PTR_HOST, &mr) == 0);
	for (int i = 0; i < COOP_COUNT; i++)
		CHILD_CHECK(shm_recv(r, buf + (size_t)i * COOP_SIZE, COOP_SIZE, i, mr, &req[i]) ==
			    0);
	for (int i = 0; i < COOP_COUNT; i++) {
		size_t got = 0;

		CHILD_CHECK(shm_wait_req(req[i], &got, SHM_WAIT_MS) == 0 && got == COOP_SIZE);
		rw_test_fill(want, COOP_SIZE, (uint64_t)i);
		bad += memcmp(want, buf + (size_t)i * COOP_SIZE, COOP_SIZE) != 0;
	}
	rw_shm_stats_get(&st);
	st.cma_read -= st0.cma_read;
	CHILD_CHECK(shm_pipe_write(k->from[1], &bad, sizeof(bad)) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], &st.cma_read, sizeof(st.cma_read)) == 0);
	rw_net_dereg_mr(r, mr);
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	_exit(0);
}

static void two_processes_copy_one_message(void **state)
{
	struct shm_child k;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req[COOP_COUNT];
	struct rw_shm_stats s0, s1;
	char *buf = malloc((size_t)COOP_COUNT * COOP_SIZE);
	long bad = -1, child_read = -1, written;

	(void)state;
	assert_non_null(buf);
	for (int i = 0; i < COOP_COUNT; i++)
		rw_test_fill(buf + (size_t)i * COOP_SIZE, COOP_SIZE, (uint64_t)i);
	assert_true(shm_child_start(&k, child_coop_receiver) > 0);
	assert_int_equal(shm_pipe_read(k.from[0], k.handle, sizeof(k.handle)), 0);
	assert_int_equal(shm_wait_connect(net, k.handle, &s), 0);
	assert_int_equal(rw_net_reg_mr(s, buf, (size_t)COOP_COUNT * COOP_SIZE, RW_PTR_HOST, &mr),
			 0);
	rw_shm_stats_get(&s0);
	for (int i = 0; i < COOP_COUNT; i++)
		assert_int_equal(
			shm_send(s, buf + (size_t)i * COOP_SIZE, COOP_SIZE, i, mr, &req[i]), 0);
	for (int i = 0; i < COOP_COUNT; i++)
		assert_int_equal(shm_wait_req(req[i], NULL, SHM_WAIT_MS), 0);
	rw_shm_stats_get(&s1);
	assert_int_equal(shm_pipe_read(k.from[0], &bad, sizeof(bad)), 0);
	assert_int_equal(shm_pipe_read(k.from[0], &child_read, sizeof(child_read)), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(s1.msgs_cma - s0.msgs_cma, COOP_COUNT);
	/* each chunk went exactly once: read by the receiver or written by us */
	written = s1.cma_written - s0.cma_written;
	assert_int_equal(child_read + written, (long)COOP_COUNT * COOP_SIZE);
	print_message("      receiver read %ld MiB, sender wrote %ld MiB\n", child_read / MIB,
		      written / MIB);
	assert_int_equal(rw_net_dereg_mr(s, mr), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_true(WIFEXITED(shm_child_reap(&k, false)));
	free(buf);
}

/* Child: post a receive and wait on it, while nobody sends, until a futex
 * sleep has run to its end (the counter), report the counters, then take
 * the message the parent sends only after that. */
static void child_sleeper(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	struct rw_shm_stats st0, st;
	uint64_t end;
	char buf[64];
	long got[2];
	size_t size = 0;
	int done = 0;

	rw_shm_stats_get(&st0); /* counters are inherited from the parent */
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	CHILD_CHECK(rw_net_reg_mr(r, buf, sizeof(buf), RW_PTR_HOST, &mr) == 0);
	CHILD_CHECK(shm_recv(r, buf, sizeof(buf), 3, mr, &req) == 0);
	end = rw_now_ms() + SHM_WAIT_MS;
	do {
		CHILD_CHECK(rw_net_test(req, &done, &size) == 0 && !done);
		rw_shm_stats_get(&st);
		CHILD_CHECK(rw_now_ms() < end);
	} while (st.sleep_timeouts == st0.sleep_timeouts);
	got[0] = st.sleeps - st0.sleeps;
	got[1] = st.sleep_timeouts - st0.sleep_timeouts;
	CHILD_CHECK(shm_pipe_write(k->from[1], got, sizeof(got)) == 0);
	CHILD_CHECK(shm_wait_req(req, &size, SHM_WAIT_MS) == 0 && size == 5);
	CHILD_CHECK(memcmp(buf, "hello", 5) == 0);
	rw_net_dereg_mr(r, mr);
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	_exit(0);
}

/* A receiver that waits with nothing coming sleeps on its doorbell and
 * counts the sleeps that timed out; the message that comes later still
 * lands. */
static void idle_waits_sleep_and_count_timeouts(void **state)
{
	struct shm_child k;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char msg[] = "hello";
	long got[2] = {-1, -1};

	(void)state;
	assert_true(shm_child_start(&k, child_sleeper) > 0);
	assert_int_equal(shm_pipe_read(k.from[0], k.handle, sizeof(k.handle)), 0);
	assert_int_equal(shm_wait_connect(net, k.handle, &s), 0);
	/* silent until the child has slept to a timeout */
	assert_int_equal(shm_pipe_read(k.from[0], got, sizeof(got)), 0);
	assert_true(got[1] >= 1);
	assert_true(got[0] >= got[1]);
	assert_int_equal(rw_net_reg_mr(s, msg, sizeof(msg), RW_PTR_HOST, &mr), 0);
	assert_int_equal(shm_send(s, msg, 5, 3, mr, &req), 0);
	assert_int_equal(shm_wait_req(req, NULL, SHM_WAIT_MS), 0);
	assert_int_equal(rw_net_dereg_mr(s, mr), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_true(WIFEXITED(shm_child_reap(&k, false)));
}

/* Child: echo every message back, ECHO_ROUNDS times, sizes alternating
 * between 1 byte and ECHO_BIG (slot and cross-memory attach on the same
 * connection, as netperf's acks and echoes are); exits 0 only if no
 * warning was logged. */
enum { ECHO_ROUNDS = 40, ECHO_BIG = 24 * MIB };

static size_t echo_size(int i)
{
	return i % 3 == 2 ? 1 : ECHO_BIG - (size_t)i;
}

static void child_echo(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r, *s;
	struct rw_net_mr *rm, *sm;
	char *buf = malloc(ECHO_BIG);

	CHILD_CHECK(buf);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_pipe_read(k->to[0], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(rw_net_reg_mr(r, buf, ECHO_BIG, RW_PTR_HOST, &rm) == 0);
	CHILD_CHECK(rw_net_reg_mr(s, buf, ECHO_BIG, RW_PTR_HOST, &sm) == 0);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		struct rw_net_req *req;
		size_t got = 0;

		CHILD_CHECK(shm_recv(r, buf, ECHO_BIG, 0, rm, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == echo_size(i));
		CHILD_CHECK(shm_send(s, buf, got, 0, sm, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
	}
	CHILD_CHECK(rw_test_log_unexpected() == 0);
	_exit(0);
}

static void echo_of_mixed_sizes(void **state)
{
	char mine[RW_NET_HANDLE_MAXSIZE];
	struct shm_child k;
	struct rw_net_listen *l;
	struct rw_net_comm *s, *r;
	struct rw_net_mr *sm, *rm;
	char *out = malloc(ECHO_BIG), *in = malloc(ECHO_BIG);

	(void)state;
	assert_non_null(out);
	assert_non_null(in);
	assert_true(shm_child_start(&k, child_echo) > 0);
	assert_int_equal(shm_pipe_read(k.from[0], k.handle, sizeof(k.handle)), 0);
	assert_int_equal(rw_net_listen(net, 0, mine, &l), 0);
	assert_int_equal(shm_pipe_write(k.to[1], mine, sizeof(mine)), 0);
	assert_int_equal(shm_wait_connect(net, k.handle, &s), 0);
	assert_int_equal(shm_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_reg_mr(s, out, ECHO_BIG, RW_PTR_HOST, &sm), 0);
	assert_int_equal(rw_net_reg_mr(r, in, ECHO_BIG, RW_PTR_HOST, &rm), 0);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		struct rw_net_req *sreq, *rreq;
		size_t got = 0;

		rw_test_fill(out, echo_size(i), (uint64_t)i);
		/* as netperf's ping-pong: the receive for the echo is posted only
		 * after the send, so the child's echo goes out before its
		 * receive is known, and may be copied and acked before the child
		 * learns of that receive */
		assert_int_equal(shm_send(s, out, echo_size(i), 0, sm, &sreq), 0);
		assert_int_equal(shm_wait_req(sreq, NULL, SHM_WAIT_MS), 0);
		assert_int_equal(shm_recv(r, in, ECHO_BIG, 0, rm, &rreq), 0);
		assert_int_equal(shm_wait_req(rreq, &got, SHM_WAIT_MS), 0);
		assert_int_equal(got, echo_size(i));
		assert_memory_equal(in, out, got);
	}
	assert_true(WIFEXITED(shm_child_reap(&k, false)) && k.pid > 0);
	assert_int_equal(rw_net_dereg_mr(s, sm), 0);
	assert_int_equal(rw_net_dereg_mr(r, rm), 0);
	rw_test_log_expect("pid "); /* the child is gone: closing may say so */
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	free(out);
	free(in);
}

/* --- refusals ------------------------------------------------------------- */

enum fake_flaw {
	FLAW_NONE,
	FLAW_HELLO_VERSION,
	FLAW_SEG_VERSION,
	FLAW_NONCE,
	FLAW_MODE,
	FLAW_OWNER,
	FLAW_UNSEALED,
	FLAW_SIZE,
};

/* Connect by hand to the listener of h, with one thing wrong; the reply's
 * status (0 accepted, -errno refused). */
static int fake_connect(const struct rw_shm_handle *h, enum fake_flaw flaw, struct rw_net_listen *l,
			struct rw_net_comm **accepted)
{
	const size_t seg_bytes = RW_SHM_SLOTS_OFFSET + 2 * 4096;
	struct rw_shm_hello hello = {
		.magic = RW_SHM_MAGIC,
		.version = RW_SHM_VERSION,
		.kind = RW_SHM_MSG_HELLO,
		.nonce = h->nonce,
		.conn_id = 0x1234,
		.seg_bytes = seg_bytes,
	};
	struct rw_shm_reply reply = {.status = 1};
	struct rw_shm_seg *seg;
	struct rw_shm_doorbell *db;
	struct sockaddr_un addr;
	socklen_t alen;
	int fds[2], s;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl = {0};
	struct iovec iov = {&hello, sizeof(hello)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;

	fds[0] = memfd_create("fake-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fds[1] = memfd_create("fake-db", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(ftruncate(fds[0], (off_t)seg_bytes), 0);
	assert_int_equal(ftruncate(fds[1], RW_SHM_DB_BYTES), 0);
	assert_int_equal(fchmod(fds[0], flaw == FLAW_MODE ? 0644 : 0600), 0);
	assert_int_equal(fchmod(fds[1], 0600), 0);
	if (flaw == FLAW_OWNER)
		assert_int_equal(fchown(fds[0], 65534, 65534), 0);
	if (flaw != FLAW_UNSEALED)
		assert_int_equal(
			fcntl(fds[0], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	assert_int_equal(fcntl(fds[1], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	seg = mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	db = mmap(NULL, RW_SHM_DB_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	assert_true(seg != MAP_FAILED && db != MAP_FAILED);
	*seg = (struct rw_shm_seg){.hdr = {.magic = RW_SHM_SEG_MAGIC,
					   .version = flaw == FLAW_SEG_VERSION ? 9 : RW_SHM_VERSION,
					   .ctrl_bytes = RW_SHM_CTRL_BYTES,
					   .nonce = h->nonce,
					   .conn_id = 0x1234,
					   .creator_uid = flaw == FLAW_OWNER ? 65534 : geteuid(),
					   .creator_pid = getpid(),
					   .nslots = 2,
					   .slot_bytes = 4096,
					   .seg_bytes = seg_bytes}};
	*db = (struct rw_shm_doorbell){.magic = RW_SHM_DB_MAGIC,
				       .version = RW_SHM_VERSION,
				       .owner_uid = geteuid(),
				       .owner_pid = getpid()};
	if (flaw == FLAW_HELLO_VERSION)
		hello.version = RW_SHM_VERSION + 1;
	if (flaw == FLAW_NONCE)
		hello.nonce ^= 0x55;
	if (flaw == FLAW_SIZE)
		hello.seg_bytes += 4096;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	assert_int_equal(rw_shm_handle_addr(h, &addr, &alen), 0);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&addr, alen), 0);
	assert_int_equal(sendmsg(s, &mh, 0), (ssize_t)sizeof(hello));
	*accepted = NULL;
	while (reply.status == 1) {
		struct pollfd p = {.fd = s, .events = POLLIN};

		if (!*accepted)
			assert_int_equal(rw_net_accept(l, accepted), 0);
		if (poll(&p, 1, 1) == 1)
			assert_true(recv(s, &reply, sizeof(reply), 0) >=
				    (ssize_t)sizeof(reply.magic));
		assert_true(rw_now_ms() < end);
	}
	munmap(seg, seg_bytes);
	munmap(db, RW_SHM_DB_BYTES);
	close(fds[0]);
	close(fds[1]);
	close(s);
	return reply.status;
}

static void refuses_a_peer_that_is_not_right(void **state)
{
	static const struct {
		enum fake_flaw flaw;
		const char *warning;
	} cases[] = {
		{FLAW_HELLO_VERSION, "it speaks version"},
		{FLAW_SEG_VERSION, "another layout version"},
		{FLAW_NONCE, "its handle is for listener"},
		{FLAW_MODE, "mode 0644"},
		{FLAW_OWNER, "owner uid 65534"},
		{FLAW_UNSEALED, "not sealed against shrinking"},
		{FLAW_SIZE, "announced"},
	};
	char raw[RW_NET_HANDLE_MAXSIZE];
	struct rw_shm_handle h;
	struct rw_net_listen *l;
	struct rw_net_comm *c;
	struct pair p;

	(void)state;
	assert_int_equal(rw_net_listen(net, 0, raw, &l), 0);
	memcpy(&h, raw, sizeof(h));
	/* the fake itself is good enough to be accepted */
	assert_int_equal(fake_connect(&h, FLAW_NONE, l, &c), 0);
	assert_non_null(c);
	assert_int_equal(rw_net_close_recv(c), 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		int before;

		if (cases[i].flaw == FLAW_OWNER && geteuid() != 0) {
			print_message("      (owner case skipped: needs root to chown)\n");
			continue;
		}
		rw_test_log_reset();
		rw_test_log_expect(cases[i].warning);
		before = rw_test_log_count(cases[i].warning);
		assert_true(fake_connect(&h, cases[i].flaw, l, &c) < 0);
		assert_null(c);
		if (rw_test_log_count(cases[i].warning) != before + 1)
			fail_msg("case %zu: no warning containing '%s'", i, cases[i].warning);
		RW_TEST_ASSERT_LOG_CLEAN();
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	/* and the transport is none the worse */
	pair_open(&p);
	exchange(&p, 1000);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(host_identity_and_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(paths_follow_the_parameters, setup, teardown),
		cmocka_unit_test_setup_teardown(two_processes_copy_one_message, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_waits_sleep_and_count_timeouts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(echo_of_mixed_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(refuses_a_peer_that_is_not_right, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

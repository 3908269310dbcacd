/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same-host transport when things go wrong or go quiet:
 *  - no segment is left behind, in /dev/shm or mapped in the survivor,
 *    after a normal exit, a killed peer, or a creator that crashed before
 *    the connection was accepted;
 *  - a peer killed in the middle of a message (slot pipeline, and a
 *    cross-memory-attach copy) fails the receive within the timeout, and
 *    the warning names it;
 *  - a rank that waits with nothing arriving sleeps (futex) instead of
 *    burning a core, and still wakes for the message;
 *  - the window (rw_net_window) is one memory on both sides, and check()
 *    names a peer that died while nothing but the window was in use.
 */
#include "support/rw_test.h"

#include <dirent.h>
#include <time.h>

#include "common/rw_log.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"

#define MIB (1024 * 1024)
#define BIG (64 * MIB)

static struct rw_config cfg;
static struct rw_net *net;

static const char *const env_slots[] = {
	"RINGWAY_TIMEOUT_MS",
	"5000",
	"RINGWAY_SHM_CMA",
	"0",
	"RINGWAY_SHM_SLOT_BYTES",
	"16K",
	"RINGWAY_SHM_NSLOTS",
	"4",
	NULL,
};
static const char *const env_cma[] = {"RINGWAY_TIMEOUT_MS", "5000", NULL};
static const char *const env_idle[] = {"RINGWAY_TIMEOUT_MS", "10000", NULL};
static const char *const env_spin[] = {
	"RINGWAY_TIMEOUT_MS", "10000", "RINGWAY_SHM_SPIN_US", "10000000", NULL,
};

static int setup_env(const char *const *env)
{
	rw_test_log_reset();
	if (rw_test_config(&cfg, env) != 0)
		return -1;
	return rw_shm_create(&cfg, &net);
}

static int setup_slots(void **state)
{
	(void)state;
	return setup_env(env_slots);
}

static int setup_cma(void **state)
{
	(void)state;
	return setup_env(env_cma);
}

static int setup_idle(void **state)
{
	(void)state;
	return setup_env(env_idle);
}

static int setup_spin(void **state)
{
	(void)state;
	return setup_env(env_spin);
}

static int teardown(void **state)
{
	(void)state;
	rw_net_destroy(net);
	net = NULL;
	if (rw_shm_live_total())
		fail_msg("%ld shm objects still alive after destroy", rw_shm_live_total());
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

/* --- what a segment leaves behind ---------------------------------------- */

/* Entries of /dev/shm (names joined), to compare before and after. */
static void dev_shm_list(char *out, size_t len)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	size_t used = 0;

	out[0] = '\0';
	if (!d)
		return;
	while ((e = readdir(d)) != NULL && used + 2 < len) {
		int w = snprintf(out + used, len - used, "%s/", e->d_name);

		used += w > 0 ? (size_t)w : 0;
	}
	closedir(d);
}

/* Connection segments mapped by this process (not the doorbell). */
static int segments_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/memfd:ringway-shm (deleted)") != NULL;
	fclose(f);
	return n;
}

/* Child: connect, send `size` bytes into the parent's posted receive (the
 * slots fill), say so, then either exit normally after the parent received
 * it, or hang until killed. */
static void child_sender_common(struct shm_child *k, size_t size, bool finish)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char *buf = malloc(size), c = 's';

	CHILD_CHECK(buf);
	memset(buf, 0x5a, size);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(rw_net_reg_mr(s, buf, size, RW_PTR_HOST, &mr) == 0);
	CHILD_CHECK(shm_send(s, buf, size, 0, mr, &req) == 0);
	if (finish) {
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		CHILD_CHECK(shm_pipe_write(k->from[1], &c, 1) == 0);
		rw_net_dereg_mr(s, mr);
		rw_net_close_send(s);
		rw_net_destroy(n);
		_exit(0);
	}
	/* let the reply in and the first slots (or the descriptor) out */
	for (uint64_t end = rw_now_ms() + 300; rw_now_ms() < end;) {
		int done = 0;

		CHILD_CHECK(rw_net_test(req, &done, NULL) == 0);
	}
	CHILD_CHECK(shm_pipe_write(k->from[1], &c, 1) == 0);
	pause(); /* killed here, mid-message */
	_exit(0);
}

static void child_sends_and_exits(struct shm_child *k)
{
	child_sender_common(k, 3 * MIB, true);
}

static void child_sends_and_hangs(struct shm_child *k)
{
	child_sender_common(k, BIG, false);
}

/* Child: connect (creating the segment), then crash before any accept. */
static void child_connects_and_crashes(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	char c = 'c';

	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], &c, 1) == 0);
	signal(SIGABRT, SIG_DFL);
	abort();
}

/* Child: connect, write a pattern then a stamp into the window, say so,
 * hang until killed. */
static void child_writes_the_window(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	size_t bytes = 0;
	char c = 'w';
	void *win;

	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(rw_net_window(s, &win, &bytes) == 0 && bytes >= 4096);
	memset((char *)win + 64, 0x5a, bytes - 64);
	__atomic_store_n((uint64_t *)win, 42, __ATOMIC_RELEASE);
	CHILD_CHECK(rw_net_check(s) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], &c, 1) == 0);
	pause(); /* killed here */
	_exit(0);
}

static void window_is_shared_and_check_names_a_dead_peer(void **state)
{
	struct shm_child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	size_t bytes = 0;
	char c, name[32];
	const char *win;
	uint64_t t0, el;
	void *addr;
	int rc;

	(void)state;
	rw_test_log_expect("pid ");
	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	assert_true(shm_child_start(&k, child_writes_the_window) > 0);
	assert_int_equal(shm_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_window(r, &addr, &bytes), 0);
	assert_true(bytes >= 4096);
	win = addr;
	assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
	assert_int_equal(__atomic_load_n((const uint64_t *)win, __ATOMIC_ACQUIRE), 42);
	for (size_t i = 64; i < bytes; i++)
		if (win[i] != 0x5a)
			fail_msg("window byte %zu is %#x", i, (unsigned)(unsigned char)win[i]);
	assert_int_equal(rw_net_check(r), 0);
	shm_child_reap(&k, true);
	t0 = rw_now_ms();
	while ((rc = rw_net_check(r)) == 0 && rw_now_ms() - t0 < (uint64_t)cfg.timeout_ms)
		usleep(100);
	el = rw_now_ms() - t0;
	assert_int_equal(rc, -ECONNRESET);
	print_message("      noticed after %llu ms\n", (unsigned long long)el);
	snprintf(name, sizeof(name), "pid %d", (int)k.pid);
	assert_true(rw_test_log_count(name) >= 1);	/* the warning names the peer */
	assert_int_equal(rw_net_check(r), -ECONNRESET); /* and stays so */
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
}

static void no_segment_left_behind(void **state)
{
	static void (*const peers[])(struct shm_child *) = {
		child_sends_and_exits,
		child_sends_and_hangs,
		child_connects_and_crashes,
	};
	char before[8192], after[8192];
	struct rw_net_listen *l;

	(void)state;
	rw_test_log_expect("pid "); /* the killed and crashed peers are reported */
	dev_shm_list(before, sizeof(before));
	assert_int_equal(segments_mapped(), 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(peers); i++) {
		struct shm_child k;
		struct rw_net_comm *r;
		struct rw_net_mr *mr;
		struct rw_net_req *req;
		char *buf = malloc(BIG), c;
		int rc;

		assert_non_null(buf);
		assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
		assert_true(shm_child_start(&k, peers[i]) > 0);
		if (peers[i] == child_connects_and_crashes) {
			/* the creator is gone before we even look at its hello */
			assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
			shm_child_reap(&k, false);
		}
		assert_int_equal(shm_wait_accept(l, &r), 0);
		assert_int_equal(segments_mapped(), 1);
		assert_int_equal(rw_net_reg_mr(r, buf, BIG, RW_PTR_HOST, &mr), 0);
		/* a send is taken only into a posted receive: post it first */
		rc = shm_recv(r, buf, BIG, 0, mr, &req);
		if (peers[i] == child_sends_and_hangs) /* it stopped: slots full */
			assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
		if (peers[i] == child_connects_and_crashes) {
			/* handed out failed: the first request says the peer is gone */
			if (rc == 0)
				rc = shm_wait_req(req, NULL, SHM_WAIT_MS);
		} else {
			assert_int_equal(rc, 0);
			rc = shm_wait_req(req, NULL,
					  peers[i] == child_sends_and_hangs ? 200 : SHM_WAIT_MS);
		}
		if (peers[i] == child_sends_and_exits) {
			assert_int_equal(rc, 0);
			assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
			assert_true(WIFEXITED(shm_child_reap(&k, false)));
		} else if (peers[i] == child_sends_and_hangs) {
			assert_int_equal(rc, -ETIMEDOUT); /* our bound, not the transport's */
			shm_child_reap(&k, true);
			assert_int_equal(shm_wait_req(req, NULL, SHM_WAIT_MS), -ECONNRESET);
		} else {
			assert_int_equal(rc, -ECONNRESET);
		}
		assert_int_equal(rw_net_dereg_mr(r, mr), 0);
		assert_int_equal(rw_net_close_recv(r), 0);
		assert_int_equal(rw_net_close_listen(l), 0);
		/* the survivor holds nothing, and no name was ever in /dev/shm */
		assert_int_equal(segments_mapped(), 0);
		dev_shm_list(after, sizeof(after));
		assert_string_equal(before, after);
		free(buf);
	}
}

/* --- a peer killed mid-message --------------------------------------------- */

static void killed_mid_message(bool cma)
{
	struct rw_shm_stats s0, s1;
	struct shm_child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char *buf = malloc(BIG), c, name[32];
	uint64_t t0, el;
	int rc;

	assert_non_null(buf);
	rw_test_log_expect("pid ");
	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	assert_true(shm_child_start(&k, child_sends_and_hangs) > 0);
	assert_int_equal(shm_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_reg_mr(r, buf, BIG, RW_PTR_HOST, &mr), 0);
	/* the receive first (a send is taken only into one), then the sender
	 * puts out what it can and stops */
	assert_int_equal(shm_recv(r, buf, BIG, 0, mr, &req), 0);
	assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
	/* take what the sender put out (a few slots, or the first chunks of
	 * the copy: at most 8 MiB a call), then the sender dies half way */
	rw_shm_stats_get(&s0);
	for (uint64_t end = rw_now_ms() + SHM_WAIT_MS;;) {
		int done = 0;

		rw_shm_stats_get(&s1);
		if (!cma || s1.cma_read > s0.cma_read)
			break;
		assert_int_equal(rw_net_test(req, &done, NULL), 0);
		assert_false(done);
		assert_true(rw_now_ms() < end);
	}
	shm_child_reap(&k, true);
	t0 = rw_now_ms();
	rc = shm_wait_req(req, NULL, cfg.timeout_ms + 3000);
	el = rw_now_ms() - t0;
	assert_int_equal(rc, -ECONNRESET);
	if (el > (uint64_t)cfg.timeout_ms)
		fail_msg("the dead peer was noticed after %llu ms (RINGWAY_TIMEOUT_MS=%lld)",
			 (unsigned long long)el, (long long)cfg.timeout_ms);
	print_message("      noticed after %llu ms\n", (unsigned long long)el);
	snprintf(name, sizeof(name), "pid %d", (int)k.pid);
	assert_true(rw_test_log_count(name) >= 1); /* the warning names the peer */
	assert_int_equal(rw_net_dereg_mr(r, mr), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	free(buf);
}

static void killed_during_slot_pipeline(void **state)
{
	struct rw_shm_stats s0, s1;

	(void)state;
	rw_shm_stats_get(&s0);
	killed_mid_message(false);
	rw_shm_stats_get(&s1);
	assert_int_equal(s1.cma_read, s0.cma_read); /* RINGWAY_SHM_CMA=0 */
}

static void killed_during_cma_copy(void **state)
{
	struct rw_shm_stats s0, s1;

	(void)state;
	rw_shm_stats_get(&s0);
	killed_mid_message(true);
	rw_shm_stats_get(&s1);
	/* we were reading the dead process's memory, and had not finished */
	assert_true(s1.cma_read > s0.cma_read);
	assert_true(s1.cma_read - s0.cma_read < BIG);
}

/* --- idle ranks sleep -------------------------------------------------------- */

#define IDLE_MS 1200

/* Child: connect, say so, stay quiet for IDLE_MS, then send 64 bytes. */
static void child_quiet_then_sends(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char buf[64] = "wake up", c = 'c';

	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(rw_net_reg_mr(s, buf, sizeof(buf), RW_PTR_HOST, &mr) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], &c, 1) == 0);
	usleep(IDLE_MS * 1000);
	CHILD_CHECK(shm_send(s, buf, sizeof(buf), 0, mr, &req) == 0);
	CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
	rw_net_close_send(s);
	rw_net_destroy(n);
	_exit(0);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait for the quiet child's message; the fraction of a core it cost. */
static double wait_for_quiet_peer(long *sleeps)
{
	struct shm_child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	struct rw_shm_stats s0, s1;
	char buf[64] = {0}, c;
	double c0, w0, wall;
	size_t got = 0;

	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	assert_true(shm_child_start(&k, child_quiet_then_sends) > 0);
	assert_int_equal(shm_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_reg_mr(r, buf, sizeof(buf), RW_PTR_HOST, &mr), 0);
	assert_int_equal(shm_pipe_read(k.from[0], &c, 1), 0);
	assert_int_equal(shm_recv(r, buf, sizeof(buf), 0, mr, &req), 0);
	rw_shm_stats_get(&s0);
	c0 = cpu_s();
	w0 = (double)rw_now_ns() * 1e-9;
	assert_int_equal(shm_wait_req(req, &got, SHM_WAIT_MS), 0);
	wall = (double)rw_now_ns() * 1e-9 - w0;
	c0 = cpu_s() - c0;
	rw_shm_stats_get(&s1);
	assert_int_equal(got, sizeof(buf));
	assert_string_equal(buf, "wake up");
	assert_true(wall > IDLE_MS * 0.5e-3);
	*sleeps = s1.sleeps - s0.sleeps;
	print_message("      waited %.2f s using %.3f s of CPU (%ld sleeps)\n", wall, c0, *sleeps);
	assert_true(WIFEXITED(shm_child_reap(&k, false)));
	assert_int_equal(rw_net_dereg_mr(r, mr), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	return c0 / wall;
}

static void idle_waiter_sleeps(void **state)
{
	long sleeps = 0;
	double share;

	(void)state;
	share = wait_for_quiet_peer(&sleeps);
	assert_true(sleeps > 100); /* it slept, in bounded naps */
	if (share > 0.2)
		fail_msg("an idle wait cost %.0f%% of a core", share * 100);
}

/* The control: with a spin longer than the wait it never sleeps. */
static void spinning_waiter_never_sleeps(void **state)
{
	long sleeps = -1;

	(void)state;
	wait_for_quiet_peer(&sleeps);
	assert_int_equal(sleeps, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_segment_left_behind, setup_slots, teardown),
		cmocka_unit_test_setup_teardown(killed_during_slot_pipeline, setup_slots, teardown),
		cmocka_unit_test_setup_teardown(killed_during_cma_copy, setup_cma, teardown),
		cmocka_unit_test_setup_teardown(window_is_shared_and_check_names_a_dead_peer,
						setup_cma, teardown),
		cmocka_unit_test_setup_teardown(idle_waiter_sleeps, setup_idle, teardown),
		cmocka_unit_test_setup_teardown(spinning_waiter_never_sleeps, setup_spin, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

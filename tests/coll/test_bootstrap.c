/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rw_comm_init() rendezvous (coll/bootstrap.h) against strangers and
 * careless callers: forked ranks on loopback meet while this process plays
 * the stranger (silent connections, forged hellos); wrong, missing and right
 * job secrets; nranks out of bounds fails at once and closes nothing it did
 * not open.  Every wait is bounded; no timing is asserted (a rank that
 * stalls is killed at a generous bound and fails the test).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/bootstrap.h"
#include "coll/world.h"
#include "common/rw_common.h"
#include "include/ringway.h"
#include "support/rw_test.h"

#define BOUND_S 60 /* a rank still running after this has stalled */

/* A listening socket on 127.0.0.1, any port. */
static int bind_lo(int *port)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	assert_int_equal(listen(fd, 1024), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &len), 0);
	*port = ntohs(in.sin_port);
	return fd;
}

/* A connection to addr:port (host order), or -errno. */
static int connect_to(uint32_t addr, int port)
{
	struct sockaddr_in in = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(addr),
				 .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* Read len bytes within 30 s; 0 or -1. */
static int read_within(int fd, void *buf, size_t len)
{
	uint64_t deadline = rw_now_ms() + 30000;
	char *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (rw_now_ms() > deadline || poll(&pfd, 1, 100) < 0)
			return -1;
		if (!pfd.revents)
			continue;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* --- ranks in children --------------------------------------------------- */

struct rank_args {
	const char *root; /* "127.0.0.1:port[#key]" */
	int lfd;	  /* rank 0's listening socket, or -1 */
	int nranks, rank;
	int timeout_ms;	    /* 0: 60 s */
	const char *secret; /* RINGWAY_SECRET's part */
	const char *expect; /* a warning this rank must log (and may) */
};

/* Exit codes of a rank: 0 joined and exchanged; the errno of a failed
 * create; 200 wrong data; 250 an unexpected warning; 251 the expected
 * warning missing. */
static pid_t spawn(const struct rank_args *a)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	struct rw_bootstrap *b = NULL;
	int all[16], mine = 1000 + a->rank, rc;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid)
		return pid;
	for (size_t i = 0; i < RW_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
	rw_test_log_reset();
	if (a->expect)
		rw_test_log_expect(a->expect);
	if (a->rank != 0)
		rw_test_log_expect("joining rank 0 at"); /* a refused rank's one warning */
	rc = rw_bootstrap_create(a->root, a->rank == 0 ? a->lfd : -1, a->nranks, a->rank,
				 a->timeout_ms ? a->timeout_ms : 60000, a->secret, &b);
	if (rc)
		_exit(-rc);
	rc = rw_bootstrap_allgather(b, &mine, all, sizeof(int));
	for (int r = 0; !rc && r < a->nranks; r++)
		if (all[r] != 1000 + r)
			_exit(200);
	if (!rc)
		rc = rw_bootstrap_barrier(b);
	rw_bootstrap_destroy(b);
	if (rc)
		_exit(-rc);
	if (a->expect && rw_test_log_count(a->expect) == 0)
		_exit(251);
	if (rw_test_log_unexpected()) {
		fprintf(stderr, "rank %d: unexpected warning: %s\n", a->rank,
			rw_test_log_last_unexpected());
		_exit(250);
	}
	_exit(0);
}

/* The rank's exit code; killed (-1) when it runs past BOUND_S. */
static int reap(pid_t pid)
{
	uint64_t deadline = rw_now_ms() + BOUND_S * 1000;
	int st;

	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (rw_now_ms() > deadline) {
			fprintf(stderr, "pid %d still running after %d s: killed\n", (int)pid,
				BOUND_S);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A job: rank 0 on a socket of ours, the others on root.  root gets the
 * address; rank 0 is started, then the caller plays, then more ranks. */
struct job {
	char root[96];
	int port;
	pid_t pid0;
};

static void job_start(struct job *j, int nranks, const char *key, const char *secret,
		      const char *expect)
{
	int lfd = bind_lo(&j->port);
	struct rank_args a = {.root = j->root,
			      .lfd = lfd,
			      .nranks = nranks,
			      .rank = 0,
			      .secret = secret,
			      .expect = expect};

	snprintf(j->root, sizeof(j->root), "127.0.0.1:%d%s%s", j->port, key ? "#" : "",
		 key ? key : "");
	j->pid0 = spawn(&a);
	close(lfd); /* rank 0's now: the port goes when it closes it */
}

static pid_t job_rank(const struct job *j, int nranks, int rank, const char *root,
		      const char *secret)
{
	struct rank_args a = {.root = root ? root : j->root,
			      .lfd = -1,
			      .nranks = nranks,
			      .rank = rank,
			      .secret = secret,
			      .timeout_ms = 20000};

	return spawn(&a);
}

/* --- pure parts ---------------------------------------------------------- */

static void siphash_reference_vectors(void **state)
{
	/* SipHash-2-4, key 00..0f, message 00..(n-1) (the paper's vectors) */
	const uint64_t k[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
	uint8_t m[16];

	(void)state;
	for (int i = 0; i < 16; i++)
		m[i] = (uint8_t)i;
	assert_true(rw_bootstrap_siphash(k, m, 0) == 0x726fdb47dd0e0e31ull);
	assert_true(rw_bootstrap_siphash(k, m, 1) == 0x74f839c593dc67fdull);
	assert_true(rw_bootstrap_siphash(k, m, 15) == 0xa129ca6149be45e5ull);
}

static void keys_and_rendezvous_strings(void **state)
{
	struct rw_boot_key a, b, none;
	char host[64];
	int port;

	(void)state;
	assert_int_equal(rw_bootstrap_key("h:1#s3cret", NULL, &a), 0);
	assert_int_equal(rw_bootstrap_key("h:1", "s3cret", &b), 0);
	assert_true(a.set && b.set && a.k[0] == b.k[0] && a.k[1] == b.k[1]);
	assert_int_equal(rw_bootstrap_key("h:1#other", "s3cret", &b), 0); /* the string wins */
	assert_true(b.set && (a.k[0] != b.k[0] || a.k[1] != b.k[1]));
	assert_int_equal(rw_bootstrap_key("h:1", NULL, &none), 0);
	assert_false(none.set);
	assert_int_equal(rw_bootstrap_key("h:1", "", &none), 0);
	assert_false(none.set);
	assert_int_equal(rw_bootstrap_key("h:1#", "s3cret", &none), -EINVAL);

	assert_int_equal(rw_bootstrap_parse("node0:29500#k#e:y", host, sizeof(host), &port), 0);
	assert_string_equal(host, "node0");
	assert_int_equal(port, 29500);
	assert_int_equal(rw_bootstrap_parse("[::1]:7#k", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 7);
	assert_int_equal(rw_bootstrap_parse("node0#k:1", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(rw_bootstrap_parse("node0:0", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(rw_bootstrap_parse("node0:65536", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(rw_bootstrap_parse(":1", host, sizeof(host), &port), -EINVAL);
}

static void hello_checks(void **state)
{
	struct rw_boot_key key, other, none = {0};
	struct rw_boot_hello h = {.magic = RW_BOOT_MAGIC,
				  .version = RW_BOOT_VERSION,
				  .rank = 1,
				  .nranks = 2,
				  .nonce = 77};
	struct rw_boot_challenge c = {.magic = RW_BOOT_MAGIC, .version = RW_BOOT_VERSION};
	struct rw_boot_welcome w = {.magic = RW_BOOT_MAGIC};

	(void)state;
	assert_int_equal(rw_bootstrap_key(NULL, "k", &key), 0);
	assert_int_equal(rw_bootstrap_key(NULL, "K", &other), 0);
	assert_int_equal(rw_bootstrap_check_hello(&none, 5, 2, &h), 0);
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 2, &h), -EACCES);
	h.mac = rw_bootstrap_mac(&key, RW_BOOT_LABEL_PEER, 5, h.nonce, 1, 2);
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 2, &h), 0);
	assert_int_equal(rw_bootstrap_check_hello(&key, 6, 2, &h), -EACCES);   /* a replay */
	assert_int_equal(rw_bootstrap_check_hello(&other, 5, 2, &h), -EACCES); /* another key */
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 3, &h), -EPROTO);
	h.rank = 2; /* the hash covers the rank */
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 2, &h), -EACCES);
	assert_int_equal(rw_bootstrap_check_hello(&none, 5, 2, &h), -EPROTO);
	h.rank = 1;
	h.version = 1;
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 2, &h), -EPROTONOSUPPORT);
	h.magic = 0;
	assert_int_equal(rw_bootstrap_check_hello(&key, 5, 2, &h), -EBADMSG);

	assert_int_equal(rw_bootstrap_check_challenge(&none, &c), 0);
	assert_int_equal(rw_bootstrap_check_challenge(&key, &c), -EACCES);
	c.flags = RW_BOOT_F_SECRET;
	assert_int_equal(rw_bootstrap_check_challenge(&key, &c), 0);
	assert_int_equal(rw_bootstrap_check_challenge(&none, &c), -EACCES);

	h = (struct rw_boot_hello){.rank = 1, .nranks = 2, .nonce = 9};
	assert_int_equal(rw_bootstrap_check_welcome(&key, 5, &h, &w), -EACCES); /* no proof */
	w.mac = rw_bootstrap_mac(&key, RW_BOOT_LABEL_PEER, 5, 9, 1, 0);		/* wrong label */
	assert_int_equal(rw_bootstrap_check_welcome(&key, 5, &h, &w), -EACCES);
	w.mac = rw_bootstrap_mac(&key, RW_BOOT_LABEL_ROOT, 5, 9, 1, 0);
	assert_int_equal(rw_bootstrap_check_welcome(&key, 5, &h, &w), 0);
	w.status = -EEXIST;
	assert_int_equal(rw_bootstrap_check_welcome(&key, 5, &h, &w), -EEXIST);
	w.status = -ENOENT; /* not a refusal rank 0 makes */
	assert_int_equal(rw_bootstrap_check_welcome(&key, 5, &h, &w), -EPROTO);
}

/* --- careless callers ---------------------------------------------------- */

static void assert_fds_open(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		assert_true(fcntl(fds[i], F_GETFD) >= 0);
}

static void nranks_out_of_bounds_fails_at_once(void **state)
{
	static const int bad[] = {INT_MAX, 0, -1, RW_MAX_RANKS + 1, INT_MIN};
	struct rw_world_args wa = {.rank = 0, .root = "127.0.0.1:1", .listen_fd = -1};
	struct rw_comm *w = NULL;
	rw_comm_t *c = (rw_comm_t *)0x1;
	struct rw_bootstrap *b = NULL;
	int fds[5] = {0, 1, 2}, port;

	(void)state;
	rw_test_log_reset();
	rw_test_log_expect("bad arguments");
	rw_test_log_expect("empty key");
	assert_int_equal(pipe(fds + 3), 0); /* fds nobody may close */
	for (size_t i = 0; i < RW_ARRAY_SIZE(bad); i++) {
		int lfd = bind_lo(&port);

		assert_int_equal(rw_comm_init(&c, bad[i], 0, "127.0.0.1:1"), -EINVAL);
		assert_ptr_equal(c, (rw_comm_t *)0x1);
		wa.nranks = bad[i];
		assert_int_equal(rw_world_create(&wa, &w), -EINVAL);
		assert_null(w);
		/* the listening socket given is the call's: closed on failure */
		assert_int_equal(rw_bootstrap_create(NULL, lfd, bad[i], 0, 1000, NULL, &b),
				 -EINVAL);
		assert_null(b);
		assert_int_equal(fcntl(lfd, F_GETFD), -1);
		assert_fds_open(fds, 5);
	}
	/* the bound itself is allowed: what fails is the empty "#key" (the
	 * library logs into its own copy of the logger: counted here only
	 * for the direct call) */
	assert_int_equal(rw_comm_init(&c, RW_MAX_RANKS, 1, "127.0.0.1:1#"), -EINVAL);
	assert_int_equal(rw_bootstrap_create("127.0.0.1:1#", -1, RW_MAX_RANKS, 1, 1000, NULL, &b),
			 -EINVAL);
	assert_null(b);
	assert_fds_open(fds, 5);
	close(fds[3]);
	close(fds[4]);
	assert_int_equal(rw_test_log_count("empty key"), 1);
	assert_int_equal(rw_test_log_count("bad arguments"), 2 * (int)RW_ARRAY_SIZE(bad));
	RW_TEST_ASSERT_LOG_CLEAN();
}

/* --- strangers ----------------------------------------------------------- */

static void silent_connections_do_not_stall_rank_0(void **state)
{
	int silent[RW_BOOT_PENDING_MAX + 36], n = (int)RW_ARRAY_SIZE(silent);
	struct job j;
	pid_t p1, p2;

	(void)state;
	job_start(&j, 3, NULL, NULL, NULL);
	/* more than rank 0 holds at once, all before the real ranks; rank 0's
	 * timeout (60 s) is longer than the bound the ranks are reaped at */
	for (int i = 0; i < n; i++)
		assert_true((silent[i] = connect_to(INADDR_LOOPBACK, j.port)) >= 0);
	p1 = job_rank(&j, 3, 1, NULL, NULL);
	p2 = job_rank(&j, 3, 2, NULL, NULL);
	assert_int_equal(reap(p1), 0);
	assert_int_equal(reap(p2), 0);
	assert_int_equal(reap(j.pid0), 0);
	for (int i = 0; i < n; i++)
		close(silent[i]);
}

/* Connect as a stranger, read rank 0's challenge, send h (its mac as
 * given) and return rank 0's answer. */
static struct rw_boot_welcome forge(const struct job *j, struct rw_boot_hello h)
{
	struct rw_boot_challenge c;
	struct rw_boot_welcome w = {0};
	int fd = connect_to(INADDR_LOOPBACK, j->port);

	assert_true(fd >= 0);
	assert_int_equal(read_within(fd, &c, sizeof(c)), 0);
	assert_true(c.magic == RW_BOOT_MAGIC);
	assert_int_equal(send(fd, &h, sizeof(h), MSG_NOSIGNAL), (ssize_t)sizeof(h));
	assert_int_equal(read_within(fd, &w, sizeof(w)), 0);
	close(fd);
	return w;
}

static void forged_hello_does_not_take_rank_1(void **state)
{
	struct rw_boot_hello h = {.magic = RW_BOOT_MAGIC,
				  .version = RW_BOOT_VERSION,
				  .rank = 1,
				  .nranks = 2,
				  .nonce = 1,
				  .mac = 0x5eed};
	struct job j;

	(void)state;
	job_start(&j, 2, "s3cret", NULL, "did not prove the job secret");
	assert_int_equal(forge(&j, h).status, -EACCES);
	h.mac = 0;
	assert_int_equal(forge(&j, h).status, -EACCES);
	assert_int_equal(reap(job_rank(&j, 2, 1, NULL, NULL)), 0);
	assert_int_equal(reap(j.pid0), 0);
}

static void forged_nranks_does_not_abort(void **state)
{
	struct rw_boot_hello h = {
		.magic = RW_BOOT_MAGIC, .version = RW_BOOT_VERSION, .rank = 1, .nranks = 3};
	struct {
		uint32_t magic, version;
		int32_t rank, nranks;
	} v1 = {RW_BOOT_MAGIC, 1, 1, 2}; /* the old hello */
	struct job j;
	int fd;

	(void)state;
	job_start(&j, 2, NULL, NULL, "refused");
	assert_int_equal(forge(&j, h).status, -EPROTO);
	h.nranks = 2;
	h.rank = 2;
	assert_int_equal(forge(&j, h).status, -EPROTO);
	fd = connect_to(INADDR_LOOPBACK, j.port);
	assert_true(fd >= 0);
	assert_int_equal(send(fd, &v1, sizeof(v1), MSG_NOSIGNAL), (ssize_t)sizeof(v1));
	assert_int_equal(reap(job_rank(&j, 2, 1, NULL, NULL)), 0);
	assert_int_equal(reap(j.pid0), 0);
	close(fd);
}

/* --- secrets ------------------------------------------------------------- */

static void wrong_or_missing_secret_is_refused(void **state)
{
	char wrong[128];
	struct job j;

	(void)state;
	job_start(&j, 2, "s3cret", NULL, "did not prove the job secret");
	snprintf(wrong, sizeof(wrong), "127.0.0.1:%d#guess", j.port);
	assert_int_equal(reap(job_rank(&j, 2, 1, wrong, NULL)), EACCES);
	snprintf(wrong, sizeof(wrong), "127.0.0.1:%d", j.port);
	assert_int_equal(reap(job_rank(&j, 2, 1, wrong, NULL)), EACCES); /* none */
	assert_int_equal(reap(job_rank(&j, 2, 1, NULL, NULL)), 0);
	assert_int_equal(reap(j.pid0), 0);

	/* a rank with a secret does not join a rank 0 without one */
	job_start(&j, 2, NULL, NULL, NULL);
	assert_int_equal(reap(job_rank(&j, 2, 1, NULL, "s3cret")), EACCES);
	assert_int_equal(reap(job_rank(&j, 2, 1, NULL, NULL)), 0);
	assert_int_equal(reap(j.pid0), 0);
}

static void right_secret_joins(void **state)
{
	char plain[96];
	struct job j;
	pid_t p[3];

	(void)state;
	/* RINGWAY_SECRET's way on some ranks, "#key" on others */
	job_start(&j, 4, NULL, "k-123", NULL);
	snprintf(plain, sizeof(plain), "127.0.0.1:%d#k-123", j.port);
	p[0] = job_rank(&j, 4, 1, plain, NULL);
	p[1] = job_rank(&j, 4, 2, NULL, "k-123");
	p[2] = job_rank(&j, 4, 3, plain, "ignored: the string wins");
	for (int i = 0; i < 3; i++)
		assert_int_equal(reap(p[i]), 0);
	assert_int_equal(reap(j.pid0), 0);
}

/* The first of p[0], p[1] to end: its index; *code its exit code. */
static int reap_first(const pid_t p[2], int *code)
{
	uint64_t deadline = rw_now_ms() + BOUND_S * 1000;
	int st;

	while (rw_now_ms() < deadline) {
		for (int i = 0; i < 2; i++) {
			if (waitpid(p[i], &st, WNOHANG) == p[i]) {
				*code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				return i;
			}
		}
		usleep(10000);
	}
	return -1;
}

static void second_claim_on_a_rank_is_refused(void **state)
{
	struct job j;
	pid_t p[2], p2;
	int first, code = -1;

	(void)state;
	/* both hold the secret: one gets rank 1, the other is refused while
	 * rank 0 still waits for rank 2; the job goes on */
	job_start(&j, 3, "k", NULL, "already joined");
	p[0] = job_rank(&j, 3, 1, NULL, NULL);
	p[1] = job_rank(&j, 3, 1, NULL, NULL);
	first = reap_first(p, &code);
	assert_true(first >= 0);
	assert_int_equal(code, EPROTO);
	p2 = job_rank(&j, 3, 2, NULL, NULL);
	assert_int_equal(reap(p[1 - first]), 0);
	assert_int_equal(reap(p2), 0);
	assert_int_equal(reap(j.pid0), 0);
}

static void proven_rank_with_another_nranks_fails_rank_0(void **state)
{
	struct job j;

	(void)state;
	job_start(&j, 2, "k", NULL, "holds the job secret but says it is rank 1 of 3");
	assert_int_equal(reap(job_rank(&j, 3, 1, NULL, NULL)), EPROTO);
	assert_int_equal(reap(j.pid0), EPROTO);
}

/* Rank 0 binds the address it is given, not every address. */
static void rank_0_listens_on_the_named_address(void **state)
{
	struct rank_args a = {.lfd = -1, .nranks = 2, .rank = 0};
	char root[64];
	int port, fd = -1, other;
	pid_t p0 = -1;

	(void)state;
	/* a port nobody holds: bound, then let go (a rare race: retried) */
	for (int tries = 0; tries < 5 && fd < 0; tries++) {
		close(bind_lo(&port));
		snprintf(root, sizeof(root), "127.0.0.1:%d", port);
		a.root = root;
		p0 = spawn(&a);
		for (int i = 0; i < 1000 && fd < 0; i++) {
			fd = connect_to(INADDR_LOOPBACK, port);
			if (fd < 0 && waitpid(p0, NULL, WNOHANG) == p0)
				break; /* lost the port */
			if (fd < 0)
				usleep(10000);
		}
		if (fd < 0) {
			kill(p0, SIGKILL);
			waitpid(p0, NULL, 0);
		}
	}
	assert_true(fd >= 0);
	other = connect_to(INADDR_LOOPBACK + 1, port); /* 127.0.0.2: lo, another address */
	if (other == -ENETUNREACH || other == -EADDRNOTAVAIL) {
		fprintf(stderr, "127.0.0.2 unreachable here: that half not checked\n");
	} else {
		assert_int_equal(other, -ECONNREFUSED);
	}
	close(fd);
	{
		struct rank_args r1 = {.root = root, .lfd = -1, .nranks = 2, .rank = 1};

		assert_int_equal(reap(spawn(&r1)), 0);
	}
	assert_int_equal(reap(p0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(siphash_reference_vectors),
		cmocka_unit_test(keys_and_rendezvous_strings),
		cmocka_unit_test(hello_checks),
		cmocka_unit_test(nranks_out_of_bounds_fails_at_once),
		cmocka_unit_test(silent_connections_do_not_stall_rank_0),
		cmocka_unit_test(forged_hello_does_not_take_rank_1),
		cmocka_unit_test(forged_nranks_does_not_abort),
		cmocka_unit_test(wrong_or_missing_secret_is_refused),
		cmocka_unit_test(right_secret_joins),
		cmocka_unit_test(second_claim_on_a_rank_is_refused),
		cmocka_unit_test(proven_rank_with_another_nranks_fails_rank_0),
		cmocka_unit_test(rank_0_listens_on_the_named_address),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

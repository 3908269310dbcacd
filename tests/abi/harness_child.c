/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Harness helpers: forking and reaping children with a deadline, the
 * payload pattern, property checks, and the polling loops every test uses
 * around connect / accept / isend / irecv / test.
 */
#include "support/rw_test.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_build.h"
#include "harness.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* --- children ---------------------------------------------------------------- */

static void child_exit_ok(void)
{
#ifdef __SANITIZE_ADDRESS__
	__lsan_do_leak_check(); /* exits non-zero on a leak */
#endif
	fflush(NULL);
	_exit(0);
}

/*
 * cmocka turns SIGSEGV and friends into a failed test and a longjmp back to
 * its runner; in a child that would run the rest of the suite there.  A
 * child that crashes must die of the signal instead.
 */
static void child_default_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};

	for (size_t i = 0; i < RW_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
}

pid_t h_spawn(h_child_fn fn, void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_default_signals();
		fn(arg);
		child_exit_ok();
	}
	return pid;
}

/* Wait for n children; the first failure (or the deadline) kills the rest. */
void h_wait_children(const pid_t *pids, int n, const char *what)
{
	int status[8], left = n;
	uint64_t deadline = rw_now_ms() + H_CHILD_TIMEOUT_S * 1000ull;
	int failed = 0;

	for (int i = 0; i < n; i++)
		status[i] = -1;
	while (left > 0) {
		for (int i = 0; i < n; i++) {
			int st;

			if (status[i] != -1 || waitpid(pids[i], &st, WNOHANG) != pids[i])
				continue;
			status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			left--;
			failed |= status[i] != 0;
		}
		if (left > 0 && (failed || rw_now_ms() > deadline)) {
			for (int i = 0; i < n; i++)
				if (status[i] == -1)
					kill(pids[i], SIGKILL);
			for (int i = 0; i < n; i++) {
				if (status[i] == -1) {
					waitpid(pids[i], NULL, 0);
					status[i] = failed ? 254 : 255;
					left--;
				}
			}
		}
		if (left > 0)
			usleep(2000);
	}
	for (int i = 0; i < n; i++)
		if (status[i] != 0)
			fail_msg("%s: child %d exited %d%s", what, i, status[i],
				 status[i] == 255   ? " (killed at the deadline)"
				 : status[i] == 254 ? " (killed: another child failed)"
				 : status[i] > 128  ? " (died of a signal)"
						    : "");
}

void h_run_one(h_child_fn fn, void *arg, const char *what)
{
	pid_t pid = h_spawn(fn, arg);

	h_wait_children(&pid, 1, what);
}

void h_run_version(h_child_fn fn, void **state, const char *name)
{
	int version = *(const int *)*state;
	char what[64];

	snprintf(what, sizeof(what), "v%d %s", version, name);
	h_run_one(fn, &version, what);
}

/* --- helpers for children ---------------------------------------------------- */

/* Back off after a while so two spinning processes leave the transport's
 * helper threads some CPU on a small machine. */
void h_backoff(unsigned *spins)
{
	if (++*spins < 64)
		sched_yield();
	else
		usleep(50);
}

/* A random-access pattern: byte i of stream `seed`. */
static uint64_t pattern_word(uint64_t seed, uint64_t i)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + i + 1;

	x ^= x >> 30, x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27, x *= 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

void h_pattern_fill(unsigned char *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8);

		memcpy(p + i, &w, RW_MIN(8, len - i));
	}
}

/* Offset of the first wrong byte, or -1. */
long h_pattern_check(const unsigned char *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8);

		if (memcmp(p + i, &w, RW_MIN(8, len - i)) != 0)
			return (long)i;
	}
	return -1;
}

void h_check_props(int dev, const struct h_props *p)
{
	int v = p->version;

	H_CHECK(p->name && p->name[0] && strlen(p->name) < 256, "v%d dev %d: name", v, dev);
	H_CHECK(!p->pci_path || p->pci_path[0] == '/', "v%d %s: pciPath '%s'", v, p->name,
		p->pci_path);
	H_CHECK(p->ptr_support & NCCL_PTR_HOST, "v%d %s: ptrSupport %#x lacks HOST", v, p->name,
		p->ptr_support);
	H_CHECK(!(p->ptr_support & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF)),
		"v%d %s: ptrSupport %#x", v, p->name, p->ptr_support);
	H_CHECK(p->speed > 0, "v%d %s: speed %d", v, p->name, p->speed);
	H_CHECK(p->port >= 0 && p->port < 65536, "v%d %s: port %d", v, p->name, p->port);
	H_CHECK(p->latency >= 0 && p->latency < 1e6, "v%d %s: latency %f", v, p->name,
		(double)p->latency);
	H_CHECK(p->max_comms >= 1, "v%d %s: maxComms %d", v, p->name, p->max_comms);
	H_CHECK(p->max_recvs >= 1 && p->max_recvs <= 64, "v%d %s: maxRecvs %d", v, p->name,
		p->max_recvs);
	if (v >= 7) {
		H_CHECK(p->net_device_type == NCCL_NET_DEVICE_HOST, "v%d %s: netDeviceType %d", v,
			p->name, p->net_device_type);
		H_CHECK(p->net_device_version == NCCL_NET_DEVICE_INVALID_VERSION,
			"v%d %s: netDeviceVersion %d", v, p->name, p->net_device_version);
	}
	if (v >= 8)
		H_CHECK(p->reg_is_global == 0 || p->reg_is_global == 1, "v%d %s: regIsGlobal %d", v,
			p->name, p->reg_is_global);
	if (v >= 9) {
		H_CHECK(p->force_flush == 0 || p->force_flush == 1, "v%d %s: forceFlush %d", v,
			p->name, p->force_flush);
		H_CHECK(p->vndevs == 1 && p->vdevs[0] == dev, "v%d %s: vProps {%d, %d}", v, p->name,
			p->vndevs, p->vdevs[0]);
		H_CHECK(p->max_p2p_bytes > 0 && p->max_p2p_bytes <= NCCL_MAX_NET_SIZE_BYTES,
			"v%d %s: maxP2pBytes %zu", v, p->name, p->max_p2p_bytes);
		H_CHECK(p->max_coll_bytes > 0 && p->max_coll_bytes <= NCCL_MAX_NET_SIZE_BYTES,
			"v%d %s: maxCollBytes %zu", v, p->name, p->max_coll_bytes);
		H_CHECK(p->max_p2p_bytes >= H_BIG, "v%d %s: maxP2pBytes %zu < the test's %u", v,
			p->name, p->max_p2p_bytes, H_BIG);
	}
	if (v >= 11)
		H_CHECK(p->max_multi_request_size >= 1, "v%d %s: maxMultiRequestSize %d", v,
			p->name, p->max_multi_request_size);
	if (v >= 12) {
		H_CHECK(p->rail_id >= -1, "v12 %s: railId %d", p->name, p->rail_id);
		H_CHECK(p->plane_id >= -1, "v12 %s: planeId %d", p->name, p->plane_id);
	}
}

/* dlopen, bind, init, devices, every device's properties. */
int h_child_setup(int version, void **ctx, struct h_props *dev0)
{
	int ndev = -1, rc;

	memset(&h_log, 0, sizeof(h_log));
	h_bind(h_open(), version);
	rc = h_init(ctx);
	H_CHECK(rc == ncclSuccess, "v%d init: %d (last warning: %s)", version, rc, h_log.last_warn);
	H_CHECK(version <= 10 || *ctx, "v%d init gave no context", version);
	rc = h_devices(&ndev);
	H_CHECK(rc == ncclSuccess && ndev >= 1, "v%d devices: rc %d, ndev %d", version, rc, ndev);
	for (int d = 0; d < ndev; d++) {
		struct h_props p;

		rc = h_props(d, &p);
		H_CHECK(rc == ncclSuccess, "v%d getProperties(%d): %d", version, d, rc);
		h_check_props(d, &p);
		if (d == H_DEV)
			*dev0 = p;
	}
	return ndev;
}

/* The one startup line: INIT|NET, version, ABI, transport. */
void h_check_startup_log(int version, int expected_lines)
{
	char want[128];

	snprintf(want, sizeof(want), "ringway %s: NET/ringway ABI v%d, transport ",
		 RW_VERSION_STRING, version);
	H_CHECK(h_log.startup_lines == expected_lines, "v%d: %d startup lines, want %d", version,
		h_log.startup_lines, expected_lines);
	H_CHECK(strstr(h_log.startup, want), "v%d: startup line '%s' lacks '%s'", version,
		h_log.startup, want);
	H_CHECK((h_log.startup_flags & NCCL_INIT) && (h_log.startup_flags & NCCL_NET),
		"v%d: startup line flags %#lx lack INIT|NET", version, h_log.startup_flags);
	H_CHECK(strstr(h_log.startup, "device(s): "), "v%d: startup line lacks devices: %s",
		version, h_log.startup);
}

void h_child_finalize(void *ctx)
{
	if (h_version >= 11)
		H_CHECK(h_finalize(ctx) == ncclSuccess, "v%d finalize", h_version);
}

void *h_alloc(size_t len)
{
	void *p = NULL;

	H_CHECK(posix_memalign(&p, 4096, len) == 0, "posix_memalign(%zu)", len);
	return p;
}

/* Connect and accept by polling, possibly both in this process. */
void h_poll_connect(void *ctx, void *handle, void **sc)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;

	*sc = NULL;
	while (!*sc) {
		int rc = h_connect(ctx, H_DEV, handle, sc);

		H_CHECK(rc == ncclSuccess, "v%d connect: %d", h_version, rc);
		H_CHECK(rw_now_ms() < deadline, "v%d connect: no comm after %d ms", h_version,
			H_STEP_TIMEOUT_MS);
		if (!*sc)
			h_backoff(&spins);
	}
}

void h_poll_accept(void *lc, void **rcomm)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;

	*rcomm = NULL;
	while (!*rcomm) {
		int rc = h_accept(lc, rcomm);

		H_CHECK(rc == ncclSuccess, "v%d accept: %d", h_version, rc);
		H_CHECK(rw_now_ms() < deadline, "v%d accept: no comm after %d ms", h_version,
			H_STEP_TIMEOUT_MS);
		if (!*rcomm)
			h_backoff(&spins);
	}
}

void h_self_connect(void *ctx_listen, void *ctx_connect, void **lc, void **sc, void **rcomm)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	int rc;

	memset(handle, 0x5a, sizeof(handle));
	rc = h_listen(ctx_listen, H_DEV, handle, lc);
	H_CHECK(rc == ncclSuccess && *lc, "v%d listen: %d", h_version, rc);
	*sc = *rcomm = NULL;
	while (!*sc || !*rcomm) {
		if (!*sc)
			H_CHECK(h_connect(ctx_connect, H_DEV, handle, sc) == ncclSuccess,
				"v%d connect", h_version);
		if (!*rcomm)
			H_CHECK(h_accept(*lc, rcomm) == ncclSuccess, "v%d accept", h_version);
		H_CHECK(rw_now_ms() < deadline, "v%d self connect: send %p recv %p", h_version, *sc,
			*rcomm);
		h_backoff(&spins);
	}
}

/* Post until the plugin takes the request (NULL means "try again"). */
void *h_post_send(void *sc, void *data, size_t len, void *mh)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	void *req;

	for (;;) {
		int rc;

		req = (void *)0x1;
		rc = h_isend(sc, data, len, H_TAG, mh, &req);
		H_CHECK(rc == ncclSuccess, "v%d isend(%zu): %d", h_version, len, rc);
		H_CHECK(req != (void *)0x1, "v%d isend left *request untouched", h_version);
		if (req)
			return req;
		H_CHECK(rw_now_ms() < deadline, "v%d isend(%zu): never accepted", h_version, len);
		h_backoff(&spins);
	}
}

void *h_post_recv(void *rcomm, int n, void **data, const size_t *caps, void **mhs)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	int tags[64];
	void *req;

	for (int i = 0; i < n; i++)
		tags[i] = H_TAG;
	for (;;) {
		int rc;

		/* NCCL pre-stores the optional-completion hint: it must go. */
		req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
		rc = h_irecv(rcomm, n, data, caps, tags, mhs, &req);
		H_CHECK(rc == ncclSuccess, "v%d irecv(n=%d): %d", h_version, n, rc);
		H_CHECK(req != (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION,
			"v%d irecv left the 0x1 hint in *request", h_version);
		if (req)
			return req;
		H_CHECK(rw_now_ms() < deadline, "v%d irecv: never accepted", h_version);
		h_backoff(&spins);
	}
}

/* Test until done; sizes (may be NULL) gets what test writes. */
void h_wait_req(void *req, int *out_sizes, const char *what)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	int done = 0;

	while (!done) {
		int rc = h_test(req, &done, out_sizes);

		H_CHECK(rc == ncclSuccess, "v%d test(%s): %d (last warning: %s)", h_version, what,
			rc, h_log.last_warn);
		H_CHECK(done || rw_now_ms() < deadline, "v%d test(%s): not done after %d ms",
			h_version, what, H_STEP_TIMEOUT_MS);
		if (!done)
			h_backoff(&spins);
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ABI harness: loads the built libnccl-net-ringway.so exactly as NCCL
 * does (dlopen RTLD_NOW | RTLD_LOCAL, dlsym ncclNetPlugin_vN) and, for every
 * version v6..v12, drives init / devices / getProperties / listen / connect
 * / accept / regMr / isend / irecv / test / close / finalize between two
 * forked processes over loopback, plus the argument checks NCCL relies on.
 *
 *   test_abi_harness <path to libnccl-net-ringway.so>
 *
 * RINGWAY_SOCKET_IFNAME defaults to lo here.  Each test forks its children
 * and waits for them with a deadline; a child exits 0 on success.
 */
#include "support/rw_test.h"

#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define GUARD	 0xee		 /* receive-buffer bytes past the message */
#define RECV_CAP (H_BIG + 4096u) /* larger than every message */

static const size_t sizes[] = {0, 1, 4095, 1u << 20, H_BIG};

/* --- the pair: one receiver, one sender, handle through a pipe ------------ */

struct pair {
	int version;
	int fds[2]; /* receiver writes the handle, sender reads it */
};

static uint64_t seed_of(int version, int i)
{
	return (uint64_t)version * 1000 + (uint64_t)i;
}

static int burst_count(int version)
{
	return version == 6 ? NCCL_NET_MAX_REQUESTS_V6 : NCCL_NET_MAX_REQUESTS;
}

#define BURST_SLOT 8192
static size_t burst_len(int j)
{
	return 4095 + 17 * (size_t)j;
}

static void recv_and_check(void *rcomm, unsigned char *buf, void *mh, size_t len, uint64_t seed)
{
	size_t cap = RECV_CAP;
	void *data = buf;
	int got[64];
	void *req;
	long bad;

	memset(buf, GUARD, RW_MIN(RECV_CAP, len + 4096));
	for (int i = 0; i < 64; i++)
		got[i] = -1;
	req = h_post_recv(rcomm, 1, &data, &cap, &mh);
	h_wait_req(req, got, "recv");
	H_CHECK(got[0] == (int)len, "v%d: received size %d, sent %zu", h_version, got[0], len);
	H_CHECK(got[1] == -1, "v%d: test wrote sizes[1] = %d for n=1", h_version, got[1]);
	bad = h_pattern_check(buf, len, seed);
	H_CHECK(bad < 0, "v%d: %zu-byte message differs at byte %ld", h_version, len, bad);
	for (size_t i = len; i < RW_MIN(RECV_CAP, len + 4096); i++)
		H_CHECK(buf[i] == GUARD, "v%d: %zu-byte message wrote byte %zu of the buffer",
			h_version, len, i);
}

static void receiver(void *arg)
{
	struct pair *a = arg;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *ctx = NULL, *lc = NULL, *rcomm = NULL, *mh = NULL;
	struct h_props p0;
	unsigned char *buf;
	int n = burst_count(a->version);
	void *reqs[NCCL_NET_MAX_REQUESTS];

	close(a->fds[0]);
	h_child_setup(a->version, &ctx, &p0);
	memset(handle, 0x5a, sizeof(handle)); /* NCCL's buffer is not zeroed */
	H_CHECK(h_listen(ctx, H_DEV, handle, &lc) == ncclSuccess && lc, "v%d listen", a->version);
	H_CHECK(write(a->fds[1], handle, sizeof(handle)) == (ssize_t)sizeof(handle),
		"write handle");
	close(a->fds[1]);
	h_poll_accept(lc, &rcomm);
	H_CHECK(h_close_listen(lc) == ncclSuccess, "v%d closeListen after accept", a->version);

	buf = h_alloc(RECV_CAP);
	H_CHECK(h_reg_mr(rcomm, buf, RECV_CAP, NCCL_PTR_HOST, &mh) == ncclSuccess && mh,
		"v%d regMr(recv)", a->version);
	for (size_t i = 0; i < RW_ARRAY_SIZE(sizes); i++)
		recv_and_check(rcomm, buf, mh, sizes[i], seed_of(a->version, (int)i));

	/* A burst: every request NCCL may have in flight, posted at once. */
	memset(buf, GUARD, (size_t)n * BURST_SLOT);
	for (int j = 0; j < n; j++) {
		size_t cap = BURST_SLOT;
		void *data = buf + (size_t)j * BURST_SLOT;

		reqs[j] = h_post_recv(rcomm, 1, &data, &cap, &mh);
	}
	for (int j = 0; j < n; j++) {
		int got[64] = {-1};
		long bad;

		h_wait_req(reqs[j], got, "burst recv");
		H_CHECK(got[0] == (int)burst_len(j), "v%d burst %d: size %d, want %zu", a->version,
			j, got[0], burst_len(j));
		bad = h_pattern_check(buf + (size_t)j * BURST_SLOT, burst_len(j), 500 + j);
		H_CHECK(bad < 0, "v%d burst %d differs at byte %ld (out of order?)", a->version, j,
			bad);
	}

	/* Grouped receive, when the device takes more than one buffer. */
	if (p0.max_recvs > 1) {
		int g = RW_MIN(p0.max_recvs, 8);
		void *data[8], *mhs[8];
		size_t caps[8];
		int got[64];
		void *req;

		for (int j = 0; j < g; j++) {
			data[j] = buf + (size_t)j * BURST_SLOT;
			caps[j] = BURST_SLOT;
			mhs[j] = mh;
			got[j] = -1;
		}
		req = h_post_recv(rcomm, g, data, caps, mhs);
		h_wait_req(req, got, "grouped recv");
		for (int j = 0; j < g; j++)
			H_CHECK(got[j] == (int)(100 + j), "v%d grouped %d: size %d", a->version, j,
				got[j]);
	}

	H_CHECK(h_dereg_mr(rcomm, mh) == ncclSuccess, "v%d deregMr(recv)", a->version);
	H_CHECK(h_close_recv(rcomm) == ncclSuccess, "v%d closeRecv", a->version);
	h_child_finalize(ctx);
	free(buf);
	H_CHECK(h_log.warns == 0, "v%d receiver: %d warning(s), last: %s", a->version, h_log.warns,
		h_log.last_warn);
	h_check_startup_log(a->version, 1);
}

static void sender(void *arg)
{
	struct pair *a = arg;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	struct pollfd pfd = {.fd = a->fds[0], .events = POLLIN};
	void *ctx = NULL, *sc = NULL, *mh = NULL;
	struct h_props p0;
	unsigned char *buf;
	int n = burst_count(a->version);
	void *reqs[NCCL_NET_MAX_REQUESTS];

	close(a->fds[1]);
	h_child_setup(a->version, &ctx, &p0);
	H_CHECK(poll(&pfd, 1, H_STEP_TIMEOUT_MS) == 1, "v%d: no handle from the receiver",
		a->version);
	H_CHECK(read(a->fds[0], handle, sizeof(handle)) == (ssize_t)sizeof(handle), "read handle");
	close(a->fds[0]);
	h_poll_connect(ctx, handle, &sc);

	buf = h_alloc(H_BIG);
	H_CHECK(h_reg_mr(sc, buf, H_BIG, NCCL_PTR_HOST, &mh) == ncclSuccess && mh,
		"v%d regMr(send)", a->version);
	for (size_t i = 0; i < RW_ARRAY_SIZE(sizes); i++) {
		int sent = -1;
		void *req;

		h_pattern_fill(buf, sizes[i], seed_of(a->version, (int)i));
		req = h_post_send(sc, buf, sizes[i], mh);
		/* NCCL tests sends with one int; flushes with NULL.  Try both. */
		h_wait_req(req, i % 2 ? &sent : NULL, "send");
		H_CHECK(sent == -1 || sent == (int)sizes[i], "v%d send test size %d", a->version,
			sent);
	}

	for (int j = 0; j < n; j++) {
		unsigned char *slot = buf + (size_t)j * BURST_SLOT;

		h_pattern_fill(slot, burst_len(j), 500 + j);
		reqs[j] = h_post_send(sc, slot, burst_len(j), mh);
	}
	for (int j = 0; j < n; j++)
		h_wait_req(reqs[j], NULL, "burst send");

	if (p0.max_recvs > 1) {
		int g = RW_MIN(p0.max_recvs, 8);

		for (int j = 0; j < g; j++)
			reqs[j] = h_post_send(sc, buf + (size_t)j * BURST_SLOT, 100 + j, mh);
		for (int j = 0; j < g; j++)
			h_wait_req(reqs[j], NULL, "grouped send");
	}

	H_CHECK(h_dereg_mr(sc, mh) == ncclSuccess, "v%d deregMr(send)", a->version);
	H_CHECK(h_close_send(sc) == ncclSuccess, "v%d closeSend", a->version);
	h_child_finalize(ctx);
	free(buf);
	H_CHECK(h_log.warns == 0, "v%d sender: %d warning(s), last: %s", a->version, h_log.warns,
		h_log.last_warn);
	h_check_startup_log(a->version, 1);
}

static void run_pair(int version)
{
	struct pair a = {.version = version};
	pid_t pids[2];
	char what[64];

	assert_int_equal(pipe(a.fds), 0);
	pids[0] = h_spawn(receiver, &a);
	pids[1] = h_spawn(sender, &a);
	close(a.fds[0]);
	close(a.fds[1]);
	snprintf(what, sizeof(what), "v%d transfer", version);
	h_wait_children(pids, 2, what);
}

/* One version's transfer: *state is the version (an int). */
static void transfer(void **state)
{
	run_pair(*(const int *)*state);
}

/* --- the exported symbols ------------------------------------------------------ */

/* Is addr in a mapping that cannot be written (const table after RELRO)? */
static int read_only(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	uintptr_t a = (uintptr_t)addr, lo, hi;
	char perms[8], line[512];
	int ro = 0;

	H_CHECK(f, "open /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
			ro = perms[1] != 'w';
			break;
		}
	}
	fclose(f);
	return ro;
}

#define CHECK_SLOTS(tbl, v)                                                                        \
	do {                                                                                       \
		H_CHECK(tbl->init && tbl->devices && tbl->getProperties && tbl->listen &&          \
				tbl->connect && tbl->accept && tbl->regMr && tbl->deregMr &&       \
				tbl->isend && tbl->irecv && tbl->iflush && tbl->test &&            \
				tbl->closeSend && tbl->closeRecv && tbl->closeListen,              \
			"v%d: a mandatory slot is NULL", v);                                       \
	} while (0)

/* ncclNetPlugin_v<v> through its own type: named ringway, every mandatory
 * slot set, then the version's own checks (extra, on t). */
#define CHECK_TABLE(v, extra)                                                                      \
	do {                                                                                       \
		const ncclNet_v##v##_t *t = dlsym(dl, "ncclNetPlugin_v" #v);                       \
		int ver = v;                                                                       \
                                                                                                   \
		H_CHECK(t != NULL && strcmp(t->name, "ringway") == 0, "v%d name", ver);            \
		CHECK_SLOTS(t, ver);                                                               \
		extra;                                                                             \
	} while (0)
/* The optional slots stay NULL: device offload (v7+), NIC fusion (v9+);
 * finalize is set from v11 on (NCCL 2.28.9 calls it). */
#define NO_OFFLOAD   H_CHECK(!t->getDeviceMr && !t->irecvConsumed, "v%d device offload slots", ver)
#define HAS_VDEVICE  H_CHECK(t->makeVDevice, "v%d makeVDevice is NULL (NIC fusion)", ver)
#define HAS_FINALIZE H_CHECK(t->finalize, "v%d finalize is NULL", ver)

static void exports_child(void *arg)
{
	void *dl = h_open();

	(void)arg;
	H_CHECK(!dlsym(dl, "ncclNetPlugin_v5"), "ncclNetPlugin_v5 is exported");
	H_CHECK(!dlsym(dl, "ncclNetPlugin_v13"), "ncclNetPlugin_v13 is exported");
	H_CHECK(!dlsym(dl, "rw_sock_create") && !dlsym(dl, "rw_log_emit") &&
			!dlsym(dl, "rw_status_to_nccl"),
		"an internal symbol is visible");
	for (int v = H_FIRST_VERSION; v <= H_LAST_VERSION; v++) {
		h_bind(dl, v);
		H_CHECK(read_only(h_table()), "ncclNetPlugin_v%d is in writable memory", v);
	}
	CHECK_TABLE(6, (void)0);
	CHECK_TABLE(7, NO_OFFLOAD);
	CHECK_TABLE(8, NO_OFFLOAD);
	CHECK_TABLE(9, NO_OFFLOAD; HAS_VDEVICE);
	CHECK_TABLE(10, NO_OFFLOAD; HAS_VDEVICE);
	CHECK_TABLE(11, NO_OFFLOAD; HAS_VDEVICE; HAS_FINALIZE);
	CHECK_TABLE(12, NO_OFFLOAD; HAS_VDEVICE; HAS_FINALIZE);
	H_CHECK(dlclose(dl) == 0, "dlclose: %s", dlerror());
}

static void exports_v6_to_v12_only(void **state)
{
	(void)state;
	h_run_one(exports_child, NULL, "exports");
}

static int teardown(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(exports_v6_to_v12_only, teardown),
		H_VERSION_TEST(transfer, 6, teardown),
		H_VERSION_TEST(transfer, 7, teardown),
		H_VERSION_TEST(transfer, 8, teardown),
		H_VERSION_TEST(transfer, 9, teardown),
		H_VERSION_TEST(transfer, 10, teardown),
		H_VERSION_TEST(transfer, 11, teardown),
		H_VERSION_TEST(transfer, 12, teardown),
		H_VERSION_TEST(misuse, 6, teardown),
		H_VERSION_TEST(misuse, 7, teardown),
		H_VERSION_TEST(misuse, 8, teardown),
		H_VERSION_TEST(misuse, 9, teardown),
		H_VERSION_TEST(misuse, 10, teardown),
		H_VERSION_TEST(misuse, 11, teardown),
		H_VERSION_TEST(misuse, 12, teardown),
		H_VERSION_TEST(contexts, 11, teardown),
		H_VERSION_TEST(contexts, 12, teardown),
		cmocka_unit_test_teardown(standalone_logs_to_stderr, teardown),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s <path to libnccl-net-ringway.so>\n", argv[0]);
		return 2;
	}
	h_plugin_path = argv[1];
	/* The loopback device; a test environment may choose another. */
	setenv("RINGWAY_SOCKET_IFNAME", "lo", 0);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CollNet through the ABI, as NCCL drives it: three forked processes dlopen
 * the built libnccl-net-ringway.so, dlsym ncclCollNetPlugin_vN (v6..v12),
 * exchange listen handles (through shared memory, standing in for NCCL's
 * bootstrap), connect, and run iallreduce (several in flight), and from v8
 * iallgather and ireducescatter over windows; results are checked exactly.
 * Usage: test_collnet_abi <libnccl-net-ringway.so>
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"
#include "harness.h"

#define NRANKS	3
#define STEP_MS 30000
#define BIG	(1u << 20) /* floats */

/* H_CHECK, with the version and rank of the process that failed. */
#define CHECK(cond, fmt, ...) H_CHECK(cond, "[v%d rank %d] " fmt, ver, me, ##__VA_ARGS__)

static const char *so_path;
static int ver, me;
static const void *tbl;	 /* the ncclCollNet_vN_t */
static const void *ntbl; /* the ncclNet_vN_t of the same version */
static void *ctx, *nctx;

struct shared {
	int arrived;
	char handles[NRANKS][NCCL_NET_HANDLE_MAXSIZE];
};
static struct shared *sh;

#define T6  ((const ncclCollNet_v6_t *)tbl)
#define T7  ((const ncclCollNet_v7_t *)tbl)
#define T8  ((const ncclCollNet_v8_t *)tbl)
#define T9  ((const ncclCollNet_v9_t *)tbl)
#define T10 ((const ncclCollNet_v10_t *)tbl)
#define T11 ((const ncclCollNet_v11_t *)tbl)
#define T12 ((const ncclCollNet_v12_t *)tbl)

/* A call written alike in a range of versions (int and size_t arguments
 * convert): through the table of the version under test. */
#define CALL_V8_V10(field, ...)                                                                    \
	(ver == 8   ? T8->field(__VA_ARGS__)                                                       \
	 : ver == 9 ? T9->field(__VA_ARGS__)                                                       \
		    : T10->field(__VA_ARGS__))
#define CALL_V6_V10(field, ...)                                                                    \
	(ver == 6   ? T6->field(__VA_ARGS__)                                                       \
	 : ver == 7 ? T7->field(__VA_ARGS__)                                                       \
		    : CALL_V8_V10(field, __VA_ARGS__))
#define CALL_V11_V12(field, ...) (ver == 11 ? T11->field(__VA_ARGS__) : T12->field(__VA_ARGS__))

/* ... in every version. */
#define CALL(field, ...)                                                                           \
	(ver <= 10 ? CALL_V6_V10(field, __VA_ARGS__) : CALL_V11_V12(field, __VA_ARGS__))

/* The same for v8+ only (iallgather/ireducescatter exist there). */
#define SGE_CALL(field, sge, ...)                                                                  \
	(ver <= 10 ? CALL_V8_V10(field, __VA_ARGS__) : CALL_V11_V12(field, __VA_ARGS__))

static ncclResult_t c_init(void)
{
	return ver <= 10 ? CALL_V6_V10(init, NULL) : CALL_V11_V12(init, &ctx, 0x5257, NULL);
}

static ncclResult_t n_init(void)
{
	switch (ver) {
	case 6:
		return ((const ncclNet_v6_t *)ntbl)->init(NULL);
	case 7:
		return ((const ncclNet_v7_t *)ntbl)->init(NULL);
	case 8:
		return ((const ncclNet_v8_t *)ntbl)->init(NULL);
	case 9:
		return ((const ncclNet_v9_t *)ntbl)->init(NULL);
	case 10:
		return ((const ncclNet_v10_t *)ntbl)->init(NULL, NULL);
	case 11:
		return ((const ncclNet_v11_t *)ntbl)->init(&nctx, 1, NULL, NULL, NULL);
	default:
		return ((const ncclNet_v12_t *)ntbl)->init(&nctx, 1, NULL, NULL, NULL);
	}
}

/* Version v's case of names(): device 0's properties from both tables. */
#define NAMES_CASE(v)                                                                              \
	case v: {                                                                                  \
		ncclNetProperties_v##v##_t p;                                                      \
                                                                                                   \
		a = T##v->getProperties(0, &p);                                                    \
		*cn = p.name;                                                                      \
		b = ((const ncclNet_v##v##_t *)ntbl)->getProperties(0, &p);                        \
		*net = p.name;                                                                     \
		break;                                                                             \
	}

/* Device 0's name as CollNet and as the net plugin report it. */
static void names(const char **cn, const char **net)
{
	ncclResult_t a = ncclSuccess, b = ncclSuccess;

	switch (ver) {
		NAMES_CASE(6)
		NAMES_CASE(7)
		NAMES_CASE(8)
		NAMES_CASE(9)
		NAMES_CASE(10)
		NAMES_CASE(11)
		NAMES_CASE(12)
	}
	CHECK(a == ncclSuccess && b == ncclSuccess, "getProperties: %d %d", a, b);
}

static ncclResult_t c_listen(void *handle, void **lc)
{
	return ver <= 10 ? CALL_V6_V10(listen, 0, handle, lc)
			 : CALL_V11_V12(listen, ctx, 0, handle, lc);
}

static void barrier(int phase)
{
	uint64_t until = rw_now_ms() + STEP_MS;

	__atomic_add_fetch(&sh->arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&sh->arrived, __ATOMIC_ACQUIRE) < phase * NRANKS) {
		CHECK(rw_now_ms() < until, "barrier %d: %d arrived", phase, sh->arrived);
		usleep(1000);
	}
}

static void wait_req(void *req, int *size)
{
	uint64_t until = rw_now_ms() + STEP_MS;
	int done = 0;

	while (!done) {
		ncclResult_t rc = CALL(test, req, &done, size);

		CHECK(rc == ncclSuccess, "test: %d", rc);
		CHECK(rw_now_ms() < until, "request %p never finished", req);
	}
}

static float val(int rank, size_t i)
{
	return (float)((i * 7 + (size_t)rank * 3) % 5) - 2;
}

static void allreduce(void *comm)
{
	enum { NREQ = 3 };
	static const size_t counts[NREQ] = {BIG + 3, 1, 1000};
	float *buf[NREQ][2];
	void *mh[NREQ][2], *req[NREQ];

	for (int k = 0; k < NREQ; k++) {
		size_t bytes = counts[k] * sizeof(float);

		for (int j = 0; j < 2; j++) {
			buf[k][j] = malloc(bytes);
			CHECK(buf[k][j], "malloc");
			CHECK(CALL(regMr, comm, buf[k][j], bytes, NCCL_PTR_HOST, &mh[k][j]) ==
				      ncclSuccess,
			      "regMr");
		}
		for (size_t i = 0; i < counts[k]; i++)
			buf[k][0][i] = val(me, i);
		req[k] = NULL;
		CHECK(CALL(iallreduce, comm, buf[k][0], buf[k][1], counts[k], ncclFloat32, ncclSum,
			   mh[k][0], mh[k][1], &req[k]) == ncclSuccess &&
			      req[k],
		      "iallreduce %zu", counts[k]);
	}
	for (int k = NREQ - 1; k >= 0; k--) { /* NCCL may test in any order */
		int size = -1;

		wait_req(req[k], &size);
		CHECK(size == (int)(counts[k] * sizeof(float)), "size %d", size);
	}
	for (int k = 0; k < NREQ; k++) {
		for (size_t i = 0; i < counts[k]; i++) {
			float want = val(0, i) + val(1, i) + val(2, i);

			CHECK(buf[k][1][i] == want, "allreduce %zu: [%zu] = %g, want %g", counts[k],
			      i, buf[k][1][i], want);
		}
		for (int j = 0; j < 2; j++) {
			CHECK(CALL(deregMr, comm, mh[k][j]) == ncclSuccess, "deregMr");
			free(buf[k][j]);
		}
	}
}

/* v8+: window [300, 2200) of three 1000-byte blocks. */
static void allgather(void *comm)
{
	enum { BPR = 1000, WO = 300, WB = 1900 };
	unsigned char send[BPR], out[WB];
	void *smh, *rmh, *req = NULL;
	int size = -1;
	ncclNetSGE_v8_t s8 = {0};
	ncclNetSGE_v12_t s12 = {0}; /* v9..v12 share this layout */

	for (int i = 0; i < BPR; i++)
		send[i] = (unsigned char)(me * 100 + i);
	memset(out, 0xee, sizeof(out));
	CHECK(CALL(regMr, comm, send, (size_t)BPR, NCCL_PTR_HOST, &smh) == ncclSuccess, "regMr");
	CHECK(CALL(regMr, comm, out, (size_t)WB, NCCL_PTR_HOST, &rmh) == ncclSuccess, "regMr");
	s8 = (ncclNetSGE_v8_t){.mhandle = rmh, .address = out, .size = WB};
	s12 = (ncclNetSGE_v12_t){.mhandle = rmh, .address = out, .size = WB};
	CHECK(SGE_CALL(iallgather, 0, comm, send, 1, ver == 8 ? (void *)&s8 : (void *)&s12,
		       (size_t)BPR, (size_t)WO, (size_t)WB, smh, &req) == ncclSuccess &&
		      req,
	      "iallgather");
	wait_req(req, &size);
	for (int g = WO; g < WO + WB; g++) {
		unsigned char want = (unsigned char)((g / BPR) * 100 + g % BPR);

		CHECK(out[g - WO] == want, "allgather byte %d = %d, want %d", g, out[g - WO], want);
	}
	CHECK(CALL(deregMr, comm, smh) == ncclSuccess && CALL(deregMr, comm, rmh) == ncclSuccess,
	      "deregMr");
}

/* v8+: three 100-float blocks, window [50, 250) floats. */
static void reduce_scatter(void *comm)
{
	enum { BPR = 100, WO = 50, WB = 200 }; /* in floats */
	float in[WB], out[BPR];
	size_t lo = RW_MAX((size_t)me * BPR, (size_t)WO),
	       hi = RW_MIN((size_t)(me + 1) * BPR, (size_t)(WO + WB));
	void *smh, *rmh, *req = NULL;
	ncclNetSGE_v8_t s8;
	ncclNetSGE_v12_t s12;
	int size = -1;

	for (int i = 0; i < WB; i++)
		in[i] = val(me, (size_t)(WO + i));
	CHECK(CALL(regMr, comm, in, sizeof(in), NCCL_PTR_HOST, &smh) == ncclSuccess, "regMr");
	CHECK(CALL(regMr, comm, out, sizeof(out), NCCL_PTR_HOST, &rmh) == ncclSuccess, "regMr");
	s8 = (ncclNetSGE_v8_t){.mhandle = smh, .address = in, .size = sizeof(in)};
	s12 = (ncclNetSGE_v12_t){.mhandle = smh, .address = in, .size = sizeof(in)};
	CHECK(SGE_CALL(ireducescatter, 0, comm, 1, ver == 8 ? (void *)&s8 : (void *)&s12, out,
		       BPR * sizeof(float), WO * sizeof(float), WB * sizeof(float), ncclFloat32,
		       ncclSum, rmh, &req) == ncclSuccess &&
		      req,
	      "ireducescatter");
	wait_req(req, &size);
	CHECK(size == (int)((hi - lo) * sizeof(float)), "size %d", size);
	for (size_t g = lo; g < hi; g++) {
		float want = val(0, g) + val(1, g) + val(2, g);

		CHECK(out[g - lo] == want, "reduce-scatter [%zu] = %g, want %g", g, out[g - lo],
		      want);
	}
	CHECK(CALL(deregMr, comm, smh) == ncclSuccess && CALL(deregMr, comm, rmh) == ncclSuccess,
	      "deregMr");
}

static void child(void)
{
	char sym[32];
	void *so, *lc = NULL, *comm = NULL, *req = (void *)1, *handles[NRANKS];
	const char *cn_name = NULL, *net_name = NULL;
	int ndev = 0, sup = -1;

	so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
	CHECK(so, "dlopen %s: %s", so_path, dlerror());
	snprintf(sym, sizeof(sym), "ncclCollNetPlugin_v%d", ver);
	tbl = dlsym(so, sym);
	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", ver);
	ntbl = dlsym(so, sym);
	CHECK(tbl && ntbl, "dlsym v%d", ver);
	CHECK(strcmp(*(const char *const *)tbl, "ringway") == 0, "name");
	CHECK(n_init() == ncclSuccess && c_init() == ncclSuccess, "init");
	CHECK(CALL(devices, &ndev) == ncclSuccess && ndev >= 1, "devices: %d", ndev);
	names(&cn_name, &net_name);
	CHECK(cn_name && net_name && strcmp(cn_name, net_name) == 0,
	      "CollNet device 0 is '%s', the net device '%s'", cn_name, net_name);
	/* reduceSupport: what the kernels reduce, nothing else */
	for (int dt = 0; dt < 12; dt++)
		for (int op = 0; op < 5; op++)
			CHECK(CALL(reduceSupport, (ncclDataType_t)dt, (ncclRedOp_t)op, &sup) ==
					      ncclSuccess &&
				      sup == 1,
			      "reduceSupport(%d, %d) = %d", dt, op, sup);
	CHECK(CALL(reduceSupport, (ncclDataType_t)12, ncclSum, &sup) == ncclSuccess && sup == 0,
	      "reduceSupport of type 12");

	CHECK(c_listen(sh->handles[me], &lc) == ncclSuccess && lc, "listen");
	barrier(1);
	for (int r = 0; r < NRANKS; r++)
		handles[r] = sh->handles[r];
	CHECK(CALL(connect, handles, NRANKS, me, lc, &comm) == ncclSuccess && comm, "connect");

	allreduce(comm);
	if (ver >= 8) {
		allgather(comm);
		reduce_scatter(comm);
	}
	CHECK(CALL(iflush, comm, sh, 4, NULL, &req) == ncclSuccess && req == NULL,
	      "iflush of host memory");
	barrier(2);
	CHECK(CALL(closeColl, comm) == ncclSuccess, "closeColl");
	CHECK(CALL(closeListen, lc) == ncclSuccess, "closeListen");
	if (ver == 11)
		CHECK(T11->finalize(ctx) == ncclSuccess &&
			      ((const ncclNet_v11_t *)ntbl)->finalize(nctx) == ncclSuccess,
		      "finalize");
	if (ver == 12)
		CHECK(T12->finalize(ctx) == ncclSuccess &&
			      ((const ncclNet_v12_t *)ntbl)->finalize(nctx) == ncclSuccess,
		      "finalize");
	fflush(NULL);
	_exit(0);
}

static void run_version(int v)
{
	pid_t pids[NRANKS];
	uint64_t until;
	int failed = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	ver = v;
	fflush(NULL);
	for (int r = 0; r < NRANKS; r++) {
		pids[r] = fork();
		assert_true(pids[r] >= 0);
		if (pids[r] == 0) {
			signal(SIGSEGV, SIG_DFL);
			signal(SIGABRT, SIG_DFL);
			me = r;
			child();
		}
	}
	until = rw_now_ms() + 120000;
	for (int left = NRANKS; left > 0;) {
		for (int r = 0; r < NRANKS; r++) {
			int st;

			if (!pids[r] || waitpid(pids[r], &st, WNOHANG) != pids[r])
				continue;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "v%d rank %d: status %#x\n", v, r, st);
				failed++;
			}
			pids[r] = 0;
			left--;
		}
		if (left && rw_now_ms() > until) {
			for (int r = 0; r < NRANKS; r++) {
				if (!pids[r])
					continue;
				kill(pids[r], SIGKILL);
				waitpid(pids[r], NULL, 0);
				pids[r] = 0;
				failed++;
				left--;
			}
		}
		usleep(2000);
	}
	munmap(sh, sizeof(*sh));
	assert_int_equal(failed, 0);
}

/* One version: *state is the version (an int). */
static void collnet(void **state)
{
	run_version(*(const int *)*state);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		H_VERSION_TEST(collnet, 6, NULL),  H_VERSION_TEST(collnet, 7, NULL),
		H_VERSION_TEST(collnet, 8, NULL),  H_VERSION_TEST(collnet, 9, NULL),
		H_VERSION_TEST(collnet, 10, NULL), H_VERSION_TEST(collnet, 11, NULL),
		H_VERSION_TEST(collnet, 12, NULL),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s <libnccl-net-ringway.so>\n", argv[0]);
		return 2;
	}
	so_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}

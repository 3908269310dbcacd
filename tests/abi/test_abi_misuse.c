/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Argument checks through the ABI: bad device indexes, NULL outputs, closed
 * and wrong-kind comms, bad requests, calls before init.  Each must return
 * ncclInternalError (and log why) without crashing.  Plus the v11/v12
 * context rules: several contexts, finalize(NULL), finalize of an unknown
 * context, re-init after the last finalize; and stderr logging when no
 * NCCL logger is given.
 */
#include "support/rw_test.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* The call fails with ncclInternalError and says why through the logger. */
#define EXPECT_MISUSE(call)                                                                        \
	do {                                                                                       \
		int w0_ = h_log.warns;                                                             \
		int r_ = (call);                                                                   \
		H_CHECK(r_ == ncclInternalError, "v%d: %s returned %d, want %d", h_version, #call, \
			r_, ncclInternalError);                                                    \
		H_CHECK(h_log.warns > w0_, "v%d: %s failed silently", h_version, #call);           \
	} while (0)

/* Before init NCCL's logger is unknown: only the result is checked. */
#define EXPECT_FAIL_EARLY(call)                                                                    \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		H_CHECK(r_ == ncclInternalError, "v%d: %s returned %d before init", h_version,     \
			#call, r_);                                                                \
	} while (0)

#define EXPECT_OK(call)                                                                            \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		H_CHECK(r_ == ncclSuccess, "v%d: %s returned %d (last warning: %s)", h_version,    \
			#call, r_, h_log.last_warn);                                               \
	} while (0)

static void before_init(void)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	struct h_props p;
	void *lc = NULL;
	int ndev = -1;

	EXPECT_FAIL_EARLY(h_devices(&ndev));
	EXPECT_FAIL_EARLY(h_props(0, &p));
	if (h_version <= 10) {
		EXPECT_FAIL_EARLY(h_listen(NULL, H_DEV, handle, &lc));
	} else {
		uint64_t bogus[8] = {0};

		/* NCCL 2.28.9 finalizes after a failed init, ctx NULL. */
		EXPECT_OK(h_finalize(NULL));
		EXPECT_FAIL_EARLY(h_finalize(bogus));
		EXPECT_FAIL_EARLY(h_listen(bogus, H_DEV, handle, &lc));
	}
	H_CHECK(lc == NULL, "v%d: listen wrote its output on failure", h_version);
}

static void bad_setup_args(void *ctx, int ndev)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *out = NULL;
	uint64_t bogus[8] = {0}; /* neither a comm nor a context */

	memset(handle, 0, sizeof(handle));
	EXPECT_MISUSE(h_devices(NULL));
	EXPECT_MISUSE(h_props_null(H_DEV));
	{
		struct h_props p;

		EXPECT_MISUSE(h_props(-1, &p));
		EXPECT_MISUSE(h_props(ndev, &p));
	}
	EXPECT_MISUSE(h_listen(ctx, -1, handle, &out));
	EXPECT_MISUSE(h_listen(ctx, ndev, handle, &out));
	EXPECT_MISUSE(h_listen(ctx, H_DEV, NULL, &out));
	EXPECT_MISUSE(h_listen(ctx, H_DEV, handle, NULL));
	EXPECT_MISUSE(h_connect(ctx, ndev, handle, &out));
	EXPECT_MISUSE(h_connect(ctx, H_DEV, NULL, &out));
	EXPECT_MISUSE(h_accept(NULL, &out));
	EXPECT_MISUSE(h_accept(bogus, &out)); /* not a ringway comm */
	if (h_version >= 11) {
		EXPECT_MISUSE(h_listen(NULL, H_DEV, handle, &out));
		EXPECT_MISUSE(h_listen(bogus, H_DEV, handle, &out));
		EXPECT_MISUSE(h_connect(bogus, H_DEV, handle, &out));
	}
	H_CHECK(out == NULL, "v%d: an output was written by a failed call", h_version);
}

/* A real 100-byte message inside the registered buf, with a few bad test()
 * calls on the way. */
static void small_transfer(unsigned char *buf, void *sc, void *rcomm, void *smh, void *rmh)
{
	unsigned char *sbuf = buf, *rbuf = buf + 2048;
	void *data = rbuf, *sreq, *rreq;
	size_t cap = 256;
	int done = 0, got[64];

	h_pattern_fill(sbuf, 100, 77);
	memset(got, 0xff, sizeof(got));
	rreq = h_post_recv(rcomm, 1, &data, &cap, &rmh);
	sreq = h_post_send(sc, sbuf, 100, smh);
	EXPECT_MISUSE(h_test(NULL, &done, NULL));
	EXPECT_MISUSE(h_test((void *)NCCL_NET_OPTIONAL_RECV_COMPLETION, &done, NULL));
	EXPECT_MISUSE(h_test(sreq, NULL, NULL));
	H_CHECK(done == 0, "v%d: a failed test wrote done", h_version);
	h_wait_req(sreq, NULL, "small send");
	h_wait_req(rreq, got, "small recv");
	H_CHECK(got[0] == 100, "v%d: small recv size %d", h_version, got[0]);
	H_CHECK(h_pattern_check(rbuf, 100, 77) < 0, "v%d: small recv content", h_version);
}

static void bad_data_args(void *lc, void *sc, void *rcomm, const struct h_props *p0)
{
	unsigned char buf[4096];
	void *smh = NULL, *rmh = NULL, *mh = NULL, *req, *data = buf;
	size_t caps[64];
	int tags[64], isz = 64;
	void *mhs[64], *datas[64];

	for (int i = 0; i < 64; i++) {
		caps[i] = 64;
		tags[i] = H_TAG;
		mhs[i] = NULL;
		datas[i] = buf;
	}
	/* regMr */
	EXPECT_MISUSE(h_reg_mr(NULL, buf, sizeof(buf), NCCL_PTR_HOST, &mh));
	EXPECT_MISUSE(h_reg_mr(lc, buf, sizeof(buf), NCCL_PTR_HOST, &mh));
	EXPECT_MISUSE(h_reg_mr(sc, buf, sizeof(buf), 0x10, &mh));
	EXPECT_MISUSE(h_reg_mr(sc, buf, sizeof(buf), NCCL_PTR_HOST, NULL));
	if (!(p0->ptr_support & NCCL_PTR_CUDA))
		EXPECT_MISUSE(h_reg_mr(sc, buf, sizeof(buf), NCCL_PTR_CUDA, &mh));
	H_CHECK(mh == NULL, "v%d: a failed regMr wrote mhandle", h_version);
	EXPECT_OK(h_reg_mr(sc, buf, sizeof(buf), NCCL_PTR_HOST, &smh));
	EXPECT_OK(h_reg_mr(rcomm, buf, sizeof(buf), NCCL_PTR_HOST, &rmh));
	for (int i = 0; i < 64; i++)
		mhs[i] = rmh;

	/* isend: *request is overwritten even when the call fails */
	req = (void *)0x1;
	EXPECT_MISUSE(h_isend(NULL, buf, 64, H_TAG, smh, &req));
	H_CHECK(req == NULL, "v%d: failed isend left *request = %p", h_version, req);
	req = (void *)0x1;
	EXPECT_MISUSE(h_isend(rcomm, buf, 64, H_TAG, rmh, &req)); /* a recv comm */
	H_CHECK(req == NULL, "v%d: failed isend left *request = %p", h_version, req);
	EXPECT_MISUSE(h_isend(sc, buf, 64, H_TAG, smh, NULL));

	/* irecv */
	req = (void *)0x1;
	EXPECT_MISUSE(h_irecv(rcomm, 0, &data, caps, tags, mhs, &req));
	H_CHECK(req == NULL, "v%d: failed irecv left *request = %p", h_version, req);
	EXPECT_MISUSE(h_irecv(rcomm, p0->max_recvs + 1, datas, caps, tags, mhs, &req));
	EXPECT_MISUSE(h_irecv(sc, 1, &data, caps, tags, mhs, &req)); /* a send comm */
	EXPECT_MISUSE(h_irecv(NULL, 1, &data, caps, tags, mhs, &req));
	EXPECT_MISUSE(h_irecv(rcomm, 1, &data, caps, tags, mhs, NULL));

	/* iflush: host memory needs none, the request comes back NULL */
	if (!(p0->ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF))) {
		req = (void *)0x1;
		EXPECT_OK(h_iflush(rcomm, 1, &data, &isz, &rmh, &req));
		H_CHECK(req == NULL, "v%d: iflush of host memory gave request %p", h_version, req);
	}
	EXPECT_MISUSE(h_iflush(NULL, 1, &data, &isz, &rmh, &req));
	EXPECT_MISUSE(h_iflush(sc, 1, &data, &isz, &smh, &req));

	small_transfer(buf, sc, rcomm, smh, rmh);

	/* deregMr */
	EXPECT_MISUSE(h_dereg_mr(sc, NULL));
	EXPECT_MISUSE(h_dereg_mr(NULL, smh));
	EXPECT_OK(h_dereg_mr(sc, smh));
	EXPECT_OK(h_dereg_mr(rcomm, rmh));
	/* Twice: the handle was freed (shm touched it again, issue 13). */
	EXPECT_MISUSE(h_dereg_mr(sc, smh));
	EXPECT_MISUSE(h_dereg_mr(rcomm, rmh));
}

/* Requests outliving their comm: a finished send tested again after
 * closeSend (the socket transport freed its request slab: SIGSEGV), and a
 * receive still pending when closeRecv ran.  Both must be errors. */
static void stale_requests(void *sc, void *rcomm)
{
	unsigned char *buf = h_alloc(8192);
	unsigned char *sbuf = buf, *rbuf = buf + 4096;
	void *smh = NULL, *rmh = NULL, *sreq, *rreq, *pending, *data = rbuf;
	size_t cap = 4096;
	int done = 0, got[64];

	EXPECT_OK(h_reg_mr(sc, sbuf, 4096, NCCL_PTR_HOST, &smh));
	EXPECT_OK(h_reg_mr(rcomm, rbuf, 4096, NCCL_PTR_HOST, &rmh));
	h_pattern_fill(sbuf, 1000, 5);
	rreq = h_post_recv(rcomm, 1, &data, &cap, &rmh);
	sreq = h_post_send(sc, sbuf, 1000, smh);
	h_wait_req(sreq, NULL, "send before close");
	h_wait_req(rreq, got, "recv before close");
	H_CHECK(got[0] == 1000 && h_pattern_check(rbuf, 1000, 5) < 0,
		"v%d: transfer before close: size %d", h_version, got[0]);
	EXPECT_MISUSE(h_test(sreq, &done, NULL));	    /* finished: no longer a request */
	pending = h_post_recv(rcomm, 1, &data, &cap, &rmh); /* nobody sends it */

	EXPECT_OK(h_close_send(sc));
	EXPECT_MISUSE(h_test(sreq, &done, NULL));
	EXPECT_OK(h_close_recv(rcomm));
	EXPECT_MISUSE(h_test(pending, &done, got));
	EXPECT_MISUSE(h_test(rreq, &done, got));
	H_CHECK(done == 0, "v%d: a failed test wrote done", h_version);
	free(buf);
}

/* Close each comm, then use it: an error, not a crash. */
static void closed_comms(void *lc, void *sc, void *rcomm)
{
	unsigned char buf[64];
	void *out = NULL, *req, *mh = NULL, *data = buf;
	size_t cap = sizeof(buf);
	int tag = H_TAG;

	EXPECT_MISUSE(h_close_send(rcomm)); /* wrong kind */
	EXPECT_MISUSE(h_close_recv(sc));
	EXPECT_MISUSE(h_close_listen(sc));

	EXPECT_OK(h_close_listen(lc));
	EXPECT_MISUSE(h_close_listen(lc));
	EXPECT_MISUSE(h_accept(lc, &out));

	EXPECT_OK(h_close_send(sc));
	EXPECT_MISUSE(h_close_send(sc));
	req = (void *)0x1;
	EXPECT_MISUSE(h_isend(sc, buf, sizeof(buf), H_TAG, NULL, &req));
	H_CHECK(req == NULL, "v%d: isend on a closed comm left *request", h_version);
	EXPECT_MISUSE(h_reg_mr(sc, buf, sizeof(buf), NCCL_PTR_HOST, &mh));

	EXPECT_OK(h_close_recv(rcomm));
	EXPECT_MISUSE(h_close_recv(rcomm));
	EXPECT_MISUSE(h_irecv(rcomm, 1, &data, &cap, &tag, &mh, &req));

	EXPECT_MISUSE(h_close_send(NULL));
	EXPECT_MISUSE(h_close_recv(NULL));
	EXPECT_MISUSE(h_close_listen(NULL));
	H_CHECK(out == NULL && mh == NULL, "v%d: an output was written by a failed call",
		h_version);
}

/* CollNet v12, one rank: test() on a finished request (it was freed and
 * read again, issue 13), and calls on a closed collComm. */
static void collnet_stale(void *dl)
{
	const ncclCollNet_v12_t *ct = dlsym(dl, "ncclCollNetPlugin_v12");
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *handles[1] = {handle};
	void *ctx = NULL, *lc = NULL, *cc = NULL, *mh[2], *req = NULL;
	float buf[2][4] = {{1, 2, 3, 4}, {0}};
	uint64_t until;
	int done = 0, size = -1;

	H_CHECK(ct, "dlsym ncclCollNetPlugin_v12: %s", dlerror());
	EXPECT_OK(ct->init(&ctx, 0x5258, h_logger));
	EXPECT_OK(ct->listen(ctx, 0, handle, &lc));
	EXPECT_OK(ct->connect(handles, 1, 0, lc, &cc));
	for (int j = 0; j < 2; j++)
		EXPECT_OK(ct->regMr(cc, buf[j], sizeof(buf[j]), NCCL_PTR_HOST, &mh[j]));
	EXPECT_OK(ct->iallreduce(cc, buf[0], buf[1], 4, ncclFloat32, ncclSum, mh[0], mh[1], &req));
	H_CHECK(req, "CollNet iallreduce gave no request");
	until = rw_now_ms() + H_STEP_TIMEOUT_MS;
	while (!done) {
		EXPECT_OK(ct->test(req, &done, &size));
		H_CHECK(done || rw_now_ms() < until, "CollNet request never finished");
	}
	H_CHECK(size == (int)sizeof(buf[1]) && buf[1][3] == 4.0f, "CollNet: size %d, [3] = %g",
		size, (double)buf[1][3]);
	done = 0;
	EXPECT_MISUSE(ct->test(req, &done, &size)); /* finished: freed */
	for (int j = 0; j < 2; j++)
		EXPECT_OK(ct->deregMr(cc, mh[j]));
	EXPECT_OK(ct->closeColl(cc));
	EXPECT_MISUSE(ct->closeColl(cc)); /* freed */
	EXPECT_MISUSE(ct->test(req, &done, &size));
	H_CHECK(done == 0, "a failed CollNet test wrote done");
	EXPECT_OK(ct->closeListen(lc));
	EXPECT_OK(ct->finalize(ctx));
}

static void misuse_child(void *arg)
{
	int version = *(const int *)arg;
	void *ctx = NULL, *ctx2 = NULL, *lc, *sc, *rcomm, *unused;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	struct h_props p0;
	int ndev;

	memset(&h_log, 0, sizeof(h_log));
	h_bind(h_open(), version);
	before_init();

	ndev = h_child_setup(version, &ctx, &p0);
	/* A second init: v6..v10 share the context, v11+ get another one. */
	EXPECT_OK(h_init(&ctx2));
	if (version >= 11)
		H_CHECK(ctx2 && ctx2 != ctx, "v%d: second init gave ctx %p (first %p)", version,
			ctx2, ctx);
	h_check_startup_log(version, 1);

	bad_setup_args(ctx, ndev);

	/* A listener that is never accepted can be closed. */
	EXPECT_OK(h_listen(ctx, H_DEV, handle, &unused));
	EXPECT_OK(h_close_listen(unused));

	h_self_connect(ctx, ctx2, &lc, &sc, &rcomm);
	bad_data_args(lc, sc, rcomm, &p0);
	closed_comms(lc, sc, rcomm);
	/* A second connection whose requests outlive it. */
	h_self_connect(ctx, ctx2, &lc, &sc, &rcomm);
	EXPECT_OK(h_close_listen(lc));
	stale_requests(sc, rcomm);
	if (version == 12)
		collnet_stale(h_open());

	if (version >= 11) {
		EXPECT_OK(h_finalize(ctx2));
		EXPECT_OK(h_finalize(ctx));
	}
}

void misuse(void **state)
{
	h_run_version(misuse_child, state, "misuse");
}

/* --- v11/v12 contexts ----------------------------------------------------- */

static void contexts_child(void *arg)
{
	int version = *(const int *)arg;
	void *ctx1 = NULL, *ctx2 = NULL, *ctx3 = NULL, *lc, *sc, *rcomm, *mh1, *mh2;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	unsigned char sbuf[4096], rbuf[4096];
	struct h_props p0;
	uint64_t bogus[8] = {0};
	int ndev = -1;

	h_child_setup(version, &ctx1, &p0);
	EXPECT_OK(h_init(&ctx2));
	H_CHECK(ctx2 && ctx2 != ctx1, "v%d: two communicators share a context", version);
	h_check_startup_log(version, 1);

	/* Listener on one communicator's context, connector on the other's. */
	h_self_connect(ctx1, ctx2, &lc, &sc, &rcomm);
	EXPECT_OK(h_close_listen(lc));
	EXPECT_OK(h_reg_mr(sc, sbuf, sizeof(sbuf), NCCL_PTR_HOST, &mh1));
	EXPECT_OK(h_reg_mr(rcomm, rbuf, sizeof(rbuf), NCCL_PTR_HOST, &mh2));
	{
		void *data = rbuf, *rreq, *sreq;
		size_t cap = sizeof(rbuf);
		int got[64];

		h_pattern_fill(sbuf, sizeof(sbuf), 99);
		rreq = h_post_recv(rcomm, 1, &data, &cap, &mh2);
		sreq = h_post_send(sc, sbuf, 3000, mh1);
		h_wait_req(sreq, NULL, "send");
		h_wait_req(rreq, got, "recv");
		H_CHECK(got[0] == 3000 && h_pattern_check(rbuf, 3000, 99) < 0,
			"v%d: cross-context transfer: size %d", version, got[0]);
	}
	EXPECT_OK(h_dereg_mr(sc, mh1));
	EXPECT_OK(h_dereg_mr(rcomm, mh2));
	EXPECT_OK(h_close_send(sc));
	EXPECT_OK(h_close_recv(rcomm));

	EXPECT_OK(h_finalize(NULL));
	EXPECT_MISUSE(h_finalize(bogus));
	EXPECT_OK(h_finalize(ctx1));
	EXPECT_MISUSE(h_finalize(ctx1)); /* no longer a live context */
	/* The other communicator is unaffected. */
	EXPECT_OK(h_listen(ctx2, H_DEV, handle, &lc));
	EXPECT_OK(h_close_listen(lc));
	EXPECT_OK(h_finalize(ctx2));
	/* The plugin is gone with its last context... */
	H_CHECK(h_devices(&ndev) == ncclInternalError, "v%d: devices after the last finalize",
		version);
	/* ...and comes back for the next communicator (NCCL 2.30 keeps the
	 * library loaded). */
	EXPECT_OK(h_init(&ctx3));
	EXPECT_OK(h_devices(&ndev));
	h_check_startup_log(version, 2);
	/* finalize closes what a communicator left open, and says so. */
	EXPECT_OK(h_listen(ctx3, H_DEV, handle, &lc));
	{
		int w0 = h_log.warns;

		EXPECT_OK(h_finalize(ctx3));
		H_CHECK(h_log.warns == w0 + 1, "v%d: finalize with an open listener: %d warnings",
			version, h_log.warns - w0);
	}
	/* Calls after the last finalize: the wrappers are gone (they were read
	 * after being freed, issue 13); each is an error.  No logger now. */
	{
		void *out = NULL;
		int done = 0;

		EXPECT_FAIL_EARLY(h_accept(lc, &out));
		EXPECT_FAIL_EARLY(h_close_listen(lc));
		EXPECT_FAIL_EARLY(h_close_send(sc));
		EXPECT_FAIL_EARLY(h_isend(sc, sbuf, 8, H_TAG, NULL, &out));
		EXPECT_FAIL_EARLY(h_reg_mr(rcomm, rbuf, 8, NCCL_PTR_HOST, &out));
		EXPECT_FAIL_EARLY(h_dereg_mr(rcomm, mh2));
		EXPECT_FAIL_EARLY(h_test(sbuf, &done, NULL)); /* never a request */
		EXPECT_FAIL_EARLY(h_listen(ctx3, H_DEV, handle, &out));
		H_CHECK(out == NULL && done == 0, "v%d: a call after finalize wrote an output",
			version);
	}
}

void contexts(void **state)
{
	h_run_version(contexts_child, state, "contexts");
}

/* --- no NCCL logger: stderr, filtered by RINGWAY_DEBUG -------------------- */

/* init(logger = NULL) + finalize with stderr captured; returns what came out. */
static void init_standalone(char *out, size_t len)
{
	const ncclNet_v11_t *t = h_table();
	ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	int fds[2], saved;
	void *ctx = NULL;
	ssize_t n;

	H_CHECK(pipe(fds) == 0, "pipe");
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	{
		int rc = t->init(&ctx, 42, &cfg, NULL, NULL);
		int rf = t->finalize(ctx);

		fflush(stderr);
		dup2(saved, STDERR_FILENO);
		close(saved);
		H_CHECK(rc == ncclSuccess && rf == ncclSuccess, "standalone init %d finalize %d",
			rc, rf);
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	n = read(fds[0], out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
}

static void standalone_child(void *arg)
{
	char err[8192];

	(void)arg;
	h_bind(h_open(), 11);
	unsetenv("RINGWAY_DEBUG");
	init_standalone(err, sizeof(err));
	H_CHECK(!strstr(err, "NET/ringway ABI v11"),
		"the startup INFO reached stderr at the default level: %s", err);
	setenv("RINGWAY_DEBUG", "INFO", 1);
	init_standalone(err, sizeof(err));
	H_CHECK(strstr(err, "NET/ringway ABI v11") && strstr(err, "INFO"),
		"RINGWAY_DEBUG=INFO: no startup line on stderr: '%s'", err);
}

void standalone_logs_to_stderr(void **state)
{
	(void)state;
	h_run_one(standalone_child, NULL, "standalone logging");
}

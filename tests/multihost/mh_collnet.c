/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One rank of CollNet as NCCL drives it, for tests/multihost/multihost.sh:
 * dlopen the built libnccl-net-ringway.so, take ncclNetPlugin_v12 and
 * ncclCollNetPlugin_v12, listen on device 0, exchange listen handles
 * through files in a directory every rank sees (standing in for NCCL's
 * bootstrap; the "hosts" are network namespaces over one file system),
 * connect, then run several iallreduce in flight (float sum, int32 max),
 * an iallgather and an ireducescatter over windows that cut rank blocks,
 * and check every element exactly.  Every wait is bounded.
 *
 *   mh_collnet <libnccl-net-ringway.so> <dir> <rank> <nranks>
 *
 * Exit 0 when every result is exact; otherwise 1, after one line on stderr
 * naming the rank, the step and the value.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"

#define STEP_MS	 60000
#define MAXRANKS 64
#define BIG	 ((1u << 20) + 3) /* floats */

static int me = -1, nranks;
static const ncclCollNet_v12_t *cn;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "mh_collnet: rank %d: %s:%d: %s: ", me, __FILE__,          \
				__LINE__, #cond);                                                  \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int arg_int(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	CHECK(!errno && *s && !*end && v >= 0 && v <= MAXRANKS, "%s '%s'", what, s);
	return (int)v;
}

/* dir/name.r written whole (a temporary file renamed), so a reader never
 * sees half of it. */
static void put_file(const char *dir, const char *name, int r, const void *buf, size_t len)
{
	char tmp[4096], path[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, name, r);
	snprintf(path, sizeof(path), "%s/%s.%d", dir, name, r);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "open %s: %s", tmp, strerror(errno));
	CHECK(write(fd, buf, len) == (ssize_t)len, "write %s: %s", tmp, strerror(errno));
	CHECK(close(fd) == 0 && rename(tmp, path) == 0, "rename %s: %s", path, strerror(errno));
}

/* Wait (bounded) for dir/name.r of every rank; read len bytes of each. */
static void get_all(const char *dir, const char *name, void *out, size_t len)
{
	uint64_t until = now_ms() + STEP_MS;

	for (int r = 0; r < nranks; r++) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/%s.%d", dir, name, r);
		while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			CHECK(errno == ENOENT, "open %s: %s", path, strerror(errno));
			CHECK(now_ms() < until, "rank %d never wrote %s", r, path);
			usleep(2000);
		}
		if (out)
			CHECK(read(fd, (char *)out + (size_t)r * len, len) == (ssize_t)len,
			      "read %s", path);
		close(fd);
	}
}

static void wait_req(void *req, int *size, const char *what)
{
	uint64_t until = now_ms() + STEP_MS;
	int done = 0;

	while (!done) {
		ncclResult_t rc = cn->test(req, &done, size);

		CHECK(rc == ncclSuccess, "%s: test: %d", what, rc);
		CHECK(now_ms() < until, "%s: request %p never finished", what, req);
	}
}

static float val(int rank, size_t i)
{
	return (float)((i * 7 + (size_t)rank * 3) % 5) - 2;
}

static float sum_of(size_t i)
{
	float s = 0;

	for (int r = 0; r < nranks; r++)
		s += val(r, i);
	return s;
}

/* Three float sums and one int32 max in flight, tested in reverse order. */
static void allreduce(void *comm)
{
	enum { NREQ = 4 };
	static const size_t counts[NREQ] = {BIG, 1, 1000, 4099};
	void *buf[NREQ][2], *mh[NREQ][2], *req[NREQ];

	for (int k = 0; k < NREQ; k++) {
		size_t bytes = counts[k] * 4;
		bool f = k < 3;

		for (int j = 0; j < 2; j++) {
			buf[k][j] = malloc(bytes);
			CHECK(buf[k][j], "malloc %zu", bytes);
			memset(buf[k][j], 0xa5, bytes);
			CHECK(cn->regMr(comm, buf[k][j], bytes, NCCL_PTR_HOST, &mh[k][j]) ==
				      ncclSuccess,
			      "regMr");
		}
		for (size_t i = 0; i < counts[k]; i++) {
			if (f)
				((float *)buf[k][0])[i] = val(me, i);
			else
				((int32_t *)buf[k][0])[i] = (int32_t)((i + (size_t)me * 13) % 97);
		}
		req[k] = NULL;
		CHECK(cn->iallreduce(comm, buf[k][0], buf[k][1], counts[k],
				     f ? ncclFloat32 : ncclInt32, f ? ncclSum : ncclMax, mh[k][0],
				     mh[k][1], &req[k]) == ncclSuccess &&
			      req[k],
		      "iallreduce of %zu", counts[k]);
	}
	for (int k = NREQ - 1; k >= 0; k--) {
		int size = -1;

		wait_req(req[k], &size, "iallreduce");
		CHECK(size == (int)(counts[k] * 4), "iallreduce of %zu: size %d", counts[k], size);
	}
	for (int k = 0; k < NREQ; k++) {
		for (size_t i = 0; i < counts[k]; i++) {
			if (k < 3) {
				float got = ((float *)buf[k][1])[i];

				CHECK(got == sum_of(i), "allreduce %zu: [%zu] = %g, want %g",
				      counts[k], i, got, sum_of(i));
			} else {
				int32_t got = ((int32_t *)buf[k][1])[i], want = 0;

				for (int r = 0; r < nranks; r++)
					want = RW_MAX(want, (int32_t)((i + (size_t)r * 13) % 97));
				CHECK(got == want, "max %zu: [%zu] = %d, want %d", counts[k], i,
				      got, want);
			}
		}
		for (int j = 0; j < 2; j++) {
			CHECK(cn->deregMr(comm, mh[k][j]) == ncclSuccess, "deregMr");
			free(buf[k][j]);
		}
	}
}

/* 1000-byte blocks, the window [300, n * 1000 - 300): cuts the first and
 * last block. */
static void allgather(void *comm)
{
	enum { BPR = 1000, WO = 300 };
	size_t wb = (size_t)nranks * BPR - 2 * WO;
	unsigned char send[BPR], *out = malloc(wb);
	void *smh, *rmh, *req = NULL;
	ncclNetSGE_v12_t sge;
	int size = -1;

	CHECK(out, "malloc");
	for (int i = 0; i < BPR; i++)
		send[i] = (unsigned char)(me * 100 + i);
	memset(out, 0xee, wb);
	CHECK(cn->regMr(comm, send, BPR, NCCL_PTR_HOST, &smh) == ncclSuccess &&
		      cn->regMr(comm, out, wb, NCCL_PTR_HOST, &rmh) == ncclSuccess,
	      "regMr");
	sge = (ncclNetSGE_v12_t){.mhandle = rmh, .address = out, .size = wb};
	CHECK(cn->iallgather(comm, send, 1, &sge, BPR, WO, wb, smh, &req) == ncclSuccess && req,
	      "iallgather");
	wait_req(req, &size, "iallgather");
	for (size_t g = WO; g < WO + wb; g++) {
		unsigned char want = (unsigned char)((g / BPR) * 100 + g % BPR);

		CHECK(out[g - WO] == want, "allgather byte %zu = %d, want %d", g, out[g - WO],
		      want);
	}
	CHECK(cn->deregMr(comm, smh) == ncclSuccess && cn->deregMr(comm, rmh) == ncclSuccess,
	      "deregMr");
	free(out);
}

/* 100-float blocks, the window [50, n * 100 - 50) floats. */
static void reduce_scatter(void *comm)
{
	enum { BPR = 100, WO = 50 };
	size_t wb = (size_t)nranks * BPR - 2 * WO;
	size_t lo = RW_MAX((size_t)me * BPR, (size_t)WO),
	       hi = RW_MIN((size_t)(me + 1) * BPR, (size_t)WO + wb);
	float *in = malloc(wb * sizeof(float)), out[BPR];
	void *smh, *rmh, *req = NULL;
	ncclNetSGE_v12_t sge;
	int size = -1;

	CHECK(in, "malloc");
	for (size_t i = 0; i < wb; i++)
		in[i] = val(me, WO + i);
	CHECK(cn->regMr(comm, in, wb * sizeof(float), NCCL_PTR_HOST, &smh) == ncclSuccess &&
		      cn->regMr(comm, out, sizeof(out), NCCL_PTR_HOST, &rmh) == ncclSuccess,
	      "regMr");
	sge = (ncclNetSGE_v12_t){.mhandle = smh, .address = in, .size = wb * sizeof(float)};
	CHECK(cn->ireducescatter(comm, 1, &sge, out, BPR * sizeof(float), WO * sizeof(float),
				 wb * sizeof(float), ncclFloat32, ncclSum, rmh,
				 &req) == ncclSuccess &&
		      req,
	      "ireducescatter");
	wait_req(req, &size, "ireducescatter");
	CHECK(size == (int)((hi - lo) * sizeof(float)), "ireducescatter: size %d", size);
	for (size_t g = lo; g < hi; g++)
		CHECK(out[g - lo] == sum_of(g), "reduce-scatter [%zu] = %g, want %g", g,
		      out[g - lo], sum_of(g));
	CHECK(cn->deregMr(comm, smh) == ncclSuccess && cn->deregMr(comm, rmh) == ncclSuccess,
	      "deregMr");
	free(in);
}

int main(int argc, char **argv)
{
	static char handles[MAXRANKS][NCCL_NET_HANDLE_MAXSIZE];
	void *so, *nctx = NULL, *ctx = NULL, *lc = NULL, *comm = NULL, *hp[MAXRANKS];
	const ncclNet_v12_t *net;
	const char *dir;
	int ndev = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s <libnccl-net-ringway.so> <dir> <rank> <nranks>\n",
			argv[0]);
		return 2;
	}
	dir = argv[2];
	me = arg_int(argv[3], "rank");
	nranks = arg_int(argv[4], "nranks");
	CHECK(nranks >= 1 && me < nranks, "rank %d of %d", me, nranks);

	so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	CHECK(so, "dlopen %s: %s", argv[1], dlerror());
	net = dlsym(so, "ncclNetPlugin_v12");
	cn = dlsym(so, "ncclCollNetPlugin_v12");
	CHECK(net && cn, "dlsym v12");
	CHECK(net->init(&nctx, 1, NULL, NULL, NULL) == ncclSuccess, "net init");
	CHECK(cn->init(&ctx, 0x5257, NULL) == ncclSuccess, "CollNet init");
	CHECK(cn->devices(&ndev) == ncclSuccess && ndev >= 1, "devices: %d", ndev);

	CHECK(cn->listen(ctx, 0, handles[me], &lc) == ncclSuccess && lc, "listen");
	put_file(dir, "handle", me, handles[me], sizeof(handles[me]));
	get_all(dir, "handle", handles, sizeof(handles[0]));
	for (int r = 0; r < nranks; r++)
		hp[r] = handles[r];
	CHECK(cn->connect(hp, nranks, me, lc, &comm) == ncclSuccess && comm, "connect");

	allreduce(comm);
	allgather(comm);
	reduce_scatter(comm);

	/* nobody closes while a peer may still wait on it */
	put_file(dir, "done", me, "", 0);
	get_all(dir, "done", NULL, 0);
	CHECK(cn->closeColl(comm) == ncclSuccess, "closeColl");
	CHECK(cn->closeListen(lc) == ncclSuccess, "closeListen");
	CHECK(cn->finalize(ctx) == ncclSuccess && net->finalize(nctx) == ncclSuccess, "finalize");
	printf("mh_collnet: rank %d of %d: iallreduce, iallgather, ireducescatter exact\n", me,
	       nranks);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the engine's multi-process tests (coll_test.h). */
#include "coll_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/world.h"
#include "common/rw_common.h"
#include "kernels/rw_reduce.h"
#include "support/rw_test.h"

#define MAX_ENV 64

struct rw_coll_comm *coll_of(struct rw_comm *w)
{
	return rw_world_coll(w);
}

/* A listening socket on 127.0.0.1, any port. */
static int bind_any(int *port)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*port = ntohs(in.sin_port);
	return fd;
}

/* Wait for every child, at most timeout_s; kill the rest.  Failures;
 * codes (may be NULL) gets each exit code or 128 + signal. */
static int reap(pid_t *pids, int n, int timeout_s, int *codes)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)timeout_s * 1000;
	int left = n, failed = 0;

	while (left > 0) {
		for (int i = 0; i < n; i++) {
			int st;

			if (pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) != pids[i])
				continue;
			if (codes)
				codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "rank %d: %s %d\n", i,
					WIFEXITED(st) ? "exit" : "signal",
					WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
				failed++;
			}
			pids[i] = 0;
			left--;
		}
		if (left && rw_now_ms() > deadline) {
			for (int i = 0; i < n; i++) {
				if (pids[i] <= 0)
					continue;
				fprintf(stderr, "rank %d: still running after %d s: killed\n", i,
					timeout_s);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], NULL, 0);
				if (codes)
					codes[i] = 128 + SIGKILL;
				pids[i] = 0;
				failed++;
				left--;
			}
		}
		if (left)
			usleep(5000);
	}
	return failed;
}

/* cmocka catches crashes by jumping back into its runner: a child must
 * die of them instead, so the parent sees the signal. */
static void child_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

	for (size_t i = 0; i < RW_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
}

static void child_exit(int rank, int rc, int rc_destroy)
{
	int unexpected = rw_test_log_unexpected();
	int code = rc ? 1 : rc_destroy ? 2 : unexpected ? 4 : 0;

	if (rc)
		fprintf(stderr, "rank %d: test body failed: %d (%s)\n", rank, rc,
			strerror(rc < 0 ? -rc : rc));
	if (rc_destroy)
		fprintf(stderr, "rank %d: destroy failed: %s\n", rank, strerror(-rc_destroy));
	if (unexpected)
		fprintf(stderr, "rank %d: %d unexpected warning(s), last: %s\n", rank, unexpected,
			rw_test_log_last_unexpected());
	fflush(stderr);
	_exit(code);
}

int coll_fork(int nranks, const char *const *env, coll_fn fn, void *arg, int timeout_s)
{
	return coll_fork_codes(nranks, env, fn, arg, timeout_s, NULL);
}

int coll_fork_codes(int nranks, const char *const *env, coll_fn fn, void *arg, int timeout_s,
		    int *codes)
{
	static const char *const defaults[] = {
		"RINGWAY_TRANSPORT",
		"socket",
		"RINGWAY_SOCKET_IFNAME",
		"lo",
		"RINGWAY_TIMEOUT_MS",
		"10000",
		NULL,
	};
	const char *pairs[2 * MAX_ENV + 1];
	pid_t pids[64];
	char root[64];
	int port, lfd, n = 0;

	/* the test's values first: the lookup takes the first match */
	for (int i = 0; env && env[i] && n < 2 * MAX_ENV - 8; i += 2) {
		pairs[n++] = env[i];
		pairs[n++] = env[i + 1];
	}
	for (int i = 0; defaults[i]; i++)
		pairs[n++] = defaults[i];
	pairs[n] = NULL;
	lfd = bind_any(&port);
	if (lfd < 0 || nranks > 64)
		return nranks;
	snprintf(root, sizeof(root), "127.0.0.1:%d", port);
	fflush(NULL);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			struct rw_config cfg;
			struct rw_comm *w = NULL;
			struct rw_world_args a = {.nranks = nranks,
						  .rank = r,
						  .root = root,
						  .listen_fd = r == 0 ? lfd : -1,
						  .cfg = &cfg};
			int rc;

			child_signals();
			if (r != 0)
				close(lfd);
			rw_test_log_reset();
			if (rw_test_config(&cfg, pairs))
				child_exit(r, -EINVAL, 0);
			rc = rw_world_create(&a, &w);
			if (rc) {
				fprintf(stderr, "rank %d: rw_world_create: %s\n", r, strerror(-rc));
				child_exit(r, rc, 0);
			}
			rc = fn(w, r, nranks, arg);
			child_exit(r, rc, rw_world_destroy(w));
		}
		if (pids[r] < 0)
			break;
	}
	close(lfd);
	return reap(pids, nranks, timeout_s, codes);
}

int coll_fork_raw(int nranks, coll_raw_fn fn, void *arg, int timeout_s)
{
	pid_t pids[64];
	char root[64];
	int port, lfd = bind_any(&port);

	if (lfd < 0 || nranks > 64)
		return nranks;
	close(lfd); /* the children's rank 0 binds it again: a small race */
	snprintf(root, sizeof(root), "127.0.0.1:%d", port);
	fflush(NULL);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			child_signals();
			rw_test_log_reset();
			child_exit(r, fn(root, r, nranks, arg), 0);
		}
	}
	return reap(pids, nranks, timeout_s, NULL);
}

/* --- data ---------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* A small integer as a minifloat with ebits/mbits/bias (exact for the
 * values the tests use). */
static uint32_t mini(int v, int ebits, int mbits, int bias)
{
	uint32_t a = (uint32_t)(v < 0 ? -v : v), s = v < 0;
	int e;

	if (!a)
		return 0;
	e = 31 - __builtin_clz(a);
	return s << (ebits + mbits) | (uint32_t)(e + bias) << mbits |
	       ((a << mbits >> e) & ((1u << mbits) - 1));
}

static void put(void *buf, size_t i, enum rw_dtype dt, int v)
{
	float f = (float)v;
	uint32_t fb;

	switch (dt) {
	case RW_DTYPE_INT8:
		((int8_t *)buf)[i] = (int8_t)v;
		break;
	case RW_DTYPE_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case RW_DTYPE_INT32:
		((int32_t *)buf)[i] = v;
		break;
	case RW_DTYPE_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)v;
		break;
	case RW_DTYPE_INT64:
		((int64_t *)buf)[i] = v;
		break;
	case RW_DTYPE_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case RW_DTYPE_FLOAT32:
		((float *)buf)[i] = f;
		break;
	case RW_DTYPE_FLOAT64:
		((double *)buf)[i] = v;
		break;
	case RW_DTYPE_FLOAT16:
		((uint16_t *)buf)[i] = (uint16_t)mini(v, 5, 10, 15);
		break;
	case RW_DTYPE_BFLOAT16:
		memcpy(&fb, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(fb >> 16);
		break;
	case RW_DTYPE_FLOAT8E4M3:
		((uint8_t *)buf)[i] = (uint8_t)mini(v, 4, 3, 7);
		break;
	case RW_DTYPE_FLOAT8E5M2:
		((uint8_t *)buf)[i] = (uint8_t)mini(v, 5, 2, 15);
		break;
	default:
		break;
	}
}

static bool is_unsigned(enum rw_dtype dt)
{
	return dt == RW_DTYPE_UINT8 || dt == RW_DTYPE_UINT32 || dt == RW_DTYPE_UINT64;
}

static int value(size_t i, enum rw_dtype dt, enum rw_op op, int rank, uint64_t seed)
{
	static const int prod_s[] = {1, -1, 2, 1}, prod_u[] = {1, 2, 1, 1};
	uint64_t h = mix(seed * 1000003u + (uint64_t)rank * 7919u + i);

	switch (op) {
	case RW_OP_PROD:
		return is_unsigned(dt) ? prod_u[h % 4] : prod_s[h % 4];
	case RW_OP_MAX:
	case RW_OP_MIN:
		return is_unsigned(dt) ? (int)(h % 7) : (int)(h % 7) - 3;
	default: /* sum, avg */
		return is_unsigned(dt) ? (int)(h % 3) : (int)(h % 3) - 1;
	}
}

void coll_fill(void *buf, size_t count, enum rw_dtype dt, enum rw_op op, int rank, uint64_t seed)
{
	for (size_t i = 0; i < count; i++)
		put(buf, i, dt, value(i, dt, op, rank, seed));
}

void coll_reference(void *ref, size_t count, enum rw_dtype dt, enum rw_op op, int nranks,
		    uint64_t seed)
{
	size_t bytes = count * rw_dtype_size(dt);
	void *tmp = malloc(bytes ? bytes : 1);

	coll_fill(ref, count, dt, op, 0, seed);
	for (int r = 1; r < nranks && count; r++) {
		coll_fill(tmp, count, dt, op, r, seed);
		rw_reduce(ref, ref, tmp, count, dt, op);
	}
	if (op == RW_OP_AVG && count)
		rw_scale(ref, ref, count, dt, (unsigned)nranks);
	free(tmp);
}

bool coll_same(const char *what, const void *got, const void *want, size_t count, enum rw_dtype dt)
{
	size_t es = rw_dtype_size(dt);

	if (!count || memcmp(got, want, count * es) == 0)
		return true;
	for (size_t i = 0; i < count; i++) {
		if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
			uint64_t g = 0, w = 0;

			memcpy(&g, (const char *)got + i * es, es);
			memcpy(&w, (const char *)want + i * es, es);
			fprintf(stderr, "%s: %s element %zu of %zu: got 0x%llx, want 0x%llx\n",
				what, rw_dtype_name(dt), i, count, (unsigned long long)g,
				(unsigned long long)w);
			break;
		}
	}
	return false;
}

void *coll_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		abort();
	memset(p, 0xa5, n); /* garbage where results must land */
	return p;
}

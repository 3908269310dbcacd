/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA IPC on the host-emulated GPU, between processes: a child forked
 * before the allocation exists opens the parent's handle, reads what the
 * parent wrote and writes where the parent reads; handles of this process,
 * of freed allocations (even when a new allocation took the same fd
 * number), of exited processes and of no allocation at all are refused;
 * only own device memory exports.
 */
#include "support/rw_test.h"

#include "gpu/rw_cuda.h"
#include "gpu/rw_cuda_ipc.h"
#include "gpu/rw_gpu_emu.h"
#include "net/test_shm_util.h"

#define ALLOC  (1024 * 1024 + 5)
#define RD_OFF 4096 /* the parent exports from here */
#define RD_LEN 100000
#define WR_OFF 500000 /* the child writes here (from the exported pointer) */
#define WR_LEN 70000

struct msg {
	struct rw_cuda_ipc_handle h;
	uint64_t offset;
};

/* Opens the handle it is sent, checks and writes through it. */
static void child_peer(struct shm_child *k)
{
	char *want = malloc(RD_LEN), *got = malloc(RD_LEN), *mine, *base;
	struct rw_gpu_emu_stats s0, s1;
	struct msg m;
	size_t size = 0;
	void *s;
	int rc;

	CHILD_CHECK(want && got);
	CHILD_CHECK(shm_pipe_read(k->to[0], &m, sizeof(m)) == 0);
	rc = rw_cuda_ipc_open(&m.h, (void **)&base, &size);
	CHILD_CHECK(rc == 0);
	CHILD_CHECK(size == ALLOC);
	CHILD_CHECK(rw_cuda_mem_kind(base + 10) == RW_MEM_DEVICE);
	CHILD_CHECK(m.offset == RD_OFF);
	/* read what the parent wrote: into own device memory, then back */
	CHILD_CHECK(rw_cuda_malloc((void **)&mine, RD_LEN) == 0);
	CHILD_CHECK(rw_cuda_stream_create(&s) == 0);
	rw_gpu_emu_stats(&s0);
	CHILD_CHECK(rw_cuda_memcpy_async(mine, base + m.offset, RD_LEN, s) == 0);
	CHILD_CHECK(rw_cuda_memcpy_async(got, mine, RD_LEN, s) == 0);
	CHILD_CHECK(rw_cuda_stream_sync(s) == 0);
	rw_gpu_emu_stats(&s1);
	CHILD_CHECK(s1.copies_d2d - s0.copies_d2d == 1 && s1.copies_d2h - s0.copies_d2h == 1);
	rw_test_fill(want, RD_LEN, 41);
	CHILD_CHECK(memcmp(got, want, RD_LEN) == 0);
	/* write where the parent will read */
	rw_test_fill(want, WR_LEN, 42);
	CHILD_CHECK(rw_cuda_memcpy_async(base + m.offset + WR_OFF, want, WR_LEN, s) == 0);
	CHILD_CHECK(rw_cuda_stream_sync(s) == 0);
	rw_cuda_ipc_close(base);
	CHILD_CHECK(rw_cuda_mem_kind(base + 10) == RW_MEM_HOST);
	rw_cuda_stream_destroy(s);
	rw_cuda_free(mine);
	rc = 0;
	CHILD_CHECK(shm_pipe_write(k->from[1], &rc, sizeof(rc)) == 0);
	_exit(0);
}

static void two_processes_share_device_memory(void **state)
{
	char *buf = malloc(RD_LEN), *d;
	struct shm_child k;
	struct msg m;
	int rc = -1, st;

	(void)state;
	assert_non_null(buf);
	assert_true(shm_child_start(&k, child_peer) > 0); /* before the allocation */
	assert_int_equal(rw_cuda_malloc((void **)&d, ALLOC), 0);
	assert_int_equal(rw_cuda_memset(d, 0, ALLOC), 0);
	rw_test_fill(buf, RD_LEN, 41);
	assert_int_equal(rw_cuda_memcpy(d + RD_OFF, buf, RD_LEN), 0);
	memset(&m, 0, sizeof(m));
	assert_int_equal(rw_cuda_ipc_export(d + RD_OFF, RD_LEN, &m.h, &m.offset), 0);
	assert_int_equal(m.offset, RD_OFF);
	assert_int_equal(shm_pipe_write(k.to[1], &m, sizeof(m)), 0);
	assert_int_equal(shm_pipe_read(k.from[0], &rc, sizeof(rc)), 0);
	assert_int_equal(rc, 0);
	st = shm_child_reap(&k, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* what the child wrote is in our memory */
	{
		char *want = malloc(WR_LEN);

		assert_non_null(want);
		rw_test_fill(want, WR_LEN, 42);
		assert_int_equal(rw_cuda_memcpy(buf, d + RD_OFF + WR_OFF, WR_LEN), 0);
		assert_memory_equal(buf, want, WR_LEN);
		free(want);
	}
	rw_cuda_free(d);
	free(buf);
}

/* Tries to open the handle it is sent; writes back the result. */
static void child_open(struct shm_child *k)
{
	struct rw_cuda_ipc_handle h;
	size_t size = 0;
	void *base = NULL;
	int rc;

	CHILD_CHECK(shm_pipe_read(k->to[0], &h, sizeof(h)) == 0);
	rc = rw_cuda_ipc_open(&h, &base, &size);
	if (rc == 0)
		rw_cuda_ipc_close(base);
	CHILD_CHECK(shm_pipe_write(k->from[1], &rc, sizeof(rc)) == 0);
	_exit(0);
}

static int open_in_child(const struct rw_cuda_ipc_handle *h)
{
	struct shm_child k;
	int rc = 1, st;

	assert_true(shm_child_start(&k, child_open) > 0);
	assert_int_equal(shm_pipe_write(k.to[1], h, sizeof(*h)), 0);
	assert_int_equal(shm_pipe_read(k.from[0], &rc, sizeof(rc)), 0);
	st = shm_child_reap(&k, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	return rc;
}

static void stale_and_foreign_handles_refused(void **state)
{
	struct rw_cuda_ipc_handle h, zero;
	uint64_t off;
	size_t size;
	void *a, *b, *base;

	(void)state;
	/* own handle: CUDA refuses it too */
	assert_int_equal(rw_cuda_malloc(&a, 8192), 0);
	assert_int_equal(rw_cuda_ipc_export(a, 8192, &h, &off), 0);
	rw_test_log_expect("exported by this process");
	assert_int_equal(rw_cuda_ipc_open(&h, &base, &size), -EINVAL);
	/* a good handle opens in a child */
	assert_int_equal(open_in_child(&h), 0);
	/* freed, and a new allocation under the same fd number: refused */
	rw_cuda_free(a);
	assert_int_equal(rw_cuda_malloc(&b, 8192), 0);
	rw_test_log_expect("is no longer allocation");
	assert_int_equal(open_in_child(&h), -EINVAL);
	rw_cuda_free(b);
	/* freed, nothing in its place */
	rw_test_log_expect("freed (no such fd)");
	assert_int_equal(open_in_child(&h), -EINVAL);
	/* no handle at all */
	memset(&zero, 0, sizeof(zero));
	rw_test_log_expect("not a handle of the emulated GPU");
	assert_int_equal(rw_cuda_ipc_open(&zero, &base, &size), -EINVAL);
	assert_int_equal(open_in_child(&zero), -EINVAL);
}

/* Exports, sends the handle, exits. */
static void child_export_and_exit(struct shm_child *k)
{
	struct rw_cuda_ipc_handle h;
	uint64_t off;
	void *d;

	CHILD_CHECK(rw_cuda_malloc(&d, 4096) == 0);
	CHILD_CHECK(rw_cuda_ipc_export(d, 4096, &h, &off) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], &h, sizeof(h)) == 0);
	_exit(0);
}

static void exited_exporter_refused(void **state)
{
	struct rw_cuda_ipc_handle h;
	struct shm_child k;
	size_t size;
	void *base;
	int st;

	(void)state;
	assert_true(shm_child_start(&k, child_export_and_exit) > 0);
	assert_int_equal(shm_pipe_read(k.from[0], &h, sizeof(h)), 0);
	st = shm_child_reap(&k, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	rw_test_log_expect("has exited");
	assert_int_equal(rw_cuda_ipc_open(&h, &base, &size), -ESRCH);
}

static void only_own_device_memory_exports(void **state)
{
	struct rw_cuda_ipc_handle h;
	char host[64], *d, *pin;
	uint64_t off;

	(void)state;
	assert_int_equal(rw_cuda_malloc((void **)&d, 1000), 0);
	assert_int_equal(rw_cuda_host_alloc((void **)&pin, 1000), 0);
	assert_int_equal(rw_cuda_ipc_export(host, sizeof(host), &h, &off), -EINVAL);
	assert_int_equal(rw_cuda_ipc_export(pin, 100, &h, &off), -EINVAL);
	assert_int_equal(rw_cuda_ipc_export(d + 900, 101, &h, &off), -EINVAL);
	assert_int_equal(rw_cuda_ipc_export(d + 900, 100, &h, &off), 0);
	assert_int_equal(off, 900);
	rw_test_log_expect("not an opened peer allocation");
	rw_cuda_ipc_close(d); /* own memory is not an opened handle */
	assert_int_equal(rw_cuda_mem_kind(d), RW_MEM_DEVICE);
	rw_cuda_host_free(pin);
	rw_cuda_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(two_processes_share_device_memory,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(stale_and_foreign_handles_refused,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(exited_exporter_refused, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(only_own_device_memory_exports, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	if (rw_gpu_emu_enable(1, 0) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}

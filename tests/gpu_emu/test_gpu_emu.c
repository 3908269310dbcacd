/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-emulated GPU (gpu/rw_gpu_emu.h) through gpu/rw_cuda.h: off, it
 * changes nothing; on, device memory is device memory (and faults under host
 * access), streams run in order, events answer -EAGAIN until their stream
 * reaches them, copies of every direction land and are counted, a stream
 * waits for another's event, and streams stay with the process that made
 * them.  Ordering is checked with gates (host functions that wait for the
 * test), never with time.
 */
#include "support/rw_test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_cuda_dmabuf.h"
#include "gpu/rw_gpu_emu.h"

#define GATE_MS 20000

/* ThreadSanitizer refuses threads made after a fork of a threaded process. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* A host function that holds its stream until the test opens it. */
struct gate {
	int open;
	int ran;
	int order; /* its place among the functions that ran */
};

static int ran_count;

static void gate_fn(void *arg)
{
	struct gate *g = arg;
	uint64_t end = rw_now_ms() + GATE_MS;

	while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) && rw_now_ms() < end)
		usleep(200);
	g->order = __atomic_fetch_add(&ran_count, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&g->ran, 1, __ATOMIC_RELEASE);
}

static void gate_open(struct gate *g)
{
	__atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
}

/* Gates live here, never reused: a test that fails with a gate closed
 * leaves no stream behind on it (teardown opens them all). */
static struct gate gates[32];
static unsigned int ngates;

static struct gate *gate_new(void)
{
	assert_true(ngates < RW_ARRAY_SIZE(gates));
	return &gates[ngates++];
}

/* Poll until fn answers something but -EAGAIN (bounded). */
static int poll_until_done(int (*fn)(void *), void *obj)
{
	uint64_t end = rw_now_ms() + GATE_MS;
	int rc;

	while ((rc = fn(obj)) == -EAGAIN && rw_now_ms() < end)
		usleep(100);
	return rc;
}

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < ngates; i++)
		gate_open(&gates[i]);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

/* Before the switch: nothing answers as a GPU would (runs first). */
static void off_changes_nothing(void **state)
{
	struct rw_gpu_emu_stats st;
	char *h = malloc(64);

	(void)state;
	assert_non_null(h);
	assert_false(rw_gpu_emu_enabled());
	assert_int_equal(rw_cuda_mem_kind(h), RW_MEM_HOST);
	assert_int_equal(rw_cuda_ptr_device(h), -1);
	rw_gpu_emu_stats(&st);
	assert_int_equal(st.allocs_live + st.streams_live + st.copies_h2d, 0);
	assert_ptr_equal(rw_gpu_emu_access(h, 64), h);
	assert_int_equal(rw_gpu_emu_launch_kernel(NULL, free, NULL), -ENOTSUP);
	free(h);
}

static void enable_checks_arguments(void **state)
{
	(void)state;
	rw_test_log_expect("gpu-emu: enable");
	assert_int_equal(rw_gpu_emu_enable(0, 0), -EINVAL);
	assert_int_equal(rw_gpu_emu_enable(RW_GPU_EMU_MAX_DEVICES + 1, 0), -EINVAL);
	assert_int_equal(rw_gpu_emu_enable(2, 0x80), -EINVAL);
	assert_false(rw_gpu_emu_enabled());
	assert_int_equal(rw_gpu_emu_enable(2, 0), 0);
	assert_true(rw_gpu_emu_enabled());
	assert_int_equal(rw_gpu_emu_enable(2, 0), 0);	    /* same again: fine */
	assert_int_equal(rw_gpu_emu_enable(3, 0), -EINVAL); /* other arguments */
	assert_int_equal(rw_gpu_emu_enable(2, RW_GPU_EMU_HOST_VISIBLE), -EINVAL);
}

static void memory_kinds(void **state)
{
	struct rw_gpu_emu_stats a, b;
	char *d0, *d1, *pin, *h = malloc(100), stack = 0;
	void *z = (void *)1;
	int n = 0, dev = -1;

	(void)state;
	assert_non_null(h);
	rw_gpu_emu_stats(&a);
	assert_int_equal(rw_cuda_device_count(&n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rw_cuda_get_device(&dev), 0);
	assert_int_equal(dev, 0);
	assert_int_equal(rw_cuda_malloc((void **)&d0, 1000), 0);
	assert_int_equal(rw_cuda_set_device(1), 0);
	assert_int_equal(rw_cuda_malloc((void **)&d1, 5000), 0);
	assert_int_equal(rw_cuda_get_device(&dev), 0);
	assert_int_equal(dev, 1);
	assert_int_equal(rw_cuda_set_device(0), 0);
	{
		char id[RW_GPU_EMU_BUSID_LEN];

		assert_int_equal(rw_cuda_device_busid(1, id, sizeof(id)), 0);
		assert_string_equal(id, "0000:e1:00.0");
		assert_int_equal(rw_gpu_emu_set_busid(1, "0000:1B:00.0"), 0);
		assert_int_equal(rw_cuda_device_busid(1, id, sizeof(id)), 0);
		assert_string_equal(id, "0000:1b:00.0");
		assert_int_equal(rw_cuda_device_busid(0, id, sizeof(id)), 0);
		assert_string_equal(id, "0000:e0:00.0");
		rw_test_log_expect("gpu-emu: device_busid(2");
		assert_int_equal(rw_cuda_device_busid(2, id, sizeof(id)), -EINVAL);
		rw_test_log_expect("gpu-emu: set_busid(");
		assert_int_equal(rw_gpu_emu_set_busid(2, "0000:1b:00.0"), -EINVAL);
		assert_int_equal(rw_gpu_emu_set_busid(0, "0000:1b:00.0-much-too-long"), -EINVAL);
	}
	rw_test_log_expect("gpu-emu: set_device(2)");
	assert_int_equal(rw_cuda_set_device(2), -ENODEV);
	assert_int_equal(rw_cuda_host_alloc((void **)&pin, 300), 0);

	assert_int_equal(rw_cuda_mem_kind(d0), RW_MEM_DEVICE);
	assert_int_equal(rw_cuda_mem_kind(d0 + 999), RW_MEM_DEVICE);
	assert_int_equal(rw_cuda_mem_kind(d0 + 1000), RW_MEM_HOST); /* past the end */
	assert_int_equal(rw_cuda_ptr_device(d0 + 10), 0);
	assert_int_equal(rw_cuda_mem_kind(d1 + 4096), RW_MEM_DEVICE);
	assert_int_equal(rw_cuda_ptr_device(d1 + 4096), 1);
	assert_int_equal(rw_cuda_mem_kind(pin + 299), RW_MEM_HOST_PINNED);
	assert_int_equal(rw_cuda_ptr_device(pin), -1);
	assert_int_equal(rw_cuda_mem_kind(h), RW_MEM_HOST);
	assert_int_equal(rw_cuda_mem_kind(&stack), RW_MEM_HOST);
	assert_int_equal(rw_cuda_mem_kind(NULL), RW_MEM_HOST);
	assert_int_equal(rw_cuda_ptr_device(h), -1);
	assert_int_equal(rw_cuda_malloc(&z, 0), 0); /* as cudaMalloc(0) */
	assert_null(z);

	/* the emulator's view reaches device memory; pinned and host as is */
	assert_non_null(rw_gpu_emu_access(d0, 1000));
	assert_ptr_not_equal(rw_gpu_emu_access(d0, 1000), d0);
	assert_ptr_equal(rw_gpu_emu_access(pin, 300), pin);
	assert_ptr_equal(rw_gpu_emu_access(h, 100), h);
	rw_test_log_expect("leaves its 1000-byte allocation");
	assert_null(rw_gpu_emu_access(d0 + 10, 1000));

	rw_gpu_emu_stats(&b);
	assert_int_equal(b.allocs_live, a.allocs_live + 2);
	rw_cuda_free(d0);
	rw_cuda_free(d1);
	rw_cuda_host_free(pin);
	assert_int_equal(rw_cuda_mem_kind(d0), RW_MEM_HOST);
	assert_int_equal(rw_cuda_mem_kind(pin), RW_MEM_HOST);
	rw_gpu_emu_stats(&b);
	assert_int_equal(b.allocs_live, a.allocs_live);
	rw_test_log_expect("free(");
	rw_cuda_free(h); /* not a device allocation: warned, nothing freed */
	free(h);
}

/* Device memory is not host memory: a host read faults (in a child). */
static void device_memory_faults_on_host_access(void **state)
{
	char *d, buf[64];
	pid_t pid;
	int st = 0;

	(void)state;
	assert_int_equal(rw_cuda_malloc((void **)&d, 64), 0);
	memset(buf, 7, sizeof(buf));
	assert_int_equal(rw_cuda_memcpy(d, buf, sizeof(buf)), 0);
	assert_memory_equal(rw_gpu_emu_access(d, 64), buf, 64);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		alarm(30);
		_exit(*(volatile char *)d == 7 ? 42 : 43); /* the read must not return */
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		assert_int_equal(WTERMSIG(st), SIGSEGV);
	else /* a sanitizer's SEGV report exits */
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 42 && WEXITSTATUS(st) != 43);
	rw_cuda_free(d);
}

static void blocking_copies_every_direction(void **state)
{
	struct rw_gpu_emu_stats a, b;
	const size_t n = 100003;
	char *h1 = malloc(n), *h2 = malloc(n), *d1, *d2;

	(void)state;
	assert_true(h1 && h2);
	rw_test_fill(h1, n, 11);
	memset(h2, 0, n);
	assert_int_equal(rw_cuda_malloc((void **)&d1, n), 0);
	assert_int_equal(rw_cuda_malloc((void **)&d2, n), 0);
	rw_gpu_emu_stats(&a);
	assert_int_equal(rw_cuda_memcpy(d1, h1, n), 0);
	assert_int_equal(rw_cuda_memcpy(d2, d1, n), 0);
	assert_int_equal(rw_cuda_memcpy(h2, d2, n), 0);
	assert_memory_equal(h1, h2, n);
	assert_int_equal(rw_cuda_memset(d2 + 10, 0xab, 20), 0);
	assert_int_equal(rw_cuda_memcpy(h2, d2, 64), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal((unsigned char)h2[i],
				 i >= 10 && i < 30 ? 0xab : (unsigned char)h1[i]);
	rw_gpu_emu_stats(&b);
	assert_int_equal(b.copies_h2d - a.copies_h2d, 1);
	assert_int_equal(b.copies_d2d - a.copies_d2d, 1);
	assert_int_equal(b.copies_d2h - a.copies_d2h, 2);
	assert_int_equal(b.bytes_d2h - a.bytes_d2h, n + 64);
	assert_int_equal(b.memsets - a.memsets, 1);
	assert_true(b.blocking_thread - a.blocking_thread >= 5);

	rw_test_log_expect("leaves its 100003-byte allocation");
	assert_int_equal(rw_cuda_memcpy(h2, d1 + 10, n), -EFAULT);
	rw_test_log_expect("not device memory");
	assert_int_equal(rw_cuda_memset(h2, 0, 10), -EINVAL);
	rw_test_log_expect("NULL buffer");
	assert_int_equal(rw_cuda_memcpy(NULL, d1, 10), -EINVAL);
	rw_cuda_free(d1);
	rw_cuda_free(d2);
	free(h1);
	free(h2);
}

static int stream_query_fn(void *s)
{
	return rw_cuda_stream_query(s);
}

static int event_query_fn(void *e)
{
	return rw_cuda_event_query(e);
}

/* A slow op, then fast ones: they finish in order, and nothing after the
 * slow op runs before it; the event answers -EAGAIN until then. */
static void stream_runs_in_order(void **state)
{
	struct gate *slow = gate_new(), *fast = gate_new();
	const size_t n = 4096;
	char *src = malloc(n), *dst = calloc(1, n), *zero = calloc(1, n), *d;
	void *s, *ev, *never;

	(void)state;
	assert_true(src && dst && zero);
	rw_test_fill(src, n, 3);
	assert_int_equal(rw_cuda_malloc((void **)&d, n), 0);
	assert_int_equal(rw_cuda_stream_create(&s), 0);
	assert_int_equal(rw_cuda_event_create(&ev), 0);
	assert_int_equal(rw_cuda_event_create(&never), 0);
	assert_int_equal(rw_cuda_event_query(never), 0); /* never recorded: complete */
	assert_int_equal(rw_cuda_stream_query(s), 0);
	ran_count = 0;
	fast->open = 1;
	assert_int_equal(rw_cuda_launch_host(s, gate_fn, slow), 0);
	assert_int_equal(rw_cuda_memcpy_async(d, src, n, s), 0);
	assert_int_equal(rw_cuda_launch_host(s, gate_fn, fast), 0);
	assert_int_equal(rw_cuda_event_record(ev, s), 0);
	assert_int_equal(rw_cuda_memcpy_async(dst, d, n, s), 0);

	/* the slow op holds everything behind it */
	assert_int_equal(rw_cuda_event_query(ev), -EAGAIN);
	assert_int_equal(rw_cuda_stream_query(s), -EAGAIN);
	assert_int_equal(__atomic_load_n(&fast->ran, __ATOMIC_ACQUIRE), 0);
	assert_memory_equal(dst, zero, n);

	gate_open(slow);
	assert_int_equal(poll_until_done(event_query_fn, ev), 0);
	assert_int_equal(poll_until_done(stream_query_fn, s), 0);
	assert_int_equal(slow->order, 0);
	assert_int_equal(fast->order, 1);
	assert_memory_equal(dst, src, n);

	rw_cuda_event_destroy(never);
	rw_cuda_event_destroy(ev);
	rw_cuda_stream_destroy(s);
	rw_cuda_free(d);
	free(src);
	free(dst);
	free(zero);
}

static void events_sync_and_time(void **state)
{
	struct gate *g = gate_new();
	void *s, *e1, *e2;
	float ms = -1;

	(void)state;
	assert_int_equal(rw_cuda_stream_create(&s), 0);
	assert_int_equal(rw_cuda_event_create(&e1), 0);
	assert_int_equal(rw_cuda_event_create(&e2), 0);
	rw_test_log_expect("never recorded");
	assert_int_equal(rw_cuda_event_elapsed_ms(e1, e2, &ms), -EINVAL);
	assert_int_equal(rw_cuda_event_record(e1, s), 0);
	assert_int_equal(rw_cuda_launch_host(s, gate_fn, g), 0);
	assert_int_equal(rw_cuda_event_record(e2, s), 0);
	assert_int_equal(rw_cuda_event_elapsed_ms(e1, e2, &ms), -EAGAIN);
	assert_int_equal(rw_cuda_event_query(e2), -EAGAIN);
	gate_open(g);
	assert_int_equal(rw_cuda_event_sync(e2), 0);
	assert_int_equal(rw_cuda_event_query(e1), 0);
	assert_int_equal(rw_cuda_event_elapsed_ms(e1, e2, &ms), 0);
	assert_true(ms >= 0);
	/* recorded again: pending again until the stream gets there */
	g = gate_new();
	assert_int_equal(rw_cuda_launch_host(s, gate_fn, g), 0);
	assert_int_equal(rw_cuda_event_record(e2, s), 0);
	assert_int_equal(rw_cuda_event_query(e2), -EAGAIN);
	gate_open(g);
	assert_int_equal(rw_cuda_stream_sync(s), 0);
	assert_int_equal(rw_cuda_event_query(e2), 0);
	/* an event destroyed while its record is pending is freed later */
	g = gate_new();
	assert_int_equal(rw_cuda_launch_host(s, gate_fn, g), 0);
	assert_int_equal(rw_cuda_event_record(e2, s), 0);
	rw_cuda_event_destroy(e2);
	gate_open(g);
	assert_int_equal(rw_cuda_stream_sync(s), 0);
	rw_cuda_event_destroy(e1);
	rw_cuda_stream_destroy(s);
}

/* Stream b waits for an event of stream a; the NULL stream works too. */
static void streams_wait_for_events(void **state)
{
	struct gate *g = gate_new();
	const size_t n = 10000;
	char *src = malloc(n), *dst = calloc(1, n), *zero = calloc(1, n), *d;
	void *a, *b, *ev;

	(void)state;
	assert_true(src && dst && zero);
	rw_test_fill(src, n, 5);
	assert_int_equal(rw_cuda_malloc((void **)&d, n), 0);
	assert_int_equal(rw_cuda_stream_create(&a), 0);
	assert_int_equal(rw_cuda_stream_create(&b), 0);
	assert_int_equal(rw_cuda_event_create(&ev), 0);
	assert_int_equal(rw_cuda_launch_host(a, gate_fn, g), 0);
	assert_int_equal(rw_cuda_memcpy_async(d, src, n, a), 0);
	assert_int_equal(rw_cuda_event_record(ev, a), 0);
	assert_int_equal(rw_cuda_stream_wait_event(b, ev), 0);
	assert_int_equal(rw_cuda_memcpy_async(dst, d, n, b), 0);
	assert_int_equal(rw_cuda_stream_query(b), -EAGAIN);
	assert_memory_equal(dst, zero, n);
	gate_open(g);
	assert_int_equal(rw_cuda_stream_sync(b), 0);
	assert_memory_equal(dst, src, n);

	/* the NULL stream: an async copy there lands before a blocking copy */
	rw_test_fill(src, n, 6);
	assert_int_equal(rw_cuda_memcpy_async(d, src, n, NULL), 0);
	assert_int_equal(rw_cuda_memcpy(dst, d, n), 0);
	assert_memory_equal(dst, src, n);
	assert_int_equal(rw_cuda_stream_sync(NULL), 0);
	assert_int_equal(rw_cuda_stream_query(NULL), 0);

	/* with a delay on every op, data still arrive in order */
	rw_gpu_emu_set_delay_us(500);
	for (int i = 0; i < 8; i++) {
		rw_test_fill(src + i * 1000, 1000, 100 + (uint64_t)i);
		assert_int_equal(rw_cuda_memcpy_async(d + i * 1000, src + i * 1000, 1000, a), 0);
	}
	assert_int_equal(rw_cuda_memcpy_async(dst, d, 8000, a), 0);
	assert_int_equal(rw_cuda_stream_sync(a), 0);
	rw_gpu_emu_set_delay_us(0);
	assert_memory_equal(dst, src, 8000);

	rw_test_log_expect("NULL function");
	assert_int_equal(rw_cuda_launch_host(a, NULL, NULL), -EINVAL);
	rw_cuda_event_destroy(ev);
	rw_cuda_stream_destroy(a);
	rw_cuda_stream_destroy(b);
	rw_cuda_free(d);
	free(src);
	free(dst);
	free(zero);
}

/* Streams stay with their process; memory stays device memory. */
static void fork_keeps_memory_not_streams(void **state)
{
	char *d, buf[32] = "before fork";
	void *s;
	pid_t pid;
	int st = 0;

	(void)state;
	if (UNDER_TSAN)
		skip();
	assert_int_equal(rw_cuda_malloc((void **)&d, 32), 0);
	assert_int_equal(rw_cuda_memcpy(d, buf, sizeof(buf)), 0);
	assert_int_equal(rw_cuda_stream_create(&s), 0);
	rw_test_log_expect("before fork");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char got[32] = {0};
		void *mine;

		alarm(30);
		if (rw_cuda_mem_kind(d) != RW_MEM_DEVICE)
			_exit(1);
		if (rw_cuda_stream_query(s) != -EIO) /* the parent's stream */
			_exit(2);
		if (rw_cuda_stream_create(&mine) || rw_cuda_memcpy_async(got, d, 32, mine) ||
		    rw_cuda_stream_sync(mine) || strcmp(got, "before fork"))
			_exit(3);
		if (rw_cuda_memcpy_async(got, d, 32, NULL) || rw_cuda_stream_sync(NULL))
			_exit(4);
		rw_cuda_stream_destroy(mine);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rw_cuda_stream_query(s), 0); /* still ours */
	rw_cuda_stream_destroy(s);
	rw_cuda_free(d);
}

static void dmabuf_unsupported(void **state)
{
	char why[96] = "";
	int fd = -1;
	uint64_t off = 0;
	void *d;

	(void)state;
	assert_int_equal(rw_cuda_dmabuf_supported(why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "emulated"));
	assert_int_equal(rw_cuda_malloc(&d, 4096), 0);
	rw_test_log_expect("no dma-buf export");
	assert_int_equal(rw_cuda_dmabuf_fd(d, 4096, &fd, &off), -ENOTSUP);
	assert_int_equal(fd, -1);
	rw_cuda_free(d);
}

static void nothing_left_behind(void **state)
{
	struct rw_gpu_emu_stats st;

	(void)state;
	rw_gpu_emu_stats(&st);
	assert_int_equal(st.allocs_live, 0);
	assert_int_equal(st.streams_live, 0);
	assert_int_equal(st.ipc_opens_live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(off_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(enable_checks_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(memory_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(device_memory_faults_on_host_access, setup,
						teardown),
		cmocka_unit_test_setup_teardown(blocking_copies_every_direction, setup, teardown),
		cmocka_unit_test_setup_teardown(stream_runs_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(events_sync_and_time, setup, teardown),
		cmocka_unit_test_setup_teardown(streams_wait_for_events, setup, teardown),
		cmocka_unit_test_setup_teardown(fork_keeps_memory_not_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(dmabuf_unsupported, setup, teardown),
		cmocka_unit_test_setup_teardown(nothing_left_behind, setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

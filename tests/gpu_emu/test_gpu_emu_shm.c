/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same-host transport moving "device" buffers between two processes on
 * the host-emulated GPU, by emulated CUDA IPC: the shm net advertises CUDA
 * pointers; device -> device, device -> host, host -> device (through the
 * slots and through cross-memory attach), checked byte for byte; then a
 * pipelined run of chunks from one registered device buffer into another,
 * every stream op slowed so the receiver polls its event while copies are
 * in flight.  Host -> device is staged up through pinned pieces with the
 * copies slowed too, and no call of the receiver waits for the device.  Device -> device moves
 * exactly one device-to-device copy per message on the receiver, none through host memory on either
 * side; each receiver opens the sender's allocation once.  Last, a device message to a host receive
 * with a sink: it lands in the buffer, then goes over whole.
 */
#include "support/rw_test.h"

#include "gpu/rw_cuda.h"
#include "gpu/rw_gpu_emu.h"
#include "net/test_shm_dev.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"

#define MIB	 (1024 * 1024)
#define NCHUNK	 8
#define CHUNK	 (MIB + 4096)
#define PIPE_TAG 1000
#define SINK_TAG 2000

static struct rw_config cfg;

static const char *const env[] = {
	"RINGWAY_TIMEOUT_MS", "10000", "RINGWAY_SHM_CMA_MIN", "256K", NULL,
};

static const struct shm_dev_case cases[] = SHM_DEV_CASES(16 * MIB);

static uint64_t host_copies(const struct rw_gpu_emu_stats *s)
{
	return s->copies_h2d + s->copies_d2h;
}

/* The pipelined phase, receiving side: NCHUNK receives posted at once. */
static void receive_chunks(struct rw_net_comm *r, char *host, char *want)
{
	struct rw_net_req *req[NCHUNK];
	struct rw_gpu_emu_stats s0, s1;
	struct rw_net_mr *mr;
	char *d = shm_dev_alloc(true, NCHUNK * CHUNK);

	CHILD_CHECK(rw_net_reg_mr(r, d, NCHUNK * CHUNK, RW_PTR_CUDA, &mr) == 0);
	rw_gpu_emu_set_delay_us(2000);
	rw_gpu_emu_stats(&s0);
	for (int i = 0; i < NCHUNK; i++)
		CHILD_CHECK(shm_recv(r, d + (size_t)i * CHUNK, CHUNK, PIPE_TAG + i, mr, &req[i]) ==
			    0);
	for (int i = 0; i < NCHUNK; i++) {
		size_t got = 0;

		CHILD_CHECK(shm_wait_req(req[i], &got, SHM_WAIT_MS) == 0 && got == CHUNK);
	}
	rw_gpu_emu_stats(&s1);
	rw_gpu_emu_set_delay_us(0);
	CHILD_CHECK(s1.copies_d2d - s0.copies_d2d == NCHUNK);
	CHILD_CHECK(host_copies(&s1) == host_copies(&s0));
	CHILD_CHECK(s1.ipc_opens_live - s0.ipc_opens_live == 1); /* opened once */
	CHILD_CHECK(rw_cuda_memcpy(host, d, NCHUNK * CHUNK) == 0);
	rw_test_fill(want, NCHUNK * CHUNK, 77);
	if (memcmp(host, want, NCHUNK * CHUNK)) {
		fprintf(stderr, "pipelined chunks arrived corrupted\n");
		_exit(4);
	}
	rw_net_dereg_mr(r, mr);
	rw_cuda_free(d);
}

/* A host receive with a sink (rw_net_irecv_sink) of a device message:
 * the CUDA IPC copy lands in the receive's buffer, which goes to the sink
 * whole, once its event has run. */
struct landed {
	const char *buf;
	size_t got;
	int pieces, from_buf;
};

static int take_landed(void *arg, size_t off, const void *src, size_t len)
{
	struct landed *l = arg;

	l->pieces++;
	l->from_buf += off == 0 && src == l->buf;
	l->got += len;
	return 0;
}

static void receive_into_sink(struct rw_net_comm *r, char *host, char *want)
{
	struct landed l = {.buf = host};
	struct rw_net_sink sink = {.put = take_landed, .arg = &l};
	struct rw_net_mr *mr;
	struct rw_net_req *req = NULL;
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	size_t got = 0;

	memset(host, 0, CHUNK);
	CHILD_CHECK(rw_net_reg_mr(r, host, CHUNK, RW_PTR_HOST, &mr) == 0);
	while (!req && rw_now_ms() < end)
		CHILD_CHECK(rw_net_irecv_sink(r, host, CHUNK, SINK_TAG, mr, &sink, &req) == 0);
	CHILD_CHECK(req && shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == CHUNK);
	CHILD_CHECK(l.pieces == 1 && l.from_buf == 1 && l.got == CHUNK);
	rw_test_fill(want, CHUNK, 78);
	CHILD_CHECK(memcmp(host, want, CHUNK) == 0);
	rw_net_dereg_mr(r, mr);
}

static void child_receiver(struct shm_child *k)
{
	struct rw_net_props props;
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	char *host = malloc(16 * MIB), *want = malloc(16 * MIB);

	CHILD_CHECK(host && want);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_get_properties(n, 0, &props) == 0);
	CHILD_CHECK(props.ptr_support & RW_PTR_CUDA);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		const struct shm_dev_case *c = &cases[i];
		void *p = shm_dev_alloc(c->recv_dev, c->size);
		struct rw_gpu_emu_stats s0, s1;
		struct rw_net_mr *mr;
		struct rw_net_req *req;
		size_t got = 0;

		CHILD_CHECK(rw_net_reg_mr(r, p, c->size, c->recv_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		/* host -> device: slow copies, so pieces are in flight when
		 * the next fragment or chunk comes and the ring fills */
		if (!c->send_dev && c->recv_dev)
			rw_gpu_emu_set_delay_us(300);
		rw_gpu_emu_stats(&s0);
		CHILD_CHECK(shm_recv(r, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == c->size);
		rw_gpu_emu_stats(&s1);
		rw_gpu_emu_set_delay_us(0);
		if (!c->send_dev && c->recv_dev) {
			/* staged up through pinned pieces, never waiting for
			 * the device inside irecv or test */
			CHILD_CHECK(s1.blocking_thread == s0.blocking_thread);
			CHILD_CHECK(s1.bytes_h2d - s0.bytes_h2d == c->size);
			CHILD_CHECK(s1.copies_h2d - s0.copies_h2d >= 1);
		}
		if (c->send_dev) { /* one copy out of the peer's allocation, by IPC */
			CHILD_CHECK(s1.copies_d2d - s0.copies_d2d == (c->recv_dev ? 1u : 0u));
			CHILD_CHECK(s1.copies_d2h - s0.copies_d2h == (c->recv_dev ? 0u : 1u));
			CHILD_CHECK(s1.copies_h2d == s0.copies_h2d);
		}
		shm_dev_check(p, c->recv_dev, host, want, c->size, i + 1, i);
		rw_net_dereg_mr(r, mr);
		shm_dev_free(c->recv_dev, p);
	}
	receive_chunks(r, host, want);
	receive_into_sink(r, host, want);
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	{
		struct rw_gpu_emu_stats s;

		rw_gpu_emu_stats(&s);
		CHILD_CHECK(s.ipc_opens_live == 0 && s.allocs_live == 0 && s.streams_live == 0);
	}
	_exit(0);
}

/* The pipelined phase, sending side: NCHUNK sends from one buffer. */
static void send_chunks(struct rw_net_comm *s, char *host)
{
	struct rw_net_req *req[NCHUNK];
	struct rw_gpu_emu_stats s0, s1;
	struct rw_net_mr *mr;
	char *d = shm_dev_alloc(true, NCHUNK * CHUNK);

	rw_test_fill(host, NCHUNK * CHUNK, 77);
	CHILD_CHECK(rw_cuda_memcpy(d, host, NCHUNK * CHUNK) == 0);
	rw_gpu_emu_stats(&s0);
	CHILD_CHECK(rw_net_reg_mr(s, d, NCHUNK * CHUNK, RW_PTR_CUDA, &mr) == 0);
	for (int i = 0; i < NCHUNK; i++)
		CHILD_CHECK(shm_send(s, d + (size_t)i * CHUNK, CHUNK, PIPE_TAG + i, mr, &req[i]) ==
			    0);
	for (int i = 0; i < NCHUNK; i++)
		CHILD_CHECK(shm_wait_req(req[i], NULL, SHM_WAIT_MS) == 0);
	rw_gpu_emu_stats(&s1);
	/* the sender copies nothing: the receiver reads our memory */
	CHILD_CHECK(host_copies(&s1) == host_copies(&s0) && s1.copies_d2d == s0.copies_d2d);
	CHILD_CHECK(s1.ipc_exports - s0.ipc_exports == 1);
	rw_net_dereg_mr(s, mr);
	rw_cuda_free(d);
}

static void child_sender(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	char *host = malloc(16 * MIB);

	CHILD_CHECK(host);
	CHILD_CHECK(shm_pipe_read(k->to[0], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		const struct shm_dev_case *c = &cases[i];
		void *p = shm_dev_alloc(c->send_dev, c->size);
		struct rw_gpu_emu_stats s0, s1;
		struct rw_net_mr *mr;
		struct rw_net_req *req;

		shm_dev_fill(p, c->send_dev, host, c->size, i + 1);
		rw_gpu_emu_stats(&s0);
		CHILD_CHECK(rw_net_reg_mr(s, p, c->size, c->send_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		CHILD_CHECK(shm_send(s, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		rw_gpu_emu_stats(&s1);
		CHILD_CHECK(host_copies(&s1) == host_copies(&s0));
		rw_net_dereg_mr(s, mr);
		shm_dev_free(c->send_dev, p);
	}
	send_chunks(s, host);
	{ /* to the receiver's sink */
		char *d = shm_dev_alloc(true, CHUNK);
		struct rw_net_mr *mr;
		struct rw_net_req *req;

		rw_test_fill(host, CHUNK, 78);
		CHILD_CHECK(rw_cuda_memcpy(d, host, CHUNK) == 0);
		CHILD_CHECK(rw_net_reg_mr(s, d, CHUNK, RW_PTR_CUDA, &mr) == 0);
		CHILD_CHECK(shm_send(s, d, CHUNK, SINK_TAG, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		rw_net_dereg_mr(s, mr);
		rw_cuda_free(d);
	}
	rw_net_close_send(s);
	rw_net_destroy(n);
	_exit(0);
}

static void device_buffers_between_processes(void **state)
{
	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(shm_pair_run(child_receiver, child_sender), 0);
}

/* Slots larger than a pinned piece (1 MiB): each fragment is staged up in
 * several pieces, over several calls once the ring is full, the slot
 * kept until the last of them is out.  Host -> device, no CMA. */
#define BIG_SIZE (7 * MIB + 5)

static const char *const env_big_slots[] = {
	"RINGWAY_TIMEOUT_MS", "10000", "RINGWAY_SHM_SLOT_BYTES", "3M", "RINGWAY_SHM_CMA", "0", NULL,
};

static void child_big_receiver(struct shm_child *k)
{
	struct rw_gpu_emu_stats s0, s1;
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char *host = malloc(BIG_SIZE), *want = malloc(BIG_SIZE);
	void *d = shm_dev_alloc(true, BIG_SIZE);
	size_t got = 0;

	CHILD_CHECK(host && want);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	CHILD_CHECK(rw_net_reg_mr(r, d, BIG_SIZE, RW_PTR_CUDA, &mr) == 0);
	rw_gpu_emu_set_delay_us(300);
	rw_gpu_emu_stats(&s0);
	CHILD_CHECK(shm_recv(r, d, BIG_SIZE, 3, mr, &req) == 0);
	CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == BIG_SIZE);
	rw_gpu_emu_stats(&s1);
	rw_gpu_emu_set_delay_us(0);
	CHILD_CHECK(s1.blocking_thread == s0.blocking_thread);
	/* 3 fragments of 3 MiB less the header, 3 pieces each at most */
	CHILD_CHECK(s1.bytes_h2d - s0.bytes_h2d == BIG_SIZE);
	CHILD_CHECK(s1.copies_h2d - s0.copies_h2d >= 8);
	shm_dev_check(d, true, host, want, BIG_SIZE, 91, 0);
	rw_net_dereg_mr(r, mr);
	shm_dev_free(true, d);
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	_exit(0);
}

static void child_big_sender(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req;
	char *host = malloc(BIG_SIZE);

	CHILD_CHECK(host);
	rw_test_fill(host, BIG_SIZE, 91);
	CHILD_CHECK(shm_pipe_read(k->to[0], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(rw_net_reg_mr(s, host, BIG_SIZE, RW_PTR_HOST, &mr) == 0);
	CHILD_CHECK(shm_send(s, host, BIG_SIZE, 3, mr, &req) == 0);
	CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
	rw_net_dereg_mr(s, mr);
	rw_net_close_send(s);
	rw_net_destroy(n);
	_exit(0);
}

static void host_to_device_through_slots_larger_than_a_piece(void **state)
{
	(void)state;
	assert_int_equal(rw_test_config(&cfg, env_big_slots), 0);
	assert_int_equal(shm_pair_run(child_big_receiver, child_big_sender), 0);
}

/* Messages from more device allocations than a receiver keeps open: each
 * arrives whole, and the receiver holds at most RW_SHM_IPC_KEPT of them
 * open, closing the least recently used (an allocation its sender freed
 * stays mapped, and its memory alive, while it is open here). */
#define KEPT	  RW_SHM_IPC_KEPT
#define NALLOC	  (KEPT + 8)
#define ALLOC_SZ  (64 * 1024)
#define ALLOC_TAG 3000

static void child_many_alloc_receiver(struct shm_child *k)
{
	struct rw_shm_stats t0, t1;
	struct rw_gpu_emu_stats s;
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *mr;
	char *host = malloc(ALLOC_SZ), *want = malloc(ALLOC_SZ);
	void *d = shm_dev_alloc(true, ALLOC_SZ);

	CHILD_CHECK(host && want);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	CHILD_CHECK(rw_net_reg_mr(r, d, ALLOC_SZ, RW_PTR_CUDA, &mr) == 0);
	rw_shm_stats_get(&t0);
	/* the first allocation again at the end: evicted by then, opened anew */
	for (int i = 0; i <= NALLOC; i++) {
		struct rw_net_req *req;
		size_t got = 0;

		CHILD_CHECK(shm_recv(r, d, ALLOC_SZ, ALLOC_TAG + i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == ALLOC_SZ);
		shm_dev_check(d, true, host, want, ALLOC_SZ, 500 + (i % NALLOC), (size_t)i);
		rw_gpu_emu_stats(&s);
		CHILD_CHECK(s.ipc_opens_live <= KEPT);
	}
	rw_shm_stats_get(&t1);
	CHILD_CHECK(t1.ipc_evicted - t0.ipc_evicted == NALLOC + 1 - KEPT);
	rw_net_dereg_mr(r, mr);
	shm_dev_free(true, d);
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	rw_gpu_emu_stats(&s);
	CHILD_CHECK(s.ipc_opens_live == 0);
	_exit(0);
}

static void child_many_alloc_sender(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	char *host = malloc(ALLOC_SZ);
	static void *d[NALLOC];

	CHILD_CHECK(host);
	CHILD_CHECK(shm_pipe_read(k->to[0], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	for (int i = 0; i < NALLOC; i++) {
		d[i] = shm_dev_alloc(true, ALLOC_SZ);
		shm_dev_fill(d[i], true, host, ALLOC_SZ, 500 + (uint64_t)i);
	}
	for (int i = 0; i <= NALLOC; i++) {
		struct rw_net_mr *mr;
		struct rw_net_req *req;
		void *p = d[i % NALLOC];

		CHILD_CHECK(rw_net_reg_mr(s, p, ALLOC_SZ, RW_PTR_CUDA, &mr) == 0);
		CHILD_CHECK(shm_send(s, p, ALLOC_SZ, ALLOC_TAG + i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		rw_net_dereg_mr(s, mr);
	}
	rw_net_close_send(s);
	for (int i = 0; i < NALLOC; i++)
		shm_dev_free(true, d[i]);
	rw_net_destroy(n);
	_exit(0);
}

static void a_receiver_keeps_few_allocations_open(void **state)
{
	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(shm_pair_run(child_many_alloc_receiver, child_many_alloc_sender), 0);
}

/* Without the emulator (and without a GPU) the same net has no CUDA. */
static void child_no_emulator(struct shm_child *k)
{
	struct rw_net_props props;
	struct rw_net *n = NULL;
	int ngpu = 0;

	(void)k;
	if (rw_cuda_device_count(&ngpu) == 0)
		_exit(0); /* a real GPU here: nothing to compare */
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_get_properties(n, 0, &props) == 0);
	CHILD_CHECK(!(props.ptr_support & RW_PTR_CUDA));
	rw_net_destroy(n);
	_exit(0);
}

static void off_means_no_cuda(void **state)
{
	struct shm_child k;
	int st;

	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_true(shm_child_start(&k, child_no_emulator) > 0);
	st = shm_child_reap(&k, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest off[] = {
		cmocka_unit_test(off_means_no_cuda),
	};
	const struct CMUnitTest on[] = {
		cmocka_unit_test(device_buffers_between_processes),
		cmocka_unit_test(host_to_device_through_slots_larger_than_a_piece),
		cmocka_unit_test(a_receiver_keeps_few_allocations_open),
	};
	int failed;

	rw_test_log_install();
	failed = cmocka_run_group_tests_name("emulator off", off, NULL, NULL);
	if (rw_gpu_emu_enable(1, 0) != 0)
		return 1;
	return failed + cmocka_run_group_tests_name("emulator on", on, NULL, NULL);
}

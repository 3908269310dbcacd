/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device memory between two processes of one host (CUDA IPC), both on
 * device 0: device -> device, device -> host, host -> device (through the
 * slots and through cross-memory attach), checked byte for byte.  Skipped
 * where no GPU is present.  The parent never touches CUDA (a CUDA context
 * does not survive fork): the probe and both ends run in children.
 */
#include "support/rw_test.h"

#include "gpu/rw_cuda.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"

#define MIB (1024 * 1024)

static struct rw_config cfg;

static const char *const env[] = {
	"RINGWAY_TIMEOUT_MS", "10000", "RINGWAY_SHM_CMA_MIN", "256K", NULL,
};

/* One case: where the sender's and the receiver's buffers live, and size. */
struct cuda_case {
	bool send_dev, recv_dev;
	size_t size;
};

static const struct cuda_case cases[] = {
	{true, true, 8},	{true, true, MIB + 3},
	{true, true, 64 * MIB}, {true, false, 3 * MIB}, /* device -> host by IPC */
	{false, true, 100000},				/* host -> device through the slots */
	{false, true, 9 * MIB},				/* host -> device by cross-memory attach */
};

static void *buf_alloc(bool dev, size_t n)
{
	void *p = NULL;

	if (dev)
		CHILD_CHECK(rw_cuda_malloc(&p, n) == 0);
	else
		CHILD_CHECK((p = malloc(n)) != NULL);
	return p;
}

static void child_receiver(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	char *host = malloc(64 * MIB), *want = malloc(64 * MIB);

	CHILD_CHECK(host && want);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	CHILD_CHECK(shm_pipe_write(k->from[1], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(shm_wait_accept(l, &r) == 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		const struct cuda_case *c = &cases[i];
		void *p = buf_alloc(c->recv_dev, c->size);
		struct rw_net_mr *mr;
		struct rw_net_req *req;
		size_t got = 0;

		CHILD_CHECK(rw_net_reg_mr(r, p, c->size, c->recv_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		CHILD_CHECK(shm_recv(r, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == c->size);
		if (c->recv_dev)
			CHILD_CHECK(rw_cuda_memcpy(host, p, c->size) == 0);
		else
			memcpy(host, p, c->size);
		rw_test_fill(want, c->size, i + 1);
		if (memcmp(host, want, c->size)) {
			fprintf(stderr, "case %zu: %zu bytes arrived corrupted\n", i, c->size);
			_exit(4);
		}
		rw_net_dereg_mr(r, mr);
		if (c->recv_dev)
			rw_cuda_free(p);
		else
			free(p);
	}
	rw_net_close_recv(r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
	_exit(0);
}

static void child_sender(struct shm_child *k)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s;
	char *host = malloc(64 * MIB);

	CHILD_CHECK(host);
	CHILD_CHECK(shm_pipe_read(k->to[0], k->handle, sizeof(k->handle)) == 0);
	CHILD_CHECK(rw_shm_create(&cfg, &n) == 0);
	CHILD_CHECK(shm_wait_connect(n, k->handle, &s) == 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		const struct cuda_case *c = &cases[i];
		void *p = buf_alloc(c->send_dev, c->size);
		struct rw_net_mr *mr;
		struct rw_net_req *req;

		rw_test_fill(host, c->size, i + 1);
		if (c->send_dev)
			CHILD_CHECK(rw_cuda_memcpy(p, host, c->size) == 0);
		else
			memcpy(p, host, c->size);
		CHILD_CHECK(rw_net_reg_mr(s, p, c->size, c->send_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		CHILD_CHECK(shm_send(s, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		rw_net_dereg_mr(s, mr);
		if (c->send_dev)
			rw_cuda_free(p);
		else
			free(p);
	}
	rw_net_close_send(s);
	rw_net_destroy(n);
	_exit(0);
}

static void child_probe(struct shm_child *k)
{
	int n = 0;

	(void)k;
	_exit(rw_cuda_device_count(&n) == 0 && n >= 1 ? 0 : 1);
}

static void device_buffers_between_processes(void **state)
{
	struct shm_child probe, rx, tx;
	int st;

	(void)state;
	assert_true(shm_child_start(&probe, child_probe) > 0);
	st = shm_child_reap(&probe, false);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		skip(); /* no GPU here */
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_true(shm_child_start(&rx, child_receiver) > 0);
	assert_int_equal(shm_pipe_read(rx.from[0], rx.handle, sizeof(rx.handle)), 0);
	assert_true(shm_child_start(&tx, child_sender) > 0);
	assert_int_equal(shm_pipe_write(tx.to[1], rx.handle, sizeof(rx.handle)), 0);
	st = shm_child_reap(&tx, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = shm_child_reap(&rx, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(device_buffers_between_processes),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

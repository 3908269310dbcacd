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
#include "net/test_shm_dev.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"

#define MIB (1024 * 1024)

static struct rw_config cfg;

static const char *const env[] = {
	"RINGWAY_TIMEOUT_MS", "10000", "RINGWAY_SHM_CMA_MIN", "256K", NULL,
};

static const struct shm_dev_case cases[] = SHM_DEV_CASES(64 * MIB);

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
		const struct shm_dev_case *c = &cases[i];
		void *p = shm_dev_alloc(c->recv_dev, c->size);
		struct rw_net_mr *mr;
		struct rw_net_req *req;
		size_t got = 0;

		CHILD_CHECK(rw_net_reg_mr(r, p, c->size, c->recv_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		CHILD_CHECK(shm_recv(r, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, &got, SHM_WAIT_MS) == 0 && got == c->size);
		shm_dev_check(p, c->recv_dev, host, want, c->size, i + 1, i);
		rw_net_dereg_mr(r, mr);
		shm_dev_free(c->recv_dev, p);
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
		const struct shm_dev_case *c = &cases[i];
		void *p = shm_dev_alloc(c->send_dev, c->size);
		struct rw_net_mr *mr;
		struct rw_net_req *req;

		shm_dev_fill(p, c->send_dev, host, c->size, i + 1);
		CHILD_CHECK(rw_net_reg_mr(s, p, c->size, c->send_dev ? RW_PTR_CUDA : RW_PTR_HOST,
					  &mr) == 0);
		CHILD_CHECK(shm_send(s, p, c->size, (int)i, mr, &req) == 0);
		CHILD_CHECK(shm_wait_req(req, NULL, SHM_WAIT_MS) == 0);
		rw_net_dereg_mr(s, mr);
		shm_dev_free(c->send_dev, p);
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
	struct shm_child probe;
	int st;

	(void)state;
	assert_true(shm_child_start(&probe, child_probe) > 0);
	st = shm_child_reap(&probe, false);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		skip(); /* no GPU here */
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(shm_pair_run(child_receiver, child_sender), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(device_buffers_between_processes),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

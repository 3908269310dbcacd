/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Misuse that must be an error, never undefined behaviour (issue 13):
 * rw_strerror() on values that are no errno, INT_MIN included (it was
 * negated: UBSan stops the ASan build on it); the shm transport's deregMr
 * called twice on one registration (it read and freed it again).
 */
#include "support/rw_test.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "common/rw_common.h"
#include "include/ringway.h"
#include "transport/rw_net.h"

static void strerror_any_int(void **state)
{
	static const int values[] = {INT_MIN, INT_MIN + 1, -4096, -100000, INT_MAX, 1};

	(void)state;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		const char *s = rw_strerror(values[i]);

		assert_non_null(s);
		assert_true(strlen(s) > 0);
	}
	assert_string_equal(rw_strerror(INT_MIN), "unknown error");
	assert_string_equal(rw_strerror(-EINVAL), strerror(EINVAL));
	assert_string_equal(rw_strerror(0), "success");
}

static void shm_dereg_twice(void **state)
{
	static const char *const env[] = {NULL};
	char handle[RW_NET_HANDLE_MAXSIZE], buf[4096];
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *s = NULL, *r = NULL;
	struct rw_net_mr *mr = NULL;
	struct rw_config cfg;
	struct rw_net *n = NULL;
	uint64_t deadline = rw_now_ms() + 20000;

	(void)state;
	rw_test_log_reset();
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(rw_shm_create(&cfg, &n), 0);
	assert_int_equal(rw_net_listen(n, 0, handle, &l), 0);
	while (!s || !r) {
		if (!s)
			assert_int_equal(rw_net_connect(n, 0, handle, &s), 0);
		if (!r)
			assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_reg_mr(s, buf, sizeof(buf), RW_PTR_HOST, &mr), 0);
	assert_int_equal(rw_net_dereg_mr(s, mr), 0);
	rw_test_log_expect("not registered on this comm");
	assert_int_equal(rw_net_dereg_mr(s, mr), -EINVAL);
	assert_int_equal(rw_test_log_count("not registered on this comm"), 1);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	rw_net_destroy(n);
	assert_int_equal(rw_test_log_unexpected(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strerror_any_int),
		cmocka_unit_test(shm_dereg_twice),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

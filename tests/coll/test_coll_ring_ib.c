/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring engine over the ib transport, on the emulated fabric (run by
 * sv_run, which exits 77, a skip, where no fabric can be emulated):
 * forked ranks run every collective's shapes and the allreduce's partial
 * sums through recvbuf at 3 and 4 ranks, in and out of place, checked
 * against references (ring_checks.h).  Over ib a send's buffer may be read
 * by the adapter until its completion, which is the case the ring's
 * allgather waits on before it receives into a partial sum's bytes.
 */
#include "support/rw_test.h"

#include "coll_test.h"
#include "ring_checks.h"

static void ring_over_ib(void **state)
{
	static const char *const env[] = {"RINGWAY_TRANSPORT", "ib", COLL_RING_PARTIALS, NULL};
	size_t large = 100003;

	(void)state;
	for (int p = 3; p <= 4; p++) {
		assert_int_equal(coll_fork(p, env, coll_partials, NULL, 200), 0);
		assert_int_equal(coll_fork(p, env, coll_shapes, &large, 200), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ring_over_ib, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

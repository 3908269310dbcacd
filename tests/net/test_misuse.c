/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Misuse that must be an error, never undefined behaviour (issue 13):
 * rw_strerror() on values that are no errno, INT_MIN included (it was
 * negated: UBSan stops the ASan build on it).
 */
#include "support/rw_test.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "include/ringway.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strerror_any_int),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test support shared by every cmocka executable.
 *
 * Log sink: rw_test_log_install() routes ringway's logger here.  Every WARN
 * that no rw_test_log_expect() pattern matches counts as unexpected, and
 * RW_TEST_ASSERT_LOG_CLEAN() (call it in teardown) fails the test.  Set
 * RINGWAY_TEST_VERBOSE=1 to echo all messages to stderr.
 *
 * Fake environments: rw_test_config() builds a struct rw_config from a
 * NULL-terminated list of "NAME", "value" pairs, as the registry would.
 */
#ifndef RW_TEST_H
#define RW_TEST_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "common/rw_params.h"

void rw_test_log_install(void);
/** WARNs containing substr are expected from now until rw_test_log_reset(). */
void rw_test_log_expect(const char *substr);
/** Forget expectations and counts. */
void rw_test_log_reset(void);
/** Number of WARNs that matched no expectation since the last reset. */
int rw_test_log_unexpected(void);
/** Number of messages (any level) containing substr since the last reset. */
int rw_test_log_count(const char *substr);
/** The last unexpected WARN, or "" (for failure messages). */
const char *rw_test_log_last_unexpected(void);
/** Print every message seen since the last reset, each prefixed (to explain
 * a failed check after the fact). */
void rw_test_log_dump(FILE *to, const char *prefix);

#define RW_TEST_ASSERT_LOG_CLEAN()                                                                 \
	do {                                                                                       \
		if (rw_test_log_unexpected() != 0)                                                 \
			fail_msg("%d unexpected warning(s), last: %s", rw_test_log_unexpected(),   \
				 rw_test_log_last_unexpected());                                   \
	} while (0)

/** cmocka fixtures: forget the log before a test; fail it on an unexpected
 *  WARN after it. */
int rw_test_setup_log(void **state);
int rw_test_teardown_log(void **state);

/** Build a config from pairs {"RINGWAY_X", "1", ..., NULL}.  Returns the
 *  number of rejected values. */
int rw_test_config(struct rw_config *cfg, const char *const *pairs);

/** Fill buf with a reproducible pseudo-random pattern from seed. */
void rw_test_fill(void *buf, size_t len, uint64_t seed);

#endif /* RW_TEST_H */

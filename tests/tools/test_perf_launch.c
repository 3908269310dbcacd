/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-perf's launcher (tools/perf/perf_launch.c): the rendezvous port
 * of an mpirun job on one host stays outside the kernel's ephemeral ports
 * (where a connection's own port would make rank 0's listen fail), in the
 * larger gap, the same for the same job, spread over the gap for different
 * jobs; a range it cannot read is Linux's default.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <string.h>

#include "tools/perf/perf.h"

#define DEFAULT_LO 32768u
#define DEFAULT_HI 60999u

/* A job id's hash, as the launcher's FNV-1a would give for "job<i>". */
static unsigned hash_of(int i)
{
	char name[32];
	unsigned h = 2166136261u;

	snprintf(name, sizeof(name), "job%d", i);
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

/* Every port of 20 000 jobs lies in [lo, hi]; they take at least `spread`
 * distinct values; the same job gets the same port. */
static void ports_within(const char *range, unsigned lo, unsigned hi, int spread)
{
	static unsigned char seen[65536];
	int distinct = 0;

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 20000; i++) {
		unsigned port = perf_job_port(hash_of(i), range);

		if (port < lo || port > hi)
			fail_msg("range \"%s\": job %d got port %u, outside %u..%u",
				 range ? range : "(null)", i, port, lo, hi);
		assert_int_equal(perf_job_port(hash_of(i), range), port);
		distinct += !seen[port];
		seen[port] = 1;
	}
	if (distinct < spread)
		fail_msg("range \"%s\": 20000 jobs took %d ports, fewer than %d",
			 range ? range : "(null)", distinct, spread);
}

static void port_avoids_the_default_ephemeral_range(void **state)
{
	(void)state;
	/* below 32768: the larger gap (22768 ports against 4536 above) */
	ports_within("32768\t60999\n", 10000, DEFAULT_LO - 1, 10000);
	ports_within(NULL, 10000, DEFAULT_LO - 1, 10000);
}

static void port_takes_the_larger_gap(void **state)
{
	(void)state;
	ports_within("10000 20000", 20001, 65535, 10000);
	ports_within("40000 60000", 10000, 39999, 10000);
	ports_within("20000 61000", 10000, 19999, 4000); /* 10000 below, 4535 above */
	ports_within("12000 61000", 61001, 65535, 2000); /* 2000 below, 4535 above */
	ports_within("15000 65535", 10000, 14999, 4000); /* nothing above */
	/* a range that ends below 10000: everything from 10000 up */
	ports_within("1024 4999", 10000, 65535, 10000);
	ports_within("0 0", 10000, 65535, 10000);
	/* every port ephemeral, or a gap too small to spread jobs over: anywhere
	 * from 10000 up */
	ports_within("1024 65535", 10000, 65535, 10000);
	ports_within("10001 65535", 10000, 65535, 10000);
	ports_within("1024 65534", 10000, 65535, 10000);
	ports_within("11000 65000", 10000, 65535, 10000); /* 1000 below, 535 above */
	ports_within("11024 65535", 10000, 11023, 600);	  /* 1024 below: enough */
}

static void unreadable_range_is_the_default(void **state)
{
	static const char *const bad[] = {"", "garbage", "60999 32768", "1 70000", "32768"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int j = 0; j < 1000; j++)
			assert_int_equal(perf_job_port(hash_of(j), bad[i]),
					 perf_job_port(hash_of(j), NULL));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(port_avoids_the_default_ephemeral_range),
		cmocka_unit_test(port_takes_the_larger_gap),
		cmocka_unit_test(unreadable_range_is_the_default),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "support/rw_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "tests/support/rw_fuzz.h"

#define MAX_EXPECT 16
#define MAX_SEEN   256

static struct {
	pthread_mutex_t lock;
	const char *expect[MAX_EXPECT];
	int nexpect;
	char seen[MAX_SEEN][256];
	int nseen;
	int unexpected;
	char last_unexpected[512];
	int verbose;
} tlog = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void test_sink(void *arg, enum rw_log_level level, unsigned long flags, const char *file,
		      int line, const char *msg)
{
	(void)arg, (void)flags;
	pthread_mutex_lock(&tlog.lock);
	if (tlog.verbose)
		fprintf(stderr, "[log %d] %s:%d %s\n", (int)level, file, line, msg);
	if (tlog.nseen < MAX_SEEN)
		snprintf(tlog.seen[tlog.nseen++], sizeof(tlog.seen[0]), "%s", msg);
	if (level == RW_LOG_WARN) {
		int ok = 0;

		for (int i = 0; i < tlog.nexpect && !ok; i++)
			ok = strstr(msg, tlog.expect[i]) != NULL;
		if (!ok) {
			tlog.unexpected++;
			snprintf(tlog.last_unexpected, sizeof(tlog.last_unexpected), "%s:%d %s",
				 file, line, msg);
			fprintf(stderr, "unexpected WARN: %s:%d %s\n", file, line, msg);
		}
	}
	pthread_mutex_unlock(&tlog.lock);
}

void rw_test_log_install(void)
{
	const char *v = rw_env_get("RINGWAY_TEST_VERBOSE");

	tlog.verbose = v && *v && *v != '0';
	rw_log_set_sink(test_sink, NULL);
}

void rw_test_log_expect(const char *substr)
{
	pthread_mutex_lock(&tlog.lock);
	if (tlog.nexpect < MAX_EXPECT)
		tlog.expect[tlog.nexpect++] = substr;
	pthread_mutex_unlock(&tlog.lock);
}

void rw_test_log_reset(void)
{
	pthread_mutex_lock(&tlog.lock);
	tlog.nexpect = 0;
	tlog.nseen = 0;
	tlog.unexpected = 0;
	tlog.last_unexpected[0] = '\0';
	pthread_mutex_unlock(&tlog.lock);
}

int rw_test_log_unexpected(void)
{
	pthread_mutex_lock(&tlog.lock);
	int n = tlog.unexpected;
	pthread_mutex_unlock(&tlog.lock);
	return n;
}

const char *rw_test_log_last_unexpected(void)
{
	return tlog.last_unexpected;
}

int rw_test_log_count(const char *substr)
{
	int n = 0;

	pthread_mutex_lock(&tlog.lock);
	for (int i = 0; i < tlog.nseen; i++)
		n += strstr(tlog.seen[i], substr) != NULL;
	pthread_mutex_unlock(&tlog.lock);
	return n;
}

void rw_test_log_dump(FILE *to, const char *prefix)
{
	pthread_mutex_lock(&tlog.lock);
	for (int i = 0; i < tlog.nseen; i++)
		fprintf(to, "%s%s\n", prefix, tlog.seen[i]);
	pthread_mutex_unlock(&tlog.lock);
}

int rw_test_config(struct rw_config *cfg, const char *const *pairs)
{
	return rw_config_load(cfg, rw_fuzz_env, (void *)pairs);
}

void rw_test_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	unsigned char *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (unsigned char)x;
	}
}

int rw_test_setup_log(void **state)
{
	(void)state;
	rw_test_log_reset();
	return 0;
}

int rw_test_teardown_log(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

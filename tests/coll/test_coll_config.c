/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_comm_init_config() and rw_comm_get_config() (include/ringway.h), through
 * libringway.so: a configuration wins over the environment field by field,
 * NULL and RW_CONFIG_INIT are the environment, bad configurations fail with
 * -EINVAL and a warning naming the field and its value, the secret is used
 * and never logged.  What a communicator runs with is read back from the
 * engine (rw_comm_get_config()), and each case also runs a collective.
 */
#define _GNU_SOURCE /* setenv */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll/world.h"
#include "coll_test.h"
#include "include/ringway.h"

/* Set every variable of a {"NAME", "value", ..., NULL} list. */
static void set_env(const char *const *env)
{
	for (; env && env[0]; env += 2)
		setenv(env[0], env[1], 1);
}

/* One allreduce of rank + 1 over the communicator. */
static int sum_works(rw_comm_t *c, int p)
{
	int32_t x[1000], y[1000];
	int bad = 0;

	for (int i = 0; i < 1000; i++)
		x[i] = i % 7;
	if (rw_allreduce(c, x, y, 1000, RW_INT32, RW_SUM))
		return 1;
	for (int i = 0; i < 1000; i++)
		bad += y[i] != p * (i % 7);
	return bad;
}

/* --- stderr of the library (its logger writes there without NCCL) -------- */

struct capture {
	FILE *tmp;
	int saved;
};

static void capture_begin(struct capture *cap)
{
	fflush(stderr);
	cap->tmp = tmpfile();
	assert_non_null(cap->tmp);
	cap->saved = dup(STDERR_FILENO);
	assert_true(cap->saved >= 0);
	assert_true(dup2(fileno(cap->tmp), STDERR_FILENO) >= 0);
}

/* The text written to stderr since capture_begin(); free() it. */
static char *capture_end(struct capture *cap)
{
	long n;
	char *text;

	fflush(stderr);
	dup2(cap->saved, STDERR_FILENO);
	close(cap->saved);
	n = ftell(cap->tmp);
	text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	assert_non_null(text);
	rewind(cap->tmp);
	if (n > 0)
		assert_int_equal(fread(text, 1, (size_t)n, cap->tmp), (size_t)n);
	fclose(cap->tmp);
	fputs(text, stderr); /* still shown when the test fails */
	return text;
}

/* --- a configuration wins over the environment --------------------------- */

struct override_case {
	const char *const *env; /* what the environment says */
	const char *algo, *transport;
	int64_t nchannels, chunk_bytes, timeout_ms;
	int64_t want_chunk; /* as the engine rounds it */
};

static int override_rank(const char *root, int rank, int p, void *arg)
{
	const struct override_case *oc = arg;
	rw_config_t cfg = RW_CONFIG_INIT, got = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;
	int bad = 0, rc;

	set_env(oc->env);
	cfg.algo = oc->algo;
	cfg.transport = oc->transport;
	cfg.nchannels = oc->nchannels;
	cfg.chunk_bytes = oc->chunk_bytes;
	cfg.timeout_ms = oc->timeout_ms;
	rc = rw_comm_init_config(&c, p, rank, root, &cfg);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init_config: %s\n", rank, rw_strerror(rc));
		return 1;
	}
	bad += rw_comm_get_config(c, &got) != 0;
	if (strcmp(got.algo, oc->algo) || strcmp(got.transport, oc->transport) ||
	    got.nchannels != oc->nchannels || got.chunk_bytes != oc->want_chunk ||
	    got.timeout_ms != oc->timeout_ms || got.secret) {
		fprintf(stderr,
			"rank %d runs with algo %s, transport %s, %lld channel(s), chunk %lld, "
			"timeout %lld ms; the config asked for %s, %s, %lld, %lld (%lld), %lld\n",
			rank, got.algo, got.transport, (long long)got.nchannels,
			(long long)got.chunk_bytes, (long long)got.timeout_ms, oc->algo,
			oc->transport, (long long)oc->nchannels, (long long)oc->chunk_bytes,
			(long long)oc->want_chunk, (long long)oc->timeout_ms);
		bad++;
	}
	bad += sum_works(c, p);
	bad += rw_comm_destroy(c) != 0;
	return bad;
}

static void config_overrides_environment(void **state)
{
	static const char *const env_ring[] = {
		"RINGWAY_ALGO",
		"ring",
		"RINGWAY_NCHANNELS",
		"4",
		"RINGWAY_CHUNK_BYTES",
		"4M",
		"RINGWAY_TRANSPORT",
		"shm",
		"RINGWAY_TIMEOUT_MS",
		"600000",
		NULL,
	};
	static const char *const env_ps[] = {
		"RINGWAY_ALGO",
		"ps",
		"RINGWAY_NCHANNELS",
		"1",
		"RINGWAY_CHUNK_BYTES",
		"64K",
		"RINGWAY_TRANSPORT",
		"socket",
		"RINGWAY_TIMEOUT_MS",
		"15000",
		NULL,
	};
	/* env says ring over shm: the config asks for ps over socket, 2 channels,
	 * a chunk of 64K + 1 (rounded up to 64 bytes) and 20 s */
	struct override_case to_ps = {env_ring, "ps", "socket", 2, 65537, 20000, 65600};
	/* ... and the other way round */
	struct override_case to_ring = {env_ps, "ring", "shm", 3, 1 << 20, 25000, 1 << 20};

	(void)state;
	assert_int_equal(coll_fork_raw(3, override_rank, &to_ps, 60), 0);
	assert_int_equal(coll_fork_raw(3, override_rank, &to_ring, 60), 0);
}

/* --- NULL and RW_CONFIG_INIT are the environment ---------------------------- */

static const char *const env_custom[] = {
	"RINGWAY_ALGO",
	"ps",
	"RINGWAY_NCHANNELS",
	"3",
	"RINGWAY_CHUNK_BYTES",
	"128K",
	"RINGWAY_TRANSPORT",
	"socket",
	"RINGWAY_TIMEOUT_MS",
	"30000",
	NULL,
};

static int from_env_rank(const char *root, int rank, int p, void *arg)
{
	const bool use_null = arg != NULL;
	rw_config_t init = RW_CONFIG_INIT, got = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;
	int bad = 0, rc;

	set_env(env_custom);
	rc = rw_comm_init_config(&c, p, rank, root, use_null ? NULL : &init);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init_config(%s): %s\n", rank,
			use_null ? "NULL" : "RW_CONFIG_INIT", rw_strerror(rc));
		return 1;
	}
	bad += rw_comm_get_config(c, &got) != 0;
	bad += strcmp(got.algo, "ps") != 0;
	bad += got.nchannels != 3;
	bad += got.chunk_bytes != 128 * 1024;
	bad += strcmp(got.transport, "socket") != 0;
	bad += got.timeout_ms != 30000;
	bad += got.secret != NULL;
	if (bad)
		fprintf(stderr,
			"rank %d: %s gave algo %s, %lld channel(s), chunk %lld, %s, %lld ms\n",
			rank, use_null ? "NULL" : "RW_CONFIG_INIT", got.algo,
			(long long)got.nchannels, (long long)got.chunk_bytes, got.transport,
			(long long)got.timeout_ms);
	bad += sum_works(c, p);
	bad += rw_comm_destroy(c) != 0;
	return bad;
}

static void null_is_the_environment(void **state)
{
	(void)state;
	assert_int_equal(coll_fork_raw(2, from_env_rank, "null", 60), 0);
	assert_int_equal(coll_fork_raw(2, from_env_rank, NULL, 60), 0); /* RW_CONFIG_INIT */
}

/* --- the timeout is honoured ---------------------------------------------------- */

/* Rank 1 of 2 knocks at a port that is bound but never listens: it gives up
 * after the config's 300 ms, not the environment's 10 minutes (which would
 * outlast this test's CTest timeout). */
static void timeout_is_honoured(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	rw_config_t cfg = RW_CONFIG_INIT;
	rw_comm_t *c = (rw_comm_t *)0x1;
	char root[64];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &len), 0);
	snprintf(root, sizeof(root), "127.0.0.1:%d", ntohs(in.sin_port));
	setenv("RINGWAY_TIMEOUT_MS", "600000", 1);
	cfg.timeout_ms = 300;
	assert_int_equal(rw_comm_init_config(&c, 2, 1, root, &cfg), -ETIMEDOUT);
	assert_ptr_equal(c, (rw_comm_t *)0x1);
	unsetenv("RINGWAY_TIMEOUT_MS");
	close(fd);
}

/* --- bad configurations ------------------------------------------------------ */

struct bad_case {
	const char *what; /* expected in the warning */
	void (*spoil)(rw_config_t *cfg);
};

static void bad_algo(rw_config_t *c)
{
	c->algo = "tree";
}
static void bad_transport(rw_config_t *c)
{
	c->transport = "carrier-pigeon";
}
static void zero_chunk(rw_config_t *c)
{
	c->chunk_bytes = 0;
}
static void negative_chunk(rw_config_t *c)
{
	c->chunk_bytes = -4096;
}
static void zero_channels(rw_config_t *c)
{
	c->nchannels = 0;
}
static void many_channels(rw_config_t *c)
{
	c->nchannels = 33;
}
static void negative_timeout(rw_config_t *c)
{
	c->timeout_ms = -1;
}
static void small_size(rw_config_t *c)
{
	c->size = sizeof(*c) - sizeof(void *);
}
static void large_size(rw_config_t *c)
{
	c->size = sizeof(*c) + 8;
}
static void zero_size(rw_config_t *c)
{
	c->size = 0;
}
static void bad_magic(rw_config_t *c)
{
	c->magic = 0;
}

static const struct bad_case bad_cases[] = {
	{"config->algo = \"tree\" rejected (expected one of ring|ps", bad_algo},
	{"config->transport = \"carrier-pigeon\" rejected (expected one of auto|shm|socket|ib",
	 bad_transport},
	{"config->chunk_bytes = 0 rejected (expected an integer in [4096, 268435456]", zero_chunk},
	{"config->chunk_bytes = -4096 rejected", negative_chunk},
	{"config->nchannels = 0 rejected (expected an integer in [1, 32]", zero_channels},
	{"config->nchannels = 33 rejected", many_channels},
	{"config->timeout_ms = -1 rejected", negative_timeout},
	{"config->size = ", small_size},
	{"config->size = ", large_size},
	{"config->size = 0,", zero_size},
	{"config->magic = 0x0, not RW_CONFIG_MAGIC", bad_magic},
};

static void bad_configs_fail(void **state)
{
	rw_config_t good = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;

	(void)state;
	/* the good config works (one rank needs no rendezvous) ... */
	good.algo = "ring";
	good.chunk_bytes = 4096;
	assert_int_equal(rw_comm_init_config(&c, 1, 0, NULL, &good), 0);
	assert_int_equal(rw_comm_destroy(c), 0);
	/* ... each spoiled copy fails before anything starts, and says why */
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		rw_config_t cfg = good;
		struct capture cap;
		char *text;
		int rc;

		c = (rw_comm_t *)0x1;
		bad_cases[i].spoil(&cfg);
		capture_begin(&cap);
		rc = rw_comm_init_config(&c, 1, 0, NULL, &cfg);
		text = capture_end(&cap);
		if (rc != -EINVAL || !strstr(text, bad_cases[i].what))
			fail_msg("case %zu: rc %d (want -EINVAL), no '%s' in the log", i, rc,
				 bad_cases[i].what);
		assert_ptr_equal(c, (rw_comm_t *)0x1);
		free(text);
	}
}

/* The registry's checks, seen through the test logger: one warning per bad
 * field, the good fields still applied. */
static void apply_names_each_bad_field(void **state)
{
	struct rw_config cfg;
	rw_config_t pub = RW_CONFIG_INIT;

	(void)state;
	rw_test_log_reset();
	assert_int_equal(rw_test_config(&cfg, NULL), 0);
	pub.algo = "ps";
	pub.nchannels = 7;
	assert_int_equal(rw_world_config_apply(&cfg, &pub), 0);
	assert_int_equal(cfg.algo, RW_COLL_ALGO_PS);
	assert_int_equal(cfg.nchannels, 7);
	assert_int_equal(rw_world_config_apply(&cfg, NULL), 0); /* NULL changes nothing */
	assert_int_equal(cfg.nchannels, 7);
	pub.transport = "tcp";
	pub.timeout_ms = 0;
	rw_test_log_expect("rejected");
	assert_int_equal(rw_world_config_apply(&cfg, &pub), -EINVAL);
	assert_int_equal(rw_test_log_count("config->transport = \"tcp\" rejected"), 1);
	assert_int_equal(rw_test_log_count("config->timeout_ms = 0 rejected"), 1);
	assert_int_equal(rw_test_log_count("as RINGWAY_TIMEOUT_MS"), 1);
	assert_int_equal(cfg.transport, RW_TRANSPORT_AUTO); /* a bad value is not taken */
	assert_int_equal(cfg.timeout_ms, 600000);
	rw_test_log_reset();
}

/* --- the secret ------------------------------------------------------------------ */

/* The ranks' environments hold different secrets (they could not join), the
 * config the same: the config's wins and they join. */
static int secret_rank(const char *root, int rank, int p, void *arg)
{
	rw_config_t cfg = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;
	char env_secret[32];
	int bad, rc;

	(void)arg;
	snprintf(env_secret, sizeof(env_secret), "env-secret-of-rank-%d", rank);
	setenv("RINGWAY_SECRET", env_secret, 1);
	cfg.secret = "the-config-secret";
	cfg.timeout_ms = 20000;
	rc = rw_comm_init_config(&c, p, rank, root, &cfg);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init_config: %s\n", rank, rw_strerror(rc));
		return 1;
	}
	bad = sum_works(c, p);
	bad += rw_comm_destroy(c) != 0;
	return bad;
}

/* Without the config the same environments fail: the test above is real. */
static int env_secret_rank(const char *root, int rank, int p, void *arg)
{
	rw_config_t cfg = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;
	char env_secret[32];
	int rc;

	(void)arg;
	snprintf(env_secret, sizeof(env_secret), "env-secret-of-rank-%d", rank);
	setenv("RINGWAY_SECRET", env_secret, 1);
	/* rank 1 is refused (-EACCES) at once; rank 0 waits for a rank that
	 * proves its secret until its timeout */
	cfg.timeout_ms = rank == 0 ? 5000 : 30000;
	rc = rw_comm_init_config(&c, p, rank, root, &cfg);
	if (rc == 0)
		rw_comm_destroy(c);
	return rc == (rank == 0 ? -ETIMEDOUT : -EACCES) ? 0 : 1;
}

static void config_secret_is_used(void **state)
{
	(void)state;
	assert_int_equal(coll_fork_raw(2, secret_rank, NULL, 60), 0);
	assert_int_equal(coll_fork_raw(2, env_secret_rank, NULL, 60), 0);
}

static void secret_is_never_logged(void **state)
{
	static char too_long[300];
	rw_config_t cfg = RW_CONFIG_INIT;
	struct rw_config internal;
	rw_comm_t *c = NULL;
	struct capture cap;
	char *text;

	(void)state;
	/* INFO lines too: the one of the secret must hide it */
	setenv("RINGWAY_DEBUG", "INFO", 1);
	capture_begin(&cap);
	cfg.secret = "s3cr3t-4711";
	assert_int_equal(rw_comm_init_config(&c, 1, 0, NULL, &cfg), 0);
	assert_int_equal(rw_comm_destroy(c), 0);
	memset(too_long, 'k', sizeof(too_long) - 1);
	memcpy(too_long, "s3cr3t-", 7);
	cfg.secret = too_long;
	assert_int_equal(rw_comm_init_config(&c, 1, 0, NULL, &cfg), -EINVAL);
	text = capture_end(&cap);
	unsetenv("RINGWAY_DEBUG");
	assert_non_null(strstr(text, "config->secret = (hidden)"));
	assert_non_null(strstr(text, "config->secret = (hidden, 299 bytes) rejected"));
	assert_null(strstr(text, "s3cr3t"));
	assert_null(strstr(text, "kkkk"));
	free(text);
	/* ... and through the test logger */
	rw_test_log_reset();
	assert_int_equal(rw_test_config(&internal, NULL), 0);
	cfg.secret = "s3cr3t-4711";
	assert_int_equal(rw_world_config_apply(&internal, &cfg), 0);
	assert_string_equal(internal.secret, "s3cr3t-4711");
	cfg.secret = too_long;
	rw_test_log_expect("config->secret = (hidden, 299 bytes) rejected");
	assert_int_equal(rw_world_config_apply(&internal, &cfg), -EINVAL);
	assert_string_equal(internal.secret, "s3cr3t-4711"); /* kept */
	assert_int_equal(rw_test_log_count("s3cr3t"), 0);
	memset(internal.secret, 0, sizeof(internal.secret));
	rw_test_log_reset();
}

/* --- rw_comm_get_config()'s arguments ------------------------------------------- */

static void get_config_arguments(void **state)
{
	rw_config_t out = RW_CONFIG_INIT, small = RW_CONFIG_INIT;
	rw_comm_t *c = NULL;
	struct capture cap;
	char *text;

	(void)state;
	assert_int_equal(rw_comm_init_config(&c, 1, 0, NULL, NULL), 0);
	capture_begin(&cap);
	assert_int_equal(rw_comm_get_config(NULL, &out), -EINVAL);
	assert_int_equal(rw_comm_get_config(c, NULL), -EINVAL);
	small.size = 8;
	assert_int_equal(rw_comm_get_config(c, &small), -EINVAL);
	text = capture_end(&cap);
	assert_non_null(strstr(text, "rw_comm_get_config: out->size = 8, but"));
	free(text);
	assert_null(small.algo); /* untouched */
	assert_int_equal(rw_comm_get_config(c, &out), 0);
	assert_non_null(out.algo);
	assert_non_null(out.transport);
	assert_true(out.nchannels >= 1 && out.chunk_bytes >= 4096 && out.timeout_ms >= 1);
	assert_int_equal(rw_comm_destroy(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_overrides_environment),
		cmocka_unit_test(null_is_the_environment),
		cmocka_unit_test(timeout_is_honoured),
		cmocka_unit_test(bad_configs_fail),
		cmocka_unit_test(apply_names_each_bad_field),
		cmocka_unit_test(config_secret_is_used),
		cmocka_unit_test(secret_is_never_logged),
		cmocka_unit_test(get_config_arguments),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The parameter registry: defaults, parsing, rejection with a warning. */
#define _GNU_SOURCE /* setenv */
#include "support/rw_test.h"

#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "common/rw_params.h"

static void defaults_parse_and_are_in_bounds(void **state)
{
	struct rw_config cfg;
	size_t n;
	const struct rw_param_desc *t = rw_params_table(&n);

	(void)state;
	rw_config_defaults(&cfg); /* a bad default would warn: rw_test_teardown_log fails */
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(t[i].help);
		assert_int_equal(strncmp(t[i].env, "RINGWAY_", 8), 0);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(t[i].env, t[j].env);
	}
	assert_int_equal(cfg.timeout_ms, 600000);
	assert_int_equal(cfg.socket_nstreams, 4);
	assert_int_equal(cfg.socket_min_stripe, 1024 * 1024);
	assert_int_equal(cfg.transport, RW_TRANSPORT_AUTO);
	assert_int_equal(cfg.debug, RW_LOG_WARN);
	assert_string_equal(cfg.socket_ifname, "");
}

static void enum_choices_match_c_enums(void **state)
{
	size_t n;
	const struct rw_param_desc *t = rw_params_table(&n);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].env, "RINGWAY_TRANSPORT") == 0)
			assert_int_equal(rw_param_choice_count(t[i].choices), RW_TRANSPORT_COUNT);
		if (strcmp(t[i].env, "RINGWAY_SOCKET_FAMILY") == 0)
			assert_int_equal(rw_param_choice_count(t[i].choices),
					 RW_SOCKET_FAMILY_COUNT);
		if (strcmp(t[i].env, "RINGWAY_DEBUG") == 0)
			assert_int_equal(rw_param_choice_count(t[i].choices), RW_LOG_TRACE + 1);
	}
}

static void good_values_are_taken(void **state)
{
	struct rw_config cfg;
	const char *env[] = {
		"RINGWAY_TIMEOUT_MS",
		"1500",
		"RINGWAY_SOCKET_MIN_STRIPE",
		"1M",
		"RINGWAY_SOCKET_IFNAME",
		"^docker,lo",
		"RINGWAY_TRANSPORT",
		"SOCKET",
		"RINGWAY_DEBUG",
		"info",
		"RINGWAY_SOCKET_NSTREAMS",
		"0x8",
		NULL,
	};

	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(cfg.timeout_ms, 1500);
	assert_int_equal(cfg.socket_min_stripe, 1 << 20);
	assert_string_equal(cfg.socket_ifname, "^docker,lo");
	assert_int_equal(cfg.transport, RW_TRANSPORT_SOCKET);
	assert_int_equal(cfg.debug, RW_LOG_INFO);
	assert_int_equal(cfg.socket_nstreams, 8);
}

/* A leading zero is decimal, never octal. */
static void leading_zero_is_decimal(void **state)
{
	struct rw_config cfg;
	const char *env[] = {
		"RINGWAY_SOCKET_NSTREAMS", "010", "RINGWAY_TIMEOUT_MS", "0900", NULL,
	};

	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(cfg.socket_nstreams, 10);
	assert_int_equal(cfg.timeout_ms, 900);
}

static void bad_values_warn_and_keep_default(void **state)
{
	struct rw_config cfg;
	const char *env[] = {
		"RINGWAY_TIMEOUT_MS",
		"12abc", /* junk after digits */
		"RINGWAY_SOCKET_NSTREAMS",
		"99", /* out of bounds */
		"RINGWAY_SOCKET_MIN_STRIPE",
		"-4K", /* negative size */
		"RINGWAY_TRANSPORT",
		"carrier-pigeon", /* not a choice */
		NULL,
	};

	(void)state;
	rw_test_log_expect("rejected");
	assert_int_equal(rw_test_config(&cfg, env), 4);
	assert_int_equal(cfg.timeout_ms, 600000);
	assert_int_equal(cfg.socket_nstreams, 4);
	assert_int_equal(cfg.socket_min_stripe, 1024 * 1024);
	assert_int_equal(cfg.transport, RW_TRANSPORT_AUTO);
	/* each warning names the variable, the value and the default */
	assert_int_equal(rw_test_log_count("RINGWAY_TIMEOUT_MS='12abc' rejected"), 1);
	assert_int_equal(rw_test_log_count("RINGWAY_SOCKET_NSTREAMS='99' rejected (expected an "
					   "integer in [1, 16]); using the default '4'"),
			 1);
	assert_int_equal(
		rw_test_log_count("'carrier-pigeon' rejected (expected one of auto|shm|socket|ib)"),
		1);
	assert_int_equal(rw_test_log_count("RINGWAY_SOCKET_MIN_STRIPE='-4K'"), 1);
}

static void too_long_string_is_rejected(void **state)
{
	struct rw_config cfg;
	char big[RW_PARAM_STR_MAX + 10];
	const char *env[] = {"RINGWAY_SOCKET_IFNAME", big, NULL};

	(void)state;
	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rw_test_log_expect("rejected");
	assert_int_equal(rw_test_config(&cfg, env), 1);
	assert_string_equal(cfg.socket_ifname, "");
}

static void sizes_parse(void **state)
{
	size_t v;

	(void)state;
	assert_int_equal(rw_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(rw_parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(rw_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(rw_parse_size("3MB", &v), 0);
	assert_int_equal(v, 3u << 20);
	assert_int_equal(rw_parse_size("12Q", &v), -EINVAL);
	assert_int_equal(rw_parse_size("", &v), -EINVAL);
	assert_int_equal(rw_parse_size("K", &v), -EINVAL);
	assert_int_equal(rw_parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(rw_parse_size("99999999999T", &v), -ERANGE);
}

static void table_prints_every_variable(void **state)
{
	char *text = NULL;
	size_t len = 0, n;
	FILE *f = open_memstream(&text, &len);
	const struct rw_param_desc *t = rw_params_table(&n);

	(void)state;
	rw_params_print(f, NULL);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		assert_non_null(strstr(text, t[i].env));
	free(text);
}

/* The job secret is never printed: not when set, not when rejected, not in
 * the table of values in effect. */
static void secret_is_never_printed(void **state)
{
	static char too_long[RW_PARAM_STR_MAX + 8];
	struct rw_config cfg;
	const char *env[] = {
		"RINGWAY_TIMEOUT_MS", "1500", "RINGWAY_SECRET", "topsecret-4711", NULL,
	};
	const char *bad[] = {"RINGWAY_SECRET", too_long, NULL};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_string_equal(cfg.secret, "topsecret-4711");
	/* the INFO lines reach the log, the one of the secret without it */
	assert_int_equal(rw_test_log_count("RINGWAY_TIMEOUT_MS set by environment to 1500"), 1);
	assert_int_equal(rw_test_log_count("RINGWAY_SECRET set by environment to (hidden)"), 1);
	assert_int_equal(rw_test_log_count("topsecret"), 0);
	f = open_memstream(&text, &len);
	rw_params_print(f, &cfg);
	fclose(f);
	assert_non_null(strstr(text, "RINGWAY_SECRET"));
	assert_null(strstr(text, "topsecret"));
	free(text);
	memset(too_long, 'k', sizeof(too_long) - 1);
	rw_test_log_expect("RINGWAY_SECRET='(hidden)' rejected");
	assert_int_equal(rw_test_config(&cfg, bad), 1);
	assert_int_equal(rw_test_log_count("kkkk"), 0);
}

/* Set one parameter as the environment would, by its variable's name. */
static void config_set_parses_like_the_environment(void **state)
{
	struct rw_config cfg;
	char want[128];

	(void)state;
	rw_config_defaults(&cfg);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_ALGO", "PS"), 0);
	assert_int_equal(cfg.algo, 1);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_CHUNK_BYTES", "64K"), 0);
	assert_int_equal(cfg.chunk_bytes, 65536);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_SECRET", "k"), 0);
	assert_string_equal(cfg.secret, "k");
	/* bad values leave the field as it was, quietly (no warning: rw_test_teardown_log) */
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_ALGO", "tree"), -EINVAL);
	assert_int_equal(cfg.algo, 1);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_CHUNK_BYTES", "0"), -ERANGE);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_CHUNK_BYTES", "-4096"), -EINVAL);
	assert_int_equal(cfg.chunk_bytes, 65536);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_NCHANNELS", "33"), -ERANGE);
	assert_int_equal(cfg.nchannels, 4);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_NO_SUCH", "1"), -ENOENT);
	assert_int_equal(rw_config_set(&cfg, "RINGWAY_ALGO", NULL), -EINVAL);
	assert_null(rw_param_find("MASTER_ADDR")); /* launcher variables are not parameters */
	rw_param_describe(rw_param_find("RINGWAY_NCHANNELS"), want, sizeof(want));
	assert_string_equal(want, "an integer in [1, 32]");
	memset(cfg.secret, 0, sizeof(cfg.secret));
}

/* Defaults are single words: `ringway-netperf --params` prints them in a
 * column that tests/check_readme.sh reads. */
static void defaults_are_one_word(void **state)
{
	size_t n;
	const struct rw_param_desc *t = rw_params_table(&n);

	(void)state;
	for (size_t i = 0; i < n; i++)
		assert_null(strpbrk(t[i].def, " \t\n|`"));
}

/* The launcher variables: registered by their own names, read through
 * rw_launcher_get(), listed by rw_params_print(). */
static void launcher_variables(void **state)
{
	size_t n;
	const struct rw_param_desc *t = rw_params_table(&n);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_true(RW_LAUNCHER_COUNT >= 10);
	for (int v = 0; v < RW_LAUNCHER_COUNT; v++) {
		const char *name = rw_launcher_name((enum rw_launcher_var)v);

		assert_non_null(name);
		assert_non_null(rw_launcher_help((enum rw_launcher_var)v));
		assert_int_not_equal(strncmp(name, "RINGWAY_", 8), 0);
		for (int w = 0; w < v; w++)
			assert_string_not_equal(name, rw_launcher_name((enum rw_launcher_var)w));
		for (size_t i = 0; i < n; i++)
			assert_string_not_equal(name, t[i].env);
	}
	assert_string_equal(rw_launcher_name(RW_LAUNCHER_MASTER_ADDR), "MASTER_ADDR");
	assert_string_equal(rw_launcher_name(RW_LAUNCHER_OMPI_COMM_WORLD_RANK),
			    "OMPI_COMM_WORLD_RANK");
	assert_null(rw_launcher_name(RW_LAUNCHER_COUNT));
	assert_null(rw_launcher_get(RW_LAUNCHER_COUNT));
	setenv("MASTER_PORT", "29500", 1);
	assert_string_equal(rw_launcher_get(RW_LAUNCHER_MASTER_PORT), "29500");
	f = open_memstream(&text, &len);
	rw_params_print(f, NULL);
	fclose(f);
	assert_non_null(strstr(text, "# launcher variable"));
	assert_non_null(strstr(text, "MASTER_PORT                  29500"));
	for (int v = 0; v < RW_LAUNCHER_COUNT; v++)
		assert_non_null(strstr(text, rw_launcher_name((enum rw_launcher_var)v)));
	free(text);
	unsetenv("MASTER_PORT");
	assert_null(rw_launcher_get(RW_LAUNCHER_MASTER_PORT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(defaults_parse_and_are_in_bounds, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(enum_choices_match_c_enums, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(good_values_are_taken, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(leading_zero_is_decimal, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(bad_values_warn_and_keep_default, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(too_long_string_is_rejected, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(sizes_parse, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(table_prints_every_variable, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(secret_is_never_printed, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(config_set_parses_like_the_environment,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(defaults_are_one_word, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(launcher_variables, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

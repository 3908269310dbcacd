/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the RINGWAY_* value parsers (common/rw_params.c) and the two
 * list parsers behind them, every byte a user's environment controls.  The
 * first byte picks what the rest is:
 *   0: values for the registry's variables, '\n'-separated, in table order
 *      (row i gets line i; an empty line leaves the row unset), loaded with
 *      rw_config_load() and a custom env function: each field must end up
 *      in bounds (or be the default), a plain decimal must read as decimal
 *      (never octal), and printing the table must work;
 *   1: rw_parse_size(), checked against a reference parser;
 *   2: RINGWAY_SOCKET_IFNAME (rw_tcp_if_select() over a fixed list of
 *      interfaces): what it picks is a subset, of the family asked for,
 *      without duplicates;
 *   3: RINGWAY_IB_HCA (rw_ib_spec_parse(), rw_ib_spec_match()).
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, make fuzz): the libFuzzer
 *     entry point only; by hand, after `make fuzz FUZZ_SECONDS=1`:
 *       mkdir -p /tmp/scratch_params && build-fuzz/tests/common/fuzz_params \
 *         -max_total_time=600 /tmp/scratch_params tests/common/fuzz_params_corpus
 *   - otherwise a cmocka test (test_fuzz_params, rw_fuzz_main()): every
 *     seed of the corpus folder given, then 300 mutations of each (printable
 *     bytes and separators, sometimes cut short).
 */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "common/rw_params.h"
#include "tests/support/rw_fuzz.h"
#include "transport/ib/ib.h"
#include "transport/tcp/rw_tcp.h"

#define MAX_VALUES 64

static size_t log_bytes; /* the messages are formatted, then dropped */

static void quiet_sink(void *arg, enum rw_log_level level, unsigned long flags, const char *file,
		       int line, const char *msg)
{
	rw_fuzz_quiet_sink(arg, level, flags, file, line, msg);
	/* the secret's value is never logged */
	if (!strncmp(msg, "RINGWAY_SECRET", 14) && !strstr(msg, "(hidden)"))
		abort();
}

struct fake_env {
	const struct rw_param_desc *table;
	size_t n;
	const char *val[MAX_VALUES];
};

static const char *env_fn(void *arg, const char *name)
{
	struct fake_env *e = arg;

	for (size_t i = 0; i < e->n && i < MAX_VALUES; i++)
		if (!strcmp(e->table[i].env, name))
			return e->val[i];
	rw_fuzz_check(0); /* asked for a variable outside the registry */
	return NULL;
}

/* A plain decimal ("[+-]digits", leading zeros allowed, no blank)
 * that fits in an int64: its value in *out. */
static bool plain_decimal(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	__int128 v = 0;

	s += *s == '-' || *s == '+';
	if (!isdigit((unsigned char)*s) || (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v = v * 10 + (*s - '0');
		if (v > (__int128)INT64_MAX + 1)
			return false;
	}
	v = neg ? -v : v;
	if (v > INT64_MAX || v < INT64_MIN)
		return false;
	*out = (int64_t)v;
	return true;
}

static void values(char *s)
{
	static FILE *null;
	struct fake_env e = {0};
	struct rw_config cfg, def;
	char buf[RW_PARAM_STR_MAX + 64];
	int rejected, set = 0;

	e.table = rw_params_table(&e.n);
	rw_fuzz_check(e.n <= MAX_VALUES);
	for (size_t i = 0; i < e.n && s; i++) {
		char *nl = strchr(s, '\n');

		if (nl)
			*nl = '\0';
		if (*s) {
			e.val[i] = s;
			set++;
		}
		s = nl ? nl + 1 : NULL;
	}
	rw_config_defaults(&def);
	rejected = rw_config_load(&cfg, env_fn, &e);
	rw_fuzz_check(rejected >= 0 && rejected <= set);
	for (size_t i = 0; i < e.n; i++) {
		const struct rw_param_desc *d = &e.table[i];
		const void *f = (const char *)&cfg + d->offset;
		const void *fd = (const char *)&def + d->offset;
		int64_t want;

		switch (d->type) {
		case RW_PARAM_TYPE_INT: {
			int64_t v = *(const int64_t *)f;

			rw_fuzz_check(v >= d->min && v <= d->max);
			if (e.val[i] && plain_decimal(e.val[i], &want) && want >= d->min &&
			    want <= d->max)
				rw_fuzz_check(v == want);
			else if (!e.val[i])
				rw_fuzz_check(v == *(const int64_t *)fd);
			break;
		}
		case RW_PARAM_TYPE_SIZE: {
			size_t v = *(const size_t *)f;

			rw_fuzz_check(v >= (size_t)d->min && v <= (size_t)d->max);
			break;
		}
		case RW_PARAM_TYPE_ENUM: {
			int v = *(const int *)f;

			rw_fuzz_check(v >= 0 && v < rw_param_choice_count(d->choices));
			if (e.val[i])
				rw_fuzz_check(v == *(const int *)fd ||
					      !strcasecmp(e.val[i],
							  rw_param_choice_name(d->choices, v, buf,
									       sizeof(buf))));
			break;
		}
		case RW_PARAM_TYPE_STR:
			rw_fuzz_check(strlen(f) < RW_PARAM_STR_MAX);
			rw_fuzz_check(!e.val[i] || !strcmp(f, e.val[i]) || !strcmp(f, fd));
			break;
		}
		rw_param_format(&cfg, d, buf, sizeof(buf));
		rw_fuzz_check(strlen(buf) < sizeof(buf));
		if (d->secret)
			rw_fuzz_check(!strcmp(buf, "") || !strcmp(buf, "(set)"));
	}
	if (!null)
		null = fopen("/dev/null", "w");
	if (null)
		rw_params_print(null, &cfg);
}

static void sizes(const char *s)
{
	static const char *const suffix[] = {"",    "B", "K",  "KB",  "KIB", "M",  "MB",
					     "MIB", "G", "GB", "GIB", "T",   "TB", "TIB"};
	static const unsigned shift[] = {0, 0, 10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40};
	size_t out = 12345;
	unsigned __int128 v = 0;
	bool big = false;
	const char *p = s;
	int rc = rw_parse_size(s, &out), want = -EINVAL;

	rw_fuzz_check(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	while (isspace((unsigned char)*p))
		p++;
	if (isdigit((unsigned char)*p)) {
		for (; isdigit((unsigned char)*p); p++) {
			v = v * 10 + (unsigned)(*p - '0');
			big |= v > UINT64_MAX;
			if (big)
				v = (unsigned __int128)UINT64_MAX + 1;
		}
		for (size_t i = 0; i < RW_ARRAY_SIZE(suffix); i++) {
			if (strcasecmp(p, suffix[i]))
				continue;
			if (big || (v << shift[i]) > SIZE_MAX) {
				want = -ERANGE;
			} else {
				want = 0;
				rw_fuzz_check(rc != 0 || out == (size_t)(v << shift[i]));
			}
			break;
		}
		if (big && want == -EINVAL)
			want = -ERANGE; /* strtoull overflows before the suffix is read */
	}
	rw_fuzz_check(rc == want);
	rw_fuzz_check(rc == 0 || out == 12345);
}

static void ifnames(const char *s)
{
	static const char *const names[] = {"lo",     "eth0",	"eth1",	  "docker0", "ib0",
					    "virbr0", "enp1s0", "eth0.5", "bond0"};
	struct rw_tcp_ifaddr in[2 * RW_ARRAY_SIZE(names)], out[8];
	enum rw_tcp_if_rule rule;
	size_t nin = 0;

	memset(in, 0, sizeof(in));
	for (size_t i = 0; i < RW_ARRAY_SIZE(names); i++) {
		struct sockaddr_in *a = (struct sockaddr_in *)&in[nin].addr;
		struct sockaddr_in6 *b = (struct sockaddr_in6 *)&in[nin + 1].addr;

		snprintf(in[nin].name, sizeof(in[nin].name), "%s", names[i]);
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)i);
		snprintf(in[nin + 1].name, sizeof(in[nin + 1].name), "%s", names[i]);
		b->sin6_family = AF_INET6;
		b->sin6_addr.s6_addr[0] = i % 2 ? 0xfe : 0x20; /* link-local or not */
		b->sin6_addr.s6_addr[1] = i % 2 ? 0x80 : 0x01;
		b->sin6_addr.s6_addr[15] = (uint8_t)i;
		nin += 2;
	}
	for (int fam = 0; fam < RW_SOCKET_FAMILY_COUNT; fam++) {
		size_t max = 1 + (size_t)fam * 3, nout = 99;
		int rc = rw_tcp_if_select(s, fam, in, nin, out, max, &nout, &rule);

		rw_fuzz_check(rc == 0 && nout <= max);
		for (size_t i = 0; i < nout; i++) {
			bool found = false;

			rw_fuzz_check(fam != RW_SOCKET_FAMILY_IPV4 ||
				      out[i].addr.ss_family == AF_INET);
			rw_fuzz_check(fam != RW_SOCKET_FAMILY_IPV6 ||
				      out[i].addr.ss_family == AF_INET6);
			for (size_t j = 0; j < nin; j++)
				found |= !strcmp(out[i].name, in[j].name) &&
					 !memcmp(&out[i].addr, &in[j].addr, sizeof(in[j].addr));
			rw_fuzz_check(found);
			for (size_t j = 0; j < i; j++)
				rw_fuzz_check(strcmp(out[i].name, out[j].name) != 0);
		}
	}
}

static void hcas(const char *s)
{
	static const char *const names[] = {"mlx5_0", "mlx5_1", "mlx4_0", "rxe0", "", "mlx5_10"};
	struct rw_ib_spec sp, before;
	int rc;

	memset(&sp, 0x5a, sizeof(sp));
	before = sp;
	rc = rw_ib_spec_parse(s, &sp);
	rw_fuzz_check(rc == 0 || rc == -EINVAL);
	if (rc) {
		rw_fuzz_check(!memcmp(&sp, &before, sizeof(sp))); /* untouched on failure */
		return;
	}
	rw_fuzz_check(sp.n >= 0 && sp.n <= RW_IB_SPEC_MAX);
	for (int i = 0; i < sp.n; i++) {
		size_t len = strnlen(sp.e[i].name, sizeof(sp.e[i].name));

		rw_fuzz_check(len > 0 && len < sizeof(sp.e[i].name));
		rw_fuzz_check(sp.e[i].port == -1 || (sp.e[i].port >= 1 && sp.e[i].port <= 255));
		rw_fuzz_check(rw_ib_spec_match(&sp, sp.e[i].name,
					       sp.e[i].port < 0 ? 1 : sp.e[i].port) == !sp.exclude);
	}
	for (size_t i = 0; i < RW_ARRAY_SIZE(names); i++)
		for (int port = 0; port < 3; port++)
			(void)rw_ib_spec_match(&sp, names[i], port);
	rw_fuzz_check(sp.n > 0 || rw_ib_spec_match(&sp, "anything", 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	rw_log_set_sink(quiet_sink, &log_bytes);
	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		values(s);
		break;
	case 1:
		sizes(s);
		break;
	case 2:
		ifnames(s);
		break;
	default:
		hcas(s);
		break;
	}
	free(s);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
static void rejections_reported(void)
{
	assert_true(log_bytes > 0);
}

/* What the reference checks rely on: a leading zero is decimal, sizes have
 * binary suffixes, a secret is hidden; and a seed of each kind runs. */
static void known_values(void **state)
{
	static const char sz[] = "\001 2KiB";
	const char *nstreams[] = {"RINGWAY_SOCKET_NSTREAMS", "010", NULL};
	const char *secret[] = {"RINGWAY_SECRET", "hunter2-hunter2", NULL};
	struct rw_config cfg;
	char buf[RW_PARAM_STR_MAX];
	size_t n, v = 0;
	int64_t d = 0;

	(void)state;
	assert_int_equal(rw_config_load(&cfg, rw_fuzz_env, nstreams), 0);
	assert_int_equal(cfg.socket_nstreams, 10);
	assert_int_equal(rw_config_load(&cfg, rw_fuzz_env, secret), 0);
	assert_string_equal(cfg.secret, "hunter2-hunter2");
	for (const struct rw_param_desc *t = rw_params_table(&n); n--; t++)
		if (t->secret) {
			rw_param_format(&cfg, t, buf, sizeof(buf));
			assert_string_equal(buf, "(set)");
		}
	assert_int_equal(rw_parse_size("2KiB", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(rw_parse_size("16777216T", &v), -ERANGE);
	assert_true(plain_decimal("010", &d));
	assert_int_equal(d, 10);
	assert_false(plain_decimal("0x10", &d));
	LLVMFuzzerTestOneInput((const uint8_t *)sz, sizeof(sz) - 1);
}

int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_params",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 300,
		.max_edits = 4,
		.keep = 1,
		.rng = 0x9e3779b97f4a7c15ull,
		.truncate = true,
		.alphabet = "0x19KMGiB,:^= \n-+", /* with the separators likely */
		.min_seeds = 8,
		.verdict = rejections_reported,
	};
	const struct CMUnitTest tests[] = {cmocka_unit_test(known_values)};

	rw_log_set_sink(quiet_sink, &log_bytes);
	return rw_fuzz_main(argc, argv, &t, tests, RW_ARRAY_SIZE(tests));
}
#endif

/* SPDX-License-Identifier: Apache-2.0 */
#include "common/rw_params.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/rw_log.h"

static const struct rw_param_desc param_table[] = {
#define RW_PARAM_INT(field, name, dflt, mn, mx, hlp)                                               \
	{.env = "RINGWAY_" name,                                                                   \
	 .type = RW_PARAM_TYPE_INT,                                                                \
	 .def = dflt,                                                                              \
	 .min = mn,                                                                                \
	 .max = mx,                                                                                \
	 .help = hlp,                                                                              \
	 .offset = offsetof(struct rw_config, field)},
#define RW_PARAM_SIZE(field, name, dflt, mn, mx, hlp)                                              \
	{.env = "RINGWAY_" name,                                                                   \
	 .type = RW_PARAM_TYPE_SIZE,                                                               \
	 .def = dflt,                                                                              \
	 .min = mn,                                                                                \
	 .max = mx,                                                                                \
	 .help = hlp,                                                                              \
	 .offset = offsetof(struct rw_config, field)},
#define RW_PARAM_STR(field, name, dflt, hlp)                                                       \
	{.env = "RINGWAY_" name,                                                                   \
	 .type = RW_PARAM_TYPE_STR,                                                                \
	 .def = dflt,                                                                              \
	 .help = hlp,                                                                              \
	 .offset = offsetof(struct rw_config, field)},
#define RW_PARAM_SECRET(field, name, dflt, hlp)                                                    \
	{.env = "RINGWAY_" name,                                                                   \
	 .type = RW_PARAM_TYPE_STR,                                                                \
	 .def = dflt,                                                                              \
	 .help = hlp,                                                                              \
	 .offset = offsetof(struct rw_config, field),                                              \
	 .secret = true},
#define RW_PARAM_ENUM(field, name, dflt, ch, hlp)                                                  \
	{.env = "RINGWAY_" name,                                                                   \
	 .type = RW_PARAM_TYPE_ENUM,                                                               \
	 .def = dflt,                                                                              \
	 .choices = ch,                                                                            \
	 .help = hlp,                                                                              \
	 .offset = offsetof(struct rw_config, field)},
#include "common/rw_params.def"
};

static_assert(RW_ARRAY_SIZE(param_table) == RW_PARAM_ID_COUNT, "a row per rw_param_id");

const struct rw_param_desc *rw_params_table(size_t *n)
{
	*n = RW_ARRAY_SIZE(param_table);
	return param_table;
}

static const struct {
	const char *name, *help;
} launcher_table[] = {
#define RW_PARAM_LAUNCHER(nm, hlp) [RW_LAUNCHER_##nm] = {.name = #nm, .help = hlp},
#include "common/rw_params.def"
};
static_assert(RW_ARRAY_SIZE(launcher_table) == RW_LAUNCHER_COUNT, "one row per launcher variable");

const char *rw_launcher_name(enum rw_launcher_var v)
{
	return (unsigned)v < RW_LAUNCHER_COUNT ? launcher_table[v].name : NULL;
}

const char *rw_launcher_help(enum rw_launcher_var v)
{
	return (unsigned)v < RW_LAUNCHER_COUNT ? launcher_table[v].help : NULL;
}

const char *rw_launcher_get(enum rw_launcher_var v)
{
	return (unsigned)v < RW_LAUNCHER_COUNT ? getenv(launcher_table[v].name) : NULL;
}

const char *rw_env_get(const char *name)
{
	return getenv(name);
}

const struct rw_param_desc *rw_param_find(const char *env)
{
	for (size_t i = 0; env && i < RW_ARRAY_SIZE(param_table); i++)
		if (strcmp(param_table[i].env, env) == 0)
			return &param_table[i];
	return NULL;
}

static const char *process_env(void *arg, const char *name)
{
	(void)arg;
	return getenv(name);
}

int rw_parse_size(const char *s, size_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{"", 0},     {"B", 0},	 {"K", 10},   {"KB", 10},  {"KIB", 10},
		{"M", 20},   {"MB", 20}, {"MIB", 20}, {"G", 30},   {"GB", 30},
		{"GIB", 30}, {"T", 40},	 {"TB", 40},  {"TIB", 40},
	};
	char *end;
	unsigned long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	for (size_t i = 0; i < RW_ARRAY_SIZE(units); i++) {
		if (strcasecmp(end, units[i].suffix) == 0) {
			if (units[i].shift && v > (SIZE_MAX >> units[i].shift))
				return -ERANGE;
			*out = (size_t)(v << units[i].shift);
			return 0;
		}
	}
	return -EINVAL;
}

int rw_param_choice_count(const char *choices)
{
	int n = 1;

	for (const char *p = choices; *p; p++)
		n += *p == '|';
	return n;
}

const char *rw_param_choice_name(const char *choices, int value, char *buf, size_t len)
{
	const char *p = choices;

	for (int i = 0; i < value && p; i++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	if (!p || value < 0) {
		snprintf(buf, len, "?");
		return buf;
	}
	size_t n = strcspn(p, "|");
	snprintf(buf, len, "%.*s", (int)RW_MIN(n, len - 1), p);
	return buf;
}

static int parse_choice(const char *choices, const char *s, int *out)
{
	const char *p = choices;
	size_t slen = strlen(s);

	for (int i = 0; *p; i++) {
		size_t n = strcspn(p, "|");

		if (n == slen && strncasecmp(p, s, n) == 0) {
			*out = i;
			return 0;
		}
		p += n;
		if (*p == '|')
			p++;
	}
	return -EINVAL;
}

/* Parse `s` into the field described by d.  0, or -EINVAL / -ERANGE. */
static int param_parse(struct rw_config *cfg, const struct rw_param_desc *d, const char *s)
{
	void *field = (char *)cfg + d->offset;

	switch (d->type) {
	case RW_PARAM_TYPE_INT: {
		char *end;
		long long v;

		/* decimal, or hex with 0x; never octal: "010" is ten, as a
		 * user writing it means (strtoll's base 0 read it as eight) */
		const char *digits = s + (*s == '-' || *s == '+');
		int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;

		errno = 0;
		v = strtoll(s, &end, base);
		if (end == s || *end != '\0')
			return -EINVAL;
		if (errno == ERANGE || v < d->min || v > d->max)
			return -ERANGE;
		*(int64_t *)field = v;
		return 0;
	}
	case RW_PARAM_TYPE_SIZE: {
		size_t v;
		int rc = rw_parse_size(s, &v);

		if (rc)
			return rc;
		if (v < (size_t)d->min || v > (size_t)d->max)
			return -ERANGE;
		*(size_t *)field = v;
		return 0;
	}
	case RW_PARAM_TYPE_STR:
		if (strlen(s) >= RW_PARAM_STR_MAX)
			return -ERANGE;
		strcpy((char *)field, s);
		return 0;
	case RW_PARAM_TYPE_ENUM:
		return parse_choice(d->choices, s, (int *)field);
	}
	return -EINVAL;
}

static size_t field_size(const struct rw_param_desc *d)
{
	switch (d->type) {
	case RW_PARAM_TYPE_INT:
		return sizeof(int64_t);
	case RW_PARAM_TYPE_SIZE:
		return sizeof(size_t);
	case RW_PARAM_TYPE_STR:
		return RW_PARAM_STR_MAX;
	case RW_PARAM_TYPE_ENUM:
		return sizeof(int);
	}
	return 0;
}

void rw_config_defaults(struct rw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < RW_ARRAY_SIZE(param_table); i++) {
		int rc = param_parse(cfg, &param_table[i], param_table[i].def);

		/* A default that does not parse is a bug in rw_params.def;
		 * tests/common/test_params.c catches it. */
		if (rc)
			RW_WARN(RW_LOG_INIT | RW_LOG_ENV,
				"%s: built-in default '%s' is invalid: %s", param_table[i].env,
				param_table[i].def, strerror(-rc));
	}
}

void rw_param_describe(const struct rw_param_desc *d, char *buf, size_t len)
{
	switch (d->type) {
	case RW_PARAM_TYPE_INT:
	case RW_PARAM_TYPE_SIZE:
		snprintf(buf, len, "an integer in [%" PRId64 ", %" PRId64 "]%s", d->min, d->max,
			 d->type == RW_PARAM_TYPE_SIZE ? " (K/M/G suffixes allowed)" : "");
		break;
	case RW_PARAM_TYPE_ENUM:
		snprintf(buf, len, "one of %s", d->choices);
		break;
	case RW_PARAM_TYPE_STR:
		snprintf(buf, len, "a string shorter than %d bytes", RW_PARAM_STR_MAX);
		break;
	}
}

int rw_config_set(struct rw_config *cfg, const char *env, const char *value)
{
	const struct rw_param_desc *d = rw_param_find(env);
	struct rw_config tmp;
	int rc;

	if (!d)
		return -ENOENT;
	if (!value)
		return -EINVAL;
	/* parse into a copy of the one field: cfg stays untouched on failure */
	memcpy((char *)&tmp + d->offset, (const char *)cfg + d->offset, field_size(d));
	rc = param_parse(&tmp, d, value);
	if (rc == 0) {
		memcpy((char *)cfg + d->offset, (const char *)&tmp + d->offset, field_size(d));
		cfg->set[d - param_table] = true;
	}
	memset((char *)&tmp + d->offset, 0, field_size(d)); /* may be the secret */
	return rc;
}

bool rw_config_is_set(const struct rw_config *cfg, const char *env)
{
	const struct rw_param_desc *d = rw_param_find(env);

	return d && cfg->set[d - param_table];
}

int rw_config_load(struct rw_config *cfg, rw_env_fn env, void *arg)
{
	int rejected = 0;

	if (!env)
		env = process_env;
	rw_config_defaults(cfg);
	for (size_t i = 0; i < RW_ARRAY_SIZE(param_table); i++) {
		const struct rw_param_desc *d = &param_table[i];
		const char *v = env(arg, d->env);
		char want[128];

		if (!v)
			continue;
		if (param_parse(cfg, d, v) == 0) {
			cfg->set[i] = true;
			RW_INFO(RW_LOG_ENV, "%s set by environment to %s", d->env,
				d->secret ? "(hidden)" : v);
			continue;
		}
		rw_param_describe(d, want, sizeof(want));
		RW_WARN(RW_LOG_INIT | RW_LOG_ENV,
			"%s='%s' rejected (expected %s); using the default '%s'", d->env,
			d->secret ? "(hidden)" : v, want, d->def);
		rejected++;
	}
	return rejected;
}

void rw_param_format(const struct rw_config *cfg, const struct rw_param_desc *d, char *buf,
		     size_t len)
{
	const void *field = (const char *)cfg + d->offset;

	switch (d->type) {
	case RW_PARAM_TYPE_INT:
		snprintf(buf, len, "%" PRId64, *(const int64_t *)field);
		break;
	case RW_PARAM_TYPE_SIZE:
		snprintf(buf, len, "%zu", *(const size_t *)field);
		break;
	case RW_PARAM_TYPE_STR:
		snprintf(buf, len, "%s",
			 d->secret && *(const char *)field ? "(set)" : (const char *)field);
		break;
	case RW_PARAM_TYPE_ENUM:
		rw_param_choice_name(d->choices, *(const int *)field, buf, len);
		break;
	}
}

void rw_params_print(FILE *f, const struct rw_config *cfg)
{
	struct rw_config defaults;

	if (!cfg) {
		rw_config_defaults(&defaults);
		cfg = &defaults;
	}
	fprintf(f, "%-28s %-12s %-12s %s\n", "# variable", "value", "default", "meaning");
	for (size_t i = 0; i < RW_ARRAY_SIZE(param_table); i++) {
		const struct rw_param_desc *d = &param_table[i];
		char val[RW_PARAM_STR_MAX];
		char want[128];

		rw_param_format(cfg, d, val, sizeof(val));
		rw_param_describe(d, want, sizeof(want));
		fprintf(f, "%-28s %-12s %-12s %s; %s\n", d->env, val[0] ? val : "\"\"",
			d->def[0] ? d->def : "\"\"", d->help, want);
	}
	fprintf(f, "%-28s %-12s %s\n", "# launcher variable", "value",
		"meaning (set by the launcher; read, never set, by ringway)");
	for (int v = 0; v < RW_LAUNCHER_COUNT; v++) {
		const char *val = rw_launcher_get((enum rw_launcher_var)v);

		fprintf(f, "%-28s %-12s %s\n", launcher_table[v].name, val ? val : "-",
			launcher_table[v].help);
	}
}

extern char **environ;

int rw_env_foreach(const char *prefix, void (*fn)(void *arg, const char *name, const char *value),
		   void *arg)
{
	size_t plen = strlen(prefix);
	int n = 0;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128];
		size_t len;

		if (!eq || strncmp(*e, prefix, plen) != 0)
			continue;
		len = (size_t)(eq - *e);
		if (len >= sizeof(name))
			continue; /* no variable of ours or NCCL's is that long */
		memcpy(name, *e, len);
		name[len] = '\0';
		fn(arg, name, eq + 1);
		n++;
	}
	return n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parameter registry: every RINGWAY_* variable, typed, with a default,
 * bounds and help text, generated from rw_params.def.
 *
 * Lifecycle: a caller owns a struct rw_config (plain data, copyable), fills
 * it once with rw_config_load() and treats it as immutable afterwards.  The
 * plugin keeps one in its context; tests build their own from a fake
 * environment.  This module is the only place that reads the environment.
 */
#ifndef RW_PARAMS_H
#define RW_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RW_PARAM_STR_MAX 256

/* Values of the enum parameters, in the order of their "choices" strings
 * (tests/common/test_params.c checks that each count matches). */
enum rw_transport_kind {
	RW_TRANSPORT_AUTO,
	RW_TRANSPORT_SHM,
	RW_TRANSPORT_SOCKET,
	RW_TRANSPORT_IB,
	RW_TRANSPORT_COUNT
};

enum rw_socket_family {
	RW_SOCKET_FAMILY_ANY,
	RW_SOCKET_FAMILY_IPV4,
	RW_SOCKET_FAMILY_IPV6,
	RW_SOCKET_FAMILY_COUNT
};

/* Row numbers of the registry (rw_params_table() order). */
enum rw_param_id {
#define RW_PARAM_INT(field, name, def, min, max, help)	RW_PARAM_ID_##field,
#define RW_PARAM_SIZE(field, name, def, min, max, help) RW_PARAM_ID_##field,
#define RW_PARAM_STR(field, name, def, help)		RW_PARAM_ID_##field,
#define RW_PARAM_SECRET(field, name, def, help)		RW_PARAM_ID_##field,
#define RW_PARAM_ENUM(field, name, def, choices, help)	RW_PARAM_ID_##field,
#include "common/rw_params.def"
	RW_PARAM_ID_COUNT
};

struct rw_config {
#define RW_PARAM_INT(field, name, def, min, max, help)	int64_t field;
#define RW_PARAM_SIZE(field, name, def, min, max, help) size_t field;
#define RW_PARAM_STR(field, name, def, help)		char field[RW_PARAM_STR_MAX];
#define RW_PARAM_SECRET(field, name, def, help)		char field[RW_PARAM_STR_MAX];
#define RW_PARAM_ENUM(field, name, def, choices, help)	int field;
#include "common/rw_params.def"
	/** Per row: the value came from the environment or rw_config_set(),
	 *  not the default (the engine's choice by size yields to a value the
	 *  user gave, default or not). */
	bool set[RW_PARAM_ID_COUNT];
};

enum rw_param_type {
	RW_PARAM_TYPE_INT,
	RW_PARAM_TYPE_SIZE,
	RW_PARAM_TYPE_STR,
	RW_PARAM_TYPE_ENUM,
};

/** One row of the registry. */
struct rw_param_desc {
	const char *env; /**< full name, "RINGWAY_TIMEOUT_MS" */
	enum rw_param_type type;
	const char *def;     /**< default, as the user would write it */
	const char *choices; /**< "a|b|c" for enums, else NULL */
	int64_t min, max;    /**< bounds for INT and SIZE */
	const char *help;
	size_t offset; /**< offsetof(struct rw_config, field) */
	bool secret;   /**< a string never printed: logs and tables say "(set)" */
};

/** The registry rows; *n receives their number.  Static storage. */
const struct rw_param_desc *rw_params_table(size_t *n);

/** The row of variable env ("RINGWAY_ALGO"), or NULL. */
const struct rw_param_desc *rw_param_find(const char *env);

/** What a value of d must be ("an integer in [1, 16]", "one of ring|ps"). */
void rw_param_describe(const struct rw_param_desc *d, char *buf, size_t len);

/**
 * Set one parameter of cfg from text, as if the environment held it, with
 * the same parser and bounds.  Quiet: the caller says what was wrong.
 *
eturn 0; -ENOENT (no such variable), -EINVAL (does not parse), -ERANGE
 * (out of bounds, too long); cfg is untouched on failure.
 */
int rw_config_set(struct rw_config *cfg, const char *env, const char *value);

/** Did the environment or rw_config_set() give variable env a value
 *  (even one equal to the default)?  false for an unknown name. */
bool rw_config_is_set(const struct rw_config *cfg, const char *env);

/**
 * Reads a variable.  Returns NULL when unset.  The default (NULL given to
 * rw_config_load) reads the process environment.
 */
typedef const char *(*rw_env_fn)(void *arg, const char *name);

/** Fill cfg with every default.  Never fails. */
void rw_config_defaults(struct rw_config *cfg);

/**
 * Fill cfg from the environment (or from env(arg, name) when env is set).
 * A value that does not parse or is out of bounds is rejected with one
 * warning naming the variable, the value and the default kept.
 * \return the number of rejected values (0 when all were good).
 */
int rw_config_load(struct rw_config *cfg, rw_env_fn env, void *arg);

/**
 * Print the registry as a table: variable, current value (from cfg, or the
 * default when cfg is NULL), default, help; then the launcher variables with
 * their values in the environment now ("-" when unset) and help.
 */
void rw_params_print(FILE *f, const struct rw_config *cfg);

/** Format one parameter's value in cfg into buf. */
void rw_param_format(const struct rw_config *cfg, const struct rw_param_desc *d, char *buf,
		     size_t len);

/** Name of choice `value` of an enum parameter ("socket"); "?" if out of range. */
const char *rw_param_choice_name(const char *choices, int value, char *buf, size_t len);

/** Number of choices in "a|b|c". */
int rw_param_choice_count(const char *choices);

/**
 * Parse "64", "64K", "1M", "2GiB" (binary multiples).
 * \return 0, or -EINVAL (not a size) / -ERANGE (overflow).
 */
int rw_parse_size(const char *s, size_t *out);

/** The launcher variables of rw_params.def (MASTER_ADDR, OMPI_COMM_WORLD_RANK,
 *  ...): set by torchrun, mpirun or srun, read but never set by ringway. */
enum rw_launcher_var {
#define RW_PARAM_LAUNCHER(name, help) RW_LAUNCHER_##name,
#include "common/rw_params.def"
	RW_LAUNCHER_COUNT
};

/** A launcher variable's value, read from the process environment now;
 *  NULL when unset (or v is out of range).  The library and the tools read
 *  variables that are not ringway's own only through this. */
const char *rw_launcher_get(enum rw_launcher_var v);

/** Its name ("MASTER_ADDR") and help; NULL when v is out of range. */
const char *rw_launcher_name(enum rw_launcher_var v);
const char *rw_launcher_help(enum rw_launcher_var v);

/**
 * Read any variable by name.  For tests and test doubles (RINGWAY_TEST_*,
 * SOFTVERBS_*) only: library and tool code reads RINGWAY_* variables through
 * struct rw_config and launcher variables through rw_launcher_get().  The one
 * getenv of the project besides those.  NULL if unset.
 */
const char *rw_env_get(const char *name);

/**
 * Every variable of the process environment whose name starts with prefix
 * ("NCCL_", "RINGWAY_"), in the environment's order: fn(arg, name, value)
 * for each; name is NUL-terminated in a caller-invisible buffer, valid only
 * during the call.  For diagnostics (ringway-doctor), which must see the
 * variables the registry does not know: NCCL's own, and misspelt RINGWAY_*
 * names.  Configuration still comes only from rw_config_load().
 * \return the number of variables passed to fn.
 */
int rw_env_foreach(const char *prefix, void (*fn)(void *arg, const char *name, const char *value),
		   void *arg);

#endif /* RW_PARAMS_H */

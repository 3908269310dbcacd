/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz targets: one source, two builds.
 *
 *   - With RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, rw_add_fuzzer(), `make fuzz`,
 *     scripts/fuzz.sh): the target's LLVMFuzzerTestOneInput() only, driven
 *     by libFuzzer over a scratch folder and the target's seed folder.
 *   - Otherwise a cmocka test (rw_add_test()) whose main() is
 *     rw_fuzz_main(): the target's own tests, then every seed of the corpus
 *     folder given (or the built-in seeds when none is given), each followed
 *     by a fixed number of seeded mutations, then the target's checks of
 *     what the seeds reached.  "<test> --seeds DIR" writes the built-in
 *     seeds into DIR (how a seed folder is made).
 *
 * Both builds: rw_fuzz_check() (a property every input keeps), a quiet log
 * sink, and a config from name/value pairs (no setenv).
 */
#ifndef RW_FUZZ_H
#define RW_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"

/* The settings a target runs its sockets under: loopback only, IPv4, short
 * deadlines (some expire during a run).  For rw_fuzz_env() pair lists. */
#define RW_FUZZ_LOOPBACK_ENV                                                                       \
	"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SOCKET_FAMILY", "ipv4",                           \
		"RINGWAY_SOCKET_HELLO_MS", "20", "RINGWAY_TIMEOUT_MS", "200"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** A property every input must keep: abort() (libFuzzer's finding) if not. */
static inline void rw_fuzz_check(bool ok)
{
	if (!ok)
		abort();
}

/** A log sink that formats every message and drops it; arg is a size_t
 *  that counts the bytes (so a test can see that refusals were reported). */
static inline void rw_fuzz_quiet_sink(void *arg, enum rw_log_level level, unsigned long flags,
				      const char *file, int line, const char *msg)
{
	(void)level, (void)flags, (void)file, (void)line;
	*(size_t *)arg += strlen(msg);
}

/** An env function for rw_config_load(): arg is a NULL-terminated list of
 *  name, value pairs ({"RINGWAY_X", "1", ..., NULL}); other names are unset. */
static inline const char *rw_fuzz_env(void *arg, const char *name)
{
	const char *const *p = arg;

	for (; p && p[0]; p += 2)
		if (!strcmp(p[0], name))
			return p[1];
	return NULL;
}

#ifndef RW_FUZZ_LIBFUZZER
#include "support/rw_test.h"

#define RW_FUZZ_MAX_INPUT 1024 /* bytes of a seed (longer files are cut) */
#define RW_FUZZ_MAX_SEEDS 64   /* built-in seeds of one target */

/** A seed as a target's make_seeds() builds it. */
struct rw_fuzz_seed {
	uint8_t b[RW_FUZZ_MAX_INPUT];
	size_t n;
};

/** Append n bytes to s (abort() past RW_FUZZ_MAX_INPUT). */
void rw_fuzz_put(struct rw_fuzz_seed *s, const void *p, size_t n);
void rw_fuzz_put8(struct rw_fuzz_seed *s, uint8_t v);

/*
 * How the test build drives a target.  Mutation m of a seed changes
 * 1 + m % max_edits bytes, chosen by an xorshift64 generator started at rng
 * (the same inputs every run): each edit writes a random byte (or one of
 * alphabet) at a position past the first keep bytes, or, with truncate,
 * 1 time in 16 cuts the input to a shorter length of at least 2 bytes.
 * Seeds no longer than max(keep, 1) bytes are run unmutated.
 */
struct rw_fuzz_target {
	const char *name;			      /**< the cmocka group */
	int (*one)(const uint8_t *data, size_t size); /**< LLVMFuzzerTestOneInput */
	int mutations;				      /**< per seed */
	int max_edits;				      /**< bytes one mutation changes, at most */
	size_t keep;	      /**< leading bytes (a selector) no edit changes */
	uint64_t rng;	      /**< the generator's start, non-zero */
	bool truncate;	      /**< edits may also cut the input short */
	const char *alphabet; /**< the bytes an edit writes; NULL: any byte */
	int min_seeds;	      /**< fewer seeds fail the test */
	/** Built-in seeds (zeroed before): how many, <= RW_FUZZ_MAX_SEEDS.
	 *  Optional; needed for --seeds and for a run without a folder. */
	int (*make_seeds)(struct rw_fuzz_seed *sd);
	/** cmocka checks after each seed and its mutations (optional). */
	void (*after_seed)(void);
	/** cmocka checks after every seed ran: what the seeds must reach, the
	 *  counters the target keeps (optional). */
	void (*verdict)(void);
};

/**
 * main() of a target's test build.  "<test> [corpus folder]": runs tests
 * (ntests of the target's own cmocka tests, may be 0), then a test
 * "fuzz_seeds" over the folder's seeds (the built-in ones without a
 * folder).  "<test> --seeds DIR": writes the built-in seeds as DIR/seed<i>.
 */
int rw_fuzz_main(int argc, char **argv, const struct rw_fuzz_target *t,
		 const struct CMUnitTest *tests, size_t ntests);
#endif /* !RW_FUZZ_LIBFUZZER */

#endif /* RW_FUZZ_H */

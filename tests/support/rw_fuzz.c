/* SPDX-License-Identifier: Apache-2.0 */
/* The test build's driver of a fuzz target (see rw_fuzz.h). */
#include "tests/support/rw_fuzz.h"

#include <dirent.h>
#include <stdio.h>

#include "common/rw_common.h"

static const struct rw_fuzz_target *target;
static const char *corpus_dir; /* NULL: the built-in seeds */

void rw_fuzz_put(struct rw_fuzz_seed *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		abort();
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

void rw_fuzz_put8(struct rw_fuzz_seed *s, uint8_t v)
{
	rw_fuzz_put(s, &v, 1);
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* The seed, then its mutations (rw_fuzz_target). */
static void run_seed(const struct rw_fuzz_target *t, const uint8_t *seed, size_t len, uint64_t *x)
{
	size_t nalpha = t->alphabet ? strlen(t->alphabet) : 0;
	uint8_t mut[RW_FUZZ_MAX_INPUT];

	t->one(seed, len);
	for (int m = 0; m < t->mutations && len > t->keep && len > 1; m++) {
		size_t n = len;

		memcpy(mut, seed, len);
		for (int k = 0; k < 1 + m % t->max_edits; k++) {
			uint64_t r = next(x);

			if (t->truncate && (r >> 60) == 0 && n > 2)
				n = 2 + (size_t)(r >> 8) % (n - 2);
			else
				mut[t->keep + (r >> 8) % (n - t->keep)] =
					nalpha ? (uint8_t)t->alphabet[(r >> 40) % nalpha]
					       : (uint8_t)(r >> 40);
		}
		t->one(mut, n);
	}
	if (t->after_seed)
		t->after_seed();
}

static void fuzz_seeds(void **state)
{
	const struct rw_fuzz_target *t = target;
	uint64_t x = t->rng;
	int seeds = 0;

	(void)state;
	if (!corpus_dir) {
		static struct rw_fuzz_seed sd[RW_FUZZ_MAX_SEEDS];

		assert_non_null(t->make_seeds);
		memset(sd, 0, sizeof(sd));
		seeds = t->make_seeds(sd);
		for (int i = 0; i < seeds; i++)
			run_seed(t, sd[i].b, sd[i].n, &x);
	} else {
		DIR *d = opendir(corpus_dir);
		struct dirent *e;

		assert_non_null(d);
		while ((e = readdir(d))) {
			uint8_t buf[RW_FUZZ_MAX_INPUT];
			char path[4096];
			size_t len;
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", corpus_dir, e->d_name);
			f = fopen(path, "rb");
			assert_non_null(f);
			len = fread(buf, 1, sizeof(buf), f);
			fclose(f);
			run_seed(t, buf, len, &x);
			seeds++;
		}
		closedir(d);
	}
	print_message("[          ] %s: %d seeds, %d mutations of each\n", t->name, seeds,
		      t->mutations);
	assert_true(seeds >= t->min_seeds);
	if (t->verdict)
		t->verdict();
}

static int write_seeds(const struct rw_fuzz_target *t, const char *dir)
{
	static struct rw_fuzz_seed sd[RW_FUZZ_MAX_SEEDS];
	int n;

	if (!t->make_seeds) {
		fprintf(stderr, "%s: no built-in seeds\n", t->name);
		return 1;
	}
	memset(sd, 0, sizeof(sd));
	n = t->make_seeds(sd);
	for (int i = 0; i < n; i++) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed%d", dir, i);
		f = fopen(path, "wb");
		if (!f || (fwrite(sd[i].b, 1, sd[i].n, f) != sd[i].n) + fclose(f)) {
			fprintf(stderr, "%s: cannot write %s\n", t->name, path);
			return 1;
		}
	}
	return 0;
}

int rw_fuzz_main(int argc, char **argv, const struct rw_fuzz_target *t,
		 const struct CMUnitTest *tests, size_t ntests)
{
	struct CMUnitTest all[8];

	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return write_seeds(t, argv[2]);
	if (argc > 2 || (argc == 1 && !t->make_seeds) || ntests >= RW_ARRAY_SIZE(all)) {
		fprintf(stderr, "usage: %s <corpus folder>%s | --seeds <folder>\n", argv[0],
			t->make_seeds ? " (default: the built-in seeds)" : "");
		return 1;
	}
	target = t;
	corpus_dir = argc == 2 ? argv[1] : NULL;
	for (size_t i = 0; i < ntests; i++)
		all[i] = tests[i];
	all[ntests] = (struct CMUnitTest){.name = "fuzz_seeds", .test_func = fuzz_seeds};
	return _cmocka_run_group_tests(t->name, all, ntests + 1, NULL, NULL);
}

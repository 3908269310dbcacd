/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the shm tests on device buffers share (test_shm_cuda on a real GPU,
 * test_gpu_emu_shm on the emulated one): the cases (where each side's buffer
 * lives, and its size), buffers of either kind, and filling or checking one
 * through a host copy.  Used in forked children: failures _exit().
 */
#ifndef RW_TEST_SHM_DEV_H
#define RW_TEST_SHM_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/rw_cuda.h"
#include "net/test_shm_util.h"
#include "support/rw_test.h"

#define SHM_DEV_MIB (1024 * 1024)

/* One case: where the sender's and the receiver's buffers live, and size. */
struct shm_dev_case {
	bool send_dev, recv_dev;
	size_t size;
};

/* The cases both tests run; the third is `big` bytes (the largest). */
#define SHM_DEV_CASES(big)                                                                         \
	{                                                                                          \
		{true, true, 8}, {true, true, SHM_DEV_MIB + 3}, {true, true, (big)},               \
			{true, false, 3 * SHM_DEV_MIB}, /* device -> host by IPC */                \
			{false, true, 100000},		/* host -> device through the slots */     \
			{false, true, SHM_DEV_MIB + 5}, /* ... in several fragments */             \
			{false, true,                                                              \
			 9 * SHM_DEV_MIB}, /* host -> device by cross-memory attach */             \
	}

static inline void *shm_dev_alloc(bool dev, size_t n)
{
	void *p = NULL;

	if (dev)
		CHILD_CHECK(rw_cuda_malloc(&p, n) == 0);
	else
		CHILD_CHECK((p = malloc(n)) != NULL);
	return p;
}

static inline void shm_dev_free(bool dev, void *p)
{
	if (dev)
		rw_cuda_free(p);
	else
		free(p);
}

/* Fill p (n bytes, device or host) with case `seed`'s pattern, through host. */
static inline void shm_dev_fill(void *p, bool dev, char *host, size_t n, uint64_t seed)
{
	rw_test_fill(host, n, seed);
	if (dev)
		CHILD_CHECK(rw_cuda_memcpy(p, host, n) == 0);
	else
		memcpy(p, host, n);
}

/* Check that p holds case `seed`'s pattern; say which case and exit 4 if not. */
static inline void shm_dev_check(const void *p, bool dev, char *host, char *want, size_t n,
				 uint64_t seed, size_t which)
{
	if (dev)
		CHILD_CHECK(rw_cuda_memcpy(host, p, n) == 0);
	else
		memcpy(host, p, n);
	rw_test_fill(want, n, seed);
	if (memcmp(host, want, n)) {
		fprintf(stderr, "case %zu: %zu bytes arrived corrupted\n", which, n);
		_exit(4);
	}
}

#endif /* RW_TEST_SHM_DEV_H */

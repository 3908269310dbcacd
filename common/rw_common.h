/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers shared by every layer: array sizes, container_of, fd
 * ownership, monotonic time.  Header-only; imports nothing of ringway.
 */
#ifndef RW_COMMON_H
#define RW_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define RW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RW_MIN(a, b)	 ((a) < (b) ? (a) : (b))
#define RW_MAX(a, b)	 ((a) > (b) ? (a) : (b))
#define RW_DIV_UP(a, b)	 (((a) + (b)-1) / (b))

#define rw_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#if defined(__GNUC__)
#define RW_LIKELY(x)	__builtin_expect(!!(x), 1)
#define RW_UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define RW_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RW_UNUSED	__attribute__((unused))
#else
#define RW_LIKELY(x)   (x)
#define RW_UNLIKELY(x) (x)
#define RW_PRINTF(f, a)
#define RW_UNUSED
#endif

/** Close *fd if it is open and set it to -1, keeping errno. */
static inline void rw_close_fd(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		*fd = -1;
		errno = saved;
	}
}

/** Monotonic clock in nanoseconds. */
static inline uint64_t rw_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Monotonic clock in milliseconds. */
static inline uint64_t rw_now_ms(void)
{
	return rw_now_ns() / 1000000ull;
}

#endif /* RW_COMMON_H */

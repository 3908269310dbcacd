/* SPDX-License-Identifier: Apache-2.0 */
#include "common/rw_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>

struct rw_log_state {
	pthread_mutex_t lock;
	rw_log_sink_fn sink;
	void *sink_arg;
};

static struct rw_log_state log_state = {.lock = PTHREAD_MUTEX_INITIALIZER};
static int log_level = RW_LOG_WARN; /* read lock-free on every call */

static const char *const level_names[] = {
	[RW_LOG_NONE] = "NONE", [RW_LOG_VERSION] = "VERSION", [RW_LOG_WARN] = "WARN",
	[RW_LOG_INFO] = "INFO", [RW_LOG_ABORT] = "ABORT",     [RW_LOG_TRACE] = "TRACE",
};

void rw_log_set_sink(rw_log_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&log_state.lock);
	log_state.sink = fn;
	log_state.sink_arg = arg;
	pthread_mutex_unlock(&log_state.lock);
}

void rw_log_set_level(enum rw_log_level level)
{
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

enum rw_log_level rw_log_get_level(void)
{
	return (enum rw_log_level)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

int rw_log_level_parse(const char *s, enum rw_log_level *out)
{
	for (size_t i = 0; i < RW_ARRAY_SIZE(level_names); i++) {
		if (level_names[i] && strcasecmp(s, level_names[i]) == 0) {
			*out = (enum rw_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void rw_log_emit(enum rw_log_level level, unsigned long flags, const char *file, int line,
		 const char *fmt, ...)
{
	int saved_errno = errno;
	rw_log_sink_fn sink;
	void *arg;
	char msg[1024];
	va_list ap;

	pthread_mutex_lock(&log_state.lock);
	sink = log_state.sink;
	arg = log_state.sink_arg;
	pthread_mutex_unlock(&log_state.lock);

	/* A sink (NCCL) applies its own filter; stderr uses RINGWAY_DEBUG. */
	if (!sink && level > rw_log_get_level())
		goto out;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (sink) {
		sink(arg, level, flags, file, line, msg);
	} else {
		const char *base = strrchr(file, '/');

		fprintf(stderr, "ringway %d:%ld %s %s:%d %s\n", (int)getpid(),
			(long)syscall(SYS_gettid),
			level < RW_ARRAY_SIZE(level_names) ? level_names[level] : "?",
			base ? base + 1 : file, line, msg);
	}
out:
	errno = saved_errno;
}

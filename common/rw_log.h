/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging.  One process-wide sink: NCCL's logger when NCCL loaded us (the
 * plugin installs a trampoline with rw_log_set_sink()), stderr otherwise.
 *
 * Rules (see CONTRIBUTING.md): log once, where the failure is detected, with
 * the peer/object, the call, its key arguments and the errno or status.
 * Callers that only pass an error up do not log it again.  The macros save
 * and restore errno, so "%m" and strerror(errno) keep working after them.
 *
 * Levels and subsystem flags have NCCL's values so a sink can forward them
 * unchanged.  All functions are thread-safe and never block on a peer.
 */
#ifndef RW_LOG_H
#define RW_LOG_H

#include "common/rw_common.h"

enum rw_log_level {
	RW_LOG_NONE = 0,
	RW_LOG_VERSION = 1,
	RW_LOG_WARN = 2,
	RW_LOG_INFO = 3,
	RW_LOG_ABORT = 4,
	RW_LOG_TRACE = 5,
};

/* Subsystem flags, NCCL's ncclDebugLogSubSys values. */
enum rw_log_subsys {
	RW_LOG_INIT = 0x1,
	RW_LOG_COLL = 0x2,
	RW_LOG_P2P = 0x4,
	RW_LOG_SHM = 0x8,
	RW_LOG_NET = 0x10,
	RW_LOG_GRAPH = 0x20,
	RW_LOG_TUNING = 0x40,
	RW_LOG_ENV = 0x80,
	RW_LOG_ALLOC = 0x100,
	RW_LOG_PROXY = 0x400,
};

/**
 * A sink receives one formatted message (no trailing newline).
 * \param arg the pointer given to rw_log_set_sink().
 */
typedef void (*rw_log_sink_fn)(void *arg, enum rw_log_level level, unsigned long flags,
			       const char *file, int line, const char *msg);

/**
 * Install the sink (NULL restores stderr) and the level threshold for
 * messages that the sink does not filter itself.  NCCL filters by its own
 * NCCL_DEBUG, so the plugin installs its sink with RW_LOG_TRACE.
 */
void rw_log_set_sink(rw_log_sink_fn fn, void *arg);
void rw_log_set_level(enum rw_log_level level);
enum rw_log_level rw_log_get_level(void);

/** Emit a message; use the macros below instead. */
void rw_log_emit(enum rw_log_level level, unsigned long flags, const char *file, int line,
		 const char *fmt, ...) RW_PRINTF(5, 6);

/** Parse a level name (NONE, VERSION, WARN, INFO, ABORT, TRACE; any case). */
int rw_log_level_parse(const char *s, enum rw_log_level *out);

#define RW_LOG(level, flags, ...) rw_log_emit((level), (flags), __FILE__, __LINE__, __VA_ARGS__)
#define RW_WARN(flags, ...)	  RW_LOG(RW_LOG_WARN, (flags), __VA_ARGS__)
#define RW_INFO(flags, ...)	  RW_LOG(RW_LOG_INFO, (flags), __VA_ARGS__)

/* Emit at most once per call site (per process). */
#define RW_LOG_ONCE(level, flags, ...)                                                             \
	do {                                                                                       \
		static int rw_log_once_done_;                                                      \
		if (!__atomic_exchange_n(&rw_log_once_done_, 1, __ATOMIC_RELAXED))                 \
			RW_LOG((level), (flags), __VA_ARGS__);                                     \
	} while (0)
#define RW_WARN_ONCE(flags, ...) RW_LOG_ONCE(RW_LOG_WARN, (flags), __VA_ARGS__)

/* Data-path tracing: compiled out unless built with RINGWAY_TRACE=ON. */
#ifdef RW_ENABLE_TRACE
#define RW_TRACE(flags, ...) RW_LOG(RW_LOG_TRACE, (flags), __VA_ARGS__)
#else
#define RW_TRACE(flags, ...)                                                                       \
	do {                                                                                       \
	} while (0)
#endif

#endif /* RW_LOG_H */

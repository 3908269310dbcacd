/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway public C API (libringway.so).
 *
 * Every function returns 0 or a negative errno; rw_strerror() describes it.
 * The collective API (rw_comm_init, rw_allreduce, ...) arrives with the ring
 * engine.
 */
#ifndef RINGWAY_H
#define RINGWAY_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RW_API __attribute__((visibility("default")))
#else
#define RW_API
#endif

/** "0.1.0": the library's version. */
RW_API const char *rw_version(void);

/** Text for a value returned by a ringway call (0 or -errno).  Static. */
RW_API const char *rw_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* RINGWAY_H */

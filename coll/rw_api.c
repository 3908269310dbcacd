/* SPDX-License-Identifier: Apache-2.0 */
/* Public API entry points that need no communicator (libringway.so only). */
#define _GNU_SOURCE /* strerrordesc_np */
#include "include/ringway.h"

#include <string.h>

#include "common/rw_build.h"

const char *rw_version(void)
{
	return RW_VERSION_STRING;
}

int rw_cuda_support(void)
{
	return RW_HAVE_CUDA ? 1 : 0;
}

const char *rw_strerror(int err)
{
	const char *s;

	if (err == 0)
		return "success";
	if (err > 0)
		return "invalid error value (ringway errors are negative errno values)";
	if (err < -4095) /* INT_MIN has no negation; no errno is this large */
		return "unknown error";
	s = strerrordesc_np(-err); /* static, thread-safe; NULL if unknown */
	return s ? s : "unknown error";
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device reductions in a build without CUDA (RINGWAY_WITH_CUDA=OFF, or
 * no toolkit found): rw_cuda_fold() says why and returns -ENOTSUP.
 */
#include <errno.h>

#include "common/rw_log.h"
#include "kernels/reduce_internal.h"

int rw_cuda_fold(const struct rw_dev_fold *f, enum rw_dtype dtype, enum rw_op op, void *stream)
{
	(void)f, (void)dtype, (void)op, (void)stream;
	RW_WARN(RW_LOG_INIT, "device reduction: this ringway was built without CUDA "
			     "(RINGWAY_WITH_CUDA=OFF or no CUDA toolkit found)");
	return -ENOTSUP;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values of abi_values.def as the installed nccl.h defines them.  Built
 * only when nccl.h exists, in its own translation unit: nccl.h and
 * abi/nccl_common.h declare the same names.
 */
#include <stddef.h>
#include <nccl.h>

#include "abi_real.h"

const long rw_real_nccl_values[] = {
#define RW_ABI_VALUE(name) (long)(name),
#include "abi_values.def"
};
const size_t rw_real_nccl_count = sizeof(rw_real_nccl_values) / sizeof(rw_real_nccl_values[0]);
const size_t rw_real_sizeof_result = sizeof(ncclResult_t);
const size_t rw_real_sizeof_datatype = sizeof(ncclDataType_t);
const size_t rw_real_sizeof_redop = sizeof(ncclRedOp_t);
const int rw_real_nccl_version = NCCL_VERSION_CODE;

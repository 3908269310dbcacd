/* SPDX-License-Identifier: Apache-2.0 */
/* What nccl_real_values.c exports (only linked when nccl.h exists). */
#ifndef RW_TEST_ABI_REAL_H
#define RW_TEST_ABI_REAL_H

#include <stddef.h>

extern const long rw_real_nccl_values[];
extern const size_t rw_real_nccl_count;
extern const size_t rw_real_sizeof_result;
extern const size_t rw_real_sizeof_datatype;
extern const size_t rw_real_sizeof_redop;
extern const int rw_real_nccl_version;

#endif /* RW_TEST_ABI_REAL_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every net / CollNet ABI version ringway speaks, v6 (NCCL 2.13) to v12
 * (NCCL 2.30).  NCCL finds a version by dlsym() of the data symbols
 * ncclNetPlugin_vN / ncclCollNetPlugin_vN (N = 6..12), newest first; the
 * installed NCCL 2.28.9 knows v6..v11.
 *
 * Each header static_asserts the sizes and offsets NCCL relies on
 * (x86_64 / LP64).  Pre-v6 versions are not declared: no NCCL that loads
 * them is still supported by ringway.
 */
#ifndef RW_ABI_NCCL_NET_H
#define RW_ABI_NCCL_NET_H

#include "abi/nccl_common.h"
#include "abi/nccl_net_common.h"
#include "abi/nccl_net_v6.h"
#include "abi/nccl_net_v7.h"
#include "abi/nccl_net_v8.h"
#include "abi/nccl_net_v9.h"
#include "abi/nccl_net_v10.h"
#include "abi/nccl_net_v11.h"
#include "abi/nccl_net_v12.h"

#endif /* RW_ABI_NCCL_NET_H */

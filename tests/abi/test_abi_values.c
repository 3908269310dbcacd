/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi/: the headers compile with every size and offset static_assert, and
 * ringway's result codes, datatypes and ops equal the installed nccl.h's
 * (skipped when the build machine has no nccl.h).
 */
#include "support/rw_test.h"

#include <stdio.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"
#include "abi_real.h"

static const struct {
	const char *name;
	long value;
} ours[] = {
#define RW_ABI_VALUE(n) {#n, (long)(n)},
#include "abi_values.def"
};

static void enums_match_installed_nccl_h(void **state)
{
	(void)state;
#if RW_TEST_HAVE_NCCL_H
	assert_int_equal(rw_real_nccl_count, RW_ARRAY_SIZE(ours));
	for (size_t i = 0; i < RW_ARRAY_SIZE(ours); i++) {
		if (ours[i].value != rw_real_nccl_values[i])
			fail_msg("%s: ringway %ld, nccl.h (%d) %ld", ours[i].name, ours[i].value,
				 rw_real_nccl_version, rw_real_nccl_values[i]);
	}
	assert_int_equal(rw_real_sizeof_result, sizeof(ncclResult_t));
	assert_int_equal(rw_real_sizeof_datatype, sizeof(ncclDataType_t));
	assert_int_equal(rw_real_sizeof_redop, sizeof(ncclRedOp_t));
#else
	skip();
#endif
}

/* The layout facts NCCL depends on most, restated at run time so a
 * failure names the numbers (the headers' static_asserts cover the rest). */
static void key_layouts(void **state)
{
	(void)state;
	assert_int_equal(sizeof(ncclNet_v6_t), 136);
	assert_int_equal(sizeof(ncclNet_v10_t), 160);
	assert_int_equal(sizeof(ncclNet_v11_t), 176);
	assert_int_equal(offsetof(ncclNet_v11_t, finalize), 160);
	assert_int_equal(offsetof(ncclNet_v11_t, setNetAttr), 168);
	assert_int_equal(sizeof(ncclNetProperties_v11_t), 112);
	assert_int_equal(sizeof(ncclNetProperties_v12_t), 128);
	assert_int_equal(offsetof(ncclNetProperties_v12_t, railId), 124);
	assert_int_equal(sizeof(ncclCollNet_v11_t), 152);
	assert_int_equal(offsetof(ncclCollNet_v11_t, iallreduce), 80);
	assert_int_equal(offsetof(ncclCollNet_v11_t, finalize), 144);
	assert_int_equal(NCCL_NET_HANDLE_MAXSIZE, 128);
	assert_int_equal(NCCL_MAX_NET_SIZE_BYTES, 1ull << 40);
}

static int teardown(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(enums_match_installed_nccl_h, teardown),
		cmocka_unit_test_teardown(key_layouts, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

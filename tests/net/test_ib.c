/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport's pure parts, no device needed: RINGWAY_IB_HCA parsing
 * and matching, the GID choice, port speeds, the immediate encoding, the
 * CTS checksum and the handle decoder.
 */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common/rw_common.h"
#include "transport/ib/ib.h"
#include "transport/ib/ib_proto.h"

static void hca_spec_parse_and_match(void **state)
{
	struct rw_ib_spec sp;

	(void)state;
	assert_int_equal(rw_ib_spec_parse("", &sp), 0);
	assert_int_equal(sp.n, 0);
	assert_true(rw_ib_spec_match(&sp, "mlx5_7", 2));
	assert_int_equal(rw_ib_spec_parse(NULL, &sp), 0);
	assert_true(rw_ib_spec_match(&sp, "anything", 1));

	/* prefixes and ports */
	assert_int_equal(rw_ib_spec_parse(" mlx5_0:1 , mlx5_1 ", &sp), 0);
	assert_int_equal(sp.n, 2);
	assert_false(sp.exclude);
	assert_false(sp.exact);
	assert_string_equal(sp.e[0].name, "mlx5_0");
	assert_int_equal(sp.e[0].port, 1);
	assert_int_equal(sp.e[1].port, -1);
	assert_true(rw_ib_spec_match(&sp, "mlx5_0", 1));
	assert_false(rw_ib_spec_match(&sp, "mlx5_0", 2));
	assert_true(rw_ib_spec_match(&sp, "mlx5_1", 2));
	assert_true(rw_ib_spec_match(&sp, "mlx5_10", 1)); /* a prefix */
	assert_false(rw_ib_spec_match(&sp, "mlx5_2", 1));

	/* exact names */
	assert_int_equal(rw_ib_spec_parse("=mlx5_1", &sp), 0);
	assert_true(sp.exact);
	assert_true(rw_ib_spec_match(&sp, "mlx5_1", 1));
	assert_false(rw_ib_spec_match(&sp, "mlx5_10", 1));

	/* exclusions */
	assert_int_equal(rw_ib_spec_parse("^mlx5_2", &sp), 0);
	assert_true(sp.exclude);
	assert_false(rw_ib_spec_match(&sp, "mlx5_2", 1));
	assert_false(rw_ib_spec_match(&sp, "mlx5_23", 1));
	assert_true(rw_ib_spec_match(&sp, "mlx5_3", 1));
	assert_int_equal(rw_ib_spec_parse("^=mlx5_3:2", &sp), 0);
	assert_true(sp.exclude && sp.exact);
	assert_false(rw_ib_spec_match(&sp, "mlx5_3", 2));
	assert_true(rw_ib_spec_match(&sp, "mlx5_3", 1));
	assert_true(rw_ib_spec_match(&sp, "mlx5_30", 2));

	/* what does not parse leaves the output alone */
	sp.n = 77;
	assert_int_equal(rw_ib_spec_parse("mlx5_0:x", &sp), -EINVAL);
	assert_int_equal(rw_ib_spec_parse("mlx5_0:", &sp), -EINVAL);
	assert_int_equal(rw_ib_spec_parse(":1", &sp), -EINVAL);
	assert_int_equal(rw_ib_spec_parse("mlx5_0:0", &sp), -EINVAL);
	assert_int_equal(rw_ib_spec_parse("a_name_that_is_far_too_long_to_be_an_rdma_device_name_"
					  "of_any_kind_xx",
					  &sp),
			 -EINVAL);
	{
		char many[256] = "";

		for (int i = 0; i <= RW_IB_SPEC_MAX; i++)
			strcat(many, "d,");
		assert_int_equal(rw_ib_spec_parse(many, &sp), -EINVAL);
	}
	assert_int_equal(sp.n, 77);
}

static struct rw_ib_gid gid(const char *text, enum rw_ib_gid_type type)
{
	struct rw_ib_gid g = {.type = type};

	assert_int_equal(inet_pton(AF_INET6, text, g.raw), 1);
	return g;
}

static void gid_choice(void **state)
{
	/* the order an mlx5 RoCE port lists them in */
	struct rw_ib_gid roce[] = {
		gid("fe80::202:c9ff:feab:1", RW_IB_GID_ROCE_V1),
		gid("fe80::202:c9ff:feab:1", RW_IB_GID_ROCE_V2),
		gid("::ffff:10.11.0.1", RW_IB_GID_ROCE_V1),
		gid("::ffff:10.11.0.1", RW_IB_GID_ROCE_V2),
		gid("2001:db8::1", RW_IB_GID_ROCE_V1),
		gid("2001:db8::1", RW_IB_GID_ROCE_V2),
	};
	struct rw_ib_gid ib[] = {
		gid("::", RW_IB_GID_IB),
		gid("fe80::2:c903:ab:11", RW_IB_GID_IB),
	};

	(void)state;
	assert_int_equal(rw_ib_gid_pick(roce, 6, true), 3); /* v2, IPv4-mapped */
	assert_int_equal(rw_ib_gid_pick(roce, 3, true), 2); /* v1, IPv4-mapped */
	roce[3] = gid("::", RW_IB_GID_ROCE_V2);		    /* an empty entry */
	assert_int_equal(rw_ib_gid_pick(roce, 6, true), 5); /* v2, global IPv6 */
	assert_int_equal(rw_ib_gid_pick(roce, 2, true), 1); /* v2 link-local over v1 */
	assert_int_equal(rw_ib_gid_pick(&roce[3], 1, true), -1);
	assert_int_equal(rw_ib_gid_pick(ib, 2, false), 1); /* first non-zero */
	assert_int_equal(rw_ib_gid_pick(ib, 1, false), -1);
}

static void speeds(void **state)
{
	(void)state;
	assert_int_equal(rw_ib_speed_mbps(32, 2), 100000);  /* EDR 4X */
	assert_int_equal(rw_ib_speed_mbps(64, 2), 200000);  /* HDR 4X */
	assert_int_equal(rw_ib_speed_mbps(128, 2), 400000); /* NDR 4X */
	assert_int_equal(rw_ib_speed_mbps(32, 1), 25000);
	assert_int_equal(rw_ib_speed_mbps(0, 2), 0);
	assert_int_equal(rw_ib_speed_mbps(32, 3), 0);
}

static void immediates_and_cts(void **state)
{
	struct rw_ib_cts a = {.addr = 0x7f0012345000,
			      .size = 4096,
			      .rkey = 0x1234,
			      .tag = 7,
			      .nreqs = 3,
			      .idx = 2,
			      .seq = 0x1000001};
	uint32_t imm = rw_ib_imm(0x12345678, 5, 17);
	uint32_t c0;

	(void)state;
	assert_int_equal(rw_ib_imm_seq(imm), 0x345678);
	assert_int_equal(rw_ib_imm_idx(imm), 5);
	assert_int_equal(rw_ib_imm_pieces(imm), 17);
	assert_int_equal(rw_ib_imm_pieces(rw_ib_imm(1, 0, RW_IB_IMM_ERR_SIZE)), RW_IB_IMM_ERR_SIZE);
	assert_int_equal(rw_ib_imm_pieces(rw_ib_imm(1, 7, RW_IB_IMM_ERR_TAG)), RW_IB_IMM_ERR_TAG);
	assert_true(RW_IB_MAX_PIECES < RW_IB_IMM_ERR_SIZE);

	/* every field changes the check; a written entry never checks 0 */
	c0 = rw_ib_cts_check(&a);
	assert_int_not_equal(c0, 0);
	a.size++;
	assert_int_not_equal(rw_ib_cts_check(&a), c0);
	a.size--;
	a.tag = 8;
	assert_int_not_equal(rw_ib_cts_check(&a), c0);
	a.tag = 7;
	a.idx = 1;
	assert_int_not_equal(rw_ib_cts_check(&a), c0);
	a.idx = 2;
	a.seq++;
	assert_int_not_equal(rw_ib_cts_check(&a), c0);
	a.seq--;
	assert_int_equal(rw_ib_cts_check(&a), c0);
}

static void handles(void **state)
{
	struct rw_ib_handle h = {.magic = RW_IB_MAGIC,
				 .version = RW_IB_VERSION,
				 .family = 4,
				 .port = htons(4711),
				 .addr = {127, 0, 0, 1}};
	unsigned char buf[RW_NET_HANDLE_MAXSIZE] = {0};
	struct sockaddr_storage ss;
	const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

	(void)state;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rw_ib_handle_addr(buf, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(in->sin_port), 4711);
	assert_int_equal(ntohl(in->sin_addr.s_addr), 0x7f000001);
	h.family = 6;
	inet_pton(AF_INET6, "fe80::1", h.addr);
	h.scope_id = 3;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rw_ib_handle_addr(buf, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(in6->sin6_scope_id, 3);
	h.version = RW_IB_VERSION + 1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rw_ib_handle_addr(buf, &ss), -EINVAL);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rw_ib_handle_addr(buf, &ss), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hca_spec_parse_and_match),
		cmocka_unit_test(gid_choice),
		cmocka_unit_test(speeds),
		cmocka_unit_test(immediates_and_cts),
		cmocka_unit_test(handles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

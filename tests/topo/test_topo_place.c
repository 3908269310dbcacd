/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement's pure parts (topo/rw_topo_place.h, rw_topo_channel_nic,
 * rw_topo_ring_rank) on the fixtures: the NIC of each channel of a GPU
 * (spread over NICs exactly as near), where a GPU stands in its host's
 * ring, the ring of a job from what its ranks said, and that it is the
 * ring rw_topo_multihost_ring() lays through the same hosts.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_common.h"
#include "topo/rw_topo.h"
#include "topo/rw_topo_place.h"

static struct rw_topo *load(const char *name)
{
	char xml[512];
	struct rw_config cfg;
	struct rw_topo *t = NULL;

	if (!RW_HAVE_HWLOC)
		skip();
	rw_config_defaults(&cfg);
	snprintf(xml, sizeof(xml), "%s/%s.xml", RW_TOPO_FIXTURES, name);
	assert_int_equal(rw_topo_create_from_xml(&cfg, xml, &t), 0);
	return t;
}

static const char *nic_of(const struct rw_topo *t, int gpu, int ch, char *reason, size_t len)
{
	struct rw_topo_nic_choice c;

	assert_int_equal(rw_topo_channel_nic(t, gpu, ch, &c), 0);
	snprintf(reason, len, "%s", c.reason);
	return c.nic < 0 ? "none" : rw_topo_nic_get(t, c.nic)->name;
}

static void channels_spread_over_equally_near_nics(void **state)
{
	struct rw_topo *t = load("hgx8-2s-4sw");
	char why[RW_TOPO_REASON_MAX];

	(void)state;
	/* GPU 0 sits on a switch with mlx5_0 and mlx5_1 */
	assert_string_equal(nic_of(t, 0, 0, why, sizeof(why)), "mlx5_0");
	assert_non_null(strstr(why, "same PCIe switch (PIX"));
	assert_null(strstr(why, "spread"));
	assert_string_equal(nic_of(t, 0, 1, why, sizeof(why)), "mlx5_1");
	assert_non_null(strstr(why, "spread: channel 1 on NIC 2 of 2 equally near"));
	assert_string_equal(nic_of(t, 0, 2, why, sizeof(why)), "mlx5_0");
	assert_non_null(strstr(why, "spread: channel 2 on NIC 1 of 2"));
	/* GPU 1 is given mlx5_1 first (GPU 0 already uses mlx5_0) */
	assert_string_equal(nic_of(t, 1, 0, why, sizeof(why)), "mlx5_1");
	assert_string_equal(nic_of(t, 1, 1, why, sizeof(why)), "mlx5_0");
	/* never a farther NIC */
	for (int ch = 0; ch < 8; ch++) {
		const char *n = nic_of(t, 7, ch, why, sizeof(why));

		assert_true(!strcmp(n, "mlx5_6") || !strcmp(n, "mlx5_7"));
	}
	assert_int_equal(rw_topo_channel_nic(t, 8, 0, &(struct rw_topo_nic_choice){0}), -EINVAL);
	rw_topo_destroy(t);
}

static void one_nearest_nic_serves_every_channel(void **state)
{
	struct rw_topo *t = load("gpu4-nic2");
	char why[RW_TOPO_REASON_MAX];

	(void)state;
	for (int ch = 0; ch < 4; ch++) {
		assert_string_equal(nic_of(t, 0, ch, why, sizeof(why)), "mlx5_0");
		assert_string_equal(why, "same PCIe switch (PIX, 15.8 GB/s)");
		assert_string_equal(nic_of(t, 3, ch, why, sizeof(why)), "mlx5_1");
	}
	/* a rank without GPU: the host's NICs in turn */
	assert_string_equal(nic_of(t, -1, 0, why, sizeof(why)), "mlx5_0");
	assert_non_null(strstr(why, "no GPU"));
	assert_string_equal(nic_of(t, -1, 1, why, sizeof(why)), "mlx5_1");
	rw_topo_destroy(t);

	t = load("gpu2-nonic");
	assert_string_equal(nic_of(t, 0, 0, why, sizeof(why)), "none");
	assert_string_equal(why, "no NIC on this host");
	rw_topo_destroy(t);
}

static void ring_rank_follows_nvlink(void **state)
{
	/* dgx1v ring order: GPU 0 3 2 1 5 6 7 4, channel 0 enters at GPU 0 */
	static const int want[8] = {0, 3, 2, 1, 7, 4, 5, 6};
	struct rw_topo *t = load("dgx1v-nvlink");
	int pos;

	(void)state;
	for (int g = 0; g < 8; g++) {
		assert_int_equal(rw_topo_ring_rank(t, g, &pos), 0);
		assert_int_equal(pos, want[g]);
	}
	assert_int_equal(rw_topo_ring_rank(t, -1, &pos), 0);
	assert_int_equal(pos, -1);
	rw_topo_destroy(t);
}

static void job_ring_groups_hosts(void **state)
{
	/* hosts 7, 9, 7, 5, 9, 7; ring ranks within hosts; -1: no GPU */
	static const uint64_t host[6] = {7, 9, 7, 5, 9, 7};
	static const int ring[6] = {2, 1, 0, -1, 0, 1};
	static const int want[6] = {2, 5, 0, 4, 1, 3};
	struct rw_topo_place p;

	(void)state;
	assert_int_equal(rw_topo_place_alloc(&p, 6, 1, true), 0);
	for (int r = 0; r < 6; r++) {
		p.rank[r].host = host[r];
		p.rank[r].ring_rank = ring[r];
	}
	assert_int_equal(rw_topo_place_ring(&p), 0);
	assert_int_equal(p.nhosts, 3);
	for (int i = 0; i < 6; i++)
		assert_int_equal(p.order[i], want[i]);
	for (int r = 0; r < 6; r++)
		assert_int_equal(p.order[p.pos[r]], r);
	assert_int_equal(p.host_of[3], 2);
	assert_int_equal(rw_topo_place_crossings(&p), 3);
	/* RINGWAY_PLACEMENT=rank: rank order, however many crossings */
	p.by_topo = false;
	assert_int_equal(rw_topo_place_ring(&p), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(p.order[i], i);
	assert_int_equal(rw_topo_place_crossings(&p), 5);
	rw_topo_place_free(&p);

	/* one host: no crossing */
	assert_int_equal(rw_topo_place_alloc(&p, 3, 2, true), 0);
	assert_int_equal(rw_topo_place_ring(&p), 0);
	assert_int_equal(p.nhosts, 1);
	assert_int_equal(rw_topo_place_crossings(&p), 0);
	rw_topo_place_free(&p);
}

/* Ranks on every GPU of 2 and 3 hosts: the job's ring visits the GPUs of
 * each host in the order rw_topo_multihost_ring() gives for channel 0. */
static void job_ring_is_the_multihost_ring(void **state)
{
	static const char *const names[] = {"gpu4-nic2", "dgx1v-nvlink", "hgx8-2s-4sw"};

	(void)state;
	for (size_t f = 0; f < RW_ARRAY_SIZE(names); f++) {
		struct rw_topo *t = load(names[f]);
		const struct rw_topo *hosts[3] = {t, t, t};
		struct rw_topo_hop hops[64];
		int g = rw_topo_gpu_count(t);

		for (int nh = 2; nh <= 3; nh++) {
			struct rw_topo_place p;
			int n = 0;
			char line[512];

			assert_int_equal(rw_topo_multihost_ring(hosts, nh, 0, hops, 64, &n), 0);
			assert_int_equal(n, nh * g);
			assert_int_equal(rw_topo_place_simulate(t, nh, nh * g, 2, &p), 0);
			assert_int_equal(rw_topo_place_crossings(&p), nh);
			for (int i = 0; i < n; i++) {
				int r = p.order[i];

				/* rank r is on host r % nh, GPU r / nh */
				assert_int_equal(p.host_of[r], hops[i].host);
				assert_int_equal(r / nh, hops[i].gpu);
			}
			rw_topo_place_line_ring(&p, 0, line, sizeof(line));
			assert_non_null(strstr(line, "place: channel 0 ring 0 "));
			rw_topo_place_free(&p);
		}
		rw_topo_destroy(t);
	}
}

static void lines_say_it(void **state)
{
	struct rw_topo *t = load("gpu4-nic2");
	struct rw_topo_place p;
	char line[512];

	(void)state;
	assert_int_equal(rw_topo_place_simulate(t, 2, 4, 1, &p), 0);
	assert_string_equal(rw_topo_place_line_rank(&p, 1, line, sizeof(line)),
			    "place: rank 1 of 4: host 1 of 2 (host1), GPU 0000:1a:00.0, "
			    "ring position 2");
	assert_string_equal(rw_topo_place_line_ring(&p, 0, line, sizeof(line)),
			    "place: channel 0 ring 0 2 1 3 (2 host crossings)");
	assert_string_equal(rw_topo_place_line_hop(&p, 0, 2, line, sizeof(line)),
			    "place: channel 0 rank 2 -> rank 1 over NIC mlx5_0 (net dev - ib0): "
			    "same PCIe switch (PIX, 15.8 GB/s); also serves 1 other GPU");
	rw_topo_place_free(&p);
	rw_topo_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(channels_spread_over_equally_near_nics),
		cmocka_unit_test(one_nearest_nic_serves_every_channel),
		cmocka_unit_test(ring_rank_follows_nvlink),
		cmocka_unit_test(job_ring_groups_hosts),
		cmocka_unit_test(job_ring_is_the_multihost_ring),
		cmocka_unit_test(lines_say_it),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

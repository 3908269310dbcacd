/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL proxy replay suite (see replay.h):
 *
 *   test_nccl_replay <libnccl-net-ringway.so> <socket|shm|auto|ib> [seed=N] [filter]
 *
 * sets RINGWAY_TRANSPORT for the plugin it loads (RINGWAY_SOCKET_IFNAME
 * defaults to lo, RINGWAY_IB_HCA to the emulator's =sv_roce0, and
 * RINGWAY_TIMEOUT_MS to 30 s so that a hang fails well before ctest's
 * limit).  The seed of every random choice is printed first and with each
 * failure; seed=N replays a run.  filter is a cmocka test-name pattern
 * ("grouped*").
 */
#include "support/rw_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"

enum rp_transport rp_transport;
const char *rp_transport_name;
uint64_t rp_seed;

static int teardown(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static int parse_transport(const char *name)
{
	static const char *const names[] = {
		[RP_SOCKET] = "socket", [RP_SHM] = "shm", [RP_AUTO] = "auto", [RP_IB] = "ib"};

	for (size_t i = 0; i < RW_ARRAY_SIZE(names); i++) {
		if (strcmp(name, names[i]) == 0) {
			rp_transport = (enum rp_transport)i;
			rp_transport_name = names[i];
			return 0;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(rp_case_grouped_scripted, teardown),
		cmocka_unit_test_teardown(rp_case_grouped_random, teardown),
		cmocka_unit_test_teardown(rp_case_grouped_legacy, teardown),
		cmocka_unit_test_teardown(rp_case_pipeline, teardown),
		cmocka_unit_test_teardown(rp_case_pipeline_legacy, teardown),
		cmocka_unit_test_teardown(rp_case_channels, teardown),
		cmocka_unit_test_teardown(rp_case_lifecycle, teardown),
		cmocka_unit_test_teardown(rp_case_connect_busy, teardown),
		cmocka_unit_test_teardown(rp_case_peer_killed_recv, teardown),
		cmocka_unit_test_teardown(rp_case_peer_closed_recv, teardown),
		cmocka_unit_test_teardown(rp_case_peer_killed_send, teardown),
		cmocka_unit_test_teardown(rp_case_peer_closed_send, teardown),
	};

	if (argc < 3 || parse_transport(argv[2]) != 0) {
		fprintf(stderr,
			"usage: %s <libnccl-net-ringway.so> <socket|shm|auto|ib> [seed=N] "
			"[filter]\n",
			argv[0]);
		return 2;
	}
	h_plugin_path = argv[1];
	rp_seed = rw_now_ns() ^ ((uint64_t)getpid() << 32);
	for (int i = 3; i < argc; i++) {
		if (strncmp(argv[i], "seed=", 5) == 0)
			rp_seed = strtoull(argv[i] + 5, NULL, 0);
		else
			cmocka_set_test_filter(argv[i]);
	}
	rp_seed &= 0xffffffffffffull; /* short enough to type */
	printf("nccl_replay over %s: seed=%llu\n", rp_transport_name, (unsigned long long)rp_seed);
	fflush(stdout);
	setenv("RINGWAY_TRANSPORT", rp_transport_name, 1);
	setenv("RINGWAY_SOCKET_IFNAME", "lo", 0);
	setenv("RINGWAY_TIMEOUT_MS", "30000", 0);
	if (rp_transport == RP_IB)
		setenv("RINGWAY_IB_HCA", "=sv_roce0", 0);
	/* The parent writes to children that may be gone; they restore it. */
	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

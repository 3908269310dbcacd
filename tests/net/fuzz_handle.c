/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the NCCL handle, connect() with arbitrary 128 bytes
 * (RW_NET_HANDLE_MAXSIZE = NCCL_NET_HANDLE_MAXSIZE), over rw_net for the
 * socket, shm and auto transports.  The handle parse must refuse garbage
 * with an error, never crash, hang or leak.
 *
 * Input: byte 0 = b, then up to 128 handle bytes, as tests/support/
 * rw_fuzz_handle.h describes (shared with tests/abi/fuzz_handle_plugin.c).
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, make fuzz): the libFuzzer
 *     entry point only; by hand, after `make fuzz FUZZ_SECONDS=1`:
 *       mkdir -p /tmp/scratch_handle && build-fuzz/tests/net/fuzz_handle \
 *         -max_total_time=600 /tmp/scratch_handle tests/net/fuzz_handle_corpus
 *   - otherwise a cmocka test (test_fuzz_handle, rw_fuzz_main()): every
 *     seed of the corpus folder given, then 50 mutations of each, and no
 *     object left live.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "common/rw_params.h"
#include "tests/support/rw_fuzz.h"
#include "tests/support/rw_fuzz_handle.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"

#define HSIZE RW_FUZZ_HSIZE

static size_t log_bytes; /* the messages are formatted, then dropped */

/* The config of one transport, on loopback. */
static void load_config(struct rw_config *cfg, int kind)
{
	const char *env[] = {"RINGWAY_TRANSPORT", rw_fuzz_handle_transports[kind],
			     RW_FUZZ_LOOPBACK_ENV, NULL};

	rw_config_load(cfg, rw_fuzz_env, env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rw_config cfg;
	struct rw_net *net = NULL;
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *send = NULL, *recv = NULL;
	struct rw_fuzz_handle_input in;
	uint8_t real[HSIZE] = {0}, h[HSIZE];

	rw_log_set_sink(rw_fuzz_quiet_sink, &log_bytes);
	if (size < 1)
		return 0;
	in = rw_fuzz_handle_input(data);
	load_config(&cfg, in.kind);
	if (rw_net_create(&cfg, &net))
		abort(); /* loopback and shm must work here: not a finding */
	if (rw_net_listen(net, 0, real, &l))
		abort();
	rw_fuzz_handle_make(data, size, real, h);

	for (int i = 0; i < in.calls && !send; i++) {
		int rc = rw_net_connect(net, 0, h, &send);

		if (rc) {
			if (send) /* an error leaves no comm behind */
				abort();
			break;
		}
		if (in.accept && !recv && rw_net_accept(l, &recv))
			recv = NULL;
	}
	/* a connect still under way is abandoned by destroy */
	if (send)
		rw_net_close_send(send);
	if (recv)
		rw_net_close_recv(recv);
	rw_net_close_listen(l);
	rw_net_destroy(net);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
#include <unistd.h>

static long live_total(void)
{
	return rw_sock_live_total() + rw_shm_live_total();
}

static void no_live_objects(void)
{
	assert_int_equal(live_total(), 0);
}

static void refusals_reported(void)
{
	assert_true(log_bytes > 0);
}

/* A real handle, unchanged, must connect on every transport. */
static void real_handle_connects(void **state)
{
	(void)state;
	rw_log_set_sink(rw_fuzz_quiet_sink, &log_bytes);
	for (int kind = 0; kind < 3; kind++) {
		struct rw_config cfg;
		struct rw_net *net;
		struct rw_net_listen *l;
		struct rw_net_comm *s = NULL, *r = NULL;
		uint8_t h[HSIZE] = {0};

		load_config(&cfg, kind);
		assert_int_equal(rw_net_create(&cfg, &net), 0);
		assert_int_equal(rw_net_listen(net, 0, h, &l), 0);
		for (int i = 0; i < 25000 && (!s || !r); i++) {
			if (i)
				usleep(200); /* bounded: 5 s at most */
			if (!s)
				assert_int_equal(rw_net_connect(net, 0, h, &s), 0);
			if (!r)
				assert_int_equal(rw_net_accept(l, &r), 0);
		}
		assert_non_null(s);
		assert_non_null(r);
		rw_net_close_send(s);
		rw_net_close_recv(r);
		rw_net_close_listen(l);
		rw_net_destroy(net);
		/* one flipped magic byte: refused at once */
		assert_int_equal(rw_net_create(&cfg, &net), 0);
		assert_int_equal(rw_net_listen(net, 0, h, &l), 0);
		h[0] ^= 0x55;
		s = NULL;
		assert_int_equal(rw_net_connect(net, 0, h, &s), -EINVAL);
		assert_null(s);
		rw_net_close_listen(l);
		rw_net_destroy(net);
	}
	assert_int_equal(live_total(), 0);
}

int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_handle",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 50,
		.max_edits = 6,
		.rng = 0x9e3779b97f4a7c15ull,
		.min_seeds = 6,
		.after_seed = no_live_objects,
		.verdict = refusals_reported,
	};
	const struct CMUnitTest tests[] = {cmocka_unit_test(real_handle_connects)};

	return rw_fuzz_main(argc, argv, &t, tests, RW_ARRAY_SIZE(tests));
}
#endif

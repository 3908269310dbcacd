/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the NCCL handle as NCCL hands it over, through the plugin's
 * ncclNet v11 table (plugin/ linked in, not dlopen()ed): listen, then
 * connect() with arbitrary 128 bytes, accept, closeSend / closeRecv /
 * closeListen.  The same input as tests/net/fuzz_handle.c (decoded by
 * tests/support/rw_fuzz_handle.h), one plugin context per transport.
 * Every call must return an
 * ncclResult_t, a failed connect must leave *sendComm NULL, and nothing
 * may crash, hang or leak.
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, make fuzz): the libFuzzer
 *     entry point only; by hand, after `make fuzz FUZZ_SECONDS=1`:
 *       mkdir -p /tmp/scratch_hp && build-fuzz/tests/abi/fuzz_handle_plugin \
 *         -max_total_time=600 /tmp/scratch_hp tests/abi/fuzz_handle_plugin_corpus
 *   - otherwise a cmocka test (test_fuzz_handle_plugin, rw_fuzz_main()):
 *     every seed of the corpus folder given and 30 mutations of each, then
 *     finalize, with no transport object left live.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/rw_plugin.h"
#include "tests/support/rw_fuzz.h"
#include "tests/support/rw_fuzz_handle.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"

#define HSIZE RW_FUZZ_HSIZE

static size_t log_lines, connected;
static void *ctxs[4];

static void quiet_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void quiet_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			 const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	(void)level, (void)flags, (void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap); /* formatted, then dropped */
	va_end(ap);
	log_lines++;
}

static void *ctx_for(int kind)
{
	static const char *const loopback[] = {RW_FUZZ_LOOPBACK_ENV, NULL};
	ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};

	kind = kind == 3 ? 0 : kind;
	if (ctxs[kind])
		return ctxs[kind];
	/* the plugin reads its RINGWAY_* variables at init */
	setenv("RINGWAY_TRANSPORT", rw_fuzz_handle_transports[kind], 1);
	for (const char *const *p = loopback; *p; p += 2)
		setenv(p[0], p[1], 1);
	if (ncclNetPlugin_v11.init(&ctxs[kind], 0x4655 + (uint64_t)kind, &cfg, quiet_logger,
				   NULL) != ncclSuccess)
		abort(); /* loopback and shm must work here: not a finding */
	return ctxs[kind];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ncclNet_v11_t *t = &ncclNetPlugin_v11;
	uint8_t real[HSIZE] = {0}, h[HSIZE];
	void *ctx, *l = NULL, *send = NULL, *recv = NULL;
	ncclNetDeviceHandle_v11_t *dev = NULL;
	struct rw_fuzz_handle_input in;

	if (size < 1)
		return 0;
	in = rw_fuzz_handle_input(data);
	ctx = ctx_for(in.kind);
	if (t->listen(ctx, 0, real, &l) != ncclSuccess)
		abort();
	rw_fuzz_handle_make(data, size, real, h);

	for (int i = 0; i < in.calls && !send; i++) {
		ncclResult_t rc = t->connect(ctx, 0, h, &send, &dev);

		if (rc != ncclSuccess) {
			rw_fuzz_check(rc == ncclInvalidArgument || rc == ncclSystemError ||
				      rc == ncclInternalError || rc == ncclRemoteError ||
				      rc == ncclInvalidUsage);
			rw_fuzz_check(send == NULL);
			break;
		}
		if (in.accept && !recv && t->accept(l, &recv, &dev) != ncclSuccess)
			recv = NULL;
	}
	connected += send != NULL;
	if (send)
		rw_fuzz_check(t->closeSend(send) == ncclSuccess);
	if (recv)
		rw_fuzz_check(t->closeRecv(recv) == ncclSuccess);
	rw_fuzz_check(t->closeListen(l) == ncclSuccess);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
/* The refusals were reported; finalize leaves no transport object live. */
static void verdict(void)
{
	assert_true(log_lines > 0);
	print_message("[          ] %zu connects\n", connected);
	for (int k = 0; k < 4; k++)
		if (ctxs[k]) {
			assert_int_equal(ncclNetPlugin_v11.finalize(ctxs[k]), ncclSuccess);
			ctxs[k] = NULL;
		}
	assert_int_equal(rw_sock_live_total() + rw_shm_live_total(), 0);
}

int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_handle_plugin",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 30,
		.max_edits = 6,
		.rng = 0x9e3779b97f4a7c15ull,
		.min_seeds = 6,
		.verdict = verdict,
	};

	return rw_fuzz_main(argc, argv, &t, NULL, 0);
}
#endif

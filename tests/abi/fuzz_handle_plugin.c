/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the NCCL handle as NCCL hands it over, through the plugin's
 * ncclNet v11 table (plugin/ linked in, not dlopen()ed): listen, then
 * connect() with arbitrary 128 bytes, accept, closeSend / closeRecv /
 * closeListen.  The same input format as tests/net/fuzz_handle.c:
 *   byte 0 = b: b & 3 transport (0 socket, 1 shm, 2 auto, 3 socket), one
 *   plugin context each; b & 4 raw bytes (else XORed over the listener's
 *   real handle); b & 8 accept between connects; connect is called
 *   1 + (b >> 4) % 8 times; then up to 128 handle bytes.
 * The socket part's address and port are forced to the listener's (no
 * input knocks on another host or process).  Every call must return an
 * ncclResult_t, a failed connect must leave *sendComm NULL, and nothing
 * may crash, hang or leak.
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, make fuzz): the libFuzzer
 *     entry point only; by hand, after `make fuzz FUZZ_SECONDS=1`:
 *       mkdir -p /tmp/scratch_hp && build-fuzz/tests/abi/fuzz_handle_plugin \
 *         -max_total_time=600 /tmp/scratch_hp tests/abi/fuzz_handle_plugin_corpus
 *   - otherwise a cmocka test (test_fuzz_handle_plugin): every seed of the
 *     corpus folder given and 30 mutations of each, then finalize, with no
 *     transport object left live.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/rw_plugin.h"
#include "transport/net_auto_proto.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_proto.h"

#define HSIZE RW_NET_HANDLE_MAXSIZE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t log_lines, connected;
static void *ctxs[4];
static const char *const transports[4] = {"socket", "shm", "auto", "socket"};

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

static void check(int ok)
{
	if (!ok)
		abort();
}

static void *ctx_for(int kind)
{
	ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};

	kind = kind == 3 ? 0 : kind;
	if (ctxs[kind])
		return ctxs[kind];
	/* the plugin reads its RINGWAY_* variables at init */
	setenv("RINGWAY_TRANSPORT", transports[kind], 1);
	setenv("RINGWAY_SOCKET_IFNAME", "=lo", 1);
	setenv("RINGWAY_SOCKET_FAMILY", "ipv4", 1);
	setenv("RINGWAY_SOCKET_HELLO_MS", "20", 1);
	setenv("RINGWAY_TIMEOUT_MS", "200", 1);
	if (ncclNetPlugin_v11.init(&ctxs[kind], 0x4655 + (uint64_t)kind, &cfg, quiet_logger,
				   NULL) != ncclSuccess)
		abort(); /* loopback and shm must work here: not a finding */
	return ctxs[kind];
}

static void pin_socket_part(uint8_t *h, const uint8_t *real, size_t off)
{
	struct rw_sock_handle s, r;

	memcpy(&s, h + off, sizeof(s));
	memcpy(&r, real + off, sizeof(r));
	s.port = r.port;
	if (s.family == r.family) {
		memcpy(s.addr, r.addr, 4);
	} else {
		memset(s.addr, 0, sizeof(s.addr)); /* ::1 */
		s.addr[15] = 1;
	}
	memcpy(h + off, &s, sizeof(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ncclNet_v11_t *t = &ncclNetPlugin_v11;
	uint8_t real[HSIZE] = {0}, h[HSIZE] = {0};
	void *ctx, *l = NULL, *send = NULL, *recv = NULL;
	ncclNetDeviceHandle_v11_t *dev = NULL;
	int kind, calls;
	size_t n;

	if (size < 1)
		return 0;
	kind = data[0] & 3;
	calls = 1 + (data[0] >> 4) % 8;
	n = size - 1 < HSIZE ? size - 1 : HSIZE;
	ctx = ctx_for(kind);
	if (t->listen(ctx, 0, real, &l) != ncclSuccess)
		abort();
	if (data[0] & 4) {
		memcpy(h, data + 1, n);
	} else {
		memcpy(h, real, sizeof(h));
		for (size_t i = 0; i < n; i++)
			h[i] ^= data[1 + i];
	}
	if (kind == 0 || kind == 3)
		pin_socket_part(h, real, 0);
	else if (kind == 2)
		pin_socket_part(h, real, offsetof(struct rw_auto_handle, sock));

	for (int i = 0; i < calls && !send; i++) {
		ncclResult_t rc = t->connect(ctx, 0, h, &send, &dev);

		if (rc != ncclSuccess) {
			check(rc == ncclInvalidArgument || rc == ncclSystemError ||
			      rc == ncclInternalError || rc == ncclRemoteError ||
			      rc == ncclInvalidUsage);
			check(send == NULL);
			break;
		}
		if ((data[0] & 8) && !recv && t->accept(l, &recv, &dev) != ncclSuccess)
			recv = NULL;
	}
	connected += send != NULL;
	if (send)
		check(t->closeSend(send) == ncclSuccess);
	if (recv)
		check(t->closeRecv(recv) == ncclSuccess);
	check(t->closeListen(l) == ncclSuccess);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
#include <dirent.h>

#include "support/rw_test.h"

static const char *corpus_dir;

static void fuzz_seeds(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct dirent *e;
	int seeds = 0;
	DIR *d;

	(void)state;
	d = opendir(corpus_dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		uint8_t buf[1 + HSIZE], mut[1 + HSIZE];
		char path[4096];
		size_t len;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", corpus_dir, e->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		for (int m = 0; m < 30 && len > 1; m++) {
			memcpy(mut, buf, len);
			for (int k = 0; k < 1 + m % 6; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				mut[x % len] ^= (uint8_t)(x >> 32);
			}
			LLVMFuzzerTestOneInput(mut, len);
		}
		seeds++;
	}
	closedir(d);
	assert_true(seeds >= 6);
	assert_true(log_lines > 0); /* the refusals were reported */
	printf("%d seeds, %zu connects\n", seeds, connected);
	for (int k = 0; k < 4; k++)
		if (ctxs[k]) {
			assert_int_equal(ncclNetPlugin_v11.finalize(ctxs[k]), ncclSuccess);
			ctxs[k] = NULL;
		}
	assert_int_equal(rw_sock_live_total() + rw_shm_live_total(), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(fuzz_seeds)};

	if (argc != 2) {
		fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
		return 1;
	}
	corpus_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif

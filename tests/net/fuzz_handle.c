/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the NCCL handle, connect() with arbitrary 128 bytes
 * (RW_NET_HANDLE_MAXSIZE = NCCL_NET_HANDLE_MAXSIZE), over rw_net for the
 * socket, shm and auto transports.  The handle parse must refuse garbage
 * with an error, never crash, hang or leak.
 *
 * Input: byte 0 = b, then up to 128 handle bytes.
 *   b & 3         transport: 0 socket, 1 shm, 2 auto (RINGWAY_TRANSPORT=auto,
 *                 whose peers on this host are shm ones), 3 socket again;
 *   b & 4         the handle is the bytes given (zero padded); otherwise the
 *                 bytes are XORed over a real listen handle (reaches the
 *                 paths behind the magic, version and nonce checks);
 *   b & 8         accept on the real listener between connect calls;
 *   b >> 4        connect is called 1 + (b >> 4) % 8 times (non-blocking:
 *                 a bounded number of calls, never a wait).
 * The socket handle's address and port are forced to loopback and to the
 * listener's own port, so that no input knocks on another host or on
 * another process's listener; every other byte (magic, version, family,
 * scope id, reserved, nonce, the auto flags, the shm part) is the fuzzer's.
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (RINGWAY_FUZZ=ON, make fuzz): the libFuzzer
 *     entry point only; by hand, after `make fuzz FUZZ_SECONDS=1`:
 *       mkdir -p /tmp/scratch_handle && build-fuzz/tests/net/fuzz_handle \
 *         -max_total_time=600 /tmp/scratch_handle tests/net/fuzz_handle_corpus
 *   - otherwise a cmocka test (test_fuzz_handle): every seed of the corpus
 *     folder given, then 300 mutations of them, and no object left live.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "common/rw_params.h"
#include "transport/net_auto_proto.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_proto.h"

#define HSIZE RW_NET_HANDLE_MAXSIZE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t log_bytes; /* the messages are formatted, then dropped */

static void quiet_sink(void *arg, enum rw_log_level level, unsigned long flags, const char *file,
		       int line, const char *msg)
{
	(void)arg, (void)level, (void)flags, (void)file, (void)line;
	log_bytes += strlen(msg);
}

static const char *const transports[4] = {"socket", "shm", "auto", "socket"};

static const char *fuzz_env(void *arg, const char *name)
{
	if (!strcmp(name, "RINGWAY_TRANSPORT"))
		return arg;
	if (!strcmp(name, "RINGWAY_SOCKET_IFNAME"))
		return "=lo";
	if (!strcmp(name, "RINGWAY_SOCKET_FAMILY"))
		return "ipv4";
	if (!strcmp(name, "RINGWAY_SOCKET_HELLO_MS"))
		return "20";
	if (!strcmp(name, "RINGWAY_TIMEOUT_MS"))
		return "200";
	return NULL;
}

/* Point the socket handle at off (if the transport has one) at loopback and
 * the listener's port, whatever family byte the fuzzer chose. */
static void pin_socket_part(uint8_t *h, const uint8_t *real, size_t off)
{
	struct rw_sock_handle s, r;

	memcpy(&s, h + off, sizeof(s));
	memcpy(&r, real + off, sizeof(r));
	s.port = r.port;
	if (s.family == r.family) {
		memcpy(s.addr, r.addr, 4); /* 127.0.0.1; bytes 4..15 stay fuzzed */
	} else {
		memset(s.addr, 0, sizeof(s.addr)); /* ::1 */
		s.addr[15] = 1;
	}
	memcpy(h + off, &s, sizeof(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct rw_config cfg;
	struct rw_net *net = NULL;
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *send = NULL, *recv = NULL;
	uint8_t real[HSIZE] = {0}, h[HSIZE] = {0};
	int kind, calls;
	size_t n;

	if (!ready) {
		rw_log_set_sink(quiet_sink, NULL);
		ready = true;
	}
	if (size < 1)
		return 0;
	kind = data[0] & 3;
	calls = 1 + (data[0] >> 4) % 8;
	n = RW_MIN(size - 1, (size_t)HSIZE);
	rw_config_load(&cfg, fuzz_env, (void *)transports[kind]);
	if (rw_net_create(&cfg, &net))
		abort(); /* loopback and shm must work here: not a finding */
	if (rw_net_listen(net, 0, real, &l))
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
		int rc = rw_net_connect(net, 0, h, &send);

		if (rc) {
			if (send) /* an error leaves no comm behind */
				abort();
			break;
		}
		if ((data[0] & 8) && !recv && rw_net_accept(l, &recv))
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
#include <dirent.h>
#include <unistd.h>

#include "support/rw_test.h"

static const char *corpus_dir;

static long live_total(void)
{
	return rw_sock_live_total() + rw_shm_live_total();
}

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
		for (int m = 0; m < 50 && len > 1; m++) {
			memcpy(mut, buf, len);
			for (int k = 0; k < 1 + m % 6; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				mut[x % len] ^= (uint8_t)(x >> 32);
			}
			LLVMFuzzerTestOneInput(mut, len);
		}
		assert_int_equal(live_total(), 0);
		seeds++;
	}
	closedir(d);
	assert_true(seeds >= 6);
	assert_true(log_bytes > 0); /* the refusals were reported */
}

/* A real handle, unchanged, must connect on every transport. */
static void real_handle_connects(void **state)
{
	(void)state;
	for (int kind = 0; kind < 3; kind++) {
		struct rw_config cfg;
		struct rw_net *net;
		struct rw_net_listen *l;
		struct rw_net_comm *s = NULL, *r = NULL;
		uint8_t h[HSIZE] = {0};

		rw_config_load(&cfg, fuzz_env, (void *)transports[kind]);
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
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_handle_connects),
		cmocka_unit_test(fuzz_seeds),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
		return 1;
	}
	corpus_dir = argv[1];
	rw_log_set_sink(quiet_sink, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif

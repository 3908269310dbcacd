/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the socket listener's handshake (hello bytes, stream
 * assembly, eviction, deadlines) and, for connections it accepts, the
 * message headers that follow on stream 0 -- every byte a connecting
 * stranger or peer controls, through the real code over loopback.
 *
 * The input is a script of operations on up to 32 client connections:
 *   op = byte; slot = op & 31; kind = op >> 5:
 *     0  connect slot (if closed)
 *     1  write n = next byte % 65 raw bytes
 *     2  the same, with the listener's real nonce patched over whatever
 *        falls at stream offsets 8..15 (the fuzzer cannot guess it)
 *     3  close slot
 *     4  write a correct hello: stream = b0 % 17, nstreams = b1 % 17,
 *        conn_id = b2 (values out of range are kept on purpose)
 *     5..7  one accept call
 * then a few accept calls.  A comm handed out gets a receive posted and a
 * few tests (its message headers come from the slot's later bytes).
 *
 * Two builds:
 *   - with RW_FUZZ_LIBFUZZER (clang -fsanitize=fuzzer,...): the libFuzzer
 *     entry point only;
 *   - otherwise a cmocka test (rw_fuzz_main()) that runs the built-in
 *     seeds and 100 pseudo-random scripts derived from each (a regression
 *     check in every build, ASan included).
 * By hand, from the repository root (rw_build.h from any build folder):
 *   clang -fsanitize=fuzzer,address,undefined -g -O1 -std=gnu11 -I. \
 *     -I<build>/generated -DRW_FUZZ_LIBFUZZER -o fuzz_sock_listen \
 *     tests/net/test_sock_listen_fuzz.c transport/sock_*.c transport/rw_net.c \
 *     common/rw_log.c common/rw_params.c topo/rw_sysfs.c -lpthread
 *   ./fuzz_sock_listen -max_total_time=600 tests/net/test_sock_listen_fuzz_corpus
 * (the corpus holds the seeds that "test_sock_listen_fuzz --seeds DIR"
 * writes; give libFuzzer a scratch folder first to keep what it finds out
 * of the repository).
 */
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "common/rw_params.h"
#include "tests/support/rw_fuzz.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_internal.h"
#include "transport/socket/sock_proto.h"

#define NSLOTS	   32
#define MAX_WRITE  64
#define RECV_BYTES 65536

static size_t log_bytes; /* the messages are formatted, then dropped */

struct run {
	struct rw_net *net;
	struct rw_net_listen *l;
	struct rw_sock_handle h;
	struct sockaddr_storage sa;
	int fds[NSLOTS];
	size_t sent[NSLOTS];
	char *buf;
};

static void slot_connect(struct run *r, int s)
{
	int fd;

	if (r->fds[s] >= 0)
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&r->sa, sizeof(struct sockaddr_in))) {
		close(fd);
		return;
	}
	r->fds[s] = fd;
	r->sent[s] = 0;
}

static void slot_write(struct run *r, int s, const uint8_t *b, size_t n, bool patch)
{
	uint8_t tmp[MAX_WRITE];

	if (r->fds[s] < 0 || n == 0)
		return;
	memcpy(tmp, b, n);
	if (patch) {
		const uint8_t *nonce = (const uint8_t *)&r->h.nonce;

		for (size_t i = 0; i < n; i++) {
			size_t at = r->sent[s] + i;

			if (at >= 8 && at < 16)
				tmp[i] = nonce[at - 8];
		}
	}
	/* non-blocking: a listener that stopped reading must not hang us */
	if (send(r->fds[s], tmp, n, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		r->sent[s] += n;
}

/* Post a receive on an accepted comm, test it a few times, close it. */
static void use_comm(struct run *r, struct rw_net_comm *c)
{
	struct rw_net_mr *mr = NULL;
	struct rw_net_req *req = NULL;
	void *d = r->buf;
	size_t sz = RECV_BYTES, got = 0;
	int tag = 0, done = 0;

	if (rw_net_reg_mr(c, r->buf, RECV_BYTES, RW_PTR_HOST, &mr) == 0 &&
	    rw_net_irecv(c, 1, &d, &sz, &tag, &mr, &req) == 0 && req) {
		for (int i = 0; i < 4 && !done; i++)
			if (rw_net_test(req, &done, &got))
				break;
	}
	rw_net_close_recv(c);
}

static void accept_once(struct run *r)
{
	struct rw_net_comm *c = NULL;

	if (rw_net_accept(r->l, &c) == 0 && c)
		use_comm(r, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const env[] = {RW_FUZZ_LOOPBACK_ENV, NULL};
	static char buf[RECV_BYTES];
	struct rw_config cfg;
	struct run r = {.buf = buf};
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	size_t pos = 0;

	rw_log_set_sink(rw_fuzz_quiet_sink, &log_bytes);
	for (int s = 0; s < NSLOTS; s++)
		r.fds[s] = -1;
	rw_config_load(&cfg, rw_fuzz_env, (void *)env);
	if (rw_sock_create(&cfg, &r.net))
		abort(); /* loopback must work: not a finding */
	if (rw_net_listen(r.net, 0, handle, &r.l) || rw_sock_handle_addr(handle, &r.sa))
		abort();
	memcpy(&r.h, handle, sizeof(r.h));
	while (pos < size) {
		uint8_t op = data[pos++];
		int s = op & (NSLOTS - 1);
		size_t n;

		switch (op >> 5) {
		case 0:
			slot_connect(&r, s);
			break;
		case 1:
		case 2:
			n = pos < size ? data[pos++] % (MAX_WRITE + 1) : 0;
			n = RW_MIN(n, size - pos);
			slot_write(&r, s, data + pos, n, (op >> 5) == 2);
			pos += n;
			break;
		case 3:
			if (r.fds[s] >= 0)
				close(r.fds[s]);
			r.fds[s] = -1;
			break;
		case 4: {
			struct rw_sock_hello h = {.magic = RW_SOCK_MAGIC,
						  .version = RW_SOCK_PROTO_VERSION,
						  .nonce = r.h.nonce};

			if (size - pos < 3) {
				pos = size;
				break;
			}
			h.stream = data[pos] % 17;
			h.nstreams = data[pos + 1] % 17;
			h.conn_id = data[pos + 2];
			pos += 3;
			if (r.fds[s] >= 0 && r.sent[s] == 0)
				slot_write(&r, s, (const uint8_t *)&h, sizeof(h), false);
			break;
		}
		default:
			accept_once(&r);
			break;
		}
	}
	for (int i = 0; i < 3; i++)
		accept_once(&r);
	for (int s = 0; s < NSLOTS; s++)
		if (r.fds[s] >= 0)
			close(r.fds[s]);
	rw_net_close_listen(r.l);
	rw_net_destroy(r.net);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
static void op(struct rw_fuzz_seed *sc, int kind, int slot)
{
	rw_fuzz_put8(sc, (uint8_t)(kind << 5 | slot));
}

static void op_write(struct rw_fuzz_seed *sc, int kind, int slot, const void *p, size_t n)
{
	op(sc, kind, slot);
	rw_fuzz_put8(sc, (uint8_t)n);
	rw_fuzz_put(sc, p, n);
}

static void op_hello(struct rw_fuzz_seed *sc, int slot, uint8_t stream, uint8_t nstreams,
		     uint8_t id)
{
	uint8_t b[3] = {stream, nstreams, id};

	op(sc, 4, slot);
	rw_fuzz_put(sc, b, 3);
}

/* The seeds: a peer with two streams whose stream 0 then carries an eager
 * message; a hello written byte by byte with the nonce patched in; a flood
 * of strangers and half-open connections. */
static int make_seeds(struct rw_fuzz_seed *seeds)
{
	struct rw_sock_msg_hdr m = {
		.marker = RW_SOCK_MSG_MARKER, .kind = RW_SOCK_MSG_EAGER, .size = 16};
	struct rw_sock_hello h = {.magic = RW_SOCK_MAGIC,
				  .version = RW_SOCK_PROTO_VERSION,
				  .nstreams = 1,
				  .conn_id = 5};
	uint8_t msg[sizeof(m) + 16] = {0};

	memcpy(msg, &m, sizeof(m));
	op(&seeds[0], 0, 0);
	op(&seeds[0], 0, 1);
	op_hello(&seeds[0], 0, 0, 2, 1);
	op_hello(&seeds[0], 1, 1, 2, 1);
	op_write(&seeds[0], 1, 0, msg, sizeof(msg));
	op(&seeds[0], 5, 0);
	op(&seeds[0], 5, 0);

	op(&seeds[1], 0, 2);
	for (size_t i = 0; i < sizeof(h); i++)
		op_write(&seeds[1], 2, 2, (const uint8_t *)&h + i, 1);
	op(&seeds[1], 5, 0);

	for (int s = 0; s < NSLOTS; s++) {
		op(&seeds[2], 0, s);
		if (s % 2)
			op_hello(&seeds[2], s, 0, 2, (uint8_t)s);
		else
			op_write(&seeds[2], 1, s, "RW", 2);
		if (s % 8 == 7)
			op(&seeds[2], 5, 0);
	}
	return 3;
}

/* The drops were reported; nothing is left live. */
static void verdict(void)
{
	assert_true(log_bytes > 0);
	assert_int_equal(rw_sock_live_total(), 0);
}

/* Without a folder, the built-in seeds (test_sock_listen_fuzz_corpus holds
 * what "--seeds DIR" writes). */
int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_sock_listen",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 100,
		.max_edits = 8,
		.rng = 0x2545F4914F6CDD1Dull,
		.min_seeds = 3,
		.make_seeds = make_seeds,
		.verdict = verdict,
	};

	return rw_fuzz_main(argc, argv, &t, NULL, 0);
}
#endif

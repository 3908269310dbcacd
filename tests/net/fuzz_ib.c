/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the ib transport's parsers of bytes a peer controls, as pure
 * functions (the transport itself runs only on a fabric or the verbs
 * emulator, tests/softverbs, which a libFuzzer process cannot host):
 *
 *   0  the connection record (struct rw_ib_conn_info, 120 bytes) a
 *      stranger sends the listener, or the listener answers a connecting
 *      side: rw_ib_info_check() before any comm exists (the listener) and
 *      against a comm of 1..RW_IB_MAX_QPS QPs on IB or RoCE (the connector);
 *   1  the listen handle (what connect() gets, 128 bytes at most):
 *      rw_ib_handle_addr();
 *   2  a CTS slot of the sender's FIFO (RW_NET_MAX_RECVS entries the
 *      receiver RDMA-writes): rw_ib_cts_parse(), as isend reads it, then
 *      isend's choice of an entry for a tag; and the immediate data of a
 *      write (rw_ib_imm_*), as the receiver decodes it.
 * Byte 0 picks the part (% 3), byte 1 holds flags that make the record or
 * the entries right where a fuzzer could not guess them (magic, nonce,
 * checksums), the rest is the record, the handle or the slot.  Anything
 * goes except a crash, a sanitizer report, or a verdict that lets through
 * what the transport relies on (the properties checked below).
 *
 * Two builds (tests/support/rw_fuzz.h): with RW_FUZZ_LIBFUZZER the
 * libFuzzer entry point only (rw_add_fuzzer fuzz_ib, make fuzz); otherwise
 * a test that runs the seed folder given and 2000 mutations of each seed
 * (byte 0, the part, is kept).
 *   build-fuzz/tests/net/fuzz_ib -max_total_time=600 new tests/net/fuzz_ib_corpus
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/rw_fuzz.h"
#include "transport/ib/ib_internal.h"
#include "transport/ib/ib_proto.h"

#define NONCE 0x0123456789abcdefull

static long passed[3]; /* inputs that got through each parser */

static void record(uint8_t flags, const uint8_t *data, size_t size)
{
	static struct rw_ib_dev dev;
	static struct rw_ib_comm c;
	struct rw_ib_conn_info t = {0};
	const char *bad;

	memcpy(&t, data, RW_MIN(size, sizeof(t)));
	if (flags & 1) {
		t.magic = RW_IB_MAGIC;
		t.version = RW_IB_VERSION;
	}
	if (flags & 2)
		t.nonce = NONCE;
	bad = rw_ib_info_check(NULL, &t, NONCE);
	rw_fuzz_check(bad || (t.magic == RW_IB_MAGIC && t.version == RW_IB_VERSION &&
			      t.nonce == NONCE && t.nqps >= 1 && t.nqps <= RW_IB_MAX_QPS &&
			      t.mtu >= IBV_MTU_256 && t.mtu <= IBV_MTU_4096));
	if (!bad)
		passed[0]++;
	c.dev = &dev;
	for (int ll = 0; ll < 2; ll++) {
		dev.link_layer = ll ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
		for (c.nqps = 1; c.nqps <= RW_IB_MAX_QPS; c.nqps++) {
			const char *b = rw_ib_info_check(&c, &t, NONCE);

			/* stricter than without a comm, and exact about QPs and link */
			rw_fuzz_check(b || !bad);
			rw_fuzz_check(b || (t.nqps == c.nqps && t.link_layer == dev.link_layer));
		}
	}
}

static void handle(const uint8_t *data, size_t size)
{
	uint8_t h[RW_NET_HANDLE_MAXSIZE] = {0};
	struct rw_ib_handle ih;
	struct sockaddr_storage ss;
	int rc;

	memcpy(h, data, RW_MIN(size, sizeof(h)));
	if (size > 0 && (data[0] & 1)) {
		ih = (struct rw_ib_handle){.magic = RW_IB_MAGIC, .version = RW_IB_VERSION};
		memcpy(h, &ih, 6); /* magic and version; the rest stays fuzzed */
	}
	memcpy(&ih, h, sizeof(ih));
	rc = rw_ib_handle_addr(h, &ss);
	rw_fuzz_check(rc == 0 || rc == -EINVAL);
	if (rc)
		return;
	passed[1]++;
	rw_fuzz_check(ih.family == 4 || ih.family == 6);
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

		rw_fuzz_check(ih.family == 4 && in->sin_port == ih.port &&
			      !memcmp(&in->sin_addr, ih.addr, 4));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		rw_fuzz_check(ss.ss_family == AF_INET6 && ih.family == 6 &&
			      in6->sin6_port == ih.port && in6->sin6_scope_id == ih.scope_id);
	}
	rw_fuzz_check(rw_ib_handle_addr(NULL, &ss) == -EINVAL &&
		      rw_ib_handle_addr(h, NULL) == -EINVAL);
}

static void fifo(uint8_t flags, const uint8_t *data, size_t size)
{
	static struct rw_ib_cts slot[RW_NET_MAX_RECVS]; /* aligned like the FIFO */
	struct rw_ib_cts e[RW_NET_MAX_RECVS];
	uint32_t seq;
	int n;

	memset(slot, 0, sizeof(slot));
	memcpy(slot, data, RW_MIN(size, sizeof(slot)));
	seq = slot[0].seq;
	for (int i = 0; i < RW_NET_MAX_RECVS; i++) {
		if (flags & 1)
			slot[i].seq = seq; /* the same request, as the receiver writes it */
		if (flags & (2 << (i % 4)))
			slot[i].check = rw_ib_cts_check(&slot[i]);
	}
	memset(e, 0xa5, sizeof(e));
	n = rw_ib_cts_parse(slot, seq, e);
	rw_fuzz_check(n == -EPROTO || (n >= 0 && n <= RW_NET_MAX_RECVS));
	if (n == -EPROTO)
		rw_fuzz_check(e[0].nreqs < 1 || e[0].nreqs > RW_NET_MAX_RECVS);
	/* a slot is never read for another request */
	rw_fuzz_check(rw_ib_cts_parse(slot, seq + 1, e) == 0);
	if (n <= 0)
		return;
	memset(e, 0xa5, sizeof(e));
	rw_fuzz_check(rw_ib_cts_parse(slot, seq, e) == n);
	passed[2]++;
	rw_fuzz_check(n == e[0].nreqs);
	for (int i = 0; i < n; i++) {
		rw_fuzz_check(e[i].seq == seq && e[i].check == rw_ib_cts_check(&e[i]));
		rw_fuzz_check(!memcmp(&e[i], &slot[i], offsetof(struct rw_ib_cts, pad)));
	}
	/* isend's choice: the first free entry with the tag, an index < n */
	for (int tag = 0; tag < 4; tag++) {
		int idx = -1;

		for (int i = 0; i < n && idx < 0; i++)
			if (e[i].tag == tag)
				idx = i;
		rw_fuzz_check(idx < n);
	}
}

static void immediates(const uint8_t *data, size_t size)
{
	for (; size >= 4; data += 4, size -= 4) {
		uint32_t imm;

		memcpy(&imm, data, 4);
		imm = ntohl(imm); /* carried in network order */
		rw_fuzz_check(rw_ib_imm_idx(imm) < 8 && rw_ib_imm_pieces(imm) < 32 &&
			      rw_ib_imm_seq(imm) < (1u << 24));
		rw_fuzz_check(rw_ib_imm(rw_ib_imm_seq(imm), rw_ib_imm_idx(imm),
					rw_ib_imm_pieces(imm)) == imm);
		rw_fuzz_check((rw_ib_imm_seq(imm) % RW_IB_FIFO_SLOTS) < RW_IB_FIFO_SLOTS);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	switch (data[0] % 3) {
	case 0:
		record(data[1], data + 2, size - 2);
		break;
	case 1:
		handle(data + 1, size - 1);
		break;
	default:
		fifo(data[1], data + 2, size - 2);
		if (size > 2 + sizeof(struct rw_ib_cts) * RW_NET_MAX_RECVS)
			immediates(data + 2 + sizeof(struct rw_ib_cts) * RW_NET_MAX_RECVS,
				   size - 2 - sizeof(struct rw_ib_cts) * RW_NET_MAX_RECVS);
		break;
	}
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
/* 0: a good record; 1: an IPv4 and 2: an IPv6 handle; 3: a slot of three
 * entries and a few immediates; 4: a slot of one entry. */
static int make_seeds(struct rw_fuzz_seed *sd)
{
	struct rw_ib_conn_info t = {.magic = RW_IB_MAGIC,
				    .version = RW_IB_VERSION,
				    .link_layer = IBV_LINK_LAYER_ETHERNET,
				    .nqps = 2,
				    .mtu = IBV_MTU_1024,
				    .nonce = NONCE,
				    .psn = 7,
				    .qpn = {0x11, 0x12},
				    .fifo_addr = 0x7f0000001000ull,
				    .fifo_rkey = 0x99};
	struct rw_ib_handle h = {
		.magic = RW_IB_MAGIC, .version = RW_IB_VERSION, .family = 4, .nonce = NONCE};
	struct rw_ib_cts slot[RW_NET_MAX_RECVS] = {0};
	uint32_t imms[3] = {htonl(rw_ib_imm(1, 0, 1)), htonl(rw_ib_imm(1, 2, 30)),
			    htonl(rw_ib_imm(0xffffff, 7, RW_IB_IMM_ERR_SIZE))};

	rw_fuzz_put(&sd[0], (const uint8_t[]){0, 0}, 2), rw_fuzz_put(&sd[0], &t, sizeof(t));
	h.port = htons(4791);
	memcpy(h.addr, (const uint8_t[]){127, 0, 0, 1}, 4);
	rw_fuzz_put(&sd[1], (const uint8_t[]){1}, 1), rw_fuzz_put(&sd[1], &h, sizeof(h));
	h.family = 6;
	memset(h.addr, 0, 16);
	h.addr[15] = 1;
	h.scope_id = 2;
	rw_fuzz_put(&sd[2], (const uint8_t[]){1}, 1), rw_fuzz_put(&sd[2], &h, sizeof(h));
	for (int i = 0; i < 3; i++) {
		slot[i] = (struct rw_ib_cts){.addr = 0x10000u * (unsigned)(i + 1),
					     .size = 4096,
					     .rkey = 5,
					     .tag = i,
					     .nreqs = 3,
					     .idx = (uint8_t)i,
					     .seq = 1};
		slot[i].check = rw_ib_cts_check(&slot[i]);
	}
	rw_fuzz_put(&sd[3], (const uint8_t[]){2, 0}, 2), rw_fuzz_put(&sd[3], slot, sizeof(slot));
	rw_fuzz_put(&sd[3], imms, sizeof(imms));
	memset(slot, 0, sizeof(slot));
	slot[0] = (struct rw_ib_cts){.addr = 1, .size = 1, .nreqs = 1, .seq = 0xffffffffu};
	slot[0].check = rw_ib_cts_check(&slot[0]);
	rw_fuzz_put(&sd[4], (const uint8_t[]){2, 0}, 2), rw_fuzz_put(&sd[4], slot, sizeof(slot[0]));
	return 5;
}

/* The seeds get through every parser: the checks above ran. */
static void verdict(void)
{
	print_message("[          ] passed: %ld records, %ld handles, %ld slots\n", passed[0],
		      passed[1], passed[2]);
	assert_true(passed[0] && passed[1] && passed[2]);
}

/* "--seeds DIR" writes the built-in seeds. */
int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_ib",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 2000,
		.max_edits = 4,
		.keep = 1,
		.rng = 0x2545f4914f6cdd1dull,
		.min_seeds = 1,
		.make_seeds = make_seeds,
		.verdict = verdict,
	};

	return rw_fuzz_main(argc, argv, &t, NULL, 0);
}
#endif

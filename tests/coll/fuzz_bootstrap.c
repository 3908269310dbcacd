/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the bytes of the rw_comm_init() rendezvous that come
 * from outside the process (coll/bootstrap.h).  The first byte picks what
 * the rest is:
 *   0: a rendezvous string ("host:port#key", from the caller, RINGWAY_ROOT
 *      or MASTER_ADDR): parsed and turned into a key;
 *   1: what a stranger sends rank 0: hellos, checked under a key and none;
 *   2: what a peer reads from "rank 0": a challenge, then a welcome.
 * Anything goes except a crash, a sanitizer report, or a verdict outside
 * the documented set; a hello built with the key must pass.
 *
 *   make fuzz FUZZ_SECONDS=600     (RINGWAY_FUZZ=ON: this and every other target)
 * or by hand (libFuzzer writes what it finds into its FIRST folder):
 *   clang -fsanitize=fuzzer,address,undefined -I. -DRW_FUZZ_LIBFUZZER \
 *     -o fuzz_bootstrap tests/coll/fuzz_bootstrap.c coll/bootstrap_auth.c
 *   mkdir -p new && ./fuzz_bootstrap -max_total_time=600 new tests/coll/fuzz_bootstrap_corpus
 * Without RW_FUZZ_LIBFUZZER this is a CTest (test_bootstrap_fuzz,
 * tests/support/rw_fuzz.h): every seed of the corpus folder given, then 2000
 * mutations of each (byte 0 kept; some cut short).
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/bootstrap.h"
#include "tests/support/rw_fuzz.h"

static void strings(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), host[64];
	struct rw_boot_key key;
	int port = -1, rc;

	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = rw_bootstrap_parse(s, host, sizeof(host), &port);
	rw_fuzz_check(rc == 0 || rc == -EINVAL);
	if (rc == 0)
		rw_fuzz_check(port >= 1 && port <= 65535 && strlen(host) < sizeof(host) && host[0]);
	rc = rw_bootstrap_key(s, "fallback", &key);
	rw_fuzz_check(rc == 0 || rc == -EINVAL);
	rw_fuzz_check(rc != 0 || key.set);
	free(s);
}

static void hellos(const uint8_t *data, size_t size)
{
	struct rw_boot_key key, none = {0};
	struct rw_boot_hello h;
	uint64_t nonce = 0x1234;

	rw_bootstrap_key(NULL, "job", &key);
	for (; size >= sizeof(h); data += sizeof(h), size -= sizeof(h)) {
		int nranks = 1 + (int)(data[0] % 8), rc;

		memcpy(&h, data, sizeof(h));
		rc = rw_bootstrap_check_hello(&none, nonce, nranks, &h);
		rw_fuzz_check(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -EPROTO);
		rw_fuzz_check(rc != 0 || (h.rank > 0 && h.rank < nranks && h.nranks == nranks));
		rc = rw_bootstrap_check_hello(&key, nonce, nranks, &h);
		rw_fuzz_check(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT ||
			      rc == -EACCES || rc == -EPROTO);
		/* the same hello with its hash made right */
		h.mac = rw_bootstrap_mac(&key, RW_BOOT_LABEL_PEER, nonce, h.nonce, h.rank,
					 h.nranks);
		rc = rw_bootstrap_check_hello(&key, nonce, nranks, &h);
		rw_fuzz_check(rc != -EACCES);
		nonce = rw_bootstrap_siphash(key.k, data, sizeof(h));
	}
}

static void answers(const uint8_t *data, size_t size)
{
	struct rw_boot_key key, none = {0};
	struct rw_boot_challenge c;
	struct rw_boot_welcome w;
	struct rw_boot_hello h = {.rank = 1, .nranks = 2, .nonce = 7};
	int rc;

	if (size < sizeof(c) + sizeof(w))
		return;
	rw_bootstrap_key(NULL, "job", &key);
	memcpy(&c, data, sizeof(c));
	memcpy(&w, data + sizeof(c), sizeof(w));
	for (int k = 0; k < 2; k++) {
		const struct rw_boot_key *kk = k ? &key : &none;

		rc = rw_bootstrap_check_challenge(kk, &c);
		rw_fuzz_check(rc == 0 || rc == -EPROTO || rc == -EPROTONOSUPPORT || rc == -EACCES);
		rc = rw_bootstrap_check_welcome(kk, c.nonce, &h, &w);
		rw_fuzz_check(rc == 0 || rc == -EPROTO || rc == -EACCES || rc == -EEXIST ||
			      rc == -EPROTONOSUPPORT);
		rw_fuzz_check(rc != 0 || (w.status == 0 && w.magic == RW_BOOT_MAGIC));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		strings(data + 1, size - 1);
		break;
	case 1:
		hellos(data + 1, size - 1);
		break;
	default:
		answers(data + 1, size - 1);
		break;
	}
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_bootstrap",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 2000,
		.max_edits = 7, /* 4 on average */
		.keep = 1,
		.rng = 0x9e3779b97f4a7c15ull,
		.truncate = true,
		.min_seeds = 1,
	};

	return rw_fuzz_main(argc, argv, &t, NULL, 0);
}
#endif

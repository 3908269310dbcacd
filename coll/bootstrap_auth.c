/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of the rendezvous (see bootstrap.h): the parser of the
 * rendezvous string, SipHash-2-4, the job key and the handshake's keyed
 * hashes, and the three verdicts on what arrives from outside (hello,
 * challenge, welcome).  No I/O, no state: bootstrap.c does the talking,
 * and the fuzz target (tests/coll/fuzz_bootstrap.c) calls these directly.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/bootstrap.h"
#include "transport/tcp/rw_tcp.h"

int rw_boot_shown(const char *hostport)
{
	return hostport ? (int)strcspn(hostport, "#") : 0;
}

int rw_bootstrap_parse(const char *hostport, char *host, size_t hostlen, int *port)
{
	char buf[320];
	int n = rw_boot_shown(hostport);

	if (!hostport || !*hostport || (size_t)n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, hostport, (size_t)n); /* without the "#key" */
	buf[n] = '\0';
	return rw_tcp_hostport_split(buf, host, hostlen, port);
}

/* --- the job key --------------------------------------------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = ROTL(v1, 13);                                                                 \
		v1 ^= v0;                                                                          \
		v0 = ROTL(v0, 32);                                                                 \
		v2 += v3;                                                                          \
		v3 = ROTL(v3, 16);                                                                 \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = ROTL(v3, 21);                                                                 \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = ROTL(v1, 17);                                                                 \
		v1 ^= v2;                                                                          \
		v2 = ROTL(v2, 32);                                                                 \
	} while (0)

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint64_t rw_bootstrap_siphash(const uint64_t k[2], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v0 = 0x736f6d6570736575ull ^ k[0], v1 = 0x646f72616e646f6dull ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ull ^ k[0], v3 = 0x7465646279746573ull ^ k[1];
	uint64_t m, last = (uint64_t)len << 56;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		m = le64(p + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		last |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= last;
	SIPROUND;
	SIPROUND;
	v0 ^= last;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

int rw_bootstrap_key(const char *root, const char *secret, struct rw_boot_key *key)
{
	/* Public constants: the key is a keyed hash of the secret under them. */
	static const uint64_t kd[2][2] = {{0x72696e6777617920ull, 0x6a6f62206b657920ull},
					  {0x626f6f7473747261ull, 0x7020736563726574ull}};
	const char *hash = root ? strchr(root, '#') : NULL;
	const char *s = hash ? hash + 1 : secret;

	memset(key, 0, sizeof(*key));
	if (hash && !hash[1])
		return -EINVAL; /* "host:port#" with an empty key: say so, never run open */
	if (!s || !*s)
		return 0;
	key->k[0] = rw_bootstrap_siphash(kd[0], s, strlen(s));
	key->k[1] = rw_bootstrap_siphash(kd[1], s, strlen(s));
	key->set = 1;
	return 0;
}

uint64_t rw_bootstrap_mac(const struct rw_boot_key *key, uint32_t label, uint64_t root_nonce,
			  uint64_t peer_nonce, int32_t rank, int32_t value)
{
	uint64_t m[4] = {label, root_nonce, peer_nonce,
			 (uint64_t)(uint32_t)rank << 32 | (uint32_t)value};

	return key->set ? rw_bootstrap_siphash(key->k, m, sizeof(m)) : 0;
}

int rw_bootstrap_check_hello(const struct rw_boot_key *key, uint64_t root_nonce, int nranks,
			     const struct rw_boot_hello *h)
{
	if (h->magic != RW_BOOT_MAGIC)
		return -EBADMSG;
	if (h->version != RW_BOOT_VERSION)
		return -EPROTONOSUPPORT;
	if (key->set && (h->mac ^ rw_bootstrap_mac(key, RW_BOOT_LABEL_PEER, root_nonce, h->nonce,
						   h->rank, h->nranks)) != 0)
		return -EACCES;
	if (h->nranks != nranks || h->rank <= 0 || h->rank >= nranks)
		return -EPROTO;
	return 0;
}

int rw_bootstrap_check_challenge(const struct rw_boot_key *key, const struct rw_boot_challenge *c)
{
	if (c->magic != RW_BOOT_MAGIC)
		return -EPROTO;
	if (c->version != RW_BOOT_VERSION)
		return -EPROTONOSUPPORT;
	if (!(c->flags & RW_BOOT_F_SECRET) != !key->set)
		return -EACCES;
	return 0;
}

int rw_bootstrap_check_welcome(const struct rw_boot_key *key, uint64_t root_nonce,
			       const struct rw_boot_hello *h, const struct rw_boot_welcome *w)
{
	if (w->magic != RW_BOOT_MAGIC)
		return -EPROTO;
	if (w->status != 0)
		return w->status == -EACCES || w->status == -EEXIST || w->status == -EPROTONOSUPPORT
			       ? w->status
			       : -EPROTO;
	if (key->set && (w->mac ^ rw_bootstrap_mac(key, RW_BOOT_LABEL_ROOT, root_nonce, h->nonce,
						   h->rank, 0)) != 0)
		return -EACCES;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Nonces for the handshakes on TCP: never 0, never blocking. */
#include <stdatomic.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport/tcp/rw_tcp.h"

uint64_t rw_tcp_nonce64(void)
{
	static atomic_uint_fast64_t count;
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v) && v)
		return v;
	/* No entropy yet (early boot): unique per process and call, and not
	 * guessable from the time alone (splitmix64 over time, pid, count). */
	v = rw_now_ns() ^ ((uint64_t)getpid() << 32) ^
	    (atomic_fetch_add(&count, 1) * 0x9e3779b97f4a7c15ull);
	v ^= v >> 30, v *= 0xbf58476d1ce4e5b9ull;
	v ^= v >> 27, v *= 0x94d049bb133111ebull;
	v ^= v >> 31;
	return v ? v : 1;
}

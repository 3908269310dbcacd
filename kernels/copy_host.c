/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A host copy whose stores bypass the caches (rw_reduce.h).  On x86-64 the
 * destination, from its first cache line boundary on, is written with
 * SSE2's streaming stores (MOVNTDQ) a whole 64-byte line at a time and
 * fenced; the partial lines at either end get ordinary stores (a line
 * written both ways would be read and written twice).  Elsewhere it is
 * memcpy.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/rw_reduce.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

void rw_copy_nontemporal(void *dst, const void *src, size_t len)
{
	char *d = dst;
	const char *s = src;
	size_t head = (64 - ((uintptr_t)d & 63)) & 63;

	if (len < 256) {
		memcpy(d, s, len); /* not worth a fence */
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; len -= 64, d += 64, s += 64) {
		__m128i v0 = _mm_loadu_si128((const __m128i *)s);
		__m128i v1 = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i v2 = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i v3 = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, v0);
		_mm_stream_si128((__m128i *)(d + 16), v1);
		_mm_stream_si128((__m128i *)(d + 32), v2);
		_mm_stream_si128((__m128i *)(d + 48), v3);
	}
	/* streaming stores are weakly ordered: whoever is told the copy is
	 * done (another thread, another process) must see all of it */
	_mm_sfence();
	memcpy(d, s, len);
}

#else

void rw_copy_nontemporal(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

#endif

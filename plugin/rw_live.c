/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live set: every handle the plugin gives out (comm wrappers, requests,
 * memory handles, CollNet comms and requests) is entered here with its
 * owner, and every call checks a handle against the set before it reads
 * through it.  A stale handle (a request after its comm closed, a comm
 * after the last finalize, a memory handle deregistered twice) is then an
 * error, never a read of freed memory.
 *
 * An open-addressing hash set (linear probing, backward-shift deletion)
 * under one mutex; it grows at half load and never shrinks below its
 * initial size.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "plugin/rw_plugin.h"

#define RW_LIVE_MIN_SLOTS 256u

struct rw_live_slot {
	const void *key; /* NULL: empty */
	const void *owner;
};

static struct {
	pthread_mutex_t lock;
	struct rw_live_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t n;
} live = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t slot_of(const void *key, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)key;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

/* Called with live.lock held: the slot holding key, or cap. */
static size_t find(const void *key)
{
	if (!live.cap)
		return 0;
	for (size_t i = slot_of(key, live.cap);; i = (i + 1) & (live.cap - 1)) {
		if (live.slots[i].key == key)
			return i;
		if (!live.slots[i].key)
			return live.cap;
	}
}

static void put(struct rw_live_slot *slots, size_t cap, const void *key, const void *owner)
{
	size_t i = slot_of(key, cap);

	while (slots[i].key)
		i = (i + 1) & (cap - 1);
	slots[i].key = key;
	slots[i].owner = owner;
}

/* Called with live.lock held: empty slot i and shift its run back. */
static void remove_at(size_t i)
{
	size_t mask = live.cap - 1;
	size_t j = i;

	live.slots[i].key = NULL;
	live.n--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!live.slots[j].key)
			return;
		home = slot_of(live.slots[j].key, live.cap);
		/* j's entry may move to i if i lies cyclically in [home, j). */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			live.slots[i] = live.slots[j];
			live.slots[j].key = NULL;
			i = j;
		}
	}
}

int rw_live_add(const void *key, const void *owner)
{
	int rc = 0;

	if (!key)
		return -EINVAL;
	pthread_mutex_lock(&live.lock);
	if ((live.n + 1) * 2 > live.cap) {
		size_t cap = live.cap ? live.cap * 2 : RW_LIVE_MIN_SLOTS;
		struct rw_live_slot *s = calloc(cap, sizeof(*s));

		if (!s) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < live.cap; i++)
			if (live.slots[i].key)
				put(s, cap, live.slots[i].key, live.slots[i].owner);
		free(live.slots);
		live.slots = s;
		live.cap = cap;
	}
	if (find(key) != live.cap) {
		rc = -EEXIST;
		goto out;
	}
	put(live.slots, live.cap, key, owner);
	live.n++;
out:
	pthread_mutex_unlock(&live.lock);
	return rc;
}

bool rw_live_has(const void *key, const void *owner, bool any_owner)
{
	bool ok;
	size_t i;

	if (!key)
		return false;
	pthread_mutex_lock(&live.lock);
	i = find(key);
	ok = i != live.cap && (any_owner || live.slots[i].owner == owner);
	pthread_mutex_unlock(&live.lock);
	return ok;
}

bool rw_live_owner(const void *key, const void **owner)
{
	bool ok;
	size_t i;

	if (!key)
		return false;
	pthread_mutex_lock(&live.lock);
	i = find(key);
	ok = i != live.cap;
	if (ok)
		*owner = live.slots[i].owner;
	pthread_mutex_unlock(&live.lock);
	return ok;
}

bool rw_live_del(const void *key, const void *owner, bool any_owner)
{
	bool ok;
	size_t i;

	if (!key)
		return false;
	pthread_mutex_lock(&live.lock);
	i = find(key);
	ok = i != live.cap && (any_owner || live.slots[i].owner == owner);
	if (ok)
		remove_at(i);
	pthread_mutex_unlock(&live.lock);
	return ok;
}

void rw_live_del_owned(const void *owner)
{
	if (!owner)
		return;
	pthread_mutex_lock(&live.lock);
	for (size_t i = 0; i < live.cap;) {
		/* remove_at() may shift a later entry into i: look again. */
		if (live.slots[i].key && live.slots[i].owner == owner)
			remove_at(i);
		else
			i++;
	}
	pthread_mutex_unlock(&live.lock);
}

size_t rw_live_count(void)
{
	size_t n;

	pthread_mutex_lock(&live.lock);
	n = live.n;
	pthread_mutex_unlock(&live.lock);
	return n;
}

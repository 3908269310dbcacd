/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transport object base: what every transport (socket, shm, ib), the
 * auto composite and the plugin's wrappers use for their handles, so that
 * stale-handle checks, leak accounting and close semantics are written once.
 *
 *   rw_list   an intrusive doubly linked list (a head and a link are the
 *             same struct).
 *   rw_obj    the header of every handle: kind (a 32-bit tag naming the
 *             transport and the type: a foreign pointer has another),
 *             state (free, open, closed) and generation (bumped each time
 *             its memory starts a new object).  rw_obj_check() is the one
 *             validity check.  rw_obj_handle() gives out a handle that
 *             carries the generation's low bits, so a stale handle to
 *             memory that now holds a newer object fails cleanly
 *             (RW_OBJ_GEN_BITS reuses of one object apart, and objects are
 *             reused oldest first, see rw_grave).
 *   rw_slab   a pool of same-size items (requests), allocated in chunks up
 *             to a maximum; items are never freed before the slab is, so a
 *             stale request reads a free item, not freed memory.
 *   rw_live   a table of live-object counters (relaxed C11 atomics) for
 *             leak checks: one per transport, process-wide.
 *   rw_grave  the shells of closed objects, oldest first, with one bound
 *             (RW_GRAVE_MAX): once that many are kept, a new object takes
 *             the oldest shell instead of new memory.  A shell is never
 *             freed before its net is destroyed, so a stale handle reads
 *             valid memory; one old enough may name the object that reused
 *             the shell (rw_obj_handle's generation catches that).
 *
 * Ownership.  Each of these is embedded in its owner (a net, a comm, a
 * wrapper) and owns nothing but what it allocated itself (rw_slab: its
 * chunks).  Blocking.  Nothing here blocks or takes a lock: rw_list,
 * rw_slab and rw_grave are guarded by their owner's lock (or used by one
 * thread); rw_live and rw_obj's state are atomics.
 */
#ifndef RW_BASE_H
#define RW_BASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rw_common.h"

/* --- rw_list ------------------------------------------------------------- */

struct rw_list {
	struct rw_list *prev, *next;
};

static inline void rw_list_init(struct rw_list *h)
{
	h->prev = h->next = h;
}

static inline bool rw_list_empty(const struct rw_list *h)
{
	return h->next == h;
}

/** Append n at the tail of h (h->next is the oldest). */
static inline void rw_list_add(struct rw_list *h, struct rw_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

/** Unlink n; it is then an empty list of its own (a second del is harmless). */
static inline void rw_list_del(struct rw_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/** The oldest entry of h, unlinked, or NULL when h is empty. */
static inline struct rw_list *rw_list_pop(struct rw_list *h)
{
	struct rw_list *n = h->next;

	if (n == h)
		return NULL;
	rw_list_del(n);
	return n;
}

#define rw_list_entry(link, type, member) rw_container_of(link, type, member)

/** Walk h; pos may be unlinked (and freed) inside the loop. */
#define rw_list_for_each_safe(pos, tmp, h)                                                         \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h);                                 \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* --- rw_obj ---------------------------------------------------------------- */

enum rw_obj_state {
	RW_OBJ_FREE = 0, /* a slab item not handed out, or zeroed memory */
	RW_OBJ_OPEN,	 /* in use */
	RW_OBJ_CLOSED,	 /* closed: only the shell is left */
};

struct rw_obj {
	uint32_t kind;		/* the type's tag; 0 in memory never used */
	uint32_t gen;		/* bumped by rw_obj_open() */
	_Atomic uint32_t state; /* enum rw_obj_state */
};

/* rw_obj_handle() needs the object at this alignment (rw_obj_zalloc()). */
#define RW_OBJ_GEN_BITS 6
#define RW_OBJ_ALIGN	(1u << RW_OBJ_GEN_BITS)

/** Start a new object of kind in o's memory (new or reused): next generation. */
static inline void rw_obj_open(struct rw_obj *o, uint32_t kind)
{
	o->kind = kind;
	o->gen++;
	atomic_store_explicit(&o->state, RW_OBJ_OPEN, memory_order_release);
}

static inline void rw_obj_close(struct rw_obj *o)
{
	atomic_store_explicit(&o->state, RW_OBJ_CLOSED, memory_order_release);
}

/** Back to free (a slab item given back); kind stays. */
static inline void rw_obj_free(struct rw_obj *o)
{
	atomic_store_explicit(&o->state, RW_OBJ_FREE, memory_order_release);
}

static inline enum rw_obj_state rw_obj_state(const struct rw_obj *o)
{
	return (enum rw_obj_state)atomic_load_explicit(&o->state, memory_order_acquire);
}

/**
 * The one validity check: 0 when o is an open object of kind; -EBADF when
 * it is of kind but closed or free (a stale handle); -EINVAL when o is NULL
 * or of another kind (foreign).  Logs nothing: the caller knows the peer
 * and the call, and says so once (rw_obj_what() names the problem).
 */
int rw_obj_check(const struct rw_obj *o, uint32_t kind);
/** Like rw_obj_check() for an object that may be any of kinds[0..n). */
int rw_obj_check_any(const struct rw_obj *o, const uint32_t *kinds, int n);
/** "closed", "completed" (a free slab item), "foreign" or "open": for messages. */
const char *rw_obj_what(const struct rw_obj *o, uint32_t kind);

/** Zeroed memory of size bytes aligned to RW_OBJ_ALIGN for an object whose
 *  struct rw_obj comes first, or NULL; free() it.  Its generation starts
 *  from a process-wide counter, so the handle of a freed object whose
 *  memory is handed out again differs from the new one's. */
void *rw_obj_zalloc(size_t size);
/** o (aligned to RW_OBJ_ALIGN) as a handle carrying its generation's low bits. */
void *rw_obj_handle(struct rw_obj *o);
/** The object a handle names; reads nothing (check it before reading). */
struct rw_obj *rw_obj_from_handle(const void *h);
/** Does h name o's current generation?  0, or -EBADF (an older one). */
int rw_obj_handle_check(const struct rw_obj *o, const void *h);

/* --- rw_slab ---------------------------------------------------------------- */

struct rw_slab {
	size_t size;	/* bytes per item */
	size_t obj_off; /* offset of the item's struct rw_obj */
	uint32_t kind;
	int per_chunk, max; /* items per chunk, most items */
	int nchunks, nitems;
	int used; /* handed out */
	char **chunks;
	void **free; /* stack of free items, nfree of them */
	int nfree;
};

/** An empty slab (allocates nothing yet).  0 or -EINVAL / -ENOMEM. */
int rw_slab_init(struct rw_slab *s, size_t size, size_t obj_off, uint32_t kind, int per_chunk,
		 int max);
/** A free item, opened (rw_obj_open(kind)), its other bytes as they were
 *  (zero when new); NULL when max are out or out of memory. */
void *rw_slab_get(struct rw_slab *s);
/** Give item back: it becomes free (a stale test sees RW_OBJ_FREE). */
void rw_slab_put(struct rw_slab *s, void *item);
/** Give every item back (a comm closing); the memory stays. */
void rw_slab_reset(struct rw_slab *s);
/** Free the chunks; the slab is empty again afterwards. */
void rw_slab_fini(struct rw_slab *s);
/** Item i (0 .. nitems-1), for walks over every item. */
static inline void *rw_slab_item(const struct rw_slab *s, int i)
{
	return s->chunks[i / s->per_chunk] + (size_t)(i % s->per_chunk) * s->size;
}

/* --- rw_live ---------------------------------------------------------------- */

#define RW_LIVE_MAX_KINDS 12

/** Live-object counters of one transport; a static with {.name, .nkinds}. */
struct rw_live {
	const char *name;
	int nkinds;
	atomic_long n[RW_LIVE_MAX_KINDS];
};

static inline void rw_live_bump(struct rw_live *t, int kind, long delta)
{
	atomic_fetch_add_explicit(&t->n[kind], delta, memory_order_relaxed);
}

static inline long rw_live_get(const struct rw_live *t, int kind)
{
	return atomic_load_explicit(&t->n[kind], memory_order_relaxed);
}

/** The sum of every counter but those in the mask skip (bit k: kind k). */
long rw_live_sum(const struct rw_live *t, unsigned skip);

/* --- rw_grave --------------------------------------------------------------- */

/* Closed shells kept per graveyard; beyond, a new object takes the oldest. */
#define RW_GRAVE_MAX 64

/** Shells of one type (comms, listeners, wrappers) of one owner. */
struct rw_grave {
	struct rw_list shells; /* oldest first */
	int n;
	int max;
	struct rw_live *live; /* counts shells in live->n[live_kind]; may be NULL */
	int live_kind;
};

void rw_grave_init(struct rw_grave *g, int max, struct rw_live *live, int live_kind);
/** Keep a closed object's shell (link: unlinked or alone). */
void rw_grave_bury(struct rw_grave *g, struct rw_list *link);
/** The oldest shell, unlinked, once max are kept; else NULL (allocate). */
struct rw_list *rw_grave_reuse(struct rw_grave *g);
/** Any shell, unlinked, or NULL when none is left (destroy frees them). */
struct rw_list *rw_grave_pop(struct rw_grave *g);
/**
 * Memory for a new object of size bytes whose rw_list link and rw_obj are
 * at link_off and obj_off: the oldest shell of g once it is full (zeroed
 * but for its rw_obj, so its generation goes on, and for the rw_slab at
 * slab_off unless that is 0: a shell's requests stay its own), else
 * calloc()ed (a zeroed slab: .size 0, rw_slab_init() it); NULL when out of
 * memory.  The link is unlinked (an empty list); the object is not opened.
 * lock (may be NULL) guards g.  A shell holds nothing else: whatever needs
 * giving back (a mutex, buffers) was given back when it was buried.
 */
void *rw_grave_alloc(struct rw_grave *g, pthread_mutex_t *lock, size_t size, size_t link_off,
		     size_t obj_off, size_t slab_off);
/** Free every shell of g (destroy), and the slab at slab_off of each unless
 *  slab_off is 0. */
void rw_grave_free_all(struct rw_grave *g, size_t link_off, size_t slab_off);

#endif /* RW_BASE_H */

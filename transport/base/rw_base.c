/* SPDX-License-Identifier: Apache-2.0 */
/* The transport object base (rw_base.h): checks, handles, slabs, counters,
 * graveyards. */
#include "transport/base/rw_base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- rw_obj ---------------------------------------------------------------- */

int rw_obj_check(const struct rw_obj *o, uint32_t kind)
{
	return rw_obj_check_any(o, &kind, 1);
}

int rw_obj_check_any(const struct rw_obj *o, const uint32_t *kinds, int n)
{
	if (!o)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (o->kind == kinds[i])
			return rw_obj_state(o) == RW_OBJ_OPEN ? 0 : -EBADF;
	return -EINVAL;
}

const char *rw_obj_what(const struct rw_obj *o, uint32_t kind)
{
	if (!o || o->kind != kind)
		return "foreign";
	switch (rw_obj_state(o)) {
	case RW_OBJ_OPEN:
		return "open";
	case RW_OBJ_CLOSED:
		return "closed";
	default:
		return "completed";
	}
}

void *rw_obj_zalloc(size_t size)
{
	static atomic_uint seed;
	void *p;

	size = RW_DIV_UP(RW_MAX(size, sizeof(struct rw_obj)), RW_OBJ_ALIGN) * RW_OBJ_ALIGN;
	p = aligned_alloc(RW_OBJ_ALIGN, size);
	if (p) {
		memset(p, 0, size);
		/* Memory malloc hands out again starts another generation. */
		((struct rw_obj *)p)->gen =
			atomic_fetch_add_explicit(&seed, 1, memory_order_relaxed);
	}
	return p;
}

void *rw_obj_handle(struct rw_obj *o)
{
	return (char *)o + (o->gen & (RW_OBJ_ALIGN - 1));
}

struct rw_obj *rw_obj_from_handle(const void *h)
{
	return (struct rw_obj *)((uintptr_t)h & ~(uintptr_t)(RW_OBJ_ALIGN - 1));
}

int rw_obj_handle_check(const struct rw_obj *o, const void *h)
{
	return ((uintptr_t)h & (RW_OBJ_ALIGN - 1)) == (o->gen & (RW_OBJ_ALIGN - 1)) ? 0 : -EBADF;
}

/* --- rw_slab ---------------------------------------------------------------- */

static struct rw_obj *item_obj(const struct rw_slab *s, void *item)
{
	return (struct rw_obj *)((char *)item + s->obj_off);
}

int rw_slab_init(struct rw_slab *s, size_t size, size_t obj_off, uint32_t kind, int per_chunk,
		 int max)
{
	memset(s, 0, sizeof(*s));
	if (per_chunk < 1 || max < per_chunk || obj_off + sizeof(struct rw_obj) > size)
		return -EINVAL;
	s->size = size;
	s->obj_off = obj_off;
	s->kind = kind;
	s->per_chunk = per_chunk;
	s->max = max;
	return 0;
}

/* One more chunk of items, all free.  0 or -ENOMEM. */
static int slab_grow(struct rw_slab *s)
{
	int nmax = RW_DIV_UP(s->max, s->per_chunk);
	char *chunk;

	if (!s->chunks) {
		s->chunks = calloc((size_t)nmax, sizeof(*s->chunks));
		s->free = calloc((size_t)nmax * (size_t)s->per_chunk, sizeof(*s->free));
		if (!s->chunks || !s->free) {
			free(s->chunks);
			free(s->free);
			s->chunks = NULL;
			s->free = NULL;
			return -ENOMEM;
		}
	}
	chunk = calloc((size_t)s->per_chunk, s->size);
	if (!chunk)
		return -ENOMEM;
	s->chunks[s->nchunks++] = chunk;
	/* Pushed last to first: the chunk's first item is taken first. */
	for (int i = s->per_chunk - 1; i >= 0; i--) {
		void *item = chunk + (size_t)i * s->size;

		item_obj(s, item)->kind = s->kind;
		s->free[s->nfree++] = item;
	}
	s->nitems += s->per_chunk;
	return 0;
}

void *rw_slab_get(struct rw_slab *s)
{
	void *item;

	if (!s->nfree && (s->nitems + s->per_chunk > s->max || slab_grow(s)))
		return NULL;
	item = s->free[--s->nfree];
	rw_obj_open(item_obj(s, item), s->kind);
	s->used++;
	return item;
}

void rw_slab_put(struct rw_slab *s, void *item)
{
	rw_obj_free(item_obj(s, item));
	s->free[s->nfree++] = item;
	s->used--;
}

void rw_slab_reset(struct rw_slab *s)
{
	s->nfree = 0;
	for (int i = s->nitems - 1; i >= 0; i--) {
		void *item = rw_slab_item(s, i);

		rw_obj_free(item_obj(s, item));
		s->free[s->nfree++] = item;
	}
	s->used = 0;
}

void rw_slab_fini(struct rw_slab *s)
{
	for (int i = 0; i < s->nchunks; i++)
		free(s->chunks[i]);
	free(s->chunks);
	free(s->free);
	rw_slab_init(s, s->size, s->obj_off, s->kind, s->per_chunk, s->max);
}

/* --- rw_live ---------------------------------------------------------------- */

long rw_live_sum(const struct rw_live *t, unsigned skip)
{
	long sum = 0;

	for (int k = 0; k < t->nkinds; k++)
		if (!(skip & (1u << k)))
			sum += rw_live_get(t, k);
	return sum;
}

/* --- rw_grave --------------------------------------------------------------- */

void rw_grave_init(struct rw_grave *g, int max, struct rw_live *live, int live_kind)
{
	rw_list_init(&g->shells);
	g->n = 0;
	g->max = max;
	g->live = live;
	g->live_kind = live_kind;
}

void rw_grave_bury(struct rw_grave *g, struct rw_list *link)
{
	rw_list_del(link);
	rw_list_add(&g->shells, link);
	g->n++;
	if (g->live)
		rw_live_bump(g->live, g->live_kind, 1);
}

struct rw_list *rw_grave_pop(struct rw_grave *g)
{
	struct rw_list *n = rw_list_pop(&g->shells);

	if (n) {
		g->n--;
		if (g->live)
			rw_live_bump(g->live, g->live_kind, -1);
	}
	return n;
}

struct rw_list *rw_grave_reuse(struct rw_grave *g)
{
	return g->n >= g->max ? rw_grave_pop(g) : NULL;
}

void *rw_grave_alloc(struct rw_grave *g, pthread_mutex_t *lock, size_t size, size_t link_off,
		     size_t obj_off, size_t slab_off)
{
	struct rw_list *shell;
	struct rw_obj obj;
	struct rw_slab slab;
	char *p;

	if (lock)
		pthread_mutex_lock(lock);
	shell = rw_grave_reuse(g);
	if (lock)
		pthread_mutex_unlock(lock);
	if (shell) {
		p = (char *)shell - link_off;
		memcpy(&obj, p + obj_off, sizeof(obj));
		if (slab_off)
			memcpy(&slab, p + slab_off, sizeof(slab));
		memset(p, 0, size);
		memcpy(p + obj_off, &obj, sizeof(obj));
		if (slab_off)
			memcpy(p + slab_off, &slab, sizeof(slab));
	} else {
		p = calloc(1, size);
		if (!p)
			return NULL;
	}
	rw_list_init((struct rw_list *)(p + link_off));
	return p;
}

void rw_grave_free_all(struct rw_grave *g, size_t link_off, size_t slab_off)
{
	struct rw_list *shell;

	while ((shell = rw_grave_pop(g))) {
		char *p = (char *)shell - link_off;

		if (slab_off)
			rw_slab_fini((struct rw_slab *)(p + slab_off));
		free(p);
	}
}

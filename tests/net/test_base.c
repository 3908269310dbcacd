/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transport object base (transport/base/rw_base.h): the list, the one
 * validity check, handles that carry a generation, the request slab, the
 * live-counter table and the bounded graveyard.
 */
#include "support/rw_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/base/rw_base.h"

#define KIND_A 0x41414141u
#define KIND_B 0x42424242u

struct item {
	int payload;
	struct rw_obj obj;
	struct rw_list link;
};

static void list_order_and_pop(void **state)
{
	struct item it[3];
	struct rw_list h, *pos, *tmp;
	int seen = 0;

	(void)state;
	rw_list_init(&h);
	assert_true(rw_list_empty(&h));
	assert_null(rw_list_pop(&h));
	for (int i = 0; i < 3; i++) {
		it[i].payload = i;
		rw_list_add(&h, &it[i].link);
	}
	rw_list_del(&it[1].link);
	rw_list_del(&it[1].link); /* a second del is harmless */
	rw_list_for_each_safe(pos, tmp, &h)
	{
		seen = seen * 10 + rw_list_entry(pos, struct item, link)->payload + 1;
		rw_list_del(pos);
	}
	assert_int_equal(seen, 13); /* 0 then 2, oldest first */
	assert_true(rw_list_empty(&h));
}

static void obj_check(void **state)
{
	struct rw_obj o = {0};
	uint32_t kinds[] = {KIND_B, KIND_A};

	(void)state;
	assert_int_equal(rw_obj_check(NULL, KIND_A), -EINVAL);
	assert_int_equal(rw_obj_check(&o, KIND_A), -EINVAL); /* never used */
	rw_obj_open(&o, KIND_A);
	assert_int_equal(o.gen, 1);
	assert_int_equal(rw_obj_check(&o, KIND_A), 0);
	assert_int_equal(rw_obj_check(&o, KIND_B), -EINVAL);
	assert_int_equal(rw_obj_check_any(&o, kinds, 2), 0);
	assert_int_equal(rw_obj_check_any(&o, kinds, 1), -EINVAL);
	assert_string_equal(rw_obj_what(&o, KIND_A), "open");
	rw_obj_close(&o);
	assert_int_equal(rw_obj_check(&o, KIND_A), -EBADF);
	assert_int_equal(rw_obj_check_any(&o, kinds, 2), -EBADF);
	assert_string_equal(rw_obj_what(&o, KIND_A), "closed");
	assert_string_equal(rw_obj_what(&o, KIND_B), "foreign");
	rw_obj_free(&o);
	assert_int_equal(rw_obj_check(&o, KIND_A), -EBADF);
	assert_string_equal(rw_obj_what(&o, KIND_A), "completed");
}

/* A handle to memory that a newer object reuses no longer passes. */
static void handles_carry_the_generation(void **state)
{
	struct rw_obj *o = rw_obj_zalloc(sizeof(*o));
	void *old, *cur;

	(void)state;
	assert_non_null(o);
	assert_int_equal((uintptr_t)o % RW_OBJ_ALIGN, 0);
	rw_obj_open(o, KIND_A);
	old = rw_obj_handle(o);
	assert_ptr_equal(rw_obj_from_handle(old), o);
	assert_int_equal(rw_obj_handle_check(o, old), 0);
	rw_obj_close(o);
	rw_obj_open(o, KIND_A); /* the memory is reused */
	cur = rw_obj_handle(o);
	assert_ptr_not_equal(cur, old);
	assert_ptr_equal(rw_obj_from_handle(cur), o);
	assert_int_equal(rw_obj_handle_check(o, cur), 0);
	assert_int_equal(rw_obj_handle_check(o, old), -EBADF);
	/* the generation's low bits: RW_OBJ_ALIGN - 1 reuses stay apart */
	for (unsigned i = 1; i < RW_OBJ_ALIGN - 1; i++) {
		rw_obj_open(o, KIND_A);
		assert_int_equal(rw_obj_handle_check(o, old), -EBADF);
	}
	free(o);
}

static void slab_bounded_and_reused(void **state)
{
	struct rw_slab s;
	struct item *got[8];

	(void)state;
	assert_int_equal(rw_slab_init(&s, sizeof(struct item), 64, KIND_A, 2, 4), -EINVAL);
	assert_int_equal(
		rw_slab_init(&s, sizeof(struct item), offsetof(struct item, obj), KIND_A, 3, 6), 0);
	for (int i = 0; i < 6; i++) {
		got[i] = rw_slab_get(&s);
		assert_non_null(got[i]);
		assert_int_equal(rw_obj_check(&got[i]->obj, KIND_A), 0);
		got[i]->payload = i;
	}
	assert_null(rw_slab_get(&s)); /* max */
	assert_int_equal(s.used, 6);
	assert_int_equal(s.nchunks, 2);
	rw_slab_put(&s, got[4]);
	/* a stale request reads a free item, never freed memory */
	assert_int_equal(rw_obj_check(&got[4]->obj, KIND_A), -EBADF);
	assert_ptr_equal(rw_slab_get(&s), got[4]); /* the last one given back */
	assert_int_equal(got[4]->payload, 4);	   /* bytes kept */
	assert_int_equal(got[4]->obj.gen, 2);
	rw_slab_reset(&s);
	assert_int_equal(s.used, 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(rw_obj_check(&got[i]->obj, KIND_A), -EBADF);
	for (int i = 0; i < 6; i++)
		assert_non_null(rw_slab_get(&s));
	assert_int_equal(s.nchunks, 2); /* no new memory */
	rw_slab_fini(&s);
	assert_int_equal(s.nitems, 0);
	assert_non_null(rw_slab_get(&s)); /* usable again */
	rw_slab_fini(&s);
}

static struct rw_live counters = {.name = "test", .nkinds = 3};

static void live_counters(void **state)
{
	(void)state;
	rw_live_bump(&counters, 0, 2);
	rw_live_bump(&counters, 2, 5);
	rw_live_bump(&counters, 0, -1);
	assert_int_equal(rw_live_get(&counters, 0), 1);
	assert_int_equal(rw_live_sum(&counters, 0), 6);
	assert_int_equal(rw_live_sum(&counters, 1u << 2), 1);
	rw_live_bump(&counters, 0, -1);
	rw_live_bump(&counters, 2, -5);
	assert_int_equal(rw_live_sum(&counters, 0), 0);
}

static void grave_bounded(void **state)
{
	struct rw_grave g;
	struct rw_list open;
	struct item it[5];

	(void)state;
	rw_grave_init(&g, 3, &counters, 1);
	rw_list_init(&open);
	for (int i = 0; i < 5; i++) {
		it[i].payload = i;
		rw_list_add(&open, &it[i].link);
	}
	assert_null(rw_grave_reuse(&g));
	for (int i = 0; i < 3; i++)
		rw_grave_bury(&g, &it[i].link); /* off the open list */
	assert_int_equal(g.n, 3);
	assert_int_equal(rw_live_get(&counters, 1), 3);
	/* full: the oldest shell is taken */
	assert_ptr_equal(rw_grave_reuse(&g), &it[0].link);
	assert_int_equal(rw_live_get(&counters, 1), 2);
	assert_null(rw_grave_reuse(&g));
	rw_grave_bury(&g, &it[3].link);
	assert_ptr_equal(rw_grave_reuse(&g), &it[1].link);
	assert_ptr_equal(open.next, &it[4].link);
	while (rw_grave_pop(&g))
		;
	assert_int_equal(g.n, 0);
	assert_int_equal(rw_live_get(&counters, 1), 0);
}

struct shell {
	char before[8];
	struct rw_obj obj;
	struct rw_list link;
	struct rw_slab reqs;
	int data;
};

/* A full graveyard gives its oldest shell: generation and slab kept, the
 * rest zeroed; rw_grave_free_all frees shells and slabs (ASan: no leak). */
static void grave_alloc_and_free_all(void **state)
{
	const size_t link = offsetof(struct shell, link), obj = offsetof(struct shell, obj),
		     slab = offsetof(struct shell, reqs);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct shell *first = NULL, *sh;
	struct rw_grave g;
	struct item *req;

	(void)state;
	rw_grave_init(&g, 2, NULL, 0);
	for (int i = 0; i < 2; i++) {
		sh = rw_grave_alloc(&g, &lock, sizeof(*sh), link, obj, slab);
		assert_non_null(sh);
		assert_int_equal(sh->data, 0);
		assert_int_equal(sh->reqs.size, 0); /* new: the caller inits it */
		assert_int_equal(rw_slab_init(&sh->reqs, sizeof(struct item),
					      offsetof(struct item, obj), KIND_B, 2, 2),
				 0);
		assert_non_null(rw_slab_get(&sh->reqs));
		rw_obj_open(&sh->obj, KIND_A);
		sh->data = 7;
		if (!first)
			first = sh;
		rw_obj_close(&sh->obj);
		rw_slab_reset(&sh->reqs);
		rw_grave_bury(&g, &sh->link);
	}
	/* two kept: the next takes the oldest */
	sh = rw_grave_alloc(&g, &lock, sizeof(*sh), link, obj, slab);
	assert_ptr_equal(sh, first);
	assert_int_equal(sh->data, 0);
	assert_int_equal(sh->obj.gen, 1);
	assert_int_equal(sh->reqs.size, sizeof(struct item)); /* its slab stays */
	req = rw_slab_get(&sh->reqs);
	assert_non_null(req);
	assert_int_equal(sh->reqs.nchunks, 1); /* no new memory */
	rw_obj_open(&sh->obj, KIND_A);
	assert_int_equal(sh->obj.gen, 2);
	rw_obj_close(&sh->obj);
	rw_grave_bury(&g, &sh->link);
	rw_grave_free_all(&g, link, slab);
	assert_int_equal(g.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list_order_and_pop),
		cmocka_unit_test(obj_check),
		cmocka_unit_test(handles_carry_the_generation),
		cmocka_unit_test(slab_bounded_and_reused),
		cmocka_unit_test(live_counters),
		cmocka_unit_test(grave_bounded),
		cmocka_unit_test(grave_alloc_and_free_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

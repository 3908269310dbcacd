/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receives with a sink on the same-host transport (rw_net_irecv_sink): the
 * message is handed over in order, each byte once, in pieces that start at
 * multiples of RW_NET_SINK_ALIGN; inline messages and fragments straight
 * from the slots (no copy into the buffer first), and a message large
 * enough for cross-memory attach through the slots too (a device message,
 * which lands first, is test_gpu_emu_shm's); several in flight match by tag
 * like plain receives; a sink that fails fails the receive, the sender's
 * request and the connection; a short fragment inside a message is a
 * protocol error; bad arguments are refused.
 */
#include "support/rw_test.h"

#include "common/rw_log.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_internal.h"

#include "net/test_shm_fixture.h"

/* 16 KiB slots hold 16320 bytes (the header is 64); CMA from 64 KiB. */
#define PAYLOAD (16 * 1024 - 64)

static const char *const env_small[] = {
	"RINGWAY_TIMEOUT_MS",
	"5000",
	"RINGWAY_SHM_SLOT_BYTES",
	"16K",
	"RINGWAY_SHM_NSLOTS",
	"4",
	"RINGWAY_SHM_CMA_MIN",
	"64K",
	NULL,
};

/* A sink that copies what it is given to out and records how. */
struct recorder {
	struct rw_net_sink sink;
	char *out;
	const char *buf; /* the receive's own buffer */
	size_t size;
	size_t next;	  /* the offset the next piece must start at */
	int pieces;	  /* taken */
	int from_buf;	  /* pieces handed from the receive's buffer */
	int out_of_order; /* pieces not at next */
	int misaligned;	  /* pieces not starting at a multiple of the alignment */
	int short_inside; /* pieces after one that was not a multiple */
	bool short_seen;
	int fail_at; /* the piece that fails with -EIO, or -1 */
};

static int record(void *arg, size_t off, const void *src, size_t len)
{
	struct recorder *k = arg;
	const char *s = src;

	if (k->pieces == k->fail_at) {
		k->pieces++;
		return -EIO;
	}
	k->out_of_order += off != k->next;
	k->misaligned += off % RW_NET_SINK_ALIGN != 0;
	k->short_inside += k->short_seen;
	k->short_seen = len % RW_NET_SINK_ALIGN != 0;
	k->from_buf += s >= k->buf && s < k->buf + k->size;
	if (off + len <= k->size)
		memcpy(k->out + off, src, len);
	k->next = off + len;
	k->pieces++;
	return 0;
}

static void recorder_init(struct recorder *k, const char *buf, size_t size)
{
	*k = (struct recorder){.sink = {.put = record, .arg = k},
			       .out = malloc(size + 1),
			       .buf = buf,
			       .size = size,
			       .fail_at = -1};
	assert_non_null(k->out);
	memset(k->out, 0, size + 1);
}

static int sink_recv(struct rw_net_comm *r, void *p, size_t n, int tag, struct rw_net_mr *mr,
		     struct recorder *k, struct rw_net_req **req)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int rc;

	*req = NULL;
	do
		rc = rw_net_irecv_sink(r, p, n, tag, mr, &k->sink, req);
	while (!rc && !*req && rw_now_ms() < end);
	return rc ? rc : *req ? 0 : -ETIMEDOUT;
}

/* Drive a send and a receive to their end; their results. */
static void drive(struct rw_net_req *rs, int *rcs, struct rw_net_req *rr, int *rcr, size_t *got)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int ds = 0, dr = 0;

	*rcs = *rcr = 0;
	while (!ds || !dr) {
		if (!ds && (*rcs = rw_net_test(rs, &ds, NULL)) != 0)
			ds = 1;
		if (!dr && (*rcr = rw_net_test(rr, &dr, got)) != 0)
			dr = 1;
		assert_true(rw_now_ms() < end);
	}
}

/* One message of size bytes to a sink; the recorder, checked, in k. */
static void sink_exchange(struct pair *p, size_t size, struct recorder *k)
{
	char *a = malloc(size + 1), *b = malloc(size + 1);
	struct rw_net_mr *ma, *mb;
	struct rw_net_req *rs, *rr;
	size_t got = 0;
	int rcs, rcr;

	assert_non_null(a);
	assert_non_null(b);
	rw_test_fill(a, size, size + 3);
	memset(b, 0, size + 1);
	recorder_init(k, b, size);
	assert_int_equal(rw_net_reg_mr(p->s, a, size, RW_PTR_HOST, &ma), 0);
	assert_int_equal(rw_net_reg_mr(p->r, b, size, RW_PTR_HOST, &mb), 0);
	assert_int_equal(sink_recv(p->r, b, size, 9, mb, k, &rr), 0);
	assert_int_equal(shm_send(p->s, a, size, 9, ma, &rs), 0);
	drive(rs, &rcs, rr, &rcr, &got);
	assert_int_equal(rcs, 0);
	assert_int_equal(rcr, 0);
	assert_int_equal(got, size);
	assert_int_equal(k->next, size);
	assert_memory_equal(k->out, a, size);
	assert_int_equal(k->out_of_order, 0);
	assert_int_equal(k->misaligned, 0);
	assert_int_equal(k->short_inside, 0);
	assert_int_equal(rw_net_dereg_mr(p->s, ma), 0);
	assert_int_equal(rw_net_dereg_mr(p->r, mb), 0);
	free(k->out);
	free(a);
	free(b);
}

static void sink_takes_every_byte_once_in_order(void **state)
{
	/* inline (1, 24, 100), one full slot, one byte more (two slots),
	 * a fragmented message with an odd tail, one by CMA */
	static const size_t frag_sizes[] = {1, 24, 100, PAYLOAD, PAYLOAD + 1, 40 * 1024 + 3};
	struct rw_shm_stats s0, s1;
	struct recorder k;
	struct pair p;

	(void)state;
	rw_net_destroy(net);
	assert_int_equal(make_net(env_small), 0);
	pair_open(&p);
	for (size_t i = 0; i < RW_ARRAY_SIZE(frag_sizes); i++) {
		size_t size = frag_sizes[i];

		sink_exchange(&p, size, &k);
		/* straight from the slots: nothing went through the buffer */
		assert_int_equal(k.pieces, (int)RW_DIV_UP(size, PAYLOAD));
		assert_int_equal(k.from_buf, 0);
	}
	/* large enough for cross-memory attach, which a sink does not take
	 * (it would read the copy again): the slots carry it */
	rw_shm_stats_get(&s0);
	sink_exchange(&p, 3 * MIB + 5, &k);
	rw_shm_stats_get(&s1);
	assert_int_equal(s1.msgs_cma - s0.msgs_cma, 0);
	assert_int_equal(s1.msgs_frag - s0.msgs_frag, 1);
	assert_int_equal(k.pieces, (int)RW_DIV_UP(3 * MIB + 5, PAYLOAD));
	assert_int_equal(k.from_buf, 0);
	/* and a plain receive of the same size still goes by it */
	exchange(&p, 3 * MIB + 5);
	rw_shm_stats_get(&s0);
	assert_int_equal(s0.msgs_cma - s1.msgs_cma, 1);
	sink_exchange(&p, 0, &k);
	assert_int_equal(k.pieces, 0);
	pair_close(&p);
}

static void sinks_in_flight_match_by_tag(void **state)
{
	static const size_t sizes[3] = {40 * 1024, 100, 20 * 1024 + 7};
	char *a[3], *b[3], *plain_in = malloc(64), *plain_out = malloc(64);
	struct rw_net_mr *ma[3], *mb[3], *mpi, *mpo;
	struct rw_net_req *rs[3], *rr[3], *ps, *pr;
	struct recorder k[3];
	struct pair p;
	size_t got;
	int rcs, rcr;

	(void)state;
	rw_net_destroy(net);
	assert_int_equal(make_net(env_small), 0);
	pair_open(&p);
	assert_non_null(plain_in);
	assert_non_null(plain_out);
	for (int i = 0; i < 3; i++) {
		a[i] = malloc(sizes[i]);
		b[i] = malloc(sizes[i]);
		assert_non_null(a[i]);
		assert_non_null(b[i]);
		rw_test_fill(a[i], sizes[i], 40 + (uint64_t)i);
		recorder_init(&k[i], b[i], sizes[i]);
		assert_int_equal(rw_net_reg_mr(p.s, a[i], sizes[i], RW_PTR_HOST, &ma[i]), 0);
		assert_int_equal(rw_net_reg_mr(p.r, b[i], sizes[i], RW_PTR_HOST, &mb[i]), 0);
		assert_int_equal(sink_recv(p.r, b[i], sizes[i], 1 + i, mb[i], &k[i], &rr[i]), 0);
	}
	/* a plain receive behind them */
	rw_test_fill(plain_out, 64, 77);
	assert_int_equal(rw_net_reg_mr(p.s, plain_out, 64, RW_PTR_HOST, &mpo), 0);
	assert_int_equal(rw_net_reg_mr(p.r, plain_in, 64, RW_PTR_HOST, &mpi), 0);
	assert_int_equal(shm_recv(p.r, plain_in, 64, 4, mpi, &pr), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(shm_send(p.s, a[i], sizes[i], 1 + i, ma[i], &rs[i]), 0);
	assert_int_equal(shm_send(p.s, plain_out, 64, 4, mpo, &ps), 0);
	for (int i = 0; i < 3; i++) {
		drive(rs[i], &rcs, rr[i], &rcr, &got);
		assert_int_equal(rcs, 0);
		assert_int_equal(rcr, 0);
		assert_int_equal(got, sizes[i]);
		assert_memory_equal(k[i].out, a[i], sizes[i]);
		assert_int_equal(k[i].out_of_order + k[i].misaligned + k[i].short_inside, 0);
	}
	drive(ps, &rcs, pr, &rcr, &got);
	assert_int_equal(rcs + rcr, 0);
	assert_memory_equal(plain_in, plain_out, 64);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(rw_net_dereg_mr(p.s, ma[i]), 0);
		assert_int_equal(rw_net_dereg_mr(p.r, mb[i]), 0);
		free(k[i].out);
		free(a[i]);
		free(b[i]);
	}
	assert_int_equal(rw_net_dereg_mr(p.s, mpo), 0);
	assert_int_equal(rw_net_dereg_mr(p.r, mpi), 0);
	free(plain_in);
	free(plain_out);
	pair_close(&p);
}

static void a_failing_sink_fails_the_receive(void **state)
{
	const size_t size = 40 * 1024;
	char *a = malloc(size), *b = malloc(size);
	struct rw_net_mr *ma, *mb;
	struct rw_net_req *rs, *rr;
	struct recorder k;
	struct pair p;
	size_t got = 0;
	int rcs, rcr;

	(void)state;
	rw_net_destroy(net);
	assert_int_equal(make_net(env_small), 0);
	pair_open(&p);
	assert_non_null(a);
	assert_non_null(b);
	rw_test_fill(a, size, 5);
	recorder_init(&k, b, size);
	k.fail_at = 1; /* the second of three fragments */
	assert_int_equal(rw_net_reg_mr(p.s, a, size, RW_PTR_HOST, &ma), 0);
	assert_int_equal(rw_net_reg_mr(p.r, b, size, RW_PTR_HOST, &mb), 0);
	rw_test_log_expect("could not be taken");
	rw_test_log_expect("Input/output error");
	assert_int_equal(sink_recv(p.r, b, size, 3, mb, &k, &rr), 0);
	assert_int_equal(shm_send(p.s, a, size, 3, ma, &rs), 0);
	drive(rs, &rcs, rr, &rcr, &got);
	assert_int_equal(rcr, -EIO);
	/* the connection is failed for good: a later receive says so, and
	 * the sender hears of it (its send was done once in the slots) */
	assert_int_not_equal(shm_recv(p.r, b, size, 3, mb, &rr), 0);
	if (rcs == 0) {
		rcs = shm_send(p.s, a, size, 3, ma, &rs);
		if (rcs == 0)
			rcs = shm_wait_req(rs, NULL, SHM_WAIT_MS);
	}
	assert_int_not_equal(rcs, 0);
	assert_true(rw_test_log_count("could not be taken") >= 1);
	assert_int_equal(rw_net_dereg_mr(p.s, ma), 0);
	assert_int_equal(rw_net_dereg_mr(p.r, mb), 0);
	free(k.out);
	free(a);
	free(b);
	pair_close(&p);
}

/* A peer that cuts a message into a fragment shorter than its slot before
 * the last breaks the rule a sink's pieces rest on: the message fails as
 * a protocol error, and nothing of it reaches the sink. */
static void a_short_fragment_inside_a_message_is_refused(void **state)
{
	const size_t size = 300000;
	char *b = malloc(size);
	struct rw_shm_comm *sc;
	struct rw_shm_slot *slot;
	struct rw_net_mr *mb;
	struct rw_net_req *rr;
	struct recorder k;
	struct pair p;
	uint64_t tail;

	(void)state;
	assert_non_null(b);
	pair_open(&p);
	recorder_init(&k, b, size);
	assert_int_equal(rw_net_reg_mr(p.r, b, size, RW_PTR_HOST, &mb), 0);
	assert_int_equal(sink_recv(p.r, b, size, 5, mb, &k, &rr), 0);
	/* play the sender: its first slot, a 100-byte fragment of 300000 */
	sc = rw_container_of(p.s, struct rw_shm_comm, base);
	tail = __atomic_load_n(&sc->d.seg->tx.tail, __ATOMIC_RELAXED);
	slot = (struct rw_shm_slot *)(sc->d.slots +
				      (size_t)(tail % sc->d.nslots) * sc->d.slot_bytes);
	*slot = (struct rw_shm_slot){
		.kind = RW_SHM_SLOT_FRAG, .tag = 5, .size = size, .seq = 0, .len = 100};
	__atomic_store_n(&slot->stamp, (uint32_t)(tail + 1), __ATOMIC_RELEASE);
	__atomic_store_n(&sc->d.seg->tx.tail, tail + 1, __ATOMIC_RELEASE);
	rw_test_log_expect("short fragment inside a message");
	rw_test_log_expect("receive comm from");
	rw_test_log_expect("send comm to");
	assert_int_equal(shm_wait_req(rr, NULL, SHM_WAIT_MS), -EPROTO);
	assert_int_equal(k.pieces, 0);
	assert_true(rw_test_log_count("short fragment inside a message") >= 1);
	assert_int_equal(rw_net_dereg_mr(p.r, mb), 0);
	free(k.out);
	free(b);
	rw_net_close_send(p.s);
	rw_net_close_recv(p.r);
}

static void bad_sink_arguments_are_refused(void **state)
{
	char b[256], other[64];
	struct rw_net_sink nofn = {.put = NULL};
	struct rw_net_mr *mb;
	struct rw_net_req *rr = NULL;
	struct recorder k;
	struct pair p;

	(void)state;
	pair_open(&p);
	recorder_init(&k, b, sizeof(b));
	assert_int_equal(rw_net_reg_mr(p.r, b, sizeof(b), RW_PTR_HOST, &mb), 0);
	rw_test_log_expect("no sink function");
	rw_test_log_expect("not in a registration");
	rw_test_log_expect("comm of the other direction");
	assert_int_equal(rw_net_irecv_sink(p.r, b, sizeof(b), 1, mb, NULL, &rr), -EINVAL);
	assert_int_equal(rw_net_irecv_sink(p.r, b, sizeof(b), 1, mb, &nofn, &rr), -EINVAL);
	assert_int_equal(rw_net_irecv_sink(p.r, other, sizeof(other), 1, mb, &k.sink, &rr),
			 -EINVAL);
	/* a send comm takes none */
	assert_int_not_equal(rw_net_irecv_sink(p.s, b, sizeof(b), 1, mb, &k.sink, &rr), 0);
	assert_null(rr);
	assert_true(rw_net_has_sink(p.r));
	/* refused calls changed nothing: the connection still carries data */
	assert_int_equal(rw_net_dereg_mr(p.r, mb), 0);
	free(k.out);
	exchange(&p, 1000);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sink_takes_every_byte_once_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sinks_in_flight_match_by_tag, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failing_sink_fails_the_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(a_short_fragment_inside_a_message_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_sink_arguments_are_refused, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

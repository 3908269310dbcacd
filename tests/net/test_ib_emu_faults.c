/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport on the emulated fabric, its faults and its connection
 * set-up (run under sv_run): every injected fault of the emulated NIC as a
 * clear error within RINGWAY_TIMEOUT_MS, naming what the verbs said and the
 * peer (a retry counter exceeded, a remote access error, a dropped
 * connection, a port going down, a queue the NIC reports fatal with nothing
 * left to complete, a buffer without remote write access); a move to RTR
 * that times out while RoCE resolves the peer's address, tried again; and
 * the communicator's traffic class on both ends' QPs.
 */
#define _GNU_SOURCE
#include "net/test_ib_emu.h"

#include <errno.h>
#include <unistd.h>

/* Whether a warning saying what appears within ms: a warning of another
 * thread (the async-event one) may come a moment after the data path's. */
static bool log_within(const char *what, int ms)
{
	for (uint64_t end = rw_now_ms() + (uint64_t)ms;
	     rw_test_log_count(what) < 1 && rw_now_ms() < end;)
		usleep(1000);
	return rw_test_log_count(what) >= 1;
}

/*
 * A sender whose NIC has the fault: the first message goes through, the
 * second fails with want_rc within RINGWAY_TIMEOUT_MS, and the warning
 * names what the verbs said (want_log) and the peer; a second warning
 * (also_log, or NULL) is waited for too, before the pair closes.
 * rx_faults may break the receiver's NIC instead.
 */
static void fault_case(const char *tx_faults, const char *rx_faults, int want_rc,
		       const char *want_log, const char *also_log)
{
	struct rw_net *tx = net_new(roce, tx_faults), *rx = net_new(roce, rx_faults);
	char *sb = malloc(MIB), *rb = calloc(1, 2 * MIB);
	struct rw_net_mr *smr, *rmr;
	struct op ops[2];
	struct pair pr;
	uint64_t t0, el;

	rw_test_log_expect("NET/IB");
	assert_int_equal(pair_open(tx, rx, &pr), 0);
	assert_int_equal(rw_net_reg_mr(pr.s, sb, MIB, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(pr.r, rb, 2 * MIB, RW_PTR_HOST, &rmr), 0);
	rw_test_fill(sb, MIB, 9);
	if (!rx_faults) {
		post_recv(pr.r, rb, MIB, rmr, &ops[1]);
		post_send(pr.s, sb, MIB, smr, &ops[0]);
		assert_true(drive(ops, 2, WAIT_MS));
		assert_int_equal(ops[0].rc, 0);
		assert_int_equal(ops[1].rc, 0);
		assert_memory_equal(sb, rb, MIB);
	}
	t0 = rw_now_ms();
	post_recv(pr.r, rb + MIB, MIB, rmr, &ops[1]);
	post_send(pr.s, sb, MIB, smr, &ops[0]);
	assert_true(drive(&ops[0], 1, TIMEOUT_MS + 2000));
	el = rw_now_ms() - t0;
	if (ops[0].rc != want_rc)
		fail_msg("send: %d (%s), expected %d", ops[0].rc, strerror(-ops[0].rc), want_rc);
	if (el > TIMEOUT_MS)
		fail_msg("the fault took %llu ms to show, RINGWAY_TIMEOUT_MS=%d",
			 (unsigned long long)el, TIMEOUT_MS);
	if (!log_within(want_log, 2000))
		fail_msg("no warning says '%s'", want_log);
	if (also_log && !log_within(also_log, 2000))
		fail_msg("no warning says '%s'", also_log);
	assert_true(rw_test_log_count("peer 127.0.0.1") >= 1);
	/* the receiver learns it too, at the latest when the sender goes */
	assert_int_equal(rw_net_close_send(pr.s), 0);
	assert_true(drive(&ops[1], 1, TIMEOUT_MS + 2000));
	assert_true(ops[1].rc < 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0);
	rw_net_destroy(tx);
	rw_net_destroy(rx);
	free(sb);
	free(rb);
}

static void fault_retry_exceeded(void **state)
{
	(void)state;
	fault_case("retry_exceeded=2", NULL, -ETIMEDOUT,
		   "failed: transport retry counter exceeded (status 12, vendor error 0x91)", NULL);
	assert_true(rw_test_log_count("(GID ::ffff:10.11.0.1, LID 0, QPN 0x") >= 1);
}

static void fault_remote_access(void **state)
{
	(void)state;
	/* the receiver's QP went to the error state: its NIC said so, through
	 * its async-event thread */
	fault_case("remote_access=2", NULL, -EPROTO,
		   "failed: remote access error (status 10, vendor error 0x81)",
		   "local access violation work queue error");
}

static void fault_connection_dropped(void **state)
{
	(void)state;
	fault_case("conn_drop=2", NULL, -ETIMEDOUT, "transport retry counter exceeded", NULL);
}

static void fault_port_down(void **state)
{
	(void)state;
	fault_case("port_down=2", NULL, -ENETDOWN, "sv_roce0 port 1: async event: port error",
		   "sv_roce0 port 1 is down");
}

/* A QP the NIC reports fatal (async event) while its work request will
 * never complete: the comm fails at once with -EIO, named, instead of at
 * RINGWAY_TIMEOUT_MS. */
static void fault_qp_fatal_without_completions(void **state)
{
	(void)state;
	fault_case("qp_fatal=2", NULL, -EIO, "the NIC reported the connection's queue in error",
		   "async event on QP");
}

/* A connection for a communicator with a traffic class of its own (NCCL's
 * ncclConfig_t.trafficClass): both ends' QPs take it, unless
 * RINGWAY_IB_TC is set, which wins; plain connect keeps 0. */
static void traffic_class_of_the_communicator(void **state)
{
	static const char *const roce_tc8[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_IB_TC", "8",
					       NULL};
	struct rw_net *tx = net_new(roce, NULL), *rx = net_new(roce, NULL);
	struct rw_net *tx8 = net_new(roce_tc8, NULL);
	struct pair pr;

	(void)state;
	assert_int_equal(pair_open_tc(tx, rx, 96, &pr), 0);
	one_message(&pr, 4096);
	assert_int_equal(rw_test_log_count("send comm with peer"), 1);
	assert_int_equal(rw_test_log_count("MTU 4096, traffic class 96"), 2); /* both ends */
	assert_int_equal(rw_net_close_send(pr.s), 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0);

	assert_int_equal(pair_open_tc(tx8, rx, 96, &pr), 0); /* RINGWAY_IB_TC wins */
	assert_int_equal(rw_test_log_count("MTU 4096, traffic class 8"), 2);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0);

	assert_int_equal(pair_open(tx, rx, &pr), 0); /* no class: 0 */
	assert_int_equal(rw_test_log_count("MTU 4096, traffic class 0"), 2);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0);
	rw_net_destroy(tx);
	rw_net_destroy(tx8);
	rw_net_destroy(rx);
}

/* RoCE: the move to RTR times out while the kernel resolves the peer's
 * MAC address (a cold neighbour table at a job's start): it is tried again,
 * and the connection comes up and carries data. */
static void rtr_timeouts_are_retried(void **state)
{
	struct rw_net *tx = net_new(roce, "rtr_timeout=2"), *rx = net_new(roce, "rtr_timeout=1");
	struct pair pr;

	(void)state;
	assert_int_equal(pair_open(tx, rx, &pr), 0);
	one_message(&pr, 100000);
	assert_true(rw_test_log_count("did not resolve yet") >= 3);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	assert_int_equal(rw_net_close_recv(pr.r), 0);
	rw_net_destroy(tx);
	rw_net_destroy(rx);
}

/* The receiver's buffer lacks remote write access (its NIC registered it
 * without): the emulator refuses the write, the transport reports it. */
static void buffer_without_remote_write(void **state)
{
	(void)state;
	/* registration 1 is the receiver's CTS staging area, 2 the buffer */
	fault_case(NULL, "mr_no_remote=2", -EPROTO,
		   "failed: remote access error (status 10, vendor error 0x83)", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		CASE(fault_retry_exceeded),
		CASE(fault_remote_access),
		CASE(fault_connection_dropped),
		CASE(fault_port_down),
		CASE(buffer_without_remote_write),
		CASE(rtr_timeouts_are_retried),
		CASE(fault_qp_fatal_without_completions),
		CASE(traffic_class_of_the_communicator),
#undef CASE
	};

	return ib_emu_run("test_ib_emu_faults", tests, RW_ARRAY_SIZE(tests));
}

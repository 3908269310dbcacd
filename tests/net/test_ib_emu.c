/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport on the emulated fabric (run under sv_run, which exports
 * SOFTVERBS_ROOT): devices, GID choice, the HCA filter, why ib is unusable
 * and what RINGWAY_TRANSPORT then does, data split over QPs with the NIC
 * placing writes back to front, every injected fault as a clear error
 * within RINGWAY_TIMEOUT_MS, a buffer without remote write access,
 * GPUDirect detection and iflush, dma-buf registrations and the
 * registration cache.  Faults are knobs of the emulated NIC, read when a
 * transport instance opens its devices, so a faulty and a healthy instance
 * can talk to each other inside one process.
 */
#define _GNU_SOURCE
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/base/rw_base.h"
#include "transport/ib/ib.h"

#define WAIT_MS	   10000
#define TIMEOUT_MS 3000
#define MIB	   (1024 * 1024)

static const char *root; /* the fake machine's "/" (sv_run) */

struct pair {
	struct rw_net_comm *s, *r;
};

struct op {
	struct rw_net_req *req;
	int rc;
	bool done;
	size_t sizes[RW_NET_MAX_RECVS];
};

/* A config: the common settings, then "NAME", "value" pairs (NULL ends). */
static void config(struct rw_config *cfg, const char *const *extra)
{
	char timeout[16];
	const char *pairs[48] = {
		"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SOCKET_FAMILY", "ipv4",
		"RINGWAY_SYSFS_ROOT",	 root,	"RINGWAY_TIMEOUT_MS",	 timeout,
	};
	int n = 8;

	snprintf(timeout, sizeof(timeout), "%d", TIMEOUT_MS);
	for (int i = 0; extra && extra[i] && n < 46; i++)
		pairs[n++] = extra[i];
	pairs[n] = NULL;
	assert_int_equal(rw_test_config(cfg, pairs), 0);
}

/* An ib instance with these settings and NIC fault knobs (may be NULL). */
static int net_open(const char *const *extra, const char *faults, struct rw_net **net, char *why,
		    size_t len)
{
	struct rw_config cfg;
	int rc;

	config(&cfg, extra);
	if (faults)
		setenv("SOFTVERBS_FAULTS", faults, 1);
	rc = rw_ib_create_why(&cfg, net, why, len);
	unsetenv("SOFTVERBS_FAULTS");
	return rc;
}

static struct rw_net *net_new(const char *const *extra, const char *faults)
{
	struct rw_net *n = NULL;
	char why[512] = "";

	if (net_open(extra, faults, &n, why, sizeof(why)))
		fail_msg("rw_ib_create: %s", why);
	return n;
}

static const char *const roce[] = {"RINGWAY_IB_HCA", "=sv_roce0", NULL};

/* A connection from tx (sending) to rx (receiving), both on device 0, for
 * a communicator of traffic class tc (-1: none). */
static int pair_open_tc(struct rw_net *tx, struct rw_net *rx, int tc, struct pair *p)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc = rw_net_listen(rx, 0, handle, &l);

	p->s = p->r = NULL;
	while (!rc && (!p->s || !p->r)) {
		if (!p->s)
			rc = rw_net_connect_tc(tx, 0, handle, tc, &p->s);
		if (!rc && !p->r)
			rc = rw_net_accept(l, &p->r);
		if (!rc && rw_now_ms() > deadline)
			rc = -ETIMEDOUT;
	}
	if (l)
		rw_net_close_listen(l);
	return rc;
}

static int pair_open(struct rw_net *tx, struct rw_net *rx, struct pair *p)
{
	return pair_open_tc(tx, rx, -1, p);
}

static void pair_close(struct pair *p)
{
	assert_int_equal(rw_net_close_send(p->s), 0);
	assert_int_equal(rw_net_close_recv(p->r), 0);
}

/* Test ops until all are done (or failed); false past limit_ms. */
static bool drive(struct op *ops, int n, uint64_t limit_ms)
{
	uint64_t deadline = rw_now_ms() + limit_ms;
	int left = 0;

	for (int i = 0; i < n; i++)
		left += !ops[i].done;
	while (left && rw_now_ms() < deadline) {
		for (int i = 0; i < n; i++) {
			int done = 0, rc;

			if (ops[i].done)
				continue;
			rc = rw_net_test(ops[i].req, &done, ops[i].sizes);
			if (rc || done) {
				ops[i].done = true;
				ops[i].rc = rc;
				left--;
			}
		}
	}
	return left == 0;
}

static void post_recv(struct rw_net_comm *r, void *buf, size_t size, struct rw_net_mr *mr,
		      struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int tag = 1;

	memset(op, 0, sizeof(*op));
	do
		assert_int_equal(rw_net_irecv(r, 1, &buf, &size, &tag, &mr, &op->req), 0);
	while (!op->req && rw_now_ms() < deadline);
	assert_non_null(op->req);
}

static void post_send(struct rw_net_comm *s, void *buf, size_t size, struct rw_net_mr *mr,
		      struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	memset(op, 0, sizeof(*op));
	do
		assert_int_equal(rw_net_isend(s, buf, size, 1, mr, &op->req), 0);
	while (!op->req && rw_now_ms() < deadline);
	assert_non_null(op->req);
}

/* One message of size bytes, checked byte for byte. */
static void one_message(struct pair *p, size_t size)
{
	char *sb = malloc(size + 1), *rb = calloc(1, size + 1);
	struct rw_net_mr *smr, *rmr;
	struct op ops[2];

	rw_test_fill(sb, size, size * 3 + 1);
	assert_int_equal(rw_net_reg_mr(p->s, sb, size, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(p->r, rb, size, RW_PTR_HOST, &rmr), 0);
	post_recv(p->r, rb, size, rmr, &ops[1]);
	post_send(p->s, sb, size, smr, &ops[0]);
	assert_true(drive(ops, 2, WAIT_MS));
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_int_equal(ops[1].sizes[0], size);
	assert_memory_equal(sb, rb, size);
	assert_int_equal(rw_net_dereg_mr(p->s, smr), 0);
	assert_int_equal(rw_net_dereg_mr(p->r, rmr), 0);
	free(sb);
	free(rb);
}

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (rw_ib_live_total() != 0)
		fail_msg("%ld ib objects still alive", rw_ib_live_total());
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

/* --- devices ------------------------------------------------------------------ */

static void devices_gids_and_properties(void **state)
{
	static const char *const gid1[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_IB_GID_INDEX",
					   "1", NULL};
	static const char *const gid9[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_IB_GID_INDEX",
					   "9", NULL};
	struct rw_net *net = net_new(NULL, NULL), *n2;
	struct rw_net_props p;
	struct pair pr;
	char why[512] = "";
	int ndev = 0;

	(void)state;
	/* sv_down0 has no active port; the others come in name order */
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_int_equal(ndev, 2);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_string_equal(p.name, "sv_ib0");
	assert_int_equal(p.speed_mbps, 200000);
	assert_int_equal(p.guid, 0x0002c90300ab0011ull);
	assert_int_equal(p.port, 1);
	assert_null(p.pci_path);
	assert_int_equal(p.ptr_support, RW_PTR_HOST);	 /* no GPU, no nvidia-peermem */
	assert_int_equal(p.max_recvs, RW_NET_MAX_RECVS); /* the CTS FIFO: isend sees receives */
	assert_int_equal(p.reg_is_global, 1);		 /* the per-HCA registration cache */
	assert_true(p.max_p2p_bytes == 30ull << 30);	 /* 30 pieces of at most 1 GiB */
	assert_int_equal(p.max_multi_request_size, 1);
	assert_int_equal(p.vdev_devs[0], 0);
	assert_int_equal(rw_net_get_properties(net, 1, &p), 0);
	assert_string_equal(p.name, "sv_roce0");
	assert_int_equal(p.speed_mbps, 100000);
	assert_int_equal(p.vdev_devs[0], 1);
	assert_int_equal(rw_net_get_properties(net, 2, &p), -EINVAL);
	/* the automatic GID: RoCE v2 with the IPv4-mapped address */
	assert_int_equal(
		rw_test_log_count("sv_roce0 port 1: RoCE, GID 3 ::ffff:10.11.0.1 (RoCE v2)"), 1);
	assert_int_equal(rw_test_log_count("sv_ib0 port 1: InfiniBand, GID 0"), 1);
	assert_int_equal(rw_test_log_count("GPUDirect RDMA off"), 2);
	/* InfiniBand by LID, RoCE by GID: both carry messages */
	assert_int_equal(pair_open(net, net, &pr), 0);
	one_message(&pr, 100000);
	pair_close(&pr);
	rw_net_destroy(net);

	/* RINGWAY_IB_GID_INDEX: the link-local RoCE v2 GID */
	n2 = net_new(gid1, NULL);
	assert_int_equal(rw_test_log_count("GID 1 fe80::202:c9ff:feab:1 (RoCE v2) set by "
					   "RINGWAY_IB_GID_INDEX"),
			 1);
	assert_int_equal(pair_open(n2, n2, &pr), 0);
	one_message(&pr, 5000);
	pair_close(&pr);
	rw_net_destroy(n2);
	assert_int_equal(net_open(gid9, NULL, &n2, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "no usable GID at RINGWAY_IB_GID_INDEX=9"));
}

static void filter_and_why_ib_is_unusable(void **state)
{
	static const struct {
		const char *var, *value, *why;
		int rc;
	} cases[] = {
		{"RINGWAY_IB_HCA", "sv_down0", "no usable port: sv_down0 port 1 is DOWN", -ENODEV},
		{"RINGWAY_IB_HCA", "mlx5", "no device matches RINGWAY_IB_HCA='mlx5'", -ENODEV},
		{"RINGWAY_IB_HCA", "sv_roce0:2", "no device matches", -ENODEV},
		{"RINGWAY_IB_HCA", "sv_roce0:x", "does not parse", -EINVAL},
		{"RINGWAY_IBVERBS_LIB", "/nonexistent/libibverbs.so.1", "cannot load", -ENOENT},
		{"RINGWAY_IBVERBS_LIB", "libc.so.6", "no ibv_get_device_list@IBVERBS_1.1", -ENOSYS},
	};
	static const char *const excl[] = {"RINGWAY_IB_HCA", "^sv_roce", NULL};
	struct rw_net *net = NULL;
	struct rw_net_props p;
	char why[512];
	int ndev;

	(void)state;
	net = net_new(roce, NULL);
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_int_equal(ndev, 1);
	rw_net_destroy(net);
	net = net_new(excl, NULL);
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_int_equal(ndev, 1);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_string_equal(p.name, "sv_ib0");
	rw_net_destroy(net);

	for (size_t i = 0; i < RW_ARRAY_SIZE(cases); i++) {
		const char *extra[] = {cases[i].var, cases[i].value, NULL};

		why[0] = '\0';
		net = NULL;
		assert_int_equal(net_open(extra, NULL, &net, why, sizeof(why)), cases[i].rc);
		assert_null(net);
		if (!strstr(why, cases[i].why))
			fail_msg("%s=%s: reason '%s' lacks '%s'", cases[i].var, cases[i].value, why,
				 cases[i].why);
	}
	/* every port down when the NIC starts */
	assert_int_equal(net_open(roce, "port_down=0", &net, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "sv_roce0 port 1 is DOWN"));
	assert_int_equal(rw_ib_live_total(), 0);
}

/* RINGWAY_TRANSPORT: auto falls back to socket with one INFO line saying
 * why; ib makes the same reason a hard error. */
static void transport_choice(void **state)
{
	static const char *const down_auto[] = {"RINGWAY_IB_HCA", "sv_down0", "RINGWAY_TRANSPORT",
						"auto", NULL};
	static const char *const down_ib[] = {"RINGWAY_IB_HCA", "sv_down0", "RINGWAY_TRANSPORT",
					      "ib", NULL};
	static const char *const ok_auto[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_TRANSPORT",
					      "auto", NULL};
	static const char *const ok_ib[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_TRANSPORT",
					    "ib", NULL};
	struct rw_config cfg;
	struct rw_net *net = NULL;
	struct rw_net_props p;

	(void)state;
	config(&cfg, down_auto);
	assert_int_equal(rw_net_create(&cfg, &net), 0);
	assert_int_equal(rw_test_log_count("auto: ib not usable (no usable port: sv_down0 port 1 "
					   "is DOWN); socket for peers on other hosts"),
			 1);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_null(strstr(p.name, "sv_"));
	rw_net_destroy(net);

	rw_test_log_expect("the ib transport is unusable");
	net = NULL;
	config(&cfg, down_ib);
	assert_int_equal(rw_net_create(&cfg, &net), -ENODEV);
	assert_null(net);
	assert_int_equal(rw_test_log_count("the ib transport is unusable: no usable port: sv_down0 "
					   "port 1 is DOWN"),
			 1);

	config(&cfg, ok_ib);
	assert_int_equal(rw_net_create(&cfg, &net), 0);
	assert_string_equal(rw_net_name(net), "ib");
	rw_net_destroy(net);
	config(&cfg, ok_auto);
	assert_int_equal(rw_net_create(&cfg, &net), 0);
	assert_string_equal(rw_net_name(net), "auto (shm + ib)");
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_string_equal(p.name, "sv_roce0");
	rw_net_destroy(net);
}

/* --- data --------------------------------------------------------------------- */

/* Messages split over 4 QPs, while both NICs place every write back to
 * front: nothing may rely on placement order inside one write. */
static void split_over_qps_any_placement(void **state)
{
	static const char *const four[] = {"RINGWAY_IB_HCA", "=sv_roce0", "RINGWAY_IB_QPS_PER_CONN",
					   "4", NULL};
	static const size_t sizes[] = {0, 1, 4096, 65535, 65536, 100003, MIB, 3 * MIB + 17};
	struct rw_net *tx = net_new(four, "placement=reverse");
	struct rw_net *rx = net_new(four, "placement=reverse");
	struct pair pr;

	(void)state;
	assert_int_equal(pair_open(tx, rx, &pr), 0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(sizes); i++)
		one_message(&pr, sizes[i]);
	assert_true(rw_test_log_count("4 QP(s)") >= 2);
	pair_close(&pr);
	rw_net_destroy(tx);
	rw_net_destroy(rx);
}

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

/* --- memory ------------------------------------------------------------------------- */

static void put_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void gpudirect_peermem_and_iflush(void **state)
{
	struct rw_net *off = net_new(roce, NULL), *net;
	char *buf = calloc(1, 8192), *sb = malloc(8192);
	struct rw_net_mr *mr = NULL, *cuda, *host, *smr;
	struct rw_net_props p;
	struct rw_net_req *req = NULL;
	struct op ops[2];
	struct pair pr;
	void *data = buf;
	int size = 4096, tag = 1;
	size_t sz = 4096;
	char path[512];

	(void)state;
	/* without it: host memory only, and device memory is refused */
	rw_test_log_expect("GPUDirect RDMA is off");
	assert_int_equal(pair_open(off, off, &pr), 0);
	assert_int_equal(rw_net_reg_mr(pr.r, buf, 4096, RW_PTR_CUDA, &mr), -ENOTSUP);
	assert_null(mr);
	pair_close(&pr);
	rw_net_destroy(off);

	/* nvidia-peermem loaded: device memory by ibv_reg_mr, flushes by READ */
	put_file("sys/kernel/mm/memory_peers/nv_mem/version", "1.3\n");
	net = net_new(roce, NULL);
	snprintf(path, sizeof(path), "%s/sys/kernel/mm/memory_peers/nv_mem/version", root);
	unlink(path);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_int_equal(p.ptr_support, RW_PTR_HOST | RW_PTR_CUDA);
	assert_int_equal(rw_test_log_count("GPUDirect RDMA on, by nvidia-peermem"), 1);
	assert_int_equal(pair_open(net, net, &pr), 0);
	assert_int_equal(rw_net_reg_mr(pr.r, buf, 4096, RW_PTR_CUDA, &cuda), 0);
	assert_int_equal(rw_net_reg_mr(pr.r, buf + 4096, 4096, RW_PTR_HOST, &host), 0);
	assert_int_equal(rw_net_reg_mr(pr.s, sb, 8192, RW_PTR_HOST, &smr), 0);
	rw_test_fill(sb, 8192, 4);
	memset(ops, 0, sizeof(ops));
	assert_int_equal(rw_net_irecv(pr.r, 1, &data, &sz, &tag, &cuda, &ops[1].req), 0);
	assert_non_null(ops[1].req);
	post_send(pr.s, sb, 4096, smr, &ops[0]);
	assert_true(drive(ops, 2, WAIT_MS));
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_memory_equal(buf, sb, 4096);
	/* device memory: a request that ends; host memory: nothing to do */
	assert_int_equal(rw_net_iflush(pr.r, 1, &data, &size, &cuda, &req), 0);
	assert_non_null(req);
	memset(ops, 0, sizeof(ops));
	ops[0].req = req;
	assert_true(drive(ops, 1, WAIT_MS));
	assert_int_equal(ops[0].rc, 0);
	data = buf + 4096;
	req = (void *)0x1;
	assert_int_equal(rw_net_iflush(pr.r, 1, &data, &size, &host, &req), 0);
	assert_null(req);
	pair_close(&pr); /* drops the handles too */
	rw_net_destroy(net);
	free(buf);
	free(sb);
}

static void dmabuf_registration(void **state)
{
	const size_t len = 64 * 1024;
	void *iova = (void *)(uintptr_t)0x70000000;
	struct rw_net *net = net_new(roce, NULL), *nodma;
	struct rw_net_mr *rmr, *smr;
	char *sb = malloc(len);
	unsigned char *map;
	struct op ops[2];
	struct pair pr;
	int fd = memfd_create("rw-dmabuf", MFD_CLOEXEC), tag = 1;
	size_t sz = len;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(len + 4096)), 0);
	assert_int_equal(pair_open(net, net, &pr), 0);
	/* the memfd stands in for device memory exported as a dma-buf */
	assert_int_equal(rw_net_reg_mr_dmabuf(pr.r, iova, len, RW_PTR_CUDA, 4096, fd, &rmr), 0);
	assert_int_equal(rw_net_reg_mr(pr.s, sb, len, RW_PTR_HOST, &smr), 0);
	rw_test_fill(sb, len, 8);
	memset(ops, 0, sizeof(ops));
	assert_int_equal(rw_net_irecv(pr.r, 1, &iova, &sz, &tag, &rmr, &ops[1].req), 0);
	assert_non_null(ops[1].req);
	post_send(pr.s, sb, len, smr, &ops[0]);
	assert_true(drive(ops, 2, WAIT_MS));
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	map = mmap(NULL, len + 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_memory_equal(map + 4096, sb, len);
	munmap(map, len + 4096);
	assert_int_equal(rw_net_dereg_mr(pr.r, rmr), 0);
	pair_close(&pr);
	rw_net_destroy(net);
	/* a NIC driver without dma-buf says so once */
	nodma = net_new(roce, "dmabuf=unsupported");
	assert_int_equal(rw_test_log_count("the NIC driver refuses dma-buf"), 1);
	rw_net_destroy(nodma);
	close(fd);
	free(sb);
}

static void registration_cache(void **state)
{
	struct rw_net *net = net_new(roce, NULL);
	char *a = aligned_alloc(4096, 1 << 20), *b = aligned_alloc(4096, 1 << 16);
	struct rw_net_mr *m1, *m2, *m3, *m4, *dev = NULL;
	struct pair pr;

	(void)state;
	assert_int_equal(pair_open(net, net, &pr), 0);
	assert_int_equal(rw_ib_live_regs(), 0);
	assert_int_equal(rw_net_reg_mr(pr.s, a, 1 << 20, RW_PTR_HOST, &m1), 0);
	assert_int_equal(rw_ib_live_regs(), 1);
	/* inside the first: the same registration, from another comm too */
	assert_int_equal(rw_net_reg_mr(pr.r, a + 100, 5000, RW_PTR_HOST, &m2), 0);
	assert_int_equal(rw_net_reg_mr(pr.s, a + 4096, 4096, RW_PTR_HOST, &m3), 0);
	assert_int_equal(rw_ib_live_regs(), 1);
	assert_int_equal(rw_net_reg_mr(pr.s, b, 1 << 16, RW_PTR_HOST, &m4), 0);
	assert_int_equal(rw_ib_live_regs(), 2);
	/* a handle belongs to its comm */
	assert_int_equal(rw_net_dereg_mr(pr.r, m1), -EINVAL);
	assert_int_equal(rw_net_dereg_mr(pr.s, m1), 0);
	assert_int_equal(rw_ib_live_regs(), 2);
	assert_int_equal(rw_net_dereg_mr(pr.s, m3), 0);
	assert_int_equal(rw_net_dereg_mr(pr.r, m2), 0);
	assert_int_equal(rw_ib_live_regs(), 1); /* the last user of a's pages went */
	(void)dev;
	/* closing drops what is left */
	pair_close(&pr);
	assert_int_equal(rw_ib_live_regs(), 0);
	(void)m4;
	rw_net_destroy(net);
	free(a);
	free(b);
}

static void link_layers_must_match(void **state)
{
	static const char *const ib[] = {"RINGWAY_IB_HCA", "=sv_ib0", NULL};
	struct rw_net *tx = net_new(ib, NULL), *rx = net_new(roce, NULL);
	struct pair pr;

	(void)state;
	rw_test_log_expect("dropping connection");
	rw_test_log_expect("connect to 127.0.0.1");
	assert_true(pair_open(tx, rx, &pr) != 0 || (!pr.s || !pr.r));
	assert_true(rw_test_log_count("its device is of another link layer") >= 1);
	rw_net_destroy(tx);
	rw_net_destroy(rx);
}

/* test() on a request of a closed comm reads a free request of the
 * comm's shell, not freed memory (its slab stays with the shell). */
static void stale_request_after_close(void **state)
{
	struct rw_net *net = net_new(roce, NULL);
	char sb[64] = "stale", rb[64];
	struct rw_net_mr *smr, *rmr;
	struct pair p;
	struct op ops[2];
	size_t sizes[RW_NET_MAX_RECVS];
	int done = 0;

	(void)state;
	assert_int_equal(pair_open(net, net, &p), 0);
	assert_int_equal(rw_net_reg_mr(p.s, sb, sizeof(sb), RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(p.r, rb, sizeof(rb), RW_PTR_HOST, &rmr), 0);
	post_recv(p.r, rb, sizeof(rb), rmr, &ops[1]);
	post_send(p.s, sb, sizeof(sb), smr, &ops[0]);
	assert_true(drive(&ops[1], 1, WAIT_MS));
	assert_int_equal(ops[1].rc, 0);
	pair_close(&p); /* the send request was never tested: closing cancelled it */
	assert_int_not_equal(rw_net_test(ops[0].req, &done, sizes), 0);
	assert_int_not_equal(rw_net_test(ops[1].req, &done, sizes), 0);
	assert_int_equal(done, 0);
	rw_net_destroy(net);
}

/* Closed comms and listeners keep at most RW_GRAVE_MAX shells each (the ib
 * graveyard was unbounded): later ones reuse the oldest. */
static void shells_bounded(void **state)
{
	enum { CYCLES = RW_GRAVE_MAX + 16 };
	static struct rw_net_comm *seen[2 * CYCLES];
	struct rw_net *net = net_new(roce, NULL);
	struct pair p;
	int distinct = 0;

	(void)state;
	for (int i = 0; i < CYCLES; i++) {
		struct rw_net_comm *both[2];

		assert_int_equal(pair_open(net, net, &p), 0);
		both[0] = p.s;
		both[1] = p.r;
		for (int k = 0; k < 2; k++) {
			bool known = false;

			for (int j = 0; j < distinct && !known; j++)
				known = seen[j] == both[k];
			if (!known)
				seen[distinct++] = both[k];
		}
		pair_close(&p);
		assert_int_equal(rw_net_close_send(p.s), -EBADF); /* stale: closed */
	}
	assert_true(distinct <= RW_GRAVE_MAX + 2);
	rw_net_destroy(net);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		CASE(devices_gids_and_properties),
		CASE(filter_and_why_ib_is_unusable),
		CASE(transport_choice),
		CASE(split_over_qps_any_placement),
		CASE(fault_retry_exceeded),
		CASE(fault_remote_access),
		CASE(fault_connection_dropped),
		CASE(fault_port_down),
		CASE(buffer_without_remote_write),
		CASE(rtr_timeouts_are_retried),
		CASE(fault_qp_fatal_without_completions),
		CASE(traffic_class_of_the_communicator),
		CASE(gpudirect_peermem_and_iflush),
		CASE(dmabuf_registration),
		CASE(registration_cache),
		CASE(link_layers_must_match),
		CASE(stale_request_after_close),
		CASE(shells_bounded),
#undef CASE
	};

	root = rw_env_get("SOFTVERBS_ROOT");
	if (!root) {
		fprintf(stderr, "test_ib_emu: run it under sv_run (tests/softverbs)\n");
		return 77;
	}
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

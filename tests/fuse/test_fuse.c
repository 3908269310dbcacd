/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NIC fusion (transport/fuse/) on two emulated verbs NICs (run under
 * tests/softverbs/sv_run): makeVDevice's refusals, the merged properties,
 * every byte of messages of many sizes (several in flight) through a
 * virtual device over sv_roce0 and sv_ib0, both NICs carrying pieces, and
 * one NIC failing mid-transfer failing the request with its name, within
 * RINGWAY_TIMEOUT_MS.  Each NIC is its own ib instance, so the fault knob
 * of the emulated NIC can hit one of them only.
 */
#define _GNU_SOURCE
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"
#include "transport/fuse/fuse.h"
#include "transport/ib/ib.h"
#include "transport/socket/sock.h"

#define WAIT_MS	   20000
#define TIMEOUT_MS 3000

static const char *root;

static void config(struct rw_config *cfg, const char *hca)
{
	char timeout[16];
	const char *pairs[] = {"RINGWAY_SOCKET_IFNAME",
			       "=lo",
			       "RINGWAY_SOCKET_FAMILY",
			       "ipv4",
			       "RINGWAY_SYSFS_ROOT",
			       root,
			       "RINGWAY_TIMEOUT_MS",
			       timeout,
			       "RINGWAY_IB_HCA",
			       hca,
			       NULL};

	snprintf(timeout, sizeof(timeout), "%d", TIMEOUT_MS);
	assert_int_equal(rw_test_config(cfg, pairs), 0);
}

static struct rw_net *ib_open(const char *hca, const char *faults)
{
	struct rw_config cfg;
	struct rw_net *n = NULL;
	char why[512] = "";

	config(&cfg, hca);
	if (faults)
		setenv("SOFTVERBS_FAULTS", faults, 1);
	if (rw_ib_create_why(&cfg, &n, why, sizeof(why)))
		fail_msg("rw_ib_create(%s): %s", hca, why);
	unsetenv("SOFTVERBS_FAULTS");
	return n;
}

/* A fuse net over sv_roce0 (device 0) and sv_ib0 (device 1), the second
 * with these fault knobs, and virtual device 2 over both. */
static bool on_socket; /* "socket": two socket instances on lo instead */

static struct rw_net *fused(const char *faults, int *vdev)
{
	struct rw_net *bases[2] = {NULL, NULL};
	struct rw_config cfg;
	struct rw_net *f = NULL;
	int devs[2] = {0, 1};

	config(&cfg, "");
	if (on_socket) {
		assert_int_equal(rw_sock_create(&cfg, &bases[0]), 0);
		assert_int_equal(rw_sock_create(&cfg, &bases[1]), 0);
	} else {
		bases[0] = ib_open("=sv_roce0", NULL);
		bases[1] = ib_open("=sv_ib0", faults);
	}
	assert_int_equal(rw_fuse_create(&cfg, bases, 2, &f), 0);
	assert_int_equal(rw_fuse_make_vdev(f, 2, devs, vdev), 0);
	assert_int_equal(*vdev, 2);
	return f;
}

struct pair {
	struct rw_net_comm *s, *r;
};

static void pair_open(struct rw_net *n, int dev, struct pair *p)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc = rw_net_listen(n, dev, handle, &l);

	assert_int_equal(rc, 0);
	p->s = p->r = NULL;
	while (!rc && (!p->s || !p->r) && rw_now_ms() < deadline) {
		if (!p->s)
			rc = rw_net_connect(n, dev, handle, &p->s);
		if (!rc && !p->r)
			rc = rw_net_accept(l, &p->r);
	}
	assert_int_equal(rc, 0);
	assert_non_null(p->s);
	assert_non_null(p->r);
	assert_int_equal(rw_net_close_listen(l), 0);
}

#define NMSG 4

/* NMSG messages of size bytes in flight at once; every byte checked.
 * Returns the first error of a request (0: all went through). */
static int messages(struct pair *p, size_t size, uint64_t limit_ms)
{
	char *sb[NMSG], *rb[NMSG];
	struct rw_net_mr *smr[NMSG], *rmr[NMSG];
	struct rw_net_req *sr[NMSG] = {0}, *rr[NMSG] = {0};
	int sdone[NMSG] = {0}, rdone[NMSG] = {0}, rc = 0, left = 2 * NMSG, next_send = 0,
	    next_recv = 0;
	size_t got[NMSG] = {0};
	uint64_t deadline = rw_now_ms() + limit_ms;

	for (int i = 0; i < NMSG; i++) {
		sb[i] = malloc(size + 1);
		rb[i] = calloc(1, size + 1);
		rw_test_fill(sb[i], size, size * 7 + (size_t)i);
		assert_int_equal(rw_net_reg_mr(p->s, sb[i], size + 1, RW_PTR_HOST, &smr[i]), 0);
		assert_int_equal(rw_net_reg_mr(p->r, rb[i], size + 1, RW_PTR_HOST, &rmr[i]), 0);
	}
	while (left && !rc && rw_now_ms() < deadline) {
		for (int i = 0; i < NMSG && !rc; i++) {
			int tag = 5, done = 0;
			size_t cap = size + 1; /* a buffer larger than the message */
			void *d = rb[i];

			if (i == next_recv && !rr[i] && !rdone[i]) {
				rc = rw_net_irecv(p->r, 1, &d, &cap, &tag, &rmr[i], &rr[i]);
				next_recv += rr[i] != NULL;
			}
			/* sends are matched in order, as receives are posted */
			if (!rc && i == next_send && rr[i] && !sr[i] && !sdone[i]) {
				rc = rw_net_isend(p->s, sb[i], size, tag, smr[i], &sr[i]);
				next_send += sr[i] != NULL;
			}
			if (!rc && sr[i]) {
				rc = rw_net_test(sr[i], &done, NULL);
				if (rc || done) {
					sr[i] = NULL;
					sdone[i] = 1;
					left--;
				}
			}
			if (!rc && rr[i]) {
				rc = rw_net_test(rr[i], &done, &got[i]);
				if (rc || done) {
					rr[i] = NULL;
					rdone[i] = 1;
					left--;
				}
			}
		}
	}
	if (!rc && left)
		fail_msg("%d of %d requests still pending after %llu ms (size %zu)", left, 2 * NMSG,
			 (unsigned long long)limit_ms, size);
	for (int i = 0; i < NMSG; i++) {
		if (!rc) {
			assert_int_equal(got[i], size);
			assert_memory_equal(sb[i], rb[i], size);
		}
		rw_net_dereg_mr(p->s, smr[i]);
		rw_net_dereg_mr(p->r, rmr[i]);
		free(sb[i]);
		free(rb[i]);
	}
	return rc;
}

static void test_refusals(void **state)
{
	struct rw_net *bases[2] = {NULL, ib_open("=sv_roce0,sv_ib0", NULL)};
	struct rw_config cfg;
	struct rw_net *f = NULL;
	int d = -1;

	(void)state;
	config(&cfg, "");
	assert_int_equal(rw_sock_create(&cfg, &bases[0]), 0); /* device 0: lo, socket */
	assert_int_equal(rw_fuse_create(&cfg, bases, 2, &f), 0);
	assert_int_equal(rw_fuse_nphys(f), 3);

	rw_test_log_expect("makeVDevice");
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){1, 1}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("device 1 is listed twice"), 1);
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){1, 7}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("device 7 is out of range"), 1);
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){-1, 2}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("device -1 is out of range"), 1);
	assert_int_equal(rw_fuse_make_vdev(f, 5, (int[]){0, 1, 2, 0, 1}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("makeVDevice(ndevs=5)"), 1);
	assert_int_equal(rw_fuse_make_vdev(f, 1, (int[]){1}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("makeVDevice(ndevs=1)"), 1);
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){1, 0}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("device 1 (sv_ib0, ib) and device 0 (lo, socket) are "
					   "of different transports"),
			 1);
	assert_int_equal(d, -1);

	/* a good one, then one that names it */
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){1, 2}, &d), 0);
	assert_int_equal(d, 3);
	assert_int_equal(rw_fuse_make_vdev(f, 2, (int[]){3, 1}, &d), -EINVAL);
	assert_int_equal(rw_test_log_count("device 3 is itself a virtual device"), 1);
	rw_net_destroy(f);
}

static void test_props(void **state)
{
	struct rw_net_props a, b, v;
	struct rw_net *f;
	int vdev, ndev = 0;

	(void)state;
	f = fused(NULL, &vdev);
	assert_int_equal(rw_net_devices(f, &ndev), 0);
	assert_int_equal(ndev, 3);
	assert_int_equal(rw_net_get_properties(f, 0, &a), 0);
	assert_int_equal(rw_net_get_properties(f, 1, &b), 0);
	assert_int_equal(rw_net_get_properties(f, vdev, &v), 0);
	assert_string_equal(v.name, "sv_roce0+sv_ib0");
	assert_int_equal(v.speed_mbps, a.speed_mbps + b.speed_mbps);
	assert_true(v.speed_mbps > a.speed_mbps && v.speed_mbps > b.speed_mbps);
	assert_true(v.latency_us >= a.latency_us && v.latency_us >= b.latency_us);
	assert_int_equal(v.port, a.port);
	assert_true(v.guid == a.guid);
	assert_true(v.pci_path == a.pci_path ||
		    (v.pci_path && a.pci_path && strcmp(v.pci_path, a.pci_path) == 0));
	assert_int_equal(v.vdev_ndevs, 2);
	assert_int_equal(v.vdev_devs[0], 0);
	assert_int_equal(v.vdev_devs[1], 1);
	assert_int_equal(v.max_recvs, 1);
	assert_int_equal(v.ptr_support & ~(a.ptr_support & b.ptr_support), 0);
	rw_net_destroy(f);
}

static void test_data(void **state)
{
	static const size_t sizes[] = {0,
				       1,
				       4095,
				       65535,
				       65536,
				       65537,
				       100003,
				       (1 << 20) - 1,
				       1 << 20,
				       (3 << 20) + 5,
				       (8 << 20) + 7};
	struct rw_fuse_member_stats st[RW_FUSE_MAX_MEMBERS + 1];
	struct pair p;
	struct rw_net *f;
	int vdev, n = 0;

	(void)state;
	f = fused(NULL, &vdev);
	pair_open(f, vdev, &p);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_int_equal(messages(&p, sizes[i], WAIT_MS), 0);
	/* the control connection and both data connections carried pieces */
	assert_int_equal(rw_fuse_comm_stats(p.r, &n, st), 0);
	assert_int_equal(n, 3);
	assert_string_equal(st[0].nic, on_socket ? "lo" : "sv_roce0");
	assert_string_equal(st[1].nic, on_socket ? "lo" : "sv_roce0");
	assert_string_equal(st[2].nic, on_socket ? "lo" : "sv_ib0");
	for (int i = 0; i < n; i++) {
		print_message("# %s connection %d (%s): %llu bytes in %llu pieces\n",
			      i ? "data" : "control", i, st[i].nic, (unsigned long long)st[i].bytes,
			      (unsigned long long)st[i].pieces);
		assert_true(st[i].bytes >= (1u << 20));
	}
	assert_int_equal(rw_fuse_comm_stats(p.s, &n, st), 0);
	assert_true(st[1].bytes >= (1u << 20) && st[2].bytes >= (1u << 20));
	assert_int_equal(rw_net_close_send(p.s), 0);
	assert_int_equal(rw_net_close_recv(p.r), 0);
	rw_net_destroy(f);
}

/* A message larger than its receive buffer fails on both sides with
 * -EMSGSIZE, at once (not after RINGWAY_TIMEOUT_MS). */
static void test_too_big(void **state)
{
	size_t big = 1 << 20, cap = big / 2;
	char *sb = calloc(1, big), *rb = calloc(1, big);
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *sr = NULL, *rr = NULL;
	struct pair p;
	struct rw_net *f;
	uint64_t t0 = rw_now_ms();
	int vdev, tag = 1, src = 0, rrc = 0, sdone = 0, rdone = 0;
	void *d = rb;

	(void)state;
	f = fused(NULL, &vdev);
	pair_open(f, vdev, &p);
	rw_test_log_expect("fuse:");
	rw_test_log_expect("larger");
	rw_test_log_expect("socket:");
	rw_test_log_expect("NET/IB");
	assert_int_equal(rw_net_reg_mr(p.s, sb, big, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(p.r, rb, big, RW_PTR_HOST, &rmr), 0);
	while (!rr && rw_now_ms() - t0 < WAIT_MS)
		assert_int_equal(rw_net_irecv(p.r, 1, &d, &cap, &tag, &rmr, &rr), 0);
	while (!sr && rw_now_ms() - t0 < WAIT_MS)
		assert_int_equal(rw_net_isend(p.s, sb, big, tag, smr, &sr), 0);
	assert_non_null(rr);
	assert_non_null(sr);
	t0 = rw_now_ms(); /* "at once" counts from the posts, not the set-up */
	while ((!sdone || !rdone) && rw_now_ms() - t0 < TIMEOUT_MS / 2) {
		if (!sdone) {
			src = rw_net_test(sr, &sdone, NULL);
			sdone |= src != 0;
		}
		if (!rdone) {
			rrc = rw_net_test(rr, &rdone, NULL);
			rdone |= rrc != 0;
		}
	}
	assert_int_equal(rrc, -EMSGSIZE);
	assert_int_equal(src, -EMSGSIZE);
	rw_net_close_send(p.s);
	rw_net_close_recv(p.r);
	rw_net_destroy(f);
	free(sb);
	free(rb);
}

/* sv_ib0 drops its connections at its 40th message: the transfer fails,
 * naming sv_ib0, well within the wait limit. */
static void test_nic_fails(void **state)
{
	struct pair p;
	struct rw_net *f;
	uint64_t t0;
	int vdev, rc = 0;

	(void)state;
	f = fused("conn_drop=40", &vdev);
	pair_open(f, vdev, &p);
	rw_test_log_expect("sv_ib0");
	rw_test_log_expect("ib:");
	rw_test_log_expect("fuse:");
	t0 = rw_now_ms();
	for (int i = 0; i < 20 && rc == 0; i++)
		rc = messages(&p, 4 << 20, 4 * TIMEOUT_MS);
	assert_true(rc < 0);
	assert_true(rw_now_ms() - t0 < 40 * TIMEOUT_MS);
	assert_true(rw_test_log_count("fuse: sv_roce0+sv_ib0: NIC sv_ib0") >= 1 ||
		    rw_test_log_count("fuse: sv_roce0+sv_ib0: nothing moved") >= 1);
	rw_net_close_send(p.s);
	rw_net_close_recv(p.r);
	rw_net_destroy(f);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(test_props, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(test_data, rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(test_too_big, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(test_nic_fails, rw_test_setup_log,
						rw_test_teardown_log),
	};

	const struct CMUnitTest socket_tests[] = {
		cmocka_unit_test_setup_teardown(test_data, rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(test_too_big, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	if (argc > 1 && strcmp(argv[1], "socket") == 0) {
		on_socket = true;
		root = "";
		return cmocka_run_group_tests(socket_tests, NULL, NULL);
	}
	root = getenv("SOFTVERBS_ROOT");
	if (!root) {
		fprintf(stderr, "test_fuse: run under sv_run (SOFTVERBS_ROOT unset)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

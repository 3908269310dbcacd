/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport on the emulated fabric (run under sv_run, which exports
 * SOFTVERBS_ROOT): devices, GID choice, the HCA filter, why ib is unusable
 * and what RINGWAY_TRANSPORT then does, data split over QPs with the NIC
 * placing writes back to front, GPUDirect detection and iflush, dma-buf
 * registrations and the registration cache, link layers that must match,
 * stale requests and the closed comms' shells (the faults are in
 * test_ib_emu_faults.c).  Faults are knobs of the emulated NIC, read when a
 * transport instance opens its devices, so a faulty and a healthy instance
 * can talk to each other inside one process.
 */
#define _GNU_SOURCE
#include "net/test_ib_emu.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
		CASE(gpudirect_peermem_and_iflush),
		CASE(dmabuf_registration),
		CASE(registration_cache),
		CASE(link_layers_must_match),
		CASE(stale_request_after_close),
		CASE(shells_bounded),
#undef CASE
	};

	return ib_emu_run("test_ib_emu", tests, RW_ARRAY_SIZE(tests));
}

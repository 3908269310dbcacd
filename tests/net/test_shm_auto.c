/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport inside auto: auto picks shm between processes of one
 * host and socket elsewhere (the handle says which), and the properties
 * hold for every comm.
 */
#define _GNU_SOURCE
#include "net/test_shm_fixture.h"

#include "transport/net_auto_proto.h"

/* --- auto ------------------------------------------------------------------- */

static void auto_picks_shm_here_and_socket_elsewhere(void **state)
{
	static const char *const env_auto[] = {
		"RINGWAY_TRANSPORT",
		"auto",
		"RINGWAY_SOCKET_IFNAME",
		"=lo",
		"RINGWAY_SOCKET_FAMILY",
		"ipv4",
		NULL,
	};
	static const char *const env_ib[] = {"RINGWAY_TRANSPORT", "ib", NULL};
	char line[128];
	static const char *const env_shm[] = {"RINGWAY_TRANSPORT", "shm", NULL};
	struct rw_net *a = NULL;
	char raw[RW_NET_HANDLE_MAXSIZE];
	struct rw_auto_handle h;
	struct rw_net_listen *l;
	struct pair p;

	(void)state;
	rw_net_destroy(net);
	net = NULL;
	rw_test_log_expect("ib"); /* RINGWAY_TRANSPORT=ib without RDMA: an error, said once */
	if (rw_test_config(&cfg, env_ib) == 0 && rw_net_create(&cfg, &a) == 0) {
		assert_string_equal(rw_net_name(a), "ib"); /* this host has RDMA */
		rw_net_destroy(a);
	}

	assert_int_equal(rw_test_config(&cfg, env_shm), 0);
	assert_int_equal(rw_net_create(&cfg, &net), 0);
	assert_string_equal(rw_net_name(net), "shm");
	rw_net_destroy(net);

	assert_int_equal(rw_test_config(&cfg, env_auto), 0);
	assert_int_equal(rw_net_create(&cfg, &net), 0);
	assert_int_equal(strncmp(rw_net_name(net), "auto (shm + ", 12), 0);
	assert_int_equal(rw_net_listen(net, 0, raw, &l), 0);
	memcpy(&h, raw, sizeof(h));
	assert_int_equal(h.magic, RW_AUTO_MAGIC);
	assert_int_equal(h.flags, RW_AUTO_HAS_SOCK | RW_AUTO_HAS_SHM);

	/* this host: shm, said once at INFO */
	rw_test_log_reset();
	p.s = p.r = NULL;
	while (!p.s || !p.r) {
		if (!p.s)
			assert_int_equal(rw_net_connect(net, 0, raw, &p.s), 0);
		if (!p.r)
			assert_int_equal(rw_net_accept(l, &p.r), 0);
	}
	assert_string_equal(rw_net_name(p.s->net), "shm");
	assert_string_equal(rw_net_name(p.r->net), "shm");
	assert_int_equal(rw_test_log_count("uses shm (peer on this host)"), 1);
	exchange(&p, 300000);
	pair_close(&p);

	/* a handle from "another host": the network listener in it (ib where
	 * this host has RDMA, else socket) */
	h.shm.host.boot_id[5] ^= 0x10;
	memcpy(raw, &h, sizeof(h));
	p.s = p.r = NULL;
	for (uint64_t end = rw_now_ms() + SHM_WAIT_MS; !p.s || !p.r;) {
		if (!p.s)
			assert_int_equal(rw_net_connect(net, 0, raw, &p.s), 0);
		if (!p.r)
			assert_int_equal(rw_net_accept(l, &p.r), 0);
		assert_true(rw_now_ms() < end);
	}
	assert_string_not_equal(rw_net_name(p.s->net), "shm");
	assert_string_equal(rw_net_name(p.r->net), rw_net_name(p.s->net));
	snprintf(line, sizeof(line), "uses %s (peer on another host or network namespace)",
		 rw_net_name(p.s->net));
	assert_int_equal(rw_test_log_count(line), 1);
	exchange(&p, 300000);
	pair_close(&p);
	assert_int_equal(rw_net_close_listen(l), 0);
	rw_net_destroy(net);
	net = NULL;
	assert_int_equal(rw_test_config(&cfg, env_default), 0);
	assert_int_equal(rw_shm_create(&cfg, &net), 0); /* for teardown */
}

/*
 * getProperties: what shm tells NCCL (README table), and the composite's
 * rule: its device is the network's, but every limit must hold for an shm
 * comm too, so each is the smaller of the two.
 */
static void properties_hold_for_every_comm(void **state)
{
	static const char *const env_auto[] = {
		"RINGWAY_TRANSPORT",
		"auto",
		"RINGWAY_SOCKET_IFNAME",
		"=lo",
		"RINGWAY_SOCKET_FAMILY",
		"ipv4",
		NULL,
	};
	static const char *const env_sock[] = {
		"RINGWAY_TRANSPORT",
		"socket",
		"RINGWAY_SOCKET_IFNAME",
		"=lo",
		"RINGWAY_SOCKET_FAMILY",
		"ipv4",
		NULL,
	};
	struct rw_net_props s, n, a;
	struct rw_net *sock = NULL, *au = NULL;
	struct rw_net_mr *mr = (void *)0x1;
	struct pair p;
	char buf[64];

	(void)state;
	assert_int_equal(rw_net_get_properties(net, 0, &s), 0);
	assert_string_equal(s.name, "shm");
	assert_int_equal(s.max_recvs, RW_NET_MAX_RECVS); /* isend sees the posted receives */
	assert_int_equal(s.reg_is_global, 0);		 /* a registration is its comm's */
	assert_true(s.max_p2p_bytes == (1ull << 40));	 /* NCCL's ceiling */
	assert_int_equal(s.max_multi_request_size, 1);
	assert_true(s.speed_mbps > 0 && s.latency_us > 0);
	assert_true(s.ptr_support & RW_PTR_HOST);
	assert_false(s.ptr_support & RW_PTR_DMABUF);

	/* dma-buf registrations (auto may advertise them): device memory only */
	pair_open(&p);
	rw_test_log_expect("regMr");
	assert_int_equal(rw_net_reg_mr_dmabuf(p.s, buf, sizeof(buf), RW_PTR_HOST, 0, -1, &mr),
			 -EINVAL);
	assert_true(mr == (void *)0x1);
	pair_close(&p);

	assert_int_equal(rw_test_config(&cfg, env_sock), 0);
	assert_int_equal(rw_net_create(&cfg, &sock), 0);
	assert_int_equal(rw_net_get_properties(sock, 0, &n), 0);
	assert_int_equal(rw_test_config(&cfg, env_auto), 0);
	assert_int_equal(rw_net_create(&cfg, &au), 0);
	if (strcmp(rw_net_name(au), "auto (shm + socket)") != 0) {
		rw_net_destroy(au);
		rw_net_destroy(sock);
		skip(); /* this host has RDMA: the network transport is ib */
	}
	assert_int_equal(rw_net_get_properties(au, 0, &a), 0);
	assert_string_equal(a.name, n.name); /* the network's device */
	assert_int_equal(a.speed_mbps, n.speed_mbps);
	assert_int_equal(a.max_recvs, RW_MIN(n.max_recvs, s.max_recvs));
	assert_true(a.max_p2p_bytes == RW_MIN(n.max_p2p_bytes, s.max_p2p_bytes));
	assert_true(a.max_coll_bytes == RW_MIN(n.max_coll_bytes, s.max_coll_bytes));
	assert_int_equal(a.max_multi_request_size,
			 RW_MIN(n.max_multi_request_size, s.max_multi_request_size));
	assert_int_equal(a.reg_is_global, n.reg_is_global && s.reg_is_global);
	assert_int_equal(a.ptr_support & ~(RW_PTR_CUDA | RW_PTR_DMABUF),
			 n.ptr_support & ~(RW_PTR_CUDA | RW_PTR_DMABUF));
	if (!(s.ptr_support & RW_PTR_CUDA))
		assert_int_equal(a.ptr_support & (RW_PTR_CUDA | RW_PTR_DMABUF), 0);
	rw_net_destroy(au);
	rw_net_destroy(sock);
	assert_int_equal(rw_test_config(&cfg, env_default), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(auto_picks_shm_here_and_socket_elsewhere, setup,
						teardown),
		cmocka_unit_test_setup_teardown(properties_hold_for_every_comm, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

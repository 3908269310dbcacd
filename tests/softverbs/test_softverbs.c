/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated provider, through the real libibverbs (linked here, as any
 * verbs application would be): devices and ports from the fake sysfs, the
 * RC QP state machine, WRITE / WRITE_WITH_IMM / READ / SEND in one process
 * and across processes, the access checks, RNR, and every fault knob.
 * Runs under sv_run (tests/softverbs/sv_run.c).
 */
#define _GNU_SOURCE
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "common/rw_common.h"

#define VERR_ACCESS 0x83
#define VERR_BOUNDS 0x84
#define BUF	    (256 * 1024)

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int link_layer;
	uint16_t lid;
	union ibv_gid gid;
};

struct ep {
	struct node *n;
	struct ibv_qp *qp;
};

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	assert_non_null(l);
	for (int i = 0; l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	return ctx;
}

static void node_open(struct node *n, const char *dev, const char *faults)
{
	struct ibv_port_attr pa;

	if (faults)
		setenv("SOFTVERBS_FAULTS", faults, 1);
	else
		unsetenv("SOFTVERBS_FAULTS");
	n->ctx = open_dev(dev);
	unsetenv("SOFTVERBS_FAULTS");
	assert_non_null(n->ctx);
	n->pd = ibv_alloc_pd(n->ctx);
	assert_non_null(n->pd);
	n->cq = ibv_create_cq(n->ctx, 1024, NULL, NULL, 0);
	assert_non_null(n->cq);
	assert_int_equal(ibv_query_port(n->ctx, 1, &pa), 0);
	n->link_layer = pa.link_layer;
	n->lid = pa.lid;
	assert_int_equal(
		ibv_query_gid(n->ctx, 1, n->link_layer == IBV_LINK_LAYER_ETHERNET ? 3 : 0, &n->gid),
		0);
}

static void node_close(struct node *n)
{
	assert_int_equal(ibv_destroy_cq(n->cq), 0);
	assert_int_equal(ibv_dealloc_pd(n->pd), 0);
	assert_int_equal(ibv_close_device(n->ctx), 0);
}

static struct ibv_qp *qp_new(struct node *n)
{
	struct ibv_qp_init_attr a = {
		.send_cq = n->cq,
		.recv_cq = n->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 64,
			.max_recv_wr = 64,
			.max_send_sge = 2,
			.max_recv_sge = 2,
			.max_inline_data = 64},
	};
	struct ibv_qp *qp = ibv_create_qp(n->pd, &a);

	assert_non_null(qp);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	return qp;
}

static int qp_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS towards (peer node's address, qpn). */
static void qp_connect(struct ibv_qp *qp, const struct node *peer, uint32_t qpn, uint8_t timeout,
		       uint8_t rnr_retry, uint8_t min_rnr)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096,
		.dest_qp_num = qpn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = min_rnr,
		.ah_attr = {.port_num = 1},
	};

	if (peer->link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.sgid_index = 3;
		a.ah_attr.grh.hop_limit = 64;
	} else {
		a.ah_attr.dlid = peer->lid;
	}
	assert_int_equal(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			 0);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				 .timeout = timeout,
				 .retry_cnt = 7,
				 .rnr_retry = rnr_retry,
				 .max_rd_atomic = 4};
	assert_int_equal(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC),
			 0);
	assert_int_equal(qp->state, IBV_QPS_RTS);
}

/* A connected pair of QPs on one node (loopback). */
static void pair(struct node *n, struct ibv_qp **a, struct ibv_qp **b, uint8_t timeout)
{
	*a = qp_new(n);
	*b = qp_new(n);
	assert_int_equal(qp_init(*a), 0);
	assert_int_equal(qp_init(*b), 0);
	qp_connect(*a, n, (*b)->qp_num, timeout, 7, 1);
	qp_connect(*b, n, (*a)->qp_num, timeout, 7, 1);
}

/* Poll one completion, waiting at most ms. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = rw_now_ms() + (uint64_t)ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		usleep(100);
	} while (rw_now_ms() < end);
	return 0;
}

static int post_write(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *l, void *src,
		      uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = len, .lkey = l->lkey};
	struct ibv_send_wr wr =
				   {
					   .wr_id = id,
					   .sg_list = &sge,
					   .num_sge = len ? 1 : 0,
					   .opcode = op,
					   .send_flags = IBV_SEND_SIGNALED,
					   .imm_data = htonl(imm),
					   .wr.rdma = {.remote_addr = raddr, .rkey = rkey},
				   },
			   *bad = NULL;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, uint64_t id, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr ? mr->lkey : 0};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = mr ? 1 : 0}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static const int ACC = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

/* --- tests -------------------------------------------------------------- */

static void lists_devices_and_ports(void **state)
{
	struct ibv_device **l;
	struct ibv_context *c;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	int n = 0;

	(void)state;
	l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_int_equal(n, 3);
	ibv_free_device_list(l);

	c = open_dev("sv_roce0");
	assert_non_null(c);
	assert_int_equal(ibv_query_device(c, &da), 0);
	assert_int_equal(da.phys_port_cnt, 1);
	assert_int_equal(ibv_query_port(c, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 4);
	assert_int_equal(ibv_query_gid_ex(c, 1, 3, &ge, 0), 0);
	assert_int_equal(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(ge.gid.raw[10], 0xff);
	assert_int_equal(ge.gid.raw[12], 10);
	assert_int_equal(ibv_query_gid_ex(c, 1, 2, &ge, 0), 0);
	assert_int_equal(ge.gid_type, IBV_GID_TYPE_ROCE_V1);
	assert_int_equal(ibv_close_device(c), 0);

	c = open_dev("sv_ib0");
	assert_non_null(c);
	assert_int_equal(ibv_query_port(c, 1, &pa), 0);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
	assert_int_equal(pa.lid, 0x11);
	assert_int_equal(ibv_query_gid_ex(c, 1, 0, &ge, 0), 0);
	assert_int_equal(ge.gid_type, IBV_GID_TYPE_IB);
	assert_int_equal(ibv_close_device(c), 0);

	c = open_dev("sv_down0");
	assert_non_null(c);
	assert_int_equal(ibv_query_port(c, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_DOWN);
	assert_int_equal(ibv_close_device(c), 0);
}

static void qp_state_machine_checks(void **state)
{
	struct node n;
	struct ibv_qp *qp;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
	struct ibv_qp_init_attr ia;
	char buf[64];
	struct ibv_mr *mr;

	(void)state;
	node_open(&n, "sv_roce0", NULL);
	qp = qp_new(&n);
	mr = ibv_reg_mr(n.pd, buf, sizeof(buf), ACC);
	assert_non_null(mr);
	/* RESET -> RTR skips INIT */
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	/* RESET -> INIT without the access flags */
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1};
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
			 EINVAL);
	/* a port that does not exist */
	a.port_num = 2;
	assert_int_equal(
		ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		EINVAL);
	assert_int_equal(qp_init(qp), 0);
	assert_int_equal(qp->state, IBV_QPS_INIT);
	/* posting a send below RTS */
	assert_int_equal(
		post_write(qp, IBV_WR_RDMA_WRITE, mr, buf, 8, (uintptr_t)buf, mr->rkey, 0, 1),
		EINVAL);
	/* INIT -> RTR without MIN_RNR_TIMER, and RoCE without a GRH */
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
				 .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = qp->qp_num,
				 .ah_attr = {.dlid = 1, .port_num = 1}};
	assert_int_equal(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC),
			 EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
			 EINVAL);
	assert_int_equal(qp->state, IBV_QPS_INIT);
	qp_connect(qp, &n, qp->qp_num, 14, 7, 1); /* connected to itself */
	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, IBV_QPS_RTS);
	assert_int_equal(ia.cap.max_send_wr, 64);
	/* any state -> ERR -> RESET */
	a.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	/* a PD with live objects cannot go */
	assert_int_equal(ibv_dealloc_pd(n.pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	node_close(&n);
}

static void write_imm_read_send_loopback(void **state)
{
	struct node n;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr, *dst_mr;
	uint8_t *src = malloc(BUF), *dst = calloc(1, BUF);
	struct ibv_wc wc[2];
	int got_send = 0, got_recv = 0;

	(void)state;
	node_open(&n, "sv_roce0", NULL);
	pair(&n, &a, &b, 14);
	rw_test_fill(src, BUF, 7);
	src_mr = ibv_reg_mr(n.pd, src, BUF, ACC);
	dst_mr = ibv_reg_mr(n.pd, dst, BUF, ACC);
	assert_non_null(src_mr);
	assert_non_null(dst_mr);

	assert_int_equal(post_recv(b, 100, NULL, NULL, 0), 0);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE_WITH_IMM, src_mr, src, BUF, (uintptr_t)dst,
				    dst_mr->rkey, 0xabcd, 1),
			 0);
	while (got_send + got_recv < 2) {
		assert_int_equal(poll1(n.cq, wc, 5000), 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		if (wc[0].opcode == IBV_WC_RDMA_WRITE) {
			assert_int_equal(wc[0].wr_id, 1);
			got_send++;
		} else {
			assert_int_equal(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
			assert_int_equal(wc[0].wr_id, 100);
			assert_int_equal(wc[0].byte_len, BUF);
			assert_int_equal(ntohl(wc[0].imm_data), 0xabcd);
			assert_true(wc[0].wc_flags & IBV_WC_WITH_IMM);
			assert_int_equal(wc[0].qp_num, b->qp_num);
			got_recv++;
		}
	}
	assert_memory_equal(src, dst, BUF);

	/* READ back 1 KiB from the far end into the start of src */
	{
		struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 1024, .lkey = src_mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 2,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_READ,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = {(uintptr_t)dst + 4096, dst_mr->rkey}},
				   *bad;

		assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
		assert_int_equal(poll1(n.cq, wc, 5000), 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
		assert_int_equal(wc[0].byte_len, 1024);
		assert_memory_equal(src, dst + 4096, 1024);
	}
	/* SEND into a posted buffer */
	assert_int_equal(post_recv(b, 101, dst_mr, dst, 512), 0);
	assert_int_equal(post_write(a, IBV_WR_SEND, src_mr, src + 8192, 300, 0, 0, 0, 3), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(poll1(n.cq, wc, 5000), 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		if (wc[0].opcode == IBV_WC_RECV)
			assert_int_equal(wc[0].byte_len, 300);
	}
	assert_memory_equal(dst, src + 8192, 300);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	node_close(&n);
	free(src);
	free(dst);
}

static void async_event_within(struct ibv_context *c, enum ibv_event_type type, int ms)
{
	struct pollfd p = {.fd = c->async_fd, .events = POLLIN};
	struct ibv_async_event ev;

	assert_int_equal(poll(&p, 1, ms), 1);
	assert_int_equal(ibv_get_async_event(c, &ev), 0);
	assert_int_equal(ev.event_type, type);
	ibv_ack_async_event(&ev);
}

static void refuses_bad_bounds_and_access(void **state)
{
	struct node n;
	struct ibv_qp *a, *b;
	uint8_t *src = calloc(1, 8192), *dst = calloc(1, 8192), *ro = calloc(1, 8192);
	struct ibv_mr *smr, *dmr, *romr;
	struct ibv_wc wc;
	int seen_flush = 0;

	(void)state;
	node_open(&n, "sv_ib0", NULL);
	memset(src, 0x5a, 8192);
	smr = ibv_reg_mr(n.pd, src, 8192, ACC);
	dmr = ibv_reg_mr(n.pd, dst, 4096, ACC);
	romr = ibv_reg_mr(n.pd, ro, 8192, IBV_ACCESS_LOCAL_WRITE); /* no remote write */
	assert_non_null(romr);

	/* one byte past the end of the registration */
	pair(&n, &a, &b, 14);
	assert_int_equal(post_recv(b, 9, NULL, NULL, 0), 0);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE, smr, src, 4096, (uintptr_t)dst + 1,
				    dmr->rkey, 0, 1),
			 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(poll1(n.cq, &wc, 5000), 1);
		if (wc.wr_id == 1) {
			assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
			assert_int_equal(wc.vendor_err, VERR_BOUNDS);
		} else {
			/* the responder QP went to ERR: its receive is flushed */
			assert_int_equal(wc.wr_id, 9);
			assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
			seen_flush = 1;
		}
	}
	assert_true(seen_flush);
	assert_int_equal(a->state, IBV_QPS_ERR);
	async_event_within(n.ctx, IBV_EVENT_QP_ACCESS_ERR, 1000);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(dst[i], 0);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	/* a buffer registered without remote write access */
	pair(&n, &a, &b, 14);
	assert_int_equal(
		post_write(a, IBV_WR_RDMA_WRITE, smr, src, 64, (uintptr_t)ro, romr->rkey, 0, 2), 0);
	assert_int_equal(poll1(n.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.vendor_err, VERR_ACCESS);
	assert_int_equal(ro[0], 0);
	async_event_within(n.ctx, IBV_EVENT_QP_ACCESS_ERR, 1000);
	/* the failed QP flushes what comes next */
	assert_int_equal(
		post_write(a, IBV_WR_RDMA_WRITE, smr, src, 64, (uintptr_t)dst, dmr->rkey, 0, 3), 0);
	assert_int_equal(poll1(n.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* a local key that does not exist */
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	pair(&n, &a, &b, 14);
	{
		struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 8, .lkey = 0xdead00};
		struct ibv_send_wr wr = {.wr_id = 4,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = {(uintptr_t)dst, dmr->rkey}},
				   *bad;

		assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
		assert_int_equal(poll1(n.cq, &wc, 5000), 1);
		assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(romr);
	node_close(&n);
	free(src);
	free(dst);
	free(ro);
}

/* A child process writes into this process's buffer. */
static void across_processes(void **state)
{
	int up[2], down[2], status;
	struct node n;
	struct ibv_qp *qp;
	uint8_t *dst = calloc(1, BUF);
	struct ibv_mr *mr;
	uint32_t info[3], child_qpn;
	struct ibv_wc wc;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct node c;
		struct ibv_qp *cqp;
		uint8_t *src = malloc(BUF);
		uint64_t addr;
		struct ibv_mr *smr;
		int ok;

		alarm(30);
		node_open(&c, "sv_roce0", NULL);
		cqp = qp_new(&c);
		qp_init(cqp);
		if (write(up[1], &cqp->qp_num, 4) != 4 || read(down[0], info, 12) != 12 ||
		    read(down[0], &addr, 8) != 8)
			_exit(2);
		qp_connect(cqp, &c, info[0], 14, 7, 1);
		rw_test_fill(src, BUF, 3);
		smr = ibv_reg_mr(c.pd, src, BUF, ACC);
		post_write(cqp, IBV_WR_RDMA_WRITE_WITH_IMM, smr, src, BUF, addr, info[1], 77, 5);
		ok = poll1(c.cq, &wc, 10000) == 1 && wc.status == IBV_WC_SUCCESS;
		_exit(ok ? 0 : 3);
	}
	node_open(&n, "sv_roce0", NULL);
	qp = qp_new(&n);
	qp_init(qp);
	mr = ibv_reg_mr(n.pd, dst, BUF, ACC);
	assert_int_equal(read(up[0], &child_qpn, 4), 4);
	qp_connect(qp, &n, child_qpn, 14, 7, 1);
	assert_int_equal(post_recv(qp, 1, NULL, NULL, 0), 0);
	info[0] = qp->qp_num;
	info[1] = mr->rkey;
	info[2] = 0;
	{
		uint64_t addr = (uintptr_t)dst;

		assert_int_equal(write(down[1], info, 12), 12);
		assert_int_equal(write(down[1], &addr, 8), 8);
	}
	assert_int_equal(poll1(n.cq, &wc, 10000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(ntohl(wc.imm_data), 77);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	{
		uint8_t *want = malloc(BUF);

		rw_test_fill(want, BUF, 3);
		assert_memory_equal(want, dst, BUF);
		free(want);
	}
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	node_close(&n);
	free(dst);
	close(up[0]), close(up[1]), close(down[0]), close(down[1]);
}

/* Send twice on a QP of a node opened with `faults`; expect the second to fail. */
static void second_message_fails(const char *faults, enum ibv_wc_status want, int async)
{
	struct node tx, rx;
	struct ibv_qp *a, *b;
	uint8_t *buf = calloc(1, 8192);
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;
	uint64_t t0;

	node_open(&tx, "sv_roce0", faults);
	node_open(&rx, "sv_roce0", NULL);
	a = qp_new(&tx);
	b = qp_new(&rx);
	qp_init(a);
	qp_init(b);
	qp_connect(a, &rx, b->qp_num, 10, 7, 1); /* 4 ms x 8 */
	qp_connect(b, &tx, a->qp_num, 10, 7, 1);
	smr = ibv_reg_mr(tx.pd, buf, 4096, ACC);
	dmr = ibv_reg_mr(rx.pd, buf + 4096, 4096, ACC);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE, smr, buf, 64, (uintptr_t)buf + 4096,
				    dmr->rkey, 0, 1),
			 0);
	assert_int_equal(poll1(tx.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	t0 = rw_now_ms();
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE, smr, buf, 64, (uintptr_t)buf + 4096,
				    dmr->rkey, 0, 2),
			 0);
	assert_int_equal(poll1(tx.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, want);
	assert_int_equal(wc.wr_id, 2);
	assert_true(rw_now_ms() - t0 < 3000);
	if (async)
		async_event_within(tx.ctx, IBV_EVENT_PORT_ERR, 1000);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	node_close(&tx);
	node_close(&rx);
	free(buf);
}

static void fault_retry_exceeded(void **state)
{
	(void)state;
	second_message_fails("retry_exceeded=2", IBV_WC_RETRY_EXC_ERR, 0);
}

static void fault_remote_access(void **state)
{
	(void)state;
	second_message_fails("remote_access=2", IBV_WC_REM_ACCESS_ERR, 0);
}

static void fault_conn_drop(void **state)
{
	(void)state;
	second_message_fails("conn_drop=2", IBV_WC_RETRY_EXC_ERR, 0);
}

static void fault_port_down(void **state)
{
	struct ibv_port_attr pa;
	struct node n;

	(void)state;
	second_message_fails("port_down=2", IBV_WC_RETRY_EXC_ERR, 1);
	node_open(&n, "sv_roce0", "port_down=0");
	assert_int_equal(ibv_query_port(n.ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_DOWN);
	node_close(&n);
}

static void rnr_waits_then_gives_up(void **state)
{
	struct node n;
	struct ibv_qp *a, *b;
	uint8_t *buf = calloc(1, 8192);
	struct ibv_mr *mr;
	struct ibv_wc wc;

	(void)state;
	node_open(&n, "sv_ib0", NULL);
	mr = ibv_reg_mr(n.pd, buf, 8192, ACC);
	/* infinite RNR retries: completes once a receive is posted */
	pair(&n, &a, &b, 10);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE_WITH_IMM, mr, buf, 16,
				    (uintptr_t)buf + 4096, mr->rkey, 1, 1),
			 0);
	if (poll1(n.cq, &wc, 200))
		fail_msg("completion while waiting for a receive: %s",
			 ibv_wc_status_str(wc.status));
	assert_int_equal(post_recv(b, 2, NULL, NULL, 0), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(poll1(n.cq, &wc, 5000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	/* one RNR retry of 10 us: gives up */
	a = qp_new(&n);
	b = qp_new(&n);
	qp_init(a);
	qp_init(b);
	qp_connect(a, &n, b->qp_num, 10, 1, 1);
	qp_connect(b, &n, a->qp_num, 10, 1, 1);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE_WITH_IMM, mr, buf, 16,
				    (uintptr_t)buf + 4096, mr->rkey, 1, 3),
			 0);
	assert_int_equal(poll1(n.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(mr);
	node_close(&n);
	free(buf);
}

static void dmabuf_probe_and_memfd(void **state)
{
	struct node n;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr, *dmr;
	uint8_t *src = malloc(8192), *map;
	struct ibv_wc wc;
	int fd;

	(void)state;
	node_open(&n, "sv_roce0", NULL);
	/* NCCL's probe: fd -1 gives EBADF when dma-buf is supported */
	assert_null(ibv_reg_dmabuf_mr(n.pd, 0, 0, 0, -1, 0));
	assert_int_equal(errno, EBADF);
	fd = memfd_create("sv-dmabuf", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3 * 4096), 0);
	dmr = ibv_reg_dmabuf_mr(n.pd, 4096, 8192, 0x7000000, fd, ACC);
	assert_non_null(dmr);
	assert_ptr_equal(dmr->addr, (void *)4096); /* libibverbs: addr = offset */
	rw_test_fill(src, 8192, 11);
	src_mr = ibv_reg_mr(n.pd, src, 8192, ACC);
	pair(&n, &a, &b, 14);
	assert_int_equal(
		post_write(a, IBV_WR_RDMA_WRITE, src_mr, src, 8192, 0x7000000, dmr->rkey, 0, 1), 0);
	assert_int_equal(poll1(n.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	map = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_memory_equal(map + 4096, src, 8192);
	munmap(map, 3 * 4096);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(src_mr);
	node_close(&n);

	node_open(&n, "sv_roce0", "dmabuf=unsupported");
	assert_null(ibv_reg_dmabuf_mr(n.pd, 0, 4096, 0, -1, 0));
	assert_int_equal(errno, EOPNOTSUPP);
	node_close(&n);
	close(fd);
	free(src);
}

static void reverse_placement_keeps_data(void **state)
{
	struct node n;
	struct ibv_qp *a, *b;
	uint8_t *src = malloc(BUF), *dst = calloc(1, BUF);
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;

	(void)state;
	node_open(&n, "sv_roce0", "placement=reverse");
	rw_test_fill(src, BUF, 5);
	smr = ibv_reg_mr(n.pd, src, BUF, ACC);
	dmr = ibv_reg_mr(n.pd, dst, BUF, ACC);
	pair(&n, &a, &b, 14);
	assert_int_equal(post_write(a, IBV_WR_RDMA_WRITE, smr, src, BUF - 13, (uintptr_t)dst + 13,
				    dmr->rkey, 0, 1),
			 0);
	assert_int_equal(poll1(n.cq, &wc, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(dst + 13, src, BUF - 13);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	node_close(&n);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lists_devices_and_ports),
		cmocka_unit_test(qp_state_machine_checks),
		cmocka_unit_test(write_imm_read_send_loopback),
		cmocka_unit_test(refuses_bad_bounds_and_access),
		cmocka_unit_test(across_processes),
		cmocka_unit_test(fault_retry_exceeded),
		cmocka_unit_test(fault_remote_access),
		cmocka_unit_test(fault_conn_drop),
		cmocka_unit_test(fault_port_down),
		cmocka_unit_test(rnr_waits_then_gives_up),
		cmocka_unit_test(dmabuf_probe_and_memfd),
		cmocka_unit_test(reverse_placement_keeps_data),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

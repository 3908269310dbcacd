/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement at rw_comm_init (coll/place.h, topo/rw_topo_place.h): forked
 * ranks on this host, each with its own RINGWAY_TOPO_XML fixture and
 * LOCAL_RANK, check the ring order every rank computed, each channel's NIC
 * and net device, and that allreduce, reduce-scatter, allgather and
 * broadcast stay exact when the ring is not in rank order (segments still
 * belong to user ranks).
 *
 *   one host     gpu4-nic2 (GPUs 0,1 behind mlx5_0/ib0, 2,3 behind
 *                mlx5_1/ib1), ranks given GPUs 2 0 3 1: ring 1 3 0 2;
 *   NVLink       dgx1v-nvlink (ring order GPU 0 3 2 1 ...), GPUs 1 2 3 0:
 *                ring 3 2 1 0, not PCI order 3 0 1 2;
 *   devices      in a network namespace with NICs ib0 and ib1 (veths, as
 *                the fixture names them), RINGWAY_SOCKET_IFNAME=ib: each
 *                channel's links are made on its NIC's device;
 *   two hosts    two UTS namespaces (own hostname: another host identity),
 *                ranks dealt round-robin (rank r on host r % 2): ring
 *                0 2 1 3, 2 host crossings; RINGWAY_PLACEMENT=rank keeps
 *                rank order (4 crossings);
 *   CollNet      a comm connected in rank order on NCCL's handles, then
 *                placed (rw_place_coll_comm): reconnected in ring order.
 * Namespaces need root; those cases skip without.
 */
#define _GNU_SOURCE /* setenv, unshare, sethostname */
#include "support/rw_test.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/place.h"
#include "coll/rw_coll.h"
#include "coll/world.h"
#include "coll_test.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_gpu_emu.h"
#include "topo/rw_topo_place.h"

#define NR	 4
#define NCH	 2
#define COUNT	 1000
#define DEADLINE 120

#ifndef RW_FIXTURES
#define RW_FIXTURES "tests/topo/fixtures"
#endif

struct place_case {
	const char *fixture;	 /* under RW_FIXTURES */
	int local[NR];		 /* LOCAL_RANK of each rank */
	int host[NR];		 /* its host (UTS namespace); all 0: this host */
	const char *ifname;	 /* RINGWAY_SOCKET_IFNAME */
	const char *placement;	 /* RINGWAY_PLACEMENT, or NULL */
	int order[NR];		 /* the ring expected */
	int crossings;		 /* host crossings expected */
	const char *nic[NR];	 /* each rank's channel NIC expected (every channel) */
	const char *devname[NR]; /* ... and its net device's name */
	const char *reason_has;	 /* every hop's reason contains this, or NULL */
	bool no_local;		 /* no LOCAL_RANK: the rendezvous finds it */
	bool cuda_device;	 /* an emulated GPU per fixture GPU; local[] is each
				    rank's current CUDA device (no LOCAL_RANK) */
};

/* Emulated GPUs with the fixture's bus ids; device `dev` made current. */
static int use_cuda_device(const char *fixture, int dev)
{
	struct rw_config cfg;
	struct rw_topo *t = NULL;
	int n, rc;

	rw_config_load(&cfg, NULL, NULL);
	rc = rw_topo_create_from_xml(&cfg, fixture, &t);
	if (rc)
		return rc;
	n = rw_topo_gpu_count(t);
	rc = rw_gpu_emu_enable(n, 0);
	for (int g = 0; !rc && g < n; g++)
		rc = rw_gpu_emu_set_busid(g, rw_topo_gpu_get(t, g)->busid);
	rw_topo_destroy(t);
	return rc ? rc : rw_cuda_set_device(dev);
}

static int check_place(const struct place_case *pc, const struct rw_topo_place *p, int rank)
{
	int bad = 0;

	if (p->nranks != NR || p->nchannels != NCH)
		return 1;
	for (int i = 0; i < NR; i++)
		bad += p->order[i] != pc->order[i];
	if (bad) {
		fprintf(stderr, "rank %d: ring", rank);
		for (int i = 0; i < NR; i++)
			fprintf(stderr, " %d", p->order[i]);
		fprintf(stderr, ", expected");
		for (int i = 0; i < NR; i++)
			fprintf(stderr, " %d", pc->order[i]);
		fprintf(stderr, "\n");
	}
	if (rw_topo_place_crossings(p) != pc->crossings) {
		fprintf(stderr, "rank %d: %d host crossings, expected %d\n", rank,
			rw_topo_place_crossings(p), pc->crossings);
		bad++;
	}
	/* every rank knows every rank's channels */
	for (int r = 0; r < NR; r++)
		for (int c = 0; c < NCH; c++) {
			const struct rw_topo_place_chan *ch = rw_topo_place_chan_of(p, r, c);
			char line[512];

			rw_topo_place_line_hop(p, c, r, line, sizeof(line));
			if ((pc->nic[r] && strcmp(ch->nic, pc->nic[r])) ||
			    (pc->devname[r] && strcmp(ch->devname, pc->devname[r])) ||
			    (pc->reason_has && !strstr(ch->reason, pc->reason_has))) {
				fprintf(stderr, "rank %d: unexpected: %s (want NIC %s on %s)\n",
					rank, line, pc->nic[r] ? pc->nic[r] : "-",
					pc->devname[r] ? pc->devname[r] : "-");
				bad++;
			}
		}
	return bad;
}

/* Every collective once, exact; the ring is not in rank order. */
static int check_results(struct rw_coll_comm *c, int rank)
{
	int32_t *send = calloc(NR * COUNT, sizeof(int32_t));
	int32_t *recv = calloc(NR * COUNT, sizeof(int32_t));
	int32_t *ref = calloc(NR * COUNT, sizeof(int32_t));
	int bad = 0, rc;

	if (!send || !recv || !ref) {
		bad = 1;
		goto out;
	}
	/* allreduce */
	coll_fill(send, COUNT, RW_DTYPE_INT32, RW_OP_SUM, rank, 1);
	coll_reference(ref, COUNT, RW_DTYPE_INT32, RW_OP_SUM, NR, 1);
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_ALLREDUCE,
						   .sendbuf = send,
						   .recvbuf = recv,
						   .count = COUNT,
						   .dtype = RW_DTYPE_INT32,
						   .op = RW_OP_SUM});
	bad += rc || !coll_same("allreduce", recv, ref, COUNT, RW_DTYPE_INT32);
	/* reduce-scatter: rank r gets segment r of the sum */
	coll_fill(send, NR * COUNT, RW_DTYPE_INT32, RW_OP_SUM, rank, 2);
	coll_reference(ref, NR * COUNT, RW_DTYPE_INT32, RW_OP_SUM, NR, 2);
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_REDUCE_SCATTER,
						   .sendbuf = send,
						   .recvbuf = recv,
						   .count = COUNT,
						   .dtype = RW_DTYPE_INT32,
						   .op = RW_OP_SUM});
	bad += rc || !coll_same("reduce-scatter", recv, ref + (size_t)rank * COUNT, COUNT,
				RW_DTYPE_INT32);
	/* allgather: block r is rank r's */
	for (int i = 0; i < COUNT; i++)
		send[i] = rank * 100000 + i;
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_ALLGATHER,
						   .sendbuf = send,
						   .recvbuf = recv,
						   .count = COUNT,
						   .dtype = RW_DTYPE_INT32});
	for (int r = 0; r < NR; r++)
		for (int i = 0; i < COUNT; i++)
			ref[r * COUNT + i] = r * 100000 + i;
	bad += rc || !coll_same("allgather", recv, ref, NR * COUNT, RW_DTYPE_INT32);
	/* broadcast from rank 1 (not ring position 0) */
	for (int i = 0; i < COUNT; i++)
		send[i] = rank == 1 ? 7 * i + 3 : -1;
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_BROADCAST,
						   .sendbuf = send,
						   .recvbuf = recv,
						   .count = COUNT,
						   .dtype = RW_DTYPE_INT32,
						   .root = 1});
	for (int i = 0; i < COUNT; i++)
		ref[i] = 7 * i + 3;
	bad += rc || !coll_same("broadcast", recv, ref, COUNT, RW_DTYPE_INT32);
out:
	free(send);
	free(recv);
	free(ref);
	return bad;
}

static int place_rank(const char *root, int rank, int nranks, void *arg)
{
	const struct place_case *pc = arg;
	struct rw_world_args wa = {.nranks = nranks, .rank = rank, .root = root, .listen_fd = -1};
	struct rw_comm *w = NULL;
	char v[256];
	int bad, rc;

	if (pc->host[rank]) {
		snprintf(v, sizeof(v), "rwplace-h%d", pc->host[rank]);
		if (unshare(CLONE_NEWUTS) || sethostname(v, strlen(v)))
			return 1;
	}
	snprintf(v, sizeof(v), "%s/%s", RW_FIXTURES, pc->fixture);
	setenv("RINGWAY_TOPO_XML", v, 1);
	if (pc->cuda_device && use_cuda_device(v, pc->local[rank])) {
		fprintf(stderr, "rank %d: the emulated GPUs\n", rank);
		return 1;
	}
	snprintf(v, sizeof(v), "%d", pc->local[rank]);
	setenv("LOCAL_RANK", v, 1);
	if (pc->no_local || pc->cuda_device)
		unsetenv("LOCAL_RANK");
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsetenv("CUDA_VISIBLE_DEVICES");
	setenv("RINGWAY_TRANSPORT", "socket", 1);
	setenv("RINGWAY_SOCKET_IFNAME", pc->ifname, 1);
	setenv("RINGWAY_NCHANNELS", "2", 1);
	setenv("RINGWAY_CHUNK_BYTES", "4096", 1);
	setenv("RINGWAY_TIMEOUT_MS", "30000", 1);
	if (pc->placement)
		setenv("RINGWAY_PLACEMENT", pc->placement, 1);
	rc = rw_world_create(&wa, &w);
	if (rc) {
		fprintf(stderr, "rank %d: rw_world_create: %s\n", rank, strerror(-rc));
		return 1;
	}
	bad = check_place(pc, rw_world_place(w), rank);
	bad += check_results(rw_world_coll(w), rank);
	rc = rw_world_destroy(w);
	return bad || rc;
}

static void run_case_fn(const struct place_case *pc, coll_raw_fn fn)
{
	struct rw_config cfg;
	struct rw_topo *t = NULL;
	char path[512];

	/* fixtures need hwloc */
	rw_config_load(&cfg, NULL, NULL);
	snprintf(path, sizeof(path), "%s/%s", RW_FIXTURES, pc->fixture);
	if (rw_topo_create_from_xml(&cfg, path, &t) == -ENOTSUP)
		skip();
	rw_topo_destroy(t);
	assert_int_equal(coll_fork_raw(NR, fn, (void *)pc, DEADLINE), 0);
}

static void run_case(const struct place_case *pc)
{
	run_case_fn(pc, place_rank);
}

/* --- one host ---------------------------------------------------------------- */

static void one_host_gpu_order(void **state)
{
	/* GPU 0: rank 1, GPU 1: rank 3, GPU 2: rank 0, GPU 3: rank 2 */
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {2, 0, 3, 1},
		.ifname = "lo",
		.order = {1, 3, 0, 2},
		.crossings = 0,
		.nic = {"mlx5_1", "mlx5_0", "mlx5_1", "mlx5_0"},
		.devname = {"lo", "lo", "lo", "lo"},
		.reason_has = "no net device named ib",
	};

	(void)state;
	run_case(&pc);
}

/* As NCCL does, the current CUDA device is the rank's GPU (LOCAL_RANK unset:
 * without it the rendezvous would give ranks 0..3 GPUs 0..3, ring 0 1 2 3). */
static void current_cuda_device(void **state)
{
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {2, 0, 3, 1},
		.cuda_device = true,
		.ifname = "lo",
		.order = {1, 3, 0, 2},
		.crossings = 0,
		.nic = {"mlx5_1", "mlx5_0", "mlx5_1", "mlx5_0"},
	};

	(void)state;
	run_case(&pc);
}

static void nvlink_neighbours_adjacent(void **state)
{
	/* ring order 0 3 2 1 5 6 7 4: GPUs 1 2 3 0 on ranks 0..3 */
	const struct place_case pc = {
		.fixture = "dgx1v-nvlink.xml",
		.local = {1, 2, 3, 0},
		.ifname = "lo",
		.order = {3, 2, 1, 0},
		.crossings = 0,
		.nic = {"mlx5_0", "mlx5_1", "mlx5_1", "mlx5_0"},
		.reason_has = "same PCIe switch (PIX",
	};

	(void)state;
	run_case(&pc);
}

/* --- namespaces ----------------------------------------------------------------- */

static bool can_unshare(int flags)
{
	pid_t pid;
	int st;

	if (geteuid() != 0)
		return false;
	pid = fork();
	if (pid == 0)
		_exit(unshare(flags) == 0 ? 0 : 1);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void devices_per_channel(void **state)
{
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {2, 0, 3, 1},
		.ifname = "ib",
		.order = {1, 3, 0, 2},
		.crossings = 0,
		.nic = {"mlx5_1", "mlx5_0", "mlx5_1", "mlx5_0"},
		.devname = {"ib1", "ib0", "ib1", "ib0"},
		.reason_has = "same PCIe switch (PIX",
	};
	pid_t pid;
	int st;

	(void)state;
	if (!can_unshare(CLONE_NEWNET) || system("ip -V >/dev/null 2>&1") != 0)
		skip();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a network of our own: lo, and NICs named as the fixture's
		 * (veth pairs: no dummy module needed; their peers xb0, xb1 are
		 * not matched by RINGWAY_SOCKET_IFNAME=ib) */
		if (unshare(CLONE_NEWNET) ||
		    system("ip link set lo up && "
			   "ip link add ib0 type veth peer name xb0 && "
			   "ip addr add 10.77.0.1/24 dev ib0 && ip link set ib0 up && "
			   "ip link set xb0 up && "
			   "ip link add ib1 type veth peer name xb1 && "
			   "ip addr add 10.77.1.1/24 dev ib1 && ip link set ib1 up && "
			   "ip link set xb1 up") != 0)
			_exit(77);
		_exit(coll_fork_raw(NR, place_rank, (void *)&pc, DEADLINE) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void two_hosts_grouped(void **state)
{
	/* rank r on host r % 2, LOCAL_RANK r / 2 */
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {0, 0, 1, 1},
		.host = {1, 2, 1, 2},
		.ifname = "lo",
		.order = {0, 2, 1, 3},
		.crossings = 2,
		.nic = {"mlx5_0", "mlx5_0", "mlx5_0", "mlx5_0"},
	};

	(void)state;
	if (!can_unshare(CLONE_NEWUTS))
		skip();
	run_case(&pc);
}

/* Without LOCAL_RANK a rank's GPU is its index among its host's ranks. */
static void two_hosts_local_rank_from_rendezvous(void **state)
{
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {0, 0, 1, 1},
		.host = {1, 2, 1, 2},
		.no_local = true,
		.ifname = "lo",
		.order = {0, 2, 1, 3},
		.crossings = 2,
		.nic = {"mlx5_0", "mlx5_0", "mlx5_0", "mlx5_0"},
	};

	(void)state;
	if (!can_unshare(CLONE_NEWUTS))
		skip();
	run_case(&pc);
}

static void two_hosts_placement_rank(void **state)
{
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {0, 0, 1, 1},
		.host = {1, 2, 1, 2},
		.ifname = "lo",
		.placement = "rank",
		.order = {0, 1, 2, 3},
		.crossings = 4,
		.nic = {"none", "none", "none", "none"},
		.reason_has = "placement off",
	};

	(void)state;
	if (!rw_param_find("RINGWAY_PLACEMENT") || !can_unshare(CLONE_NEWUTS))
		skip(); /* the registry has no RINGWAY_PLACEMENT yet */
	run_case(&pc);
}

/* --- CollNet: a comm made in rank order, then placed --------------------------- */

/* What CollNet connect does (plugin/collnet_adapt.c): NCCL's handles,
 * a rank-order comm on them, then rw_place_coll_comm(). */
static int collnet_rank(const char *root, int rank, int nranks, void *arg)
{
	const struct place_case *pc = arg;
	struct rw_world_args wa = {.nranks = nranks, .rank = rank, .root = root, .listen_fd = -1};
	char handle[RW_NET_HANDLE_MAXSIZE] = {0}, all[NR][RW_NET_HANDLE_MAXSIZE];
	const void *handles[NR];
	struct rw_topo_place p = {0};
	struct rw_net_listen *listen = NULL;
	struct rw_coll_comm *c = NULL;
	struct rw_comm *w = NULL;
	struct rw_net *net = NULL;
	struct rw_config cfg;
	char v[256];
	int bad = 1, rc;

	snprintf(v, sizeof(v), "%s/%s", RW_FIXTURES, pc->fixture);
	setenv("RINGWAY_TOPO_XML", v, 1);
	snprintf(v, sizeof(v), "%d", pc->local[rank]);
	setenv("LOCAL_RANK", v, 1);
	setenv("RINGWAY_TRANSPORT", "socket", 1);
	setenv("RINGWAY_SOCKET_IFNAME", "lo", 1);
	setenv("RINGWAY_NCHANNELS", "2", 1);
	setenv("RINGWAY_CHUNK_BYTES", "4096", 1);
	setenv("RINGWAY_TIMEOUT_MS", "30000", 1);
	setenv("RINGWAY_PLACEMENT", "rank", 1); /* the world only carries the handles */
	rc = rw_world_create(&wa, &w);
	if (rc)
		return 1;
	rw_config_load(&cfg, NULL, NULL);
	if (rw_config_set(&cfg, "RINGWAY_PLACEMENT", "topo") || rw_net_create(&cfg, &net) ||
	    rw_net_listen(net, 0, handle, &listen))
		goto out;
	rc = rw_coll_run(rw_world_coll(w), &(struct rw_coll_args){.kind = RW_COLL_ALLGATHER,
								  .sendbuf = handle,
								  .recvbuf = all,
								  .count = sizeof(handle),
								  .dtype = RW_DTYPE_UINT8});
	if (rc)
		goto out;
	for (int r = 0; r < NR; r++)
		handles[r] = all[r];
	{
		struct rw_coll_comm_args a = {.net = net,
					      .dev = 0,
					      .nranks = nranks,
					      .rank = rank,
					      .handles = handles,
					      .listen = listen,
					      .cfg = &cfg};

		if (rw_coll_comm_create(&a, &c))
			goto out;
		rc = rw_place_coll_comm(&a, &c, &p);
	}
	if (rc)
		goto out;
	bad = check_place(pc, &p, rank);
	bad += check_results(c, rank);
out:
	rw_topo_place_free(&p);
	rw_coll_comm_destroy(c);
	if (listen)
		rw_net_close_listen(listen);
	rw_net_destroy(net);
	rc = rw_world_destroy(w);
	return bad || rc;
}

static void collnet_placed(void **state)
{
	const struct place_case pc = {
		.fixture = "gpu4-nic2.xml",
		.local = {2, 0, 3, 1},
		.order = {1, 3, 0, 2},
		.crossings = 0,
		.nic = {"mlx5_1", "mlx5_0", "mlx5_1", "mlx5_0"},
		.devname = {"lo", "lo", "lo", "lo"},
	};

	(void)state;
	run_case_fn(&pc, collnet_rank);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_host_gpu_order),
		cmocka_unit_test(current_cuda_device),
		cmocka_unit_test(nvlink_neighbours_adjacent),
		cmocka_unit_test(devices_per_channel),
		cmocka_unit_test(two_hosts_grouped),
		cmocka_unit_test(two_hosts_local_rank_from_rendezvous),
		cmocka_unit_test(two_hosts_placement_rank),
		cmocka_unit_test(collnet_placed),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

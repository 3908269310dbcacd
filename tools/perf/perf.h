/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-perf internals: options, how ranks are found, the data written
 * and checked.  The benchmark itself drives the public C API
 * (include/ringway.h), as any program would.
 */
#ifndef RW_PERF_H
#define RW_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/ringway.h"

enum perf_coll {
	PERF_ALLREDUCE,
	PERF_REDUCE_SCATTER,
	PERF_ALLGATHER,
	PERF_BROADCAST,
	PERF_COLL_COUNT
};

struct perf_opts {
	size_t minbytes, maxbytes, stepbytes;
	double stepfactor; /* used when stepbytes is 0 */
	int iters, warmup;
	int check;
	int dtype;	  /* rw_dtype_t, or -1 for all */
	int op;		  /* rw_op_t, or -1 for all */
	const char *algo; /* "ring", "ps", or NULL: RINGWAY_ALGO */
	enum perf_coll coll;
	int local;   /* --local N, else 0 */
	bool device; /* --mem device */
	int root;    /* broadcast */
};

/** How this process learned its rank. */
struct perf_ranks {
	int rank, nranks;
	char root[300];		  /* rendezvous "host:port", or "" for the default */
	const rw_unique_id_t *id; /* --local: rank 0's rendezvous instead of root */
	const char *how;	  /* "--local", "mpirun", "torchrun", "single" */
};

/* perf_launch.c */

/**
 * Find rank and size: OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, then
 * RANK/WORLD_SIZE, else a single rank.  Under mpirun on one host without
 * RINGWAY_ROOT or MASTER_ADDR, the rendezvous is 127.0.0.1 on a port derived
 * from the job id.  \return 0 or -EINVAL (printed).
 */
int perf_ranks_from_env(struct perf_ranks *out);

/**
 * --local N: fork N ranks on this host, run body(ranks) in each, wait.
 * Rank 0 opens the rendezvous (rw_get_unique_id) and hands its id to the
 * others through the parent, so no port is found free in one process and
 * bound in another (where a parallel job's connection could take it).
 * \return 0 when every rank exited 0.
 */
int perf_fork_local(int n, int (*body)(const struct perf_ranks *r, void *arg), void *arg);

/**
 * The rendezvous port of an mpirun job on one host, from the job's hash:
 * in 10000..65535, and outside the ephemeral range ephemeral_range reads
 * ("lo hi", as /proc/sys/net/ipv4/ip_local_port_range; NULL or unreadable:
 * Linux's default 32768 60999), in the larger gap, where that gap has at
 * least 1024 ports; else anywhere in 10000..65535.
 */
unsigned perf_job_port(unsigned hash, const char *ephemeral_range);

/* perf_data.c */

size_t perf_dtype_size(int dtype);
const char *perf_dtype_name(int dtype); /* nccl-tests' names: "float", "half" */
const char *perf_op_name(int op);
int perf_dtype_parse(const char *s); /* -1 for "all", -2 when unknown */
int perf_op_parse(const char *s);

/** Fill count elements with rank's data for op (small exact integers). */
void perf_fill(void *buf, size_t count, int dtype, int op, int rank);

/** Expected op over nranks of perf_fill() (tmp: count elements). */
void perf_expect(void *ref, void *tmp, size_t count, int dtype, int op, int nranks);

/** Elements of got that differ from want. */
int64_t perf_wrong(const void *got, const void *want, size_t count, int dtype);

#endif /* RW_PERF_H */

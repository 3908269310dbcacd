/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The collective half of the public API (include/ringway.h): blocking
 * wrappers over the engine (rw_coll.h).  Compiled into libringway.so only.
 */
#include "include/ringway.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "coll/rw_coll.h"
#include "coll/world.h"
#include "common/rw_log.h"
#include "kernels/rw_reduce.h"

/* The public enums promise the kernels' (= NCCL's) values. */
static_assert((int)RW_INT8 == RW_DTYPE_INT8 && (int)RW_UINT8 == RW_DTYPE_UINT8 &&
		      (int)RW_INT32 == RW_DTYPE_INT32 && (int)RW_UINT32 == RW_DTYPE_UINT32 &&
		      (int)RW_INT64 == RW_DTYPE_INT64 && (int)RW_UINT64 == RW_DTYPE_UINT64 &&
		      (int)RW_FLOAT16 == RW_DTYPE_FLOAT16 && (int)RW_FLOAT32 == RW_DTYPE_FLOAT32 &&
		      (int)RW_FLOAT64 == RW_DTYPE_FLOAT64 &&
		      (int)RW_BFLOAT16 == RW_DTYPE_BFLOAT16 &&
		      (int)RW_FLOAT8E4M3 == RW_DTYPE_FLOAT8E4M3 &&
		      (int)RW_FLOAT8E5M2 == RW_DTYPE_FLOAT8E5M2 && RW_DTYPE_COUNT == 12,
	      "rw_dtype_t must match the kernels' datatypes");
static_assert((int)RW_SUM == RW_OP_SUM && (int)RW_PROD == RW_OP_PROD && (int)RW_MAX == RW_OP_MAX &&
		      (int)RW_MIN == RW_OP_MIN && (int)RW_AVG == RW_OP_AVG && RW_OP_COUNT == 5,
	      "rw_op_t must match the kernels' ops");

/* rw_comm_init_config() and rw_comm_init_id(): id, when given, names the
 * rendezvous (and rendezvous is NULL). */
static int comm_init(rw_comm_t **comm, int nranks, int rank, const char *rendezvous,
		     const rw_unique_id_t *id, const rw_config_t *config)
{
	struct rw_config cfg;
	char root[320];
	struct rw_world_args a = {.nranks = nranks, .rank = rank, .listen_fd = -1, .cfg = &cfg};
	int rc;

	rw_config_load(&cfg, NULL, NULL);
	rw_log_set_level((enum rw_log_level)cfg.debug);
	if (!comm || nranks < 1 || nranks > RW_MAX_RANKS || rank < 0 || rank >= nranks) {
		RW_WARN(RW_LOG_INIT,
			"rw_comm_init(comm=%p, nranks=%d, rank=%d): bad arguments (nranks: 1 to "
			"RW_MAX_RANKS=%d, rank: 0 to nranks - 1)",
			(void *)comm, nranks, rank, RW_MAX_RANKS);
		rc = -EINVAL;
		goto out;
	}
	rc = rw_world_config_apply(&cfg, config);
	if (rc)
		goto out;
	if (id) {
		rc = rw_world_id_root(id, rank, root, sizeof(root), &a.listen_fd);
		if (rc)
			goto out;
		a.root = root;
	} else if (rendezvous) {
		a.root = rendezvous;
	} else if (nranks > 1) {
		rc = rw_world_default_root(&cfg, root, sizeof(root));
		if (rc == -ENOENT)
			RW_WARN(RW_LOG_INIT, "rw_comm_init: no rendezvous: pass \"host:port\", or "
					     "set RINGWAY_ROOT, or MASTER_ADDR and MASTER_PORT");
		if (rc) {
			rc = -EINVAL;
			goto out;
		}
		a.root = root;
	}
	rc = rw_world_create(&a, comm);
out:
	memset(cfg.secret, 0, sizeof(cfg.secret)); /* the job secret lives no longer than needed */
	memset(root, 0, sizeof(root));
	return rc;
}

RW_API int rw_comm_init_config(rw_comm_t **comm, int nranks, int rank, const char *rendezvous,
			       const rw_config_t *config)
{
	return comm_init(comm, nranks, rank, rendezvous, NULL, config);
}

RW_API int rw_comm_init_id(rw_comm_t **comm, int nranks, int rank, const rw_unique_id_t *id,
			   const rw_config_t *config)
{
	if (!id) {
		RW_WARN(RW_LOG_INIT, "rw_comm_init_id: id is NULL");
		return -EINVAL;
	}
	return comm_init(comm, nranks, rank, NULL, id, config);
}

RW_API int rw_get_unique_id(rw_unique_id_t *id)
{
	struct rw_config cfg;
	int rc;

	rw_config_load(&cfg, NULL, NULL);
	rw_log_set_level((enum rw_log_level)cfg.debug);
	rc = rw_world_id_make(&cfg, id);
	memset(cfg.secret, 0, sizeof(cfg.secret));
	return rc;
}

RW_API int rw_comm_get_error(const rw_comm_t *comm, int *failed_rank, char *buf, size_t len)
{
	return rw_world_error(comm, failed_rank, buf, len);
}

RW_API int rw_comm_init(rw_comm_t **comm, int nranks, int rank, const char *rendezvous)
{
	return rw_comm_init_config(comm, nranks, rank, rendezvous, NULL);
}

RW_API int rw_comm_get_config(const rw_comm_t *comm, rw_config_t *out)
{
	return rw_world_get_config(comm, out);
}

static int run(rw_comm_t *comm, const char *call, const struct rw_coll_args *a)
{
	if (!comm) {
		RW_WARN(RW_LOG_COLL, "%s: comm is NULL", call);
		return -EINVAL;
	}
	return rw_coll_run(rw_world_coll(comm), a);
}

RW_API int rw_allreduce(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
			rw_dtype_t dtype, rw_op_t op)
{
	struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
				 .sendbuf = sendbuf,
				 .recvbuf = recvbuf,
				 .count = count,
				 .dtype = (enum rw_dtype)dtype,
				 .op = (enum rw_op)op};

	return run(comm, "rw_allreduce", &a);
}

RW_API int rw_reduce_scatter(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
			     rw_dtype_t dtype, rw_op_t op)
{
	struct rw_coll_args a = {.kind = RW_COLL_REDUCE_SCATTER,
				 .sendbuf = sendbuf,
				 .recvbuf = recvbuf,
				 .count = recvcount,
				 .dtype = (enum rw_dtype)dtype,
				 .op = (enum rw_op)op};

	return run(comm, "rw_reduce_scatter", &a);
}

RW_API int rw_allgather(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
			rw_dtype_t dtype)
{
	struct rw_coll_args a = {.kind = RW_COLL_ALLGATHER,
				 .sendbuf = sendbuf,
				 .recvbuf = recvbuf,
				 .count = sendcount,
				 .dtype = (enum rw_dtype)dtype};

	return run(comm, "rw_allgather", &a);
}

RW_API int rw_broadcast(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
			rw_dtype_t dtype, int root)
{
	struct rw_coll_args a = {.kind = RW_COLL_BROADCAST,
				 .sendbuf = sendbuf,
				 .recvbuf = recvbuf,
				 .count = count,
				 .dtype = (enum rw_dtype)dtype,
				 .root = root};

	return run(comm, "rw_broadcast", &a);
}

RW_API int rw_comm_destroy(rw_comm_t *comm)
{
	return rw_world_destroy(comm);
}

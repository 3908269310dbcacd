/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reduction API: argument checks, the datatype and op lists, the choice
 * of host instruction set, k-source folds in cache-sized tiles, and the
 * hand-over of device work to reduce_cuda.cu.
 */
#include "kernels/rw_reduce.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_gpu_emu.h"
#include "kernels/reduce_internal.h"

/* k-source folds go through an accumulator tile that stays in L1. */
#define RW_TILE_BYTES 8192

static const struct {
	const char *name;
	size_t size;
	enum rw_kind kind;
} rw_dtypes[RW_DTYPE_COUNT] = {
#define RW_DTYPE(e, nccl, name, bytes, kind, ...) [e] = {name, bytes, kind},
#include "kernels/rw_types.def"
};

static const char *const rw_ops[RW_OP_COUNT] = {
#define RW_OP(e, nccl, name) [e] = name,
#include "kernels/rw_ops.def"
};

/*
 * The case labels fail to compile when two list entries share a value, and
 * the tables above fail when a value reaches the count: so the values are
 * exactly 0..COUNT-1 and a table lookup after these checks is safe.
 */
static int rw_dtype_valid(enum rw_dtype dtype)
{
	switch (dtype) {
#define RW_DTYPE(e, ...) case e:
#include "kernels/rw_types.def"
		return 1;
	default:
		return 0;
	}
}

static int rw_op_valid(enum rw_op op)
{
	switch (op) {
#define RW_OP(e, ...) case e:
#include "kernels/rw_ops.def"
		return 1;
	default:
		return 0;
	}
}

size_t rw_dtype_size(enum rw_dtype dtype)
{
	return rw_dtype_valid(dtype) ? rw_dtypes[dtype].size : 0;
}

const char *rw_dtype_name(enum rw_dtype dtype)
{
	return rw_dtype_valid(dtype) ? rw_dtypes[dtype].name : "invalid";
}

const char *rw_op_name(enum rw_op op)
{
	return rw_op_valid(op) ? rw_ops[op] : "invalid";
}

/* ---- instruction sets ---------------------------------------------------- */

static const struct rw_reduce_isa_ops *const rw_isa_ops[RW_ISA_COUNT] = {
	[RW_ISA_PORTABLE] = &rw_reduce_isa_portable,
#if defined(__x86_64__)
	[RW_ISA_AVX2] = &rw_reduce_isa_avx2,
	[RW_ISA_AVX512] = &rw_reduce_isa_avx512,
#endif
};

/* The set in use: -1 until the first call picks the best one. */
static int rw_isa_current = -1;

#if defined(__x86_64__)
/* F16C from CPUID leaf 1: clang 14 has no "f16c" for __builtin_cpu_supports. */
static int cpu_has_f16c(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static int rw_isa_supported(enum rw_isa isa)
{
	if ((unsigned int)isa >= RW_ISA_COUNT || !rw_isa_ops[isa])
		return 0;
#if defined(__x86_64__)
	__builtin_cpu_init();
	switch (isa) {
	case RW_ISA_AVX2:
		return __builtin_cpu_supports("avx2") && cpu_has_f16c();
	case RW_ISA_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
		       cpu_has_f16c();
	default:
		break;
	}
#endif
	return isa == RW_ISA_PORTABLE;
}

const char *rw_isa_name(enum rw_isa isa)
{
	static const char *const names[RW_ISA_COUNT] = {
		[RW_ISA_PORTABLE] = "portable",
		[RW_ISA_AVX2] = "avx2",
		[RW_ISA_AVX512] = "avx512",
	};

	return (unsigned int)isa < RW_ISA_COUNT ? names[isa] : "invalid";
}

enum rw_isa rw_reduce_best_isa(void)
{
	for (int isa = RW_ISA_COUNT - 1; isa > RW_ISA_PORTABLE; isa--)
		if (rw_isa_supported((enum rw_isa)isa))
			return (enum rw_isa)isa;
	return RW_ISA_PORTABLE;
}

enum rw_isa rw_reduce_get_isa(void)
{
	int isa = __atomic_load_n(&rw_isa_current, __ATOMIC_RELAXED);

	if (RW_UNLIKELY(isa < 0)) {
		isa = (int)rw_reduce_best_isa();
		__atomic_store_n(&rw_isa_current, isa, __ATOMIC_RELAXED);
		RW_LOG_ONCE(RW_LOG_INFO, RW_LOG_INIT, "reduce: host kernels use %s",
			    rw_isa_name((enum rw_isa)isa));
	}
	return (enum rw_isa)isa;
}

int rw_reduce_set_isa(enum rw_isa isa)
{
	if ((unsigned int)isa >= RW_ISA_COUNT)
		return -EINVAL;
	if (!rw_isa_supported(isa))
		return -ENOTSUP;
	__atomic_store_n(&rw_isa_current, (int)isa, __ATOMIC_RELAXED);
	return 0;
}

static const struct rw_reduce_isa_ops *rw_host_ops(void)
{
	return rw_isa_ops[rw_reduce_get_isa()];
}

/* ---- argument checks ------------------------------------------------------ */

static int rw_check_dtype_op(const char *who, enum rw_dtype dtype, enum rw_op op)
{
	if (!rw_dtype_valid(dtype)) {
		RW_WARN(RW_LOG_COLL, "%s(dtype=%d, op=%d): unknown datatype (valid: 0..%d)", who,
			(int)dtype, (int)op, RW_DTYPE_COUNT - 1);
		return -EINVAL;
	}
	if (!rw_op_valid(op)) {
		RW_WARN(RW_LOG_COLL, "%s(dtype=%s, op=%d): unknown op (valid: 0..%d)", who,
			rw_dtypes[dtype].name, (int)op, RW_OP_COUNT - 1);
		return -EINVAL;
	}
	return 0;
}

/* dst and each source must be equal or disjoint; none NULL unless count 0. */
static int rw_check_bufs(const char *who, const void *dst, const void *const *srcs,
			 unsigned int nsrcs, size_t count, enum rw_dtype dtype)
{
	size_t esize = rw_dtypes[dtype].size, bytes;

	if (nsrcs < 1 || nsrcs > RW_REDUCE_MAX_SRCS || !srcs) {
		RW_WARN(RW_LOG_COLL, "%s(nsrcs=%u, srcs=%p): need 1..%d sources", who, nsrcs,
			(const void *)srcs, RW_REDUCE_MAX_SRCS);
		return -EINVAL;
	}
	if (count > SIZE_MAX / esize) {
		RW_WARN(RW_LOG_COLL, "%s(count=%zu, dtype=%s): byte size overflows", who, count,
			rw_dtypes[dtype].name);
		return -EINVAL;
	}
	if (count == 0)
		return 0;
	bytes = count * esize;
	if (!dst) {
		RW_WARN(RW_LOG_COLL, "%s(dst=NULL, count=%zu, dtype=%s): no destination", who,
			count, rw_dtypes[dtype].name);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < nsrcs; i++) {
		uintptr_t d = (uintptr_t)dst, s = (uintptr_t)srcs[i];

		if (!srcs[i]) {
			RW_WARN(RW_LOG_COLL, "%s(src[%u]=NULL, count=%zu, dtype=%s): no source",
				who, i, count, rw_dtypes[dtype].name);
			return -EINVAL;
		}
		if (d != s && d < s + bytes && s < d + bytes) {
			RW_WARN(RW_LOG_COLL,
				"%s(dst=%p, src[%u]=%p, bytes=%zu): buffers overlap without being "
				"equal",
				who, dst, i, srcs[i], bytes);
			return -EINVAL;
		}
	}
	return 0;
}

static int rw_check_nranks(const char *who, unsigned int nranks)
{
	if (nranks >= 1)
		return 0;
	RW_WARN(RW_LOG_COLL, "%s(nranks=0): an avg needs nranks >= 1", who);
	return -EINVAL;
}

/* ---- host ----------------------------------------------------------------- */

/*
 * Fold nsrcs sources tile by tile: the accumulator tile stays in L1, so each
 * source is read once and dst written once whatever nsrcs is.  dst is only
 * written in a tile's last step, after every source of that tile was read,
 * which makes dst == srcs[j] safe for any j.  nranks != 0 divides each tile
 * while it is still in cache.
 */
static void rw_fold_host(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			 enum rw_dtype dtype, enum rw_op op, unsigned int nranks)
{
	const struct rw_reduce_isa_ops *ops = rw_host_ops();
	rw_reduce_fn *fn = ops->reduce[op][dtype];
	rw_div_fn *div = ops->div[dtype];
	size_t esize = rw_dtypes[dtype].size, tile = RW_TILE_BYTES / esize;
	char acc[RW_TILE_BYTES] __attribute__((aligned(64)));

	if (nsrcs == 1) {
		if (nranks)
			div(dst, srcs[0], count, nranks);
		else if (dst != srcs[0])
			memcpy(dst, srcs[0], count * esize);
		return;
	}
	if (nsrcs == 2 && !nranks) {
		fn(dst, srcs[0], srcs[1], count);
		return;
	}
	for (size_t off = 0; off < count; off += tile) {
		size_t n = RW_MIN(tile, count - off), at = off * esize;
		char *d = (char *)dst + at;

		if (nsrcs == 2) {
			fn(d, (const char *)srcs[0] + at, (const char *)srcs[1] + at, n);
		} else {
			fn(acc, (const char *)srcs[0] + at, (const char *)srcs[1] + at, n);
			for (unsigned int j = 2; j + 1 < nsrcs; j++)
				fn(acc, acc, (const char *)srcs[j] + at, n);
			fn(d, acc, (const char *)srcs[nsrcs - 1] + at, n);
		}
		if (nranks)
			div(d, d, n, nranks);
	}
}

int rw_reduce(void *dst, const void *a, const void *b, size_t count, enum rw_dtype dtype,
	      enum rw_op op)
{
	const void *srcs[2] = {a, b};
	int err = rw_check_dtype_op("rw_reduce", dtype, op);

	if (!err)
		err = rw_check_bufs("rw_reduce", dst, srcs, 2, count, dtype);
	if (err || count == 0)
		return err;
	rw_host_ops()->reduce[op][dtype](dst, a, b, count);
	return 0;
}

int rw_reduce_multi(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
		    enum rw_dtype dtype, enum rw_op op)
{
	int err = rw_check_dtype_op("rw_reduce_multi", dtype, op);

	if (!err)
		err = rw_check_bufs("rw_reduce_multi", dst, srcs, nsrcs, count, dtype);
	if (err || count == 0)
		return err;
	rw_fold_host(dst, srcs, nsrcs, count, dtype, op, 0);
	return 0;
}

int rw_reduce_multi_avg(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			enum rw_dtype dtype, unsigned int nranks)
{
	int err = rw_check_dtype_op("rw_reduce_multi_avg", dtype, RW_OP_AVG);

	if (!err)
		err = rw_check_nranks("rw_reduce_multi_avg", nranks);
	if (!err)
		err = rw_check_bufs("rw_reduce_multi_avg", dst, srcs, nsrcs, count, dtype);
	if (err || count == 0)
		return err;
	rw_fold_host(dst, srcs, nsrcs, count, dtype, RW_OP_SUM, nranks);
	return 0;
}

int rw_scale(void *dst, const void *src, size_t count, enum rw_dtype dtype, unsigned int nranks)
{
	int err = rw_check_dtype_op("rw_scale", dtype, RW_OP_AVG);

	if (!err)
		err = rw_check_nranks("rw_scale", nranks);
	if (!err)
		err = rw_check_bufs("rw_scale", dst, &src, 1, count, dtype);
	if (err || count == 0)
		return err;
	rw_host_ops()->div[dtype](dst, src, count, nranks);
	return 0;
}

/* ---- device ---------------------------------------------------------------- */

/*
 * Under the host-emulated GPU (gpu/rw_gpu_emu.h) a device fold is the host
 * fold, run by the stream's thread in stream order, on the emulator's view
 * of the buffers.  As on a GPU, every buffer must be device, managed or
 * pinned memory: pageable host memory given to a kernel is refused.
 */
struct rw_emu_fold {
	struct rw_dev_fold f;
	enum rw_dtype dtype;
	enum rw_op op;
};

static void rw_emu_fold_run(void *arg)
{
	struct rw_emu_fold *e = arg;

	rw_fold_host(e->f.dst, e->f.srcs, e->f.nsrcs, e->f.count, e->dtype, e->op, e->f.nranks);
	free(e);
}

static int rw_emu_buf(const char *who, const char *what, const void *p, size_t bytes, void **at)
{
	if (rw_cuda_mem_kind(p) == RW_MEM_HOST) {
		RW_WARN(RW_LOG_COLL,
			"%s(%s=%p, %zu bytes): host memory given to a device reduction", who, what,
			p, bytes);
		return -EFAULT;
	}
	*at = rw_gpu_emu_access(p, bytes);
	return *at ? 0 : -EFAULT;
}

static int rw_fold_emu(const char *who, const struct rw_dev_fold *f, enum rw_dtype dtype,
		       enum rw_op op, void *stream)
{
	size_t bytes = f->count * rw_dtypes[dtype].size;
	struct rw_emu_fold *e;
	void *at;
	int err;

	if (f->count == 0)
		return 0;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct rw_emu_fold){.f = *f, .dtype = dtype, .op = op};
	err = rw_emu_buf(who, "dst", f->dst, bytes, &e->f.dst);
	for (unsigned int i = 0; !err && i < f->nsrcs; i++) {
		err = rw_emu_buf(who, "src", f->srcs[i], bytes, &at);
		e->f.srcs[i] = at;
	}
	if (!err)
		err = rw_gpu_emu_launch_kernel(stream, rw_emu_fold_run, e);
	if (err)
		free(e);
	return err;
}

static int rw_fold_dev(const char *who, void *dst, const void *const *srcs, unsigned int nsrcs,
		       size_t count, enum rw_dtype dtype, enum rw_op op, unsigned int nranks,
		       void *stream)
{
	struct rw_dev_fold f = {.dst = dst, .nsrcs = nsrcs, .nranks = nranks, .count = count};
	int err = rw_check_dtype_op(who, dtype, op);

	if (!err)
		err = rw_check_bufs(who, dst, srcs, nsrcs, count, dtype);
	if (err)
		return err;
	memcpy(f.srcs, srcs, nsrcs * sizeof(*srcs));
	if (op == RW_OP_AVG)
		op = RW_OP_SUM;
	if (rw_gpu_emu_enabled())
		return rw_fold_emu(who, &f, dtype, op, stream);
	return rw_cuda_fold(&f, dtype, op, stream);
}

int rw_reduce_dev(void *dst, const void *a, const void *b, size_t count, enum rw_dtype dtype,
		  enum rw_op op, void *stream)
{
	const void *srcs[2] = {a, b};

	return rw_fold_dev("rw_reduce_dev", dst, srcs, 2, count, dtype, op, 0, stream);
}

int rw_reduce_multi_dev(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			enum rw_dtype dtype, enum rw_op op, void *stream)
{
	return rw_fold_dev("rw_reduce_multi_dev", dst, srcs, nsrcs, count, dtype, op, 0, stream);
}

int rw_reduce_multi_avg_dev(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			    enum rw_dtype dtype, unsigned int nranks, void *stream)
{
	int err = rw_check_nranks("rw_reduce_multi_avg_dev", nranks);

	return err ? err
		   : rw_fold_dev("rw_reduce_multi_avg_dev", dst, srcs, nsrcs, count, dtype,
				 RW_OP_SUM, nranks, stream);
}

int rw_scale_dev(void *dst, const void *src, size_t count, enum rw_dtype dtype, unsigned int nranks,
		 void *stream)
{
	int err = rw_check_nranks("rw_scale_dev", nranks);

	return err ? err
		   : rw_fold_dev("rw_scale_dev", dst, &src, 1, count, dtype, RW_OP_SUM, nranks,
				 stream);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny NVTX tool: loaded by any nvtx3 user through
 * NVTX_INJECTION64_PATH=.../libringway-nvtxlog.so, it counts and times the
 * push/pop ranges and marks of the core API (what ringway emits) per name,
 * and writes one summary file per process, <RWGPU_NVTX_LOG>.<pid> (stderr
 * when unset):
 *
 *   nvtx pid 1234 range "ringway allreduce" count 20 total_ms 41.210 max_us 3120.5
 *   nvtx pid 1234 mark "ringway: peer failed" count 1
 *
 * The file is rewritten when a thread's outermost range ends (at most every
 * 100 ms, and after every "ringway ..." collective) and at exit, because
 * ringway-perf --local ranks leave by _exit().  It stands in for Nsight
 * Systems where nsys cannot make a report (scripts/gpu-check.sh, step profile-nvtx; built by
 * tests/gpu/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#define NL_MAX_NAMES 128
#define NL_MAX_DEPTH 64
#define NL_NAME_LEN  64

struct nl_stat {
	char name[NL_NAME_LEN];
	int mark;
	uint64_t count, total_ns, max_ns;
};

static struct nl_stat stats[NL_MAX_NAMES];
static int nstats;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_flush_ns;

static _Thread_local struct {
	const char *name;
	uint64_t t0;
} stack[NL_MAX_DEPTH];
static _Thread_local int depth;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Caller holds lock.  NULL when the table is full. */
static struct nl_stat *stat_of(const char *name, int mark)
{
	for (int i = 0; i < nstats; i++)
		if (stats[i].mark == mark && strncmp(stats[i].name, name, NL_NAME_LEN - 1) == 0)
			return &stats[i];
	if (nstats == NL_MAX_NAMES)
		return NULL;
	snprintf(stats[nstats].name, NL_NAME_LEN, "%s", name ? name : "(null)");
	stats[nstats].mark = mark;
	return &stats[nstats++];
}

/* Caller holds lock. */
static void flush_locked(void)
{
	const char *base = getenv("RWGPU_NVTX_LOG");
	char path[4096], tmp[4200];
	FILE *f = stderr;

	if (base && *base) {
		snprintf(path, sizeof(path), "%s.%d", base, (int)getpid());
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		if (!f)
			return;
	}
	for (int i = 0; i < nstats; i++) {
		const struct nl_stat *s = &stats[i];

		if (s->mark)
			fprintf(f, "nvtx pid %d mark \"%s\" count %llu\n", (int)getpid(), s->name,
				(unsigned long long)s->count);
		else
			fprintf(f,
				"nvtx pid %d range \"%s\" count %llu total_ms %.3f max_us %.1f\n",
				(int)getpid(), s->name, (unsigned long long)s->count,
				(double)s->total_ns / 1e6, (double)s->max_ns / 1e3);
	}
	if (f != stderr) {
		fclose(f);
		rename(tmp, path);
	}
	last_flush_ns = now_ns();
}

static int NVTX_API nl_push(const char *name)
{
	if (depth < NL_MAX_DEPTH) {
		stack[depth].name = name;
		stack[depth].t0 = now_ns();
	}
	return depth++;
}

static int NVTX_API nl_pop(void)
{
	uint64_t t1 = now_ns();
	struct nl_stat *s;
	const char *name;
	uint64_t dt;

	if (depth == 0)
		return -1;
	if (--depth >= NL_MAX_DEPTH)
		return depth;
	name = stack[depth].name ? stack[depth].name : "(null)";
	dt = t1 - stack[depth].t0;
	pthread_mutex_lock(&lock);
	s = stat_of(name, 0);
	if (s) {
		s->count++;
		s->total_ns += dt;
		if (dt > s->max_ns)
			s->max_ns = dt;
	}
	if (depth == 0 && getenv("RWGPU_NVTX_LOG") &&
	    (strncmp(name, "ringway ", 8) == 0 || t1 - last_flush_ns > 100000000u))
		flush_locked();
	pthread_mutex_unlock(&lock);
	return depth;
}

static void NVTX_API nl_mark(const char *name)
{
	struct nl_stat *s;

	pthread_mutex_lock(&lock);
	s = stat_of(name ? name : "(null)", 1);
	if (s)
		s->count++;
	pthread_mutex_unlock(&lock);
}

static void nl_at_exit(void)
{
	pthread_mutex_lock(&lock);
	if (nstats)
		flush_locked();
	pthread_mutex_unlock(&lock);
}

/* The entry point nvtx3 looks up in the library NVTX_INJECTION64_PATH names. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (!cb || !cb->GetModuleFunctionTable ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table)
		return 0;
	if (size > NVTX_CBID_CORE_RangePushA)
		*table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)nl_push;
	if (size > NVTX_CBID_CORE_RangePop)
		*table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)nl_pop;
	if (size > NVTX_CBID_CORE_MarkA)
		*table[NVTX_CBID_CORE_MarkA] = (NvtxFunctionPointer)nl_mark;
	atexit(nl_at_exit);
	return 1;
}

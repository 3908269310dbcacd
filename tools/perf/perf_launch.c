/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where ranks come from: mpirun (Open MPI's OMPI_COMM_WORLD_*, or PMI_*),
 * torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or --local N,
 * which forks N ranks on this host.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_params.h"
#include "topo/rw_sysfs.h"
#include "tools/perf/perf.h"

static int to_int(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 1 << 20)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* Same on every rank of one mpirun job on one host. */
static unsigned job_hash(void)
{
	static const enum rw_launcher_var vars[] = {
		RW_LAUNCHER_OMPI_MCA_ess_base_jobid,
		RW_LAUNCHER_PMIX_NAMESPACE,
		RW_LAUNCHER_PMI_KVS_NAME,
		RW_LAUNCHER_PMI_FD,
		RW_LAUNCHER_OMPI_MCA_orte_hnp_uri,
	};
	unsigned h = 2166136261u;
	bool any = false;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = rw_launcher_get(vars[i]);

		for (; v && *v; v++, any = true)
			h = (h ^ (unsigned char)*v) * 16777619u;
	}
	if (!any) /* the launcher's daemon is every local rank's parent */
		h = (h ^ (unsigned)getppid()) * 16777619u;
	return h;
}

/*
 * The port is chosen outside the kernel's ephemeral ports: there, the local
 * port of any connection on this host can be the one rank 0 must listen
 * on, and its listen fails with EADDRINUSE.  20000 + hash % 30000 (half of
 * it inside the default 32768-60999) did so under mpirun in 1 launch of 16
 * right after a benchmark run ("bootstrap: rank 0 cannot listen on
 * 127.0.0.1:49140: Address already in use").
 */
unsigned perf_job_port(unsigned hash, const char *ephemeral_range)
{
	const unsigned min = 10000, max = 65535, enough = 1024;
	unsigned lo = 32768, hi = 60999, below, above, above_from;

	if (ephemeral_range) {
		unsigned a, b;

		if (sscanf(ephemeral_range, "%u %u", &a, &b) == 2 && a <= b && b <= max) {
			lo = a;
			hi = b;
		}
	}
	below = lo > min ? lo - min : 0; /* [min, lo) */
	above_from = hi + 1 > min ? hi + 1 : min;
	above = max + 1 - above_from; /* [above_from, max]: hi <= max */
	if (below >= enough && below >= above)
		return min + hash % below;
	if (above >= enough)
		return above_from + hash % above;
	/* no room outside the range: anywhere from min, spread by the job */
	return min + hash % (max - min + 1);
}

int perf_ranks_from_env(struct perf_ranks *out)
{
	const char *r, *s, *local;
	struct rw_config cfg;
	int local_size = -1;

	memset(out, 0, sizeof(*out));
	rw_config_load(&cfg, NULL, NULL);
	if ((r = rw_launcher_get(RW_LAUNCHER_OMPI_COMM_WORLD_RANK)) &&
	    (s = rw_launcher_get(RW_LAUNCHER_OMPI_COMM_WORLD_SIZE))) {
		out->how = "mpirun";
		local = rw_launcher_get(RW_LAUNCHER_OMPI_COMM_WORLD_LOCAL_SIZE);
	} else if ((r = rw_launcher_get(RW_LAUNCHER_PMI_RANK)) &&
		   (s = rw_launcher_get(RW_LAUNCHER_PMI_SIZE))) {
		out->how = "mpirun";
		local = rw_launcher_get(RW_LAUNCHER_MPI_LOCALNRANKS);
	} else if ((r = rw_launcher_get(RW_LAUNCHER_RANK)) &&
		   (s = rw_launcher_get(RW_LAUNCHER_WORLD_SIZE))) {
		out->how = "torchrun";
		local = NULL;
	} else {
		out->how = "single";
		out->nranks = 1;
		return 0;
	}
	if (to_int(r, &out->rank) || to_int(s, &out->nranks) || out->nranks < 1 ||
	    out->rank >= out->nranks) {
		fprintf(stderr, "ringway-perf: bad rank %s of %s from the environment\n", r, s);
		return -EINVAL;
	}
	if (local && to_int(local, &local_size))
		local_size = -1;
	/* the library's own default: RINGWAY_ROOT, else MASTER_ADDR/PORT */
	if (cfg.root[0] ||
	    (rw_launcher_get(RW_LAUNCHER_MASTER_ADDR) && rw_launcher_get(RW_LAUNCHER_MASTER_PORT)))
		return 0;
	if (strcmp(out->how, "mpirun") == 0 && local_size == out->nranks) {
		char range[64];
		bool known = rw_sysfs_read(cfg.sysfs_root, "proc/sys/net/ipv4/ip_local_port_range",
					   range, sizeof(range)) == 0;

		snprintf(out->root, sizeof(out->root), "127.0.0.1:%u",
			 perf_job_port(job_hash(), known ? range : NULL));
		return 0;
	}
	if (out->nranks > 1) {
		fprintf(stderr,
			"ringway-perf: %d ranks on several hosts: set RINGWAY_ROOT=<rank 0's "
			"host>:<port>\n",
			out->nranks);
		return -EINVAL;
	}
	return 0;
}

/* All of n bytes from fd; -1 at EOF (the writer died) or on an error. */
static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t got = read(fd, p, n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* Rank 0 of --local: open the rendezvous, tell the parent its id. */
static void open_rendezvous(int wfd, rw_unique_id_t *id)
{
	int rc = rw_get_unique_id(id);
	const char *p = (const char *)id;
	size_t left = sizeof(*id);

	if (rc) {
		fprintf(stderr, "ringway-perf: --local: rank 0: rw_get_unique_id: %s\n",
			rw_strerror(rc));
		_exit(1);
	}
	while (left) {
		ssize_t put = write(wfd, p, left);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			perror("ringway-perf: --local: rank 0: telling the others its rendezvous");
			_exit(1);
		}
		p += put;
		left -= (size_t)put;
	}
	close(wfd);
}

/*
 * A forked rank starts on its parent's CPU, and the scheduler may leave
 * two ranks sharing one for a whole short run (2 ranks, 4 KiB: 5.5 us a
 * call instead of 1.2 in about one launch of four).  Where the ranks fit
 * the CPUs we may use, rank r moves to the r-th of them and is then free
 * again (the whole mask back): a start like mpirun's, not a binding.
 */
static void spread(int rank, int n)
{
	cpu_set_t all, one;
	int k = 0;

	if (sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < n)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all) || k++ != rank)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) == 0)
			(void)sched_setaffinity(0, sizeof(all), &all);
		return;
	}
}

int perf_fork_local(int n, int (*body)(const struct perf_ranks *r, void *arg), void *arg)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	rw_unique_id_t id;
	int pfd[2] = {-1, -1}, failed = 0;

	if (!pids || pipe(pfd)) {
		perror("ringway-perf: --local");
		free(pids);
		return 1;
	}
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		/* the others start with rank 0's id; EOF: rank 0 died first */
		if (r == 1 && read_all(pfd[0], &id, sizeof(id))) {
			fprintf(stderr, "ringway-perf: --local: rank 0 gave no rendezvous\n");
			failed++;
			break;
		}
		pids[r] = fork();
		if (pids[r] == 0) {
			struct perf_ranks pr = {
				.rank = r, .nranks = n, .how = "--local", .id = &id};
			int rc;

			close(pfd[0]);
			if (r == 0 && n > 1)
				open_rendezvous(pfd[1], &id);
			else
				close(pfd[1]);
			if (n == 1)
				pr.id = NULL; /* nobody to meet */
			spread(r, n);
			rc = body(&pr, arg);
			fflush(NULL);
			_exit(rc ? 1 : 0);
		}
		if (pids[r] < 0) {
			perror("ringway-perf: fork");
			failed++;
			break;
		}
		if (r == 0) {
			close(pfd[1]); /* rank 0's end alone: its death is EOF */
			pfd[1] = -1;
		}
	}
	close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	for (int r = 0; r < n; r++) {
		int st;

		if (pids[r] <= 0 || waitpid(pids[r], &st, 0) != pids[r])
			continue;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "ringway-perf: rank %d %s %d\n", r,
				WIFEXITED(st) ? "exited with" : "killed by signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			failed++;
		}
	}
	free(pids);
	return failed ? 1 : 0;
}

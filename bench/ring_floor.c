/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ring_floor: the least time this host's kernel takes to move the bytes of
 * a ring allreduce, with nothing else done: no reduction, no chunking, no
 * step waiting for the one before it, no library at all.  An allreduce of
 * n bytes over P ranks, however it is built, has each rank receive at least
 * 2(P-1)/P n bytes (the ring's scatter-reduce and allgather move exactly
 * that); this program moves exactly that between P forked processes laid
 * in a ring, the same way round, between buffers the size of the
 * allreduce's, so what it measures is a floor for ringway, Open MPI and
 * Gloo alike on this machine (bench/allreduce_compare.sh prints it beside
 * them).
 *
 *   tcp  each rank sends its share to its successor and receives as much
 *        from its predecessor at once, over 127.0.0.1: S threads (-s) of
 *        C connections each way (-c), the share cut in equal slices, each
 *        thread polling its nonblocking sockets (TCP_NODELAY); every layout
 *        of the lists given is measured and the best one printed;
 *   mem  the ring's 2(P-1) steps of n/P, each one memcpy straight out of
 *        the predecessor's buffers (all mapped shared) into this rank's
 *        receive buffer: step 0 from its send buffer, every later step
 *        from the segment of its receive buffer that it wrote in the step
 *        before, piece by piece (64 KiB) as the predecessor's counter says
 *        each piece is there.  One copy per byte moved, the least any
 *        transport through memory does (ringway's shm slots copy twice,
 *        its cross-memory attach once but pins the pages first), and the
 *        bytes of every step but the first are written by another core in
 *        every call, as an allreduce's partial sums and results are.  The
 *        data are not checked: a rank may run up to P-1 steps ahead of its
 *        successor and rewrite a segment while the successor still reads it.
 *
 * Time per iteration is each rank's wall time over the timed iterations
 * (after a barrier), divided by their number; the slowest rank's is
 * printed (by rank 0).  Output, one line per layout tried and then the best:
 *
 *   ring_floor tcp 2 ranks 4194304 B, 2 thread(s) x 1 connection(s): 1234.5 us
 *   floor 4194304 1234.5
 *
 * usage: ring_floor -t tcp|mem -p ranks [-s 1,2,4] [-c 1,4] [-n iters] [-w warmup] bytes
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS   64
#define MAX_THREADS 8
#define MAX_SOCKS   8
#define MAX_CONNS   (MAX_THREADS * MAX_SOCKS)
#define LIMIT_S	    600 /* the whole run; a hung peer ends it (alarm) */

struct opts {
	int mem; /* else tcp */
	int ranks, iters, warmup;
	int threads[MAX_THREADS], nthreads; /* tcp: thread counts to try */
	int socks[MAX_SOCKS], nsocks;	    /* and connections per thread */
	int max_conns;
	size_t bytes;
};

/* Shared by every rank (MAP_SHARED before fork). */
struct shared {
	atomic_uint arrived, generation; /* the barrier */
	atomic_int failed;
	uint16_t port[MAX_RANKS];
	double us[MAX_RANKS];	      /* per rank, the latest measurement */
	double best;		      /* rank 0: the best slowest-rank time so far */
	atomic_uint piece[MAX_RANKS]; /* mem: pieces each rank has copied */
};

static struct shared *sh;

/* A rank gives up: says why (with errno's text when `sys`), tells the
 * others (they leave at their next wait) and exits. */
static void fail_rank(int rank, const char *what, bool sys)
{
	if (sys)
		fprintf(stderr, "ring_floor: rank %d: %s: %s\n", rank, what, strerror(errno));
	else
		fprintf(stderr, "ring_floor: rank %d: %s\n", rank, what);
	atomic_store(&sh->failed, 1);
	_exit(1);
}

static void die(int rank, const char *what)
{
	fail_rank(rank, what, true);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Every rank arrives before any leaves; yields while it waits (the ranks
 * may outnumber the cores). */
static void barrier(int ranks)
{
	unsigned gen = atomic_load(&sh->generation);

	if (atomic_fetch_add(&sh->arrived, 1) + 1 == (unsigned)ranks) {
		atomic_store(&sh->arrived, 0);
		atomic_fetch_add(&sh->generation, 1);
		return;
	}
	while (atomic_load(&sh->generation) == gen) {
		if (atomic_load(&sh->failed))
			_exit(1);
		sched_yield();
	}
}

/* Every rank's time in, rank 0 prints the slowest rank's and keeps the
 * best over the stream counts tried; the others wait until it has read them. */
static void report(int rank, int threads, int socks, const struct opts *o)
{
	barrier(o->ranks);
	if (rank == 0) {
		double us = 0;

		for (int r = 0; r < o->ranks; r++)
			us = sh->us[r] > us ? sh->us[r] : us;
		if (o->mem)
			printf("ring_floor mem %d ranks %zu B: %.1f us\n", o->ranks, o->bytes, us);
		else
			printf("ring_floor tcp %d ranks %zu B, %d thread(s) x %d connection(s): "
			       "%.1f us\n",
			       o->ranks, o->bytes, threads, socks, us);
		fflush(stdout);
		if (!sh->best || us < sh->best)
			sh->best = us;
	}
	barrier(o->ranks);
}

/* --- tcp ----------------------------------------------------------------- */

/* One thread's part: `n` connections each way, each carrying an equal
 * slice of the thread's bytes. */
struct stream {
	int n;
	int out[MAX_SOCKS], in[MAX_SOCKS]; /* to the successor, from the predecessor */
	const char *src[MAX_SOCKS];
	char *dst[MAX_SOCKS];
	size_t len[MAX_SOCKS];
};

/* Sends every slice to the successor while receiving as many bytes from
 * the predecessor, on whichever socket is ready. */
static int stream_move(const struct stream *s)
{
	size_t sent[MAX_SOCKS] = {0}, got[MAX_SOCKS] = {0};
	int left = 2 * s->n;

	for (int i = 0; i < s->n; i++)
		left -= (s->len[i] == 0) * 2;
	while (left > 0) {
		struct pollfd p[2 * MAX_SOCKS];

		for (int i = 0; i < s->n; i++) {
			p[2 * i] = (struct pollfd){.fd = sent[i] < s->len[i] ? s->out[i] : -1,
						   .events = POLLOUT};
			p[2 * i + 1] = (struct pollfd){.fd = got[i] < s->len[i] ? s->in[i] : -1,
						       .events = POLLIN};
		}
		int ready = poll(p, (nfds_t)(2 * s->n), 1000);

		if (ready < 0)
			return -1;
		if (ready == 0) { /* a peer that stopped: the others say so */
			if (atomic_load(&sh->failed))
				_exit(1);
			continue;
		}
		for (int i = 0; i < s->n; i++) {
			ssize_t k;

			if (p[2 * i].revents) {
				k = send(s->out[i], s->src[i] + sent[i], s->len[i] - sent[i],
					 MSG_DONTWAIT | MSG_NOSIGNAL);
				if (k < 0 && errno != EAGAIN)
					return -1;
				sent[i] += k > 0 ? (size_t)k : 0;
				left -= sent[i] == s->len[i];
			}
			if (p[2 * i + 1].revents) {
				k = recv(s->in[i], s->dst[i] + got[i], s->len[i] - got[i],
					 MSG_DONTWAIT);
				if (k == 0)
					return -2; /* the predecessor closed: it died */
				if (k < 0 && errno != EAGAIN)
					return -1;
				got[i] += k > 0 ? (size_t)k : 0;
				left -= got[i] == s->len[i];
			}
		}
	}
	return 0;
}

/* A stream's thread: one move per round, rounds started and ended by the
 * rank's main thread through two barriers. */
struct worker {
	pthread_t thread;
	struct stream s;
	pthread_barrier_t *go, *done;
	const int *rounds;
	int rank;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		pthread_barrier_wait(w->go);
		if (*w->rounds < 0)
			return NULL;
		for (int i = 0; i < *w->rounds; i++) {
			int rc = stream_move(&w->s);

			if (rc == -2)
				fail_rank(w->rank, "the predecessor closed its connection", false);
			if (rc)
				die(w->rank, "moving bytes over tcp");
		}
		pthread_barrier_wait(w->done);
	}
}

static int tcp_listen(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) || listen(fd, MAX_CONNS) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static void nodelay(int fd, int rank)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die(rank, "TCP_NODELAY");
}

/* `conns` connections to the successor, as many accepted from the
 * predecessor.  Connection k carries slice k, whose length both ends
 * compute alike; the listener's queue hands connections over in the order
 * they were made, so accepted k is the predecessor's connection k (were
 * it not, a slice's bytes would not add up and the received-bytes check
 * or a stall would say so). */
static void tcp_connect(int rank, int lfd, int conns, const struct opts *o, int *out, int *in)
{
	int succ = (rank + 1) % o->ranks;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons(sh->port[succ])};

	for (int k = 0; k < conns; k++) {
		out[k] = socket(AF_INET, SOCK_STREAM, 0);
		if (out[k] < 0 || connect(out[k], (struct sockaddr *)&a, sizeof(a)))
			die(rank, "connecting to the successor");
		nodelay(out[k], rank);
	}
	for (int k = 0; k < conns; k++) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};

		/* a predecessor that never comes: the others say so */
		while (poll(&p, 1, 100) == 0)
			if (atomic_load(&sh->failed))
				_exit(1);
		in[k] = accept(lfd, NULL, NULL);
		if (in[k] < 0)
			die(rank, "accepting the predecessor");
		nodelay(in[k], rank);
	}
}

/* Runs the warm-up rounds, then (every rank together) the timed ones;
 * returns their wall time. */
static double tcp_run(pthread_barrier_t *go, pthread_barrier_t *done, int *rounds,
		      const struct opts *o)
{
	double t0;

	*rounds = o->warmup;
	pthread_barrier_wait(go);
	pthread_barrier_wait(done);
	barrier(o->ranks);
	t0 = now_us();
	*rounds = o->iters;
	pthread_barrier_wait(go);
	pthread_barrier_wait(done);
	return now_us() - t0;
}

/* One layout: `threads` threads of `socks` connections each, the share cut
 * in equal slices (multiples of 64 bytes, the last takes the rest). */
static void tcp_layout(int rank, const int *out, const int *in, char *src, char *dst, size_t share,
		       int threads, int socks, const struct opts *o)
{
	int nslices = threads * socks, rounds = 0;
	size_t per = share / (size_t)nslices / 64 * 64, off = 0;
	struct worker w[MAX_THREADS];
	pthread_barrier_t go, done;

	pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
	for (int t = 0; t < threads; t++) {
		w[t] = (struct worker){
			.s.n = socks, .go = &go, .done = &done, .rounds = &rounds, .rank = rank};
		for (int i = 0; i < socks; i++) {
			int k = t * socks + i;
			size_t len = k == nslices - 1 ? share - off : per;

			w[t].s.out[i] = out[k];
			w[t].s.in[i] = in[k];
			w[t].s.src[i] = src + off;
			w[t].s.dst[i] = dst + off;
			w[t].s.len[i] = len;
			off += len;
		}
		if (pthread_create(&w[t].thread, NULL, worker_main, &w[t]))
			die(rank, "starting a stream's thread");
	}
	barrier(o->ranks);
	sh->us[rank] = tcp_run(&go, &done, &rounds, o) / o->iters;
	rounds = -1;
	pthread_barrier_wait(&go);
	for (int t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
}

static void tcp_rank(int rank, int lfd, char *src, char *dst, size_t share, const struct opts *o)
{
	int out[MAX_CONNS], in[MAX_CONNS];

	int pred = (rank + o->ranks - 1) % o->ranks;

	tcp_connect(rank, lfd, o->max_conns, o, out, in);
	for (int t = 0; t < o->nthreads; t++)
		for (int c = 0; c < o->nsocks; c++) {
			memset(dst, 0, share);
			tcp_layout(rank, out, in, src, dst, share, o->threads[t], o->socks[c], o);
			/* every byte is the predecessor's (its rank + 1): the
			 * first is, and each equals the next */
			if (share &&
			    (dst[0] != (char)(pred + 1) || memcmp(dst, dst + 1, share - 1)))
				fail_rank(rank, "a received byte is not the predecessor's", false);
			report(rank, o->threads[t], o->socks[c], o);
		}
}

/* --- mem ----------------------------------------------------------------- */

/* Where rank r's buffers are: every rank's send and receive buffers lie in
 * one shared mapping, so that any rank reads them. */
struct mem_bufs {
	char *base;
	size_t bytes;
};

static char *mem_send(const struct mem_bufs *m, int r)
{
	return m->base + (size_t)r * 2 * m->bytes;
}

static char *mem_recv(const struct mem_bufs *m, int r)
{
	return mem_send(m, r) + m->bytes;
}

#define MEM_PIECE ((size_t)64 << 10)

/* One allreduce's worth of moves; *piece numbers the pieces copied so far
 * (every rank copies as many per call), and sh->piece[rank] tells the
 * successor how far this rank is. */
static void mem_move(int rank, const struct mem_bufs *m, const struct opts *o, unsigned *piece)
{
	int p = o->ranks, pred = (rank + p - 1) % p;
	size_t seg = o->bytes / (size_t)p;
	size_t step_pieces = (o->bytes - (size_t)(p - 1) * seg + MEM_PIECE - 1) / MEM_PIECE;

	for (int s = 0; s < 2 * (p - 1); s++) {
		int k = ((rank - 1 - s) % p + 2 * p) % p;
		size_t off = (size_t)k * seg, len = k == p - 1 ? o->bytes - off : seg;
		const char *src = s == 0 ? mem_send(m, pred) : mem_recv(m, pred);
		unsigned first = *piece;

		for (size_t at = 0; at < len; at += MEM_PIECE, (*piece)++) {
			size_t n = len - at < MEM_PIECE ? len - at : MEM_PIECE;
			/* the predecessor wrote this piece in the step before:
			 * steps are step_pieces apart on every rank's count */
			unsigned need = *piece - (unsigned)step_pieces + 1;

			while (s > 0 &&
			       (int)(atomic_load_explicit(&sh->piece[pred], memory_order_acquire) -
				     need) < 0) { /* before need, across the wrap */
				if (atomic_load(&sh->failed))
					_exit(1);
				sched_yield();
			}
			memcpy(mem_recv(m, rank) + off + at, src + off + at, n);
			atomic_store_explicit(&sh->piece[rank], *piece + 1, memory_order_release);
		}
		/* a short segment still counts a whole step's pieces */
		*piece = first + (unsigned)step_pieces;
		atomic_store_explicit(&sh->piece[rank], *piece, memory_order_release);
	}
}

static void mem_rank(int rank, const struct mem_bufs *m, const struct opts *o)
{
	unsigned piece = 0;
	double t0;

	memset(mem_send(m, rank), rank + 1, o->bytes);
	memset(mem_recv(m, rank), 0, o->bytes);
	barrier(o->ranks); /* every buffer is written */
	for (int i = 0; i < o->warmup; i++)
		mem_move(rank, m, o, &piece);
	barrier(o->ranks);
	t0 = now_us();
	for (int i = 0; i < o->iters; i++)
		mem_move(rank, m, o, &piece);
	sh->us[rank] = (now_us() - t0) / o->iters;
	/* every byte came from some rank's send buffer (1..P), none is the
	 * 0 it started as: a step that copied nothing would leave one */
	if (memchr(mem_recv(m, rank), 0, o->bytes))
		fail_rank(rank, "a byte of the receive buffer never arrived", false);
	report(rank, 1, 1, o); /* the buffers stay until all are done */
}

/* --- main ---------------------------------------------------------------- */

/* A size with an optional K/M/G suffix (binary), at most MAX_BYTES; 0 when
 * it is not one. */
#define MAX_BYTES ((size_t)1 << 40)

static size_t parse_bytes(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end || !(v >= 1) || v > (double)MAX_BYTES)
		return 0;
	return (size_t)v;
}

static int usage(const char *why)
{
	fprintf(stderr,
		"ring_floor: %s\n"
		"usage: ring_floor -t tcp|mem -p ranks [-s 1,2,4] [-c 1,4] [-n iters] [-w warmup] "
		"bytes\n",
		why);
	return 2;
}

/* A whole decimal number from min to max, or -1. */
static long parse_int(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	return v;
}

/* A comma-separated list of counts from 1 to max into v[]; its length, or
 * 0 when one is out of range. */
static int parse_list(char *arg, int *v, int max)
{
	int n = 0;

	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		long k = parse_int(tok, 1, max);

		if (n == max || k < 0)
			return 0;
		v[n++] = (int)k;
	}
	return n;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){.ranks = 2,
			   .iters = 20,
			   .warmup = 3,
			   .threads = {1},
			   .nthreads = 1,
			   .socks = {1},
			   .nsocks = 1};
	o->mem = -1;
	while ((c = getopt(argc, argv, "t:p:s:c:n:w:")) != -1) {
		switch (c) {
		case 't':
			o->mem = !strcmp(optarg, "mem") ? 1 : !strcmp(optarg, "tcp") ? 0 : -1;
			break;
		case 'p':
			o->ranks = (int)parse_int(optarg, 2, MAX_RANKS);
			break;
		case 's':
			if (!(o->nthreads = parse_list(optarg, o->threads, MAX_THREADS)))
				return usage("-s takes thread counts from 1 to 8");
			break;
		case 'c':
			if (!(o->nsocks = parse_list(optarg, o->socks, MAX_SOCKS)))
				return usage("-c takes connection counts from 1 to 8");
			break;
		case 'n':
			o->iters = (int)parse_int(optarg, 1, 100000000);
			break;
		case 'w':
			o->warmup = (int)parse_int(optarg, 0, 100000000);
			break;
		default:
			return usage("unknown option");
		}
	}
	if (o->mem < 0)
		return usage("-t takes tcp or mem");
	if (o->ranks < 2 || o->ranks > MAX_RANKS)
		return usage("-p takes 2 to 64 ranks");
	if (o->iters < 1 || o->warmup < 0)
		return usage("-n takes 1 to 100000000 iterations, -w 0 to 100000000");
	if (o->mem &&
	    (o->nthreads != 1 || o->threads[0] != 1 || o->nsocks != 1 || o->socks[0] != 1))
		return usage("mem copies on one thread: no -s or -c");
	for (int t = 0; t < o->nthreads; t++)
		for (int k = 0; k < o->nsocks; k++)
			if (o->threads[t] * o->socks[k] > o->max_conns)
				o->max_conns = o->threads[t] * o->socks[k];
	if (optind != argc - 1 || !(o->bytes = parse_bytes(argv[optind])))
		return usage("one size in bytes (K/M/G suffixes, 1 to 1T) is needed");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse(argc, argv, &o), lfd[MAX_RANKS], status, forked = 0;
	pid_t pids[MAX_RANKS];
	size_t share;
	struct mem_bufs mb = {0};

	if (rc)
		return rc;
	mb.bytes = o.bytes;
	/* what each rank receives: the ring's 2(P-1) segments of n/P */
	share = o.bytes / (size_t)o.ranks * 2 * (size_t)(o.ranks - 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o.mem) /* every rank's buffers, readable by all */
		mb.base = mmap(NULL, 2 * o.bytes * (size_t)o.ranks, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || mb.base == MAP_FAILED) {
		perror("ring_floor: shared memory");
		return 1;
	}
	for (int r = 0; r < o.ranks && !o.mem; r++)
		if ((lfd[r] = tcp_listen(&sh->port[r])) < 0) {
			perror("ring_floor: listening on 127.0.0.1");
			return 1;
		}
	for (int r = 0; r < o.ranks; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("ring_floor: fork");
			atomic_store(&sh->failed, 1); /* the ranks forked end at their next wait */
			break;
		}
		if (pid == 0) {
			alarm(LIMIT_S);
			/* only its own listener: a rank never forked refuses connects */
			for (int k = 0; k < o.ranks && !o.mem; k++)
				if (k != r)
					close(lfd[k]);
			if (o.mem) {
				mem_rank(r, &mb, &o);
			} else {
				/* each rank's own buffers, every page touched, as a
				 * user's are */
				char *src = malloc(share), *dst = malloc(share);

				if (!src || !dst)
					die(r, "buffers");
				memset(src, r + 1, share);
				memset(dst, 0, share);
				tcp_rank(r, lfd[r], src, dst, share, &o);
			}
			_exit(0);
		}
		pids[forked++] = pid;
	}
	for (int r = 0; r < o.ranks && !o.mem; r++)
		close(lfd[r]);
	/* a rank that died without saying so (a signal, the OOM killer): the
	 * others are told, and killed should they not leave at once */
	rc = 0;
	for (int left = forked; left > 0; left--) {
		if (wait(&status) < 0)
			break;
		/* every signal but the SIGTERM sent here is news, whichever
		 * rank's end is reaped first */
		if (WIFSIGNALED(status) && !(rc && WTERMSIG(status) == SIGTERM))
			fprintf(stderr, "ring_floor: a rank was killed by signal %d\n",
				WTERMSIG(status));
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			if (!rc)
				for (int k = 0; k < forked; k++)
					kill(pids[k], SIGTERM);
			rc = 1;
			atomic_store(&sh->failed, 1);
		}
	}
	if (rc || atomic_load(&sh->failed)) {
		fprintf(stderr, "ring_floor: a rank failed\n");
		return 1;
	}
	printf("floor %zu %.1f\n", o.bytes, sh->best);
	return 0;
}

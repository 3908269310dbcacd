/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-netperf: point-to-point bandwidth and latency through the NCCL net
 * plugin ABI (ncclNetPlugin_v11, the version NCCL 2.28 binds), between two
 * processes: forked on this host (--local) or on two hosts (--server /
 * --client HOST).  Sizes are swept nccl-tests style (-b -e -f); GB = 1e9.
 * The same run measures a plain single-stream TCP transfer and an 8-byte TCP
 * ping-pong between the same two processes, so the comparison is fair.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"
#include "common/rw_params.h"
#include "tools/netperf/np.h"

#define WINDOW	      8 /* sends in flight, like NCCL_STEPS */
#define WAIT_LIMIT_US (60 * 1e6)

struct opts {
	size_t min_bytes, max_bytes;
	double factor;
	int iters; /* 0: automatic per size */
	int warmup;
	int dev;
	bool local, server, baseline, verbose;
	const char *host;
	int port;
	const char *plugin;
	ncclNetVDeviceProps_v11_t fuse; /* --fuse: ndevs 0 when not given */
};

struct peer {
	ncclNet_v11_t *net;
	void *ctx;
	void *send_comm, *recv_comm;
	void *send_mh, *recv_mh;
	char *sbuf, *rbuf;
	int rank;
	int boot;
};

static bool verbose;

/*
 * --profile: a stand-in profiler (what NCCL's callback and a profiler
 * plugin do per event: hand out an event, close it), to measure the cost
 * of ringway's network events.  Events started and stopped are counted.
 */
static bool profile;
static char prof_phandle; /* the phandle of every isend/irecv */
static struct {
	unsigned long started, stopped;
	char event; /* what *eHandle points to */
} prof;

static ncclResult_t np_profiler(void **eh, int type, void *ph, int64_t id, void *data)
{
	(void)ph, (void)id, (void)data;
	if (type == ncclProfilerNetEventStart) {
		*eh = &prof.event;
		prof.started++;
	} else if (*eh == &prof.event) {
		prof.stopped++;
	}
	return ncclSuccess;
}

static void np_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	if (level > NCCL_LOG_WARN && !verbose)
		return;
	fprintf(stderr, "[%d] %s %s:%d ", (int)getpid(), level == NCCL_LOG_WARN ? "WARN" : "INFO",
		file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ringway-netperf --local | --server [-p PORT] | --client HOST [-p PORT]\n"
		   "  -b, --minbytes N   smallest message (default 8; K/M/G allowed)\n"
		   "  -e, --maxbytes N   largest message (default 64M)\n"
		   "  -f, --stepfactor F multiply the size by F each step (default 2)\n"
		   "  -n, --iters N      messages per size (default: ~1 GB per size, 5..1000)\n"
		   "  -w, --warmup N     untimed messages per size (default 5)\n"
		   "  -d, --dev N        plugin device index (default 0)\n"
		   "      --fuse A,B,..  fuse these devices (makeVDevice) and use the virtual one\n"
		   "      --no-baseline  skip the raw TCP comparison\n"
		   "      --plugin PATH  plugin to load (default libnccl-net-ringway.so)\n"
		   "      --profile      a stand-in profiler: network events for each transfer\n"
		   "      --params       list every RINGWAY_* variable with its value and exit\n"
		   "  -v, --verbose      show the plugin's INFO lines\n");
}

static int parse_size_arg(const char *s, size_t *out)
{
	if (rw_parse_size(s, out) == 0)
		return 0;
	fprintf(stderr, "ringway-netperf: '%s' is not a size\n", s);
	return -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"minbytes", required_argument, NULL, 'b'},
		{"maxbytes", required_argument, NULL, 'e'},
		{"stepfactor", required_argument, NULL, 'f'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'w'},
		{"dev", required_argument, NULL, 'd'},
		{"port", required_argument, NULL, 'p'},
		{"local", no_argument, NULL, 'L'},
		{"server", no_argument, NULL, 'S'},
		{"client", required_argument, NULL, 'C'},
		{"no-baseline", no_argument, NULL, 'B'},
		{"plugin", required_argument, NULL, 'P'},
		{"fuse", required_argument, NULL, 'F'},
		{"profile", no_argument, NULL, 'Q'},
		{"params", no_argument, NULL, 'R'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	*o = (struct opts){.min_bytes = 8,
			   .max_bytes = 64 << 20,
			   .factor = 2,
			   .warmup = 5,
			   .port = 18515,
			   .baseline = true};
	while ((c = getopt_long(argc, argv, "b:e:f:n:w:d:p:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_size_arg(optarg, &o->min_bytes))
				return -1;
			break;
		case 'e':
			if (parse_size_arg(optarg, &o->max_bytes))
				return -1;
			break;
		case 'f':
			o->factor = atof(optarg);
			break;
		case 'n':
			o->iters = atoi(optarg);
			break;
		case 'w':
			o->warmup = atoi(optarg);
			break;
		case 'd':
			o->dev = atoi(optarg);
			break;
		case 'p':
			o->port = atoi(optarg);
			break;
		case 'L':
			o->local = true;
			break;
		case 'S':
			o->server = true;
			break;
		case 'C':
			o->host = optarg;
			break;
		case 'B':
			o->baseline = false;
			break;
		case 'P':
			o->plugin = optarg;
			break;
		case 'F': {
			char *end = optarg;

			o->fuse.ndevs = 0;
			while (*end && o->fuse.ndevs < NCCL_NET_MAX_DEVS_PER_NIC_V11) {
				o->fuse.devs[o->fuse.ndevs++] = (int)strtol(end, &end, 10);
				if (*end == ',')
					end++;
				else
					break;
			}
			if (*end || o->fuse.ndevs < 2) {
				fprintf(stderr,
					"ringway-netperf: --fuse takes 2 to %d device "
					"indices, comma-separated\n",
					NCCL_NET_MAX_DEVS_PER_NIC_V11);
				return -1;
			}
			break;
		}
		case 'Q':
			profile = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'R': {
			struct rw_config cfg;

			rw_config_load(&cfg, NULL, NULL);
			rw_params_print(stdout, &cfg);
			exit(0);
		}
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (o->local + o->server + (o->host != NULL) != 1) {
		fprintf(stderr, "ringway-netperf: pick one of --local, --server, --client HOST\n");
		usage(stderr);
		return -1;
	}
	if (o->factor <= 1.0 || o->min_bytes > o->max_bytes || o->iters < 0 || o->warmup < 0 ||
	    o->max_bytes > (size_t)INT_MAX * 4) {
		fprintf(stderr, "ringway-netperf: need -f > 1, -b <= -e, -n/-w >= 0\n");
		return -1;
	}
	return 0;
}

/* The installed plugin, else the one in this build tree. */
static void *load_plugin(const char *path)
{
	const char *tries[] = {path, "libnccl-net-ringway.so", RW_NETPERF_BUILD_PLUGIN};
	void *h = NULL;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]) && !h; i++) {
		if (!tries[i])
			continue;
		h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
		if (!h && path)
			fprintf(stderr, "ringway-netperf: dlopen(%s): %s\n", tries[i], dlerror());
		if (path)
			break;
	}
	if (!h)
		fprintf(stderr, "ringway-netperf: cannot load the plugin (give --plugin PATH)\n");
	return h;
}

#define NCHECK(call)                                                                               \
	do {                                                                                       \
		ncclResult_t r_ = (call);                                                          \
		if (r_ != ncclSuccess) {                                                           \
			fprintf(stderr, "ringway-netperf[%d]: %s failed: ncclResult %d\n",         \
				p->rank, #call, (int)r_);                                          \
			return -EIO;                                                               \
		}                                                                                  \
	} while (0)

static int wait_req(struct peer *p, void *req, int *size)
{
	double deadline = np_now_us() + WAIT_LIMIT_US;
	int done = 0;

	while (!done) {
		NCHECK(p->net->test(req, &done, size));
		if (!done && np_now_us() > deadline) {
			fprintf(stderr, "ringway-netperf[%d]: request did not complete in %.0f s\n",
				p->rank, WAIT_LIMIT_US / 1e6);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

static int post_send(struct peer *p, void *data, size_t size, void **req)
{
	double deadline = np_now_us() + WAIT_LIMIT_US;

	do {
		NCHECK(p->net->isend(p->send_comm, data, size, 0, p->send_mh,
				     profile ? &prof_phandle : NULL, req));
	} while (!*req && np_now_us() < deadline);
	return *req ? 0 : -ETIMEDOUT;
}

static int post_recv(struct peer *p, void *data, size_t size, void **req)
{
	int tag = 0;
	void *mh = p->recv_mh;
	void *ph = profile ? &prof_phandle : NULL;
	double deadline = np_now_us() + WAIT_LIMIT_US;

	do {
		NCHECK(p->net->irecv(p->recv_comm, 1, &data, &size, &tag, &mh, &ph, req));
	} while (!*req && np_now_us() < deadline);
	return *req ? 0 : -ETIMEDOUT;
}

static int setup(struct peer *p, const struct opts *o, size_t bufsize)
{
	char mine[NCCL_NET_HANDLE_MAXSIZE] = {0}, theirs[NCCL_NET_HANDLE_MAXSIZE];
	ncclNetCommConfig_v11_t config = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	ncclNetDeviceHandle_v11_t *dh = NULL;
	ncclNetProperties_v11_t props;
	void *lcomm = NULL;
	double deadline;
	int ndev, rc, dev = o->dev;
	void *h = load_plugin(o->plugin);

	if (!h)
		return -ENOENT;
	p->net = dlsym(h, "ncclNetPlugin_v11");
	if (!p->net) {
		fprintf(stderr, "ringway-netperf: no ncclNetPlugin_v11 in the plugin\n");
		return -ENOENT;
	}
	NCHECK(p->net->init(&p->ctx, 0x52494e47, &config, np_logger, profile ? np_profiler : NULL));
	NCHECK(p->net->devices(&ndev));
	if (o->fuse.ndevs) { /* as NCCL_NET_FORCE_MERGE would */
		ncclNetVDeviceProps_v11_t vp = o->fuse;

		NCHECK(p->net->makeVDevice(&dev, &vp));
		NCHECK(p->net->devices(&ndev));
	}
	if (dev < 0 || dev >= ndev) {
		fprintf(stderr, "ringway-netperf: device %d does not exist (%d devices)\n", dev,
			ndev);
		return -ENODEV;
	}
	NCHECK(p->net->getProperties(dev, &props));
	if (p->rank == 0)
		printf("# plugin %s, device %d: %s, %d Mbps, pci %s, maxRecvs %d, fuses %d "
		       "device(s)\n",
		       p->net->name, dev, props.name, props.speed,
		       props.pciPath ? props.pciPath : "none", props.maxRecvs, props.vProps.ndevs);

	NCHECK(p->net->listen(p->ctx, dev, mine, &lcomm));
	rc = np_write_all(p->boot, mine, sizeof(mine));
	rc = rc ? rc : np_read_all(p->boot, theirs, sizeof(theirs));
	if (rc)
		return rc;
	deadline = np_now_us() + WAIT_LIMIT_US;
	while (!p->send_comm || !p->recv_comm) {
		if (!p->send_comm)
			NCHECK(p->net->connect(p->ctx, dev, theirs, &p->send_comm, &dh));
		if (!p->recv_comm)
			NCHECK(p->net->accept(lcomm, &p->recv_comm, &dh));
		if (np_now_us() > deadline) {
			fprintf(stderr, "ringway-netperf[%d]: connection not established\n",
				p->rank);
			return -ETIMEDOUT;
		}
	}
	NCHECK(p->net->closeListen(lcomm));

	p->sbuf = mmap(NULL, bufsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->rbuf = mmap(NULL, bufsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->sbuf == MAP_FAILED || p->rbuf == MAP_FAILED)
		return -ENOMEM;
	memset(p->sbuf, 0, bufsize);
	memset(p->rbuf, 0, bufsize);
	NCHECK(p->net->regMr(p->send_comm, p->sbuf, bufsize, NCCL_PTR_HOST, &p->send_mh));
	NCHECK(p->net->regMr(p->recv_comm, p->rbuf, bufsize, NCCL_PTR_HOST, &p->recv_mh));
	return 0;
}

static void fill(char *buf, size_t n, size_t seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

static size_t count_wrong(const char *buf, size_t n, size_t seed)
{
	size_t wrong = 0;

	for (size_t i = 0; i < n; i++)
		wrong += buf[i] != (char)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
	return wrong;
}

/* iters messages rank 0 -> rank 1 with WINDOW in flight, then a 1-byte ack.
 * Rank 0 returns the elapsed time; rank 1 the number of wrong bytes in the
 * last message. */
static int stream(struct peer *p, size_t size, int iters, double *elapsed_us, size_t *wrong)
{
	void *reqs[WINDOW] = {0};
	int sz, last_sz = -1, rc = 0;
	double t0;

	rc = np_barrier(p->boot);
	if (rc)
		return rc;
	t0 = np_now_us();
	for (int i = 0; i < iters + WINDOW && !rc; i++) {
		void **slot = &reqs[i % WINDOW];

		if (*slot) {
			rc = wait_req(p, *slot, &sz);
			*slot = NULL;
			if (!rc && p->rank == 1 && i == iters + WINDOW - 1)
				last_sz = sz;
		}
		if (rc || i >= iters)
			continue;
		rc = p->rank == 0 ? post_send(p, p->sbuf, size, slot)
				  : post_recv(p, p->rbuf, size, slot);
	}
	/* the last receive may sit in an earlier slot when iters < WINDOW */
	for (int i = 0; i < WINDOW && !rc; i++) {
		if (reqs[i]) {
			rc = wait_req(p, reqs[i], &sz);
			reqs[i] = NULL;
		}
	}
	if (rc)
		return rc;
	/* ack */
	void *req = NULL;

	if (p->rank == 0)
		rc = post_recv(p, p->rbuf, 1, &req);
	else
		rc = post_send(p, p->sbuf, 1, &req);
	rc = rc ? rc : wait_req(p, req, &sz);
	*elapsed_us = np_now_us() - t0;
	/* rank 1 checks the last message after the ack, outside rank 0's time */
	if (!rc && p->rank == 1)
		*wrong = iters < WINDOW || (size_t)last_sz == size
				 ? count_wrong(p->rbuf, size, size)
				 : size;
	return rc;
}

/* ping-pong: rank 0 sends, rank 1 echoes.  Returns the mean round trip. */
static int pingpong(struct peer *p, size_t size, int iters, double *rtt_us)
{
	double t0;
	int sz, rc = np_barrier(p->boot);

	t0 = np_now_us();
	for (int i = 0; i < iters && !rc; i++) {
		void *req = NULL;

		if (p->rank == 0) {
			rc = post_send(p, p->sbuf, size, &req);
			rc = rc ? rc : wait_req(p, req, &sz);
			rc = rc ? rc : post_recv(p, p->rbuf, size, &req);
			rc = rc ? rc : wait_req(p, req, &sz);
		} else {
			rc = post_recv(p, p->rbuf, size, &req);
			rc = rc ? rc : wait_req(p, req, &sz);
			rc = rc ? rc : post_send(p, p->sbuf, size, &req);
			rc = rc ? rc : wait_req(p, req, &sz);
		}
	}
	*rtt_us = (np_now_us() - t0) / iters;
	return rc;
}

static int auto_iters(const struct opts *o, size_t size)
{
	double n = 1e9 / (double)(size ? size : 1);

	if (o->iters)
		return o->iters;
	return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

static int run(struct peer *p, const struct opts *o, const char *raw_host)
{
	size_t bufsize = o->max_bytes ? o->max_bytes : 1;
	double last_bw = 0, small_rtt = 0;
	size_t total_wrong = 0, last = 0;
	int rc = setup(p, o, bufsize);

	if (rc)
		return rc;
	if (p->rank == 0)
		printf("#\n# %12s %8s %12s %12s %12s %8s\n", "size(B)", "iters", "time(us)",
		       "algbw(GB/s)", "rtt(us)", "#wrong");
	for (size_t size = o->min_bytes;;) {
		int iters = auto_iters(o, size);
		int pp = iters < 200 ? iters : 200;
		double el = 0, rtt = 0;
		size_t wrong = 0;

		if (p->rank == 0)
			fill(p->sbuf, size, size);
		if (o->warmup)
			rc = stream(p, size, o->warmup, &el, &wrong);
		rc = rc ? rc : stream(p, size, iters, &el, &wrong);
		rc = rc ? rc : pingpong(p, size, pp, &rtt);
		/* rank 1 reports its check to rank 0 */
		uint64_t w = wrong;

		if (!rc)
			rc = p->rank == 1 ? np_write_all(p->boot, &w, sizeof(w))
					  : np_read_all(p->boot, &w, sizeof(w));
		if (rc)
			return rc;
		if (p->rank == 0) {
			double bw = size * (double)iters / (el * 1e3);

			printf("  %12zu %8d %12.2f %12.3f %12.2f %8" PRIu64 "\n", size, iters,
			       el / iters, bw, rtt, w);
			fflush(stdout);
			last_bw = bw;
			if (size == o->min_bytes)
				small_rtt = rtt;
			last = size;
		}
		total_wrong += w;
		if (size >= o->max_bytes)
			break;
		size_t next = (size_t)(size * o->factor);
		size = next > size ? next : size + 1;
		if (size > o->max_bytes)
			size = o->max_bytes;
	}

	if (o->baseline) {
		struct np_raw_result raw = {0};
		int iters = auto_iters(o, o->max_bytes);
		double mc = 0;

		/* one thread's memcpy on rank 0 while rank 1 waits */
		rc = np_barrier(p->boot);
		if (!rc && p->rank == 0)
			mc = np_memcpy_gbps(p->rbuf, p->sbuf, bufsize, iters);
		rc = rc ? rc : np_barrier(p->boot);
		if (rc)
			return rc;
		if (p->rank == 0)
			printf("#\n# memcpy, one thread, %zu B x %d: %.3f GB/s\n"
			       "# ringway at %zu B: %.3f GB/s = %.2fx memcpy\n",
			       bufsize, iters, mc, last, last_bw, last_bw / mc);

		rc = np_raw_tcp(p->boot, p->rank, raw_host, bufsize, iters, 2000, &raw);
		if (rc) {
			fprintf(stderr, "ringway-netperf: raw TCP baseline failed: %s\n",
				strerror(-rc));
			return rc;
		}
		if (p->rank == 0) {
			printf("#\n# raw TCP, one stream, %zu B x %d: %.3f GB/s\n", raw.bytes,
			       raw.iters, raw.gbps);
			printf("# raw TCP ping-pong, 8 B: rtt %.2f us blocking, %.2f us "
			       "busy-polling\n",
			       raw.rtt_us, raw.rtt_poll_us);
			printf("# ringway at %zu B: %.3f GB/s = %.2fx raw TCP\n", last, last_bw,
			       last_bw / raw.gbps);
			printf("# ringway rtt at %zu B: %.2f us = %.2fx raw TCP (the faster of the "
			       "two)\n",
			       o->min_bytes, small_rtt,
			       small_rtt / RW_MIN(raw.rtt_us, raw.rtt_poll_us));
		}
	}
	if (p->rank == 0)
		printf("# Out of bounds values : %zu %s\n", total_wrong,
		       total_wrong ? "FAILED" : "OK");

	NCHECK(p->net->deregMr(p->send_comm, p->send_mh));
	NCHECK(p->net->deregMr(p->recv_comm, p->recv_mh));
	NCHECK(p->net->closeSend(p->send_comm));
	NCHECK(p->net->closeRecv(p->recv_comm));
	NCHECK(p->net->finalize(p->ctx));
	if (profile && p->rank == 0)
		printf("# profiler events: %lu started, %lu stopped (rank 0)\n", prof.started,
		       prof.stopped);
	return total_wrong ? -EIO : 0;
}

int main(int argc, char **argv)
{
	struct peer p = {0};
	struct opts o;
	const char *raw_host = "127.0.0.1";
	int rc;

	if (parse_opts(argc, argv, &o))
		return 2;
	verbose = o.verbose;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (o.local) {
		int sv[2];
		pid_t child;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
			perror("socketpair");
			return 1;
		}
		child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		p.rank = child == 0 ? 1 : 0;
		p.boot = sv[p.rank];
		close(sv[1 - p.rank]);
		rc = run(&p, &o, raw_host);
		if (child == 0)
			_exit(rc ? 1 : 0);
		int status = 0;

		if (rc)
			kill(child, SIGTERM);
		waitpid(child, &status, 0);
		if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			fprintf(stderr, "ringway-netperf: the peer process failed\n");
			rc = -EIO;
		}
	} else {
		p.rank = o.server ? 0 : 1;
		rc = o.server ? np_boot_server(o.port, &p.boot)
			      : np_boot_client(o.host, o.port, 60000, &p.boot);
		if (rc) {
			fprintf(stderr, "ringway-netperf: bootstrap on port %d: %s\n", o.port,
				strerror(-rc));
			return 1;
		}
		if (!o.server)
			raw_host = o.host;
		rc = run(&p, &o, raw_host);
	}
	return rc ? 1 : 0;
}

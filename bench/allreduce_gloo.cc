// SPDX-License-Identifier: Apache-2.0
//
// The Gloo baseline of bench/allreduce_compare.sh: gloo::AllreduceRingChunked,
// float32 sum, N ranks forked on this host, rendezvous through a FileStore in
// a fresh temporary directory, Gloo's TCP device on loopback.  For every size
// it runs the warm-up, a barrier, then the timed calls; the time per call is
// the slowest rank's average.  Rank 0 prints one line per size:
//
//   gloo <ranks> <bytes> <us per call>
//
// (comment lines start with '#').  Gloo reduces in place; a size below one
// float is rounded up to one float.
//
//   g++ -O2 -std=c++17 -o allreduce_gloo allreduce_gloo.cc -lgloo -lpthread
//   ./allreduce_gloo -n 2 -i 20 -w 5 8 64K 2M 256M
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace
{

size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G':
	case 'g':
		v *= 1024.0 * 1024 * 1024;
		break;
	case 'M':
	case 'm':
		v *= 1024.0 * 1024;
		break;
	case 'K':
	case 'k':
		v *= 1024.0;
		break;
	default:
		break;
	}
	return (size_t)v;
}

int iters_for(size_t bytes, int iters)
{
	// iters < 0: scale by size, like the script does (|iters| calls at most).
	if (iters > 0)
		return iters;
	long n = (long)((64UL << 20) / (bytes ? bytes : 1));
	return (int)std::max(5L, std::min(n, (long)-iters));
}

int run_rank(int rank, int n, const std::string &dir, const std::vector<size_t> &sizes, int iters,
	     int warmup)
{
	gloo::transport::tcp::attr attr("127.0.0.1");
	auto dev = gloo::transport::tcp::CreateDevice(attr);
	gloo::rendezvous::FileStore store(dir);
	auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);

	ctx->setTimeout(std::chrono::seconds(120));
	ctx->connectFullMesh(store, dev);
	if (rank == 0) {
		printf("# gloo AllreduceRingChunked: %d rank(s), float sum, tcp device on "
		       "127.0.0.1, "
		       "FileStore %s\n",
		       n, dir.c_str());
		printf("# gloo ranks bytes us\n");
		fflush(stdout);
	}
	size_t maxb = *std::max_element(sizes.begin(), sizes.end());
	size_t maxc = std::max<size_t>(1, maxb / sizeof(float));
	std::vector<float> buf(maxc);
	for (size_t i = 0; i < maxc; i++)
		buf[i] = (float)((i + (size_t)rank) % 3) - 1;
	for (size_t bytes : sizes) {
		int count = (int)std::max<size_t>(1, bytes / sizeof(float));
		int it = iters_for(bytes, iters);
		gloo::AllreduceRingChunked<float> ar(ctx, {buf.data()}, count);
		gloo::BarrierAllToAll barrier(ctx);

		for (int i = 0; i < (warmup > 0 ? warmup : std::max(2, it / 10)); i++)
			ar.run();
		barrier.run();
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < it; i++)
			ar.run();
		double us = std::chrono::duration<double, std::micro>(
				    std::chrono::steady_clock::now() - t0)
				    .count() /
			    it;
		gloo::AllreduceRing<double> mx(ctx, {&us}, 1, gloo::ReductionFunction<double>::max);
		mx.run();
		if (rank == 0) {
			printf("gloo %d %zu %.2f\n", n, (size_t)count * sizeof(float), us);
			fflush(stdout);
		}
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	int n = 2, iters = -1000, warmup = 0, c;
	std::vector<size_t> sizes;

	while ((c = getopt(argc, argv, "n:i:w:")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: allreduce_gloo [-n ranks] [-i iters|-maxiters] [-w warmup] "
				"size...\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		sizes.push_back(parse_size(argv[i]));
	if (sizes.empty())
		sizes.push_back(32UL << 20);
	if (n < 1)
		return 2;

	char tmpl[] = "/tmp/allreduce_gloo.XXXXXX";
	if (!mkdtemp(tmpl)) {
		perror("allreduce_gloo: mkdtemp");
		return 1;
	}
	std::string dir = tmpl;
	std::vector<pid_t> kids;
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("allreduce_gloo: fork");
			return 1;
		}
		if (pid == 0) {
			int rc;
			try {
				rc = run_rank(r, n, dir, sizes, iters, warmup);
			} catch (const std::exception &e) {
				fprintf(stderr, "allreduce_gloo: rank %d: %s\n", r, e.what());
				rc = 1;
			}
			fflush(stdout);
			_exit(rc);
		}
		kids.push_back(pid);
	}
	int bad = 0;
	for (pid_t pid : kids) {
		int st = 0;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	std::error_code ec;
	std::filesystem::remove_all(dir, ec);
	if (ec)
		fprintf(stderr, "allreduce_gloo: could not remove %s: %s\n", dir.c_str(),
			ec.message().c_str());
	if (bad)
		fprintf(stderr, "allreduce_gloo: %d rank(s) failed\n", bad);
	return bad ? 1 : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The baseline of bench/allreduce_compare.sh: MPI_Allreduce timed the way
 * ringway-perf times rw_allreduce, printing the same table (size, count,
 * type, redop, then time, algbw, busbw for out-of-place and in-place, and
 * the average bus bandwidth; GB = 1e9, busbw = algbw x 2(n-1)/n, the
 * slowest rank's average time).  float32 sum only.
 *
 *   mpicc -O2 -o allreduce_mpi allreduce_mpi.c
 *   mpirun --mca pml ob1 --mca btl tcp,self -np 4 ./allreduce_mpi -b 16M -e 256M -f 2
 *   mpirun --mca pml ob1 --mca btl self,vader -np 2 ./allreduce_mpi -b 8 -e 8 -n 1000
 *
 * bench/allreduce_compare.sh reads the out-of-place time (µs, column 5).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t parse_size(const char *s)
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

int main(int argc, char **argv)
{
	size_t minb = 32 << 20, maxb = 32 << 20;
	double factor = 2, sum_bw = 0;
	int iters = 20, warmup = 5, rank, n, lines = 0, c;
	float *send, *recv;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	while ((c = getopt(argc, argv, "b:e:f:n:w:c:d:o:")) != -1) {
		switch (c) {
		case 'b':
			minb = parse_size(optarg);
			break;
		case 'e':
			maxb = parse_size(optarg);
			break;
		case 'f':
			factor = atof(optarg);
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		default:
			break; /* -c -d -o: accepted, float sum only */
		}
	}
	send = malloc(maxb);
	recv = malloc(maxb);
	if (!send || !recv)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < maxb / sizeof(float); i++)
		send[i] = recv[i] = (float)((i + (size_t)rank) % 3) - 1;
	if (rank == 0) {
		printf("# MPI_Allreduce baseline: %d rank(s), float sum, iters %d, warmup %d\n", n,
		       iters, warmup);
		printf("#\n");
		printf("#                                                out-of-place              "
		       "         in-place\n");
		printf("#       size         count      type   redop     time   algbw   busbw  "
		       "#wrong     time   algbw   busbw  #wrong\n");
		printf("#        (B)    (elements)                        (us)  (GB/s)  (GB/s)     "
		       "        (us)  (GB/s)  (GB/s)\n");
	}
	for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)((double)bytes * factor)) {
		int count = (int)(bytes / sizeof(float));
		double us[2];

		for (int ip = 0; ip < 2; ip++) {
			const void *s = ip ? MPI_IN_PLACE : send;
			double t, tmax;

			for (int i = 0; i < warmup; i++)
				MPI_Allreduce(s, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			MPI_Barrier(MPI_COMM_WORLD);
			t = MPI_Wtime();
			for (int i = 0; i < iters; i++)
				MPI_Allreduce(s, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			t = (MPI_Wtime() - t) / iters * 1e6;
			MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			us[ip] = tmax;
		}
		if (rank == 0) {
			printf("%12zu  %12d  %8s  %6s", (size_t)count * sizeof(float), count,
			       "float", "sum");
			for (int ip = 0; ip < 2; ip++) {
				double alg = (double)count * sizeof(float) / (us[ip] * 1e-6) / 1e9;
				double bus = alg * 2.0 * (n - 1) / n;

				printf(us[ip] < 1e4   ? "  %7.2f"
				       : us[ip] < 1e5 ? "  %7.1f"
						      : "  %7.0f",
				       us[ip]);
				printf("  %6.2f  %6.2f  %6s", alg, bus, "N/A");
				sum_bw += bus;
				lines++;
			}
			printf("\n");
			fflush(stdout);
		}
		if (factor <= 1)
			break;
	}
	if (rank == 0) {
		printf("# Out of bounds values : 0 OK\n");
		printf("# Avg bus bandwidth    : %g\n", lines ? sum_bw / lines : 0.0);
		printf("#\n");
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}

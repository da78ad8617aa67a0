/* SPDX-License-Identifier: BSD-2-Clause */
/* An MPI program whose every result is checked: a ping-pong from 8 B to 4 MiB between rank 0
 * and each other rank (patterns that depend on size, round and sender), MPI_Allreduce and
 * MPI_Alltoall. Prints one line per stage; exits non-zero on the first wrong byte. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t i, size_t size, int round, int from)
{
	return (unsigned char)(i * 131 + size * 7 + (size_t)round * 17 + (size_t)from * 29 + 1);
}

static int fail(int rank, const char *what, size_t at)
{
	fprintf(stderr, "rank %d: %s wrong at %zu\n", rank, what, at);
	MPI_Abort(MPI_COMM_WORLD, 3);
	return 3;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const size_t max = 4u << 20;
	unsigned char *buf = malloc(max);
	if (!buf) return 2;

	/* Ping-pong: rank 0 with each peer, each size, a few rounds. */
	long checked = 0;
	for (int peer = 1; peer < size; ++peer) {
		for (size_t n = 8; n <= max; n *= 2) {
			const int rounds = n >= (1u << 20) ? 3 : 10;
			for (int r = 0; r < rounds; ++r) {
				if (rank == 0) {
					for (size_t i = 0; i < n; ++i) buf[i] = pattern(i, n, r, 0);
					MPI_Send(buf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD);
					memset(buf, 0, n);
					MPI_Recv(buf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					for (size_t i = 0; i < n; ++i)
						if (buf[i] != pattern(i, n, r, peer)) return fail(rank, "pong", i);
					checked += (long)n;
				} else if (rank == peer) {
					memset(buf, 0, n);
					MPI_Recv(buf, (int)n, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					for (size_t i = 0; i < n; ++i)
						if (buf[i] != pattern(i, n, r, 0)) return fail(rank, "ping", i);
					for (size_t i = 0; i < n; ++i) buf[i] = pattern(i, n, r, peer);
					MPI_Send(buf, (int)n, MPI_BYTE, 0, r, MPI_COMM_WORLD);
				}
			}
		}
	}
	if (rank == 0) printf("pingpong ok: 8 B - 4 MiB with %d peers, %ld bytes checked\n", size - 1, checked);

	/* Allreduce: every rank's vector depends on its rank; the sum is known in closed form. */
	enum { N = 1 << 16 };
	static long in[N], out[N];
	for (int i = 0; i < N; ++i) in[i] = (long)i * (rank + 1) + rank;
	MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	const long ranks_sum = (long)size * (size + 1) / 2, rank_ids = (long)size * (size - 1) / 2;
	for (int i = 0; i < N; ++i)
		if (out[i] != (long)i * ranks_sum + rank_ids) return fail(rank, "allreduce", (size_t)i);
	if (rank == 0) printf("allreduce ok: %d longs\n", N);

	/* Alltoall: the block for rank d from rank s holds (s, d, index). */
	const int per = 4096;
	int *send = malloc(sizeof(int) * (size_t)per * (size_t)size);
	int *recv = malloc(sizeof(int) * (size_t)per * (size_t)size);
	if (!send || !recv) return 2;
	for (int d = 0; d < size; ++d)
		for (int i = 0; i < per; ++i) send[d * per + i] = rank * 1000003 + d * 10007 + i;
	MPI_Alltoall(send, per, MPI_INT, recv, per, MPI_INT, MPI_COMM_WORLD);
	for (int s = 0; s < size; ++s)
		for (int i = 0; i < per; ++i)
			if (recv[s * per + i] != s * 1000003 + rank * 10007 + i)
				return fail(rank, "alltoall", (size_t)(s * per + i));
	if (rank == 0) printf("alltoall ok: %d ints per pair\n", per);

	free(send);
	free(recv);
	free(buf);
	MPI_Finalize();
	return 0;
}

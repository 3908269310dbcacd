/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which algorithm runs a collective, and the ring's channels and chunk, by
 * size and rank count (coll/README.md, "Choosing the algorithm").
 *
 * The alpha-beta model: a message of n bytes costs a + n b (a: the latency
 * of one message through the transport and the poll loop, b: the time per
 * byte).  On P ranks an allreduce of n bytes costs
 *
 *   ring       2(P-1) a + 2(P-1)/P n b    (+ the reductions, (P-1)/P n)
 *   rd         ceil(log2 P) a + ... n b   (+ one fold step each way when
 *              P is not a power of two: 2 more messages of n)
 *   direct     (P-1) messages of n sent back to back: ~ a + (P-1) n b
 *              (the sends overlap), P-1 reductions of n
 *
 * so below some size the latency terms win (rd, direct) and above it the
 * ring's bandwidth term does.  Where exactly is measured on this host
 * (the table below); a and b differ per transport but the crossovers
 * measured were close enough for one table.
 *
 * The ring's channels and chunk follow the size too: a channel is a ring
 * of its own, so splitting a small message over 4 of them only multiplies
 * its messages; the chunk pipelines a step once a channel's piece of a
 * segment is large.  RINGWAY_NCHANNELS and RINGWAY_CHUNK_BYTES, when set
 * (environment or rw_config_t), win over the table, as RINGWAY_ALGO does.
 * Every rank computes the same choice from the same inputs; ranks must be
 * given the same RINGWAY_* settings (as they must for the ring anyway).
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "topo/rw_topo.h"

static const char *const algo_names[] = {
	[RW_COLL_ALGO_RING] = "ring",	  [RW_COLL_ALGO_PS] = "ps",
	[RW_COLL_ALGO_AUTO] = "auto",	  [RW_COLL_ALGO_RD] = "rd",
	[RW_COLL_ALGO_DIRECT] = "direct",
};
static_assert(RW_ARRAY_SIZE(algo_names) == RW_COLL_ALGO_COUNT, "a name per algorithm");

const char *rw_coll_algo_name(enum rw_coll_algo algo)
{
	return (unsigned)algo < RW_COLL_ALGO_COUNT ? algo_names[algo] : "?";
}

/*
 * auto, allreduce on host memory: the latency algorithms up to these sizes
 * (bytes of the buffer), by rank count and by the links' transport (shm,
 * or a network: socket, ib); measured with ringway-perf --local P over shm
 * and socket on the 2-core build host, P = 2..5, twice: before and after
 * the ring lost its token round trip (coll/README.md has the figures).  The first row that covers P
 * applies; 6..16 ranks are extrapolated by the model above (the crossover grows with P, and a rank
 * count that is not a power of two pays rd's fold: two more messages of the whole buffer).
 */
struct lat_row {
	int max_ranks;
	size_t direct_max; /* direct exchange up to here */
	size_t rd_max;	   /* then recursive doubling up to here */
};

/*
 * Over shm, direct exchange of up to half a window (32 KiB) goes through the
 * links' windows (small_win.c): no message at all, and it beats rd at every
 * rank count measured (ringway-perf -a direct vs -a rd, medians of 3, us:
 * 4 ranks 8 B 6.6 vs 14.1, 8 KiB 13.9 vs 18.7, 16 KiB 19.3 vs 21.3; 6 ranks
 * 8 B 14.3 vs 22.6, 4 KiB 19.6 vs 27.4); past the window they are even
 * (4 ranks 32 KiB 30.1 vs 30.3).
 */
static const struct lat_row lat_shm[] = {
	{2, 128 << 10, 0},		   /* 2 ranks: rd and direct are the same one exchange */
	{3, 16 << 10, 128 << 10},	   /* direct through the windows, then rd */
	{4, 16 << 10, 64 << 10},	   /* the same */
	{RW_COLL_DIRECT_MAX, 16 << 10, 0}, /* the windows, then the ring */
	{INT_MAX, 0, 16 << 10},		   /* no mesh above 8 ranks: rd */
};

static const struct lat_row lat_net[] = {
	{2, 512 << 10, 0}, /* 2 ranks send no token: 512 KiB direct 351 / ring 396 us */
	{3, 0, 512 << 10},
	{4, 0, 256 << 10}, /* without tokens: 256 KiB rd 318 / ring 423 us, 512 KiB 581 / 540 */
	{INT_MAX, 0, 128 << 10},
};

/*
 * The ring's channels and chunk by size (bytes of the whole buffer): the
 * first row whose max_bytes covers it.  Channels are at most those the comm
 * connected (RINGWAY_NCHANNELS, 4 by default); the chunk at most the staging
 * slot (RINGWAY_CHUNK_BYTES's value).  Measured (ring forced, 2 and 4
 * ranks, shm and socket, 1/2/4 channels x 256K..4M chunks): one channel
 * is best up to 64 KiB (4 channels took 2-5x its time at 4 KiB), 2 from
 * there to 2 MiB, 2-4 above; the chunk made no difference outside noise.
 * Measured again later (medians of 3-5 alternating launches, us,
 * 1 channel vs 2): 4 ranks on 2 cores TCP 128 KiB 301 vs 465, 512 KiB 538
 * vs 771, 1 MiB 1221 vs 1073; shm 128 KiB 76 vs 88 (4 channels 103);
 * 2 ranks shm 512 KiB 41 vs 49, TCP 512 KiB 183 vs 193, 1 MiB 239 vs 297:
 * one channel up to 512 KiB now (each channel's messages are one more
 * wake-up per ring step on an oversubscribed host), at 2 ranks up to 1 MiB
 * (shm 78 vs 87, TCP 230 vs 290; at 2 MiB TCP 2 channels win, 509 vs 656).
 * Over shm one channel holds on to 2 MiB (4 ranks, quiet launches, out of
 * place / in place: 1 MiB ~280/250 vs 2 channels ~310/280 and 4 ~400/330;
 * 2 MiB ~790/570 vs ~935/710 and ~1090/820; 4 MiB 3098 vs 2802 and 2861;
 * 2 ranks 2 MiB 180 vs 175).
 * Once the ring took its shm chunks straight from the slots (a sink), 4
 * channels lost everywhere over shm, and one held on further (medians of
 * 3 alternating launches, us, 1 / 2 / 4 channels, out of place): 2 ranks
 * 4 MiB 269 / 315 / 357, 16 MiB 2291 / 2359 / 2484, 64 MiB 12164 / 11728 /
 * 11499; 4 ranks 2 MiB 612 / 673 / 1146, 4 MiB 1866 / 2064 / 2731, 8 MiB
 * 5228 / 4428 / 4831, 64 MiB 39335 / 39530 / 42555.
 * The first row whose max_ranks and max_bytes both cover the collective.
 */
struct ring_row {
	int max_ranks;
	size_t max_bytes;
	int nchannels;
	size_t chunk_bytes;
};

static const struct ring_row ring_net[] = {
	{2, 1 << 20, 1, 4 << 20},
	{INT_MAX, 512 << 10, 1, 4 << 20},
	{INT_MAX, 2 << 20, 2, 4 << 20},
	{INT_MAX, SIZE_MAX, 4, 4 << 20},
};

static const struct ring_row ring_shm[] = {
	{2, 16 << 20, 1, 4 << 20},
	{INT_MAX, 4 << 20, 1, 4 << 20},
	{INT_MAX, SIZE_MAX, 2, 4 << 20},
};

/*
 * Device buffers between ranks of one host (CUDA IPC, every chunk on the
 * device): a chunk is a hand-off of device work polled from the host, so
 * chunks are 16 MiB (at most dev_chunk_bytes) and channels few.  Measured
 * on an H200, 2 ranks sharing it under MPS, busbw GB/s (coll_comm.c has
 * the whole sweep): 16 MiB 1 x 16M 134 vs 2 x 16M 111 (4 x 4M, the host
 * table, 34); 64 MiB 2 x 16M 270 vs 1 x 16M 211 and 4 x 16M 234; 256 MiB
 * 2 x 16M 299 vs 4 x 16M 310 (within the spread, at half the staging).
 */
static const struct ring_row ring_dev_shm[] = {
	{INT_MAX, 16 << 20, 1, 16 << 20},
	{INT_MAX, SIZE_MAX, 2, 16 << 20},
};

/*
 * Non-temporal stores for the results a rank keeps (ring chunks copied
 * from the shm slots into recvbuf and not forwarded: coll_mem.c).  Once a
 * collective's buffers on this host no longer fit the last-level cache,
 * its results evict the inputs that the next call, or the next chunk,
 * reads; written around the cache, they leave it to the inputs, and a
 * line written whole is not fetched first.  Below the cache it would only
 * send results to memory that their reader (an in-place collective's next
 * call, the optimizer) takes from the cache.  The working set is every
 * rank's buffers on the host (links_shm: all of them; else the two ranks
 * a shm link joins, at least), out of place both buffers.  Measured with
 * ringway-perf over shm, 3 alternating rounds, us, plain / non-temporal
 * at the threshold 8 MiB (2 ranks, 32 MiB L3): 2 ranks out of place 8 MiB
 * 934-1037 / 848-850, 16 MiB 2289-3243 / 1935-2088, 64 MiB 11344-11816 /
 * 9295-9896, 256 MiB 45986-46147 / 40064-41536; in place 64 MiB 8063-9700
 * / 6395-7017, 256 MiB 35990-36576 / 25574-28818; but in place 8 MiB
 * (16 MiB of buffers, inside the cache) 505-531 / 670-713, and 4 MiB 216-
 * 261 / 225-264.  4 ranks: 16 MiB 9196-9398 / 8104-8881, 64 MiB 34359-
 * 36882 / 32546-34051, 256 MiB 143710-145383 / 129998-133895.  Hence
 * three quarters of the last-level cache, as glibc's memcpy takes for its
 * own non-temporal threshold.
 */
#define RW_NONTEMPORAL_NEVER ((size_t)1 << 40)

void rw_coll_nontemporal_init(struct rw_coll_comm *c, const struct rw_config *cfg)
{
	size_t llc = 0;

	if (cfg->nontemporal_bytes) {
		/* the parameter's largest value, 1024G, means never */
		c->nontemporal_bytes = cfg->nontemporal_bytes >= RW_NONTEMPORAL_NEVER
					       ? SIZE_MAX
					       : cfg->nontemporal_bytes;
		return;
	}
	if (rw_topo_cache_bytes(cfg, -1, &llc)) {
		c->nontemporal_bytes = SIZE_MAX;
		RW_LOG_ONCE(RW_LOG_INFO, RW_LOG_COLL,
			    "coll: no last-level cache size in sysfs: results are written "
			    "through the cache at every size");
		return;
	}
	c->nontemporal_bytes = llc / 4 * 3;
	RW_LOG_ONCE(RW_LOG_INFO, RW_LOG_COLL,
		    "coll: last-level cache %zu KiB (sysfs): host collectives whose buffers on "
		    "this host pass %zu KiB keep their results with non-temporal stores",
		    llc >> 10, c->nontemporal_bytes >> 10);
}

bool rw_coll_nontemporal(const struct rw_coll_comm *c, const void *src, size_t src_bytes,
			 const void *dst, size_t dst_bytes)
{
	size_t ranks = c->links_shm ? (size_t)c->nranks : 2;
	const char *s = src, *d = dst;
	size_t per_rank = src_bytes + dst_bytes;

	if (c->nontemporal_bytes == SIZE_MAX)
		return false;
	if (s && d && s < d + dst_bytes && d < s + src_bytes)
		per_rank = RW_MAX(src_bytes, dst_bytes); /* in place: one buffer */
	return per_rank > c->nontemporal_bytes / ranks;
}

bool rw_coll_links_on_shm(const struct rw_coll_comm *c)
{
	bool any = false;

	for (int i = 0; i < c->nlinks; i++) {
		const struct rw_coll_link *l = &c->links[i];

		if (!l->comm || rw_link_is_ctrl(l))
			continue;
		if (strcmp(l->comm->net->ops->name, "shm") != 0)
			return false;
		any = true;
	}
	return any;
}

static size_t buffer_bytes(const struct rw_coll_comm *c, enum rw_coll_kind kind, size_t count,
			   size_t es)
{
	size_t n = count * es;

	if (kind == RW_COLL_REDUCE_SCATTER || kind == RW_COLL_ALLGATHER)
		n *= (size_t)c->nranks;
	return n;
}

static enum rw_coll_algo lat_choice(const struct rw_coll_comm *c, size_t bytes)
{
	bool shm = c->links_shm;
	const struct lat_row *table = shm ? lat_shm : lat_net;
	size_t n = shm ? RW_ARRAY_SIZE(lat_shm) : RW_ARRAY_SIZE(lat_net);

	for (size_t i = 0; i < n; i++) {
		const struct lat_row *row = &table[i];

		if (c->nranks > row->max_ranks)
			continue;
		if (row->direct_max && bytes <= row->direct_max && c->nranks <= RW_COLL_DIRECT_MAX)
			return RW_COLL_ALGO_DIRECT;
		if (row->rd_max && bytes <= row->rd_max)
			return RW_COLL_ALGO_RD;
		break;
	}
	return RW_COLL_ALGO_RING;
}

void rw_coll_choose(const struct rw_coll_comm *c, enum rw_coll_kind kind, size_t count,
		    enum rw_dtype dtype, bool device, struct rw_coll_choice *out)
{
	size_t bytes = buffer_bytes(c, kind, count, rw_dtype_size(dtype));
	enum rw_coll_algo algo = c->algo;
	const struct ring_row *row = c->links_shm ? ring_shm : ring_net;
	/* device collectives' slots are dev_chunk_bytes apart */
	size_t chunk_max = device ? c->dev_chunk_bytes : c->chunk_bytes;
	bool chunk_set = device ? c->dev_chunk_set : c->chunk_set;

	if (device && c->links_shm)
		row = ring_dev_shm;

	/* the other algorithms are allreduce on host memory over their links */
	if (kind != RW_COLL_ALLREDUCE || device || c->nranks < 2)
		algo = RW_COLL_ALGO_RING;
	else if (algo == RW_COLL_ALGO_AUTO)
		algo = rw_coll_has_p2p(c) ? lat_choice(c, bytes) : RW_COLL_ALGO_RING;
	else if ((algo == RW_COLL_ALGO_RD || algo == RW_COLL_ALGO_DIRECT) && !rw_coll_has_p2p(c))
		algo = RW_COLL_ALGO_RING;
	else if (algo == RW_COLL_ALGO_DIRECT && c->nranks > RW_COLL_DIRECT_MAX)
		algo = RW_COLL_ALGO_RD; /* linked to rd's partners only */
	while (c->nranks > row->max_ranks || bytes > row->max_bytes)
		row++; /* the last row covers everything */
	*out = (struct rw_coll_choice){
		.algo = algo,
		.nchannels = c->nch_set ? c->nchannels : RW_MIN(row->nchannels, c->nchannels),
		.chunk_bytes = chunk_set ? chunk_max : RW_MIN(row->chunk_bytes, chunk_max),
	};
	if (algo == RW_COLL_ALGO_RD || algo == RW_COLL_ALGO_DIRECT) {
		out->nchannels = 1; /* one message per peer, the whole buffer */
		out->chunk_bytes = bytes;
	} else if (algo == RW_COLL_ALGO_PS) {
		out->nchannels = 1;
		out->chunk_bytes = c->chunk_bytes;
	}
}

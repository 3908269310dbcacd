/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: what a same-host peer (same uid, any process) controls in
 * the shm transport, through the real code in this one process:
 *
 *   mode 0, the hello: the 64-byte rw_shm_hello, its two descriptors (how
 *     many, sealed or not, mode, size) and what they hold (the segment
 *     header, the doorbell page), sent over the listener's real socket to
 *     rw_net_accept().  A comm accepted gets a receive posted and tested.
 *   mode 1, the ring: a real connect/accept pair, then a script that mixes
 *     honest isend/irecv/test with forged writes into the shared segment:
 *     slot headers (and payload) published by bumping the sender's tail,
 *     posted-receive entries published by bumping the receiver's count,
 *     and any word of the sender's and receiver's lines.
 *
 * Input: byte 0 picks the mode (bit 0).  Mode 0: two control bytes, then
 * the hello, the segment header and the doorbell's first 16 bytes (missing
 * bytes are zero).  Mode 1: a script of ops, op = byte, kind = op % 6:
 *   0  slot:  64 header bytes + len (byte % 65) payload bytes at tail
 *   1  post:  128 entry bytes at posted
 *   2  irecv: n = 1 + b0 % 8 buffers, sizes 512 * b[1+i], tags b[9+i] % 4
 *   3  isend: size 256 * b0 (CMA above RINGWAY_SHM_CMA_MIN), tag b1 % 4
 *   4  test every request once
 *   5  line word: b0 picks one of the 8-byte words of lines 1 and 2,
 *      the next 8 bytes are its value
 * then every request is tested a few times and both comms are closed.
 * The job line (line 3) is left alone: a forged CMA destination makes the
 * cooperating sender write into "the receiver's" memory, which in one
 * process is our own, so that is not a finding.
 *
 * Anything goes except a crash, a sanitizer report, a hang, an accept with
 * a refusal in the reply (or the other way round), or objects left behind.
 *
 * Two builds (tests/support/rw_fuzz.h): with RW_FUZZ_LIBFUZZER the
 * libFuzzer entry point only (rw_add_fuzzer fuzz_shm, make fuzz); otherwise
 * a test that runs the seed folder given and 60 mutations of each seed
 * (byte 0, the mode, is kept).
 *   build-fuzz/tests/net/fuzz_shm -max_total_time=600 new tests/net/fuzz_shm_corpus
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "common/rw_params.h"
#include "tests/support/rw_fuzz.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_internal.h"
#include "transport/shm/shm_layout.h"

#define BUF_BYTES (256 * 1024)
#define MAX_REQS  16

static size_t log_bytes;
static long accepted, finished; /* hellos accepted, requests ended */

static struct rw_net *net_new(void)
{
	/* clang-format off */
	static const char *const env[] = {
		"RINGWAY_TIMEOUT_MS",     "200",  /* short deadlines */
		"RINGWAY_SHM_NSLOTS",     "4",    /* a small ring: full soon */
		"RINGWAY_SHM_SLOT_BYTES", "4096", /* fragments from 4 KiB */
		"RINGWAY_SHM_CMA_MIN",    "16K",  /* CMA from 16 KiB */
		NULL};
	/* clang-format on */
	struct rw_config cfg;
	struct rw_net *n = NULL;

	rw_log_set_sink(rw_fuzz_quiet_sink, &log_bytes);
	rw_config_load(&cfg, rw_fuzz_env, (void *)env);
	if (rw_shm_create(&cfg, &n))
		abort(); /* memfds and abstract sockets must work: not a finding */
	return n;
}

/* A memfd of size bytes: mode 0600 or 0644, sealed or not. */
static int memfd_of(size_t size, bool seal, bool mode_ok)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		abort();
	if (fchmod(fd, mode_ok ? 0600 : 0644) || ftruncate(fd, (off_t)size) ||
	    (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)))
		abort();
	return fd;
}

static void fill(int fd, const void *p, size_t n)
{
	if (pwrite(fd, p, n, 0) != (ssize_t)n)
		abort();
}

static int send_hello(int s, const void *msg, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(s, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : -1;
}

static bool test_until(struct rw_net_req *req, int tries)
{
	size_t sizes[RW_NET_MAX_RECVS];
	int done = 0;

	for (int i = 0; i < tries && !done; i++)
		if (rw_net_test(req, &done, sizes))
			return true; /* failed: finished too */
	return done;
}

/* --- mode 0: the hello ------------------------------------------------------ */

static void hello(const uint8_t *data, size_t size)
{
	static char buf[BUF_BYTES];
	uint8_t in[2 + 64 + 64 + 16] = {0};
	struct rw_shm_hello h;
	struct rw_shm_seg_hdr hdr;
	struct rw_shm_doorbell db = {0};
	struct rw_shm_handle lh;
	struct rw_shm_reply reply;
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *c = NULL;
	struct rw_net *n = net_new();
	struct sockaddr_un sa;
	socklen_t alen;
	uint8_t c0, c1;
	size_t seg, len;
	int s, fds[2], nfds;
	ssize_t got;

	memcpy(in, data, RW_MIN(size, sizeof(in)));
	c0 = in[0], c1 = in[1];
	memcpy(&h, in + 2, sizeof(h));
	memcpy(&hdr, in + 2 + 64, sizeof(hdr));
	memcpy(&db, in + 2 + 128, 16);
	if (rw_net_listen(n, 0, handle, &l) || rw_shm_handle_addr(handle, &sa, &alen))
		abort();
	memcpy(&lh, handle, sizeof(lh));
	if (c0 & 0x04) { /* the parts a stranger cannot guess or must get right */
		h.magic = RW_SHM_MAGIC;
		h.version = RW_SHM_VERSION;
		h.kind = RW_SHM_MSG_HELLO;
		h.nonce = lh.nonce;
	}
	if (c0 & 0x08) { /* a segment that adds up */
		seg = RW_SHM_SLOTS_OFFSET + (size_t)(2 + h.seg_bytes % 7) * 4096;
		h.seg_bytes = seg;
	} else {
		seg = (size_t)RW_MIN(h.seg_bytes, (uint64_t)RW_SHM_SLOTS_OFFSET + 65536);
		seg = RW_MAX(seg, (size_t)4096);
	}
	if (c0 & 0x10) { /* a header that matches the hello */
		hdr.magic = RW_SHM_SEG_MAGIC;
		hdr.version = RW_SHM_VERSION;
		hdr.ctrl_bytes = RW_SHM_CTRL_BYTES;
		hdr.nonce = h.nonce;
		hdr.conn_id = h.conn_id;
		hdr.creator_uid = (uint32_t)geteuid();
		hdr.creator_pid = (int32_t)getpid();
		hdr.seg_bytes = h.seg_bytes;
		if (c1 & 0x01) {
			hdr.nslots = (uint32_t)((seg - RW_SHM_SLOTS_OFFSET) / 4096);
			hdr.slot_bytes = 4096;
		}
	}
	if (c0 & 0x20) { /* a doorbell that looks right */
		db.magic = RW_SHM_DB_MAGIC;
		db.version = RW_SHM_VERSION;
		db.owner_uid = (uint32_t)geteuid();
		db.owner_pid = (int32_t)getpid();
	}
	if (c1 & 0x02)
		h.flags &= ~RW_SHM_FLAG_CMA; /* else the probe reads our own memory */
	fds[0] = memfd_of(seg, !(c1 & 0x04), !(c1 & 0x08));
	fds[1] = memfd_of(c1 & 0x10 ? 8192 : RW_SHM_DB_BYTES, !(c1 & 0x20), true);
	fill(fds[0], &hdr, sizeof(hdr));
	fill(fds[1], &db, sizeof(db));
	nfds = RW_MIN(c0 & 3, 2);
	len = c0 & 0x80 ? in[1] % (sizeof(h) + 1) : sizeof(h);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, alen))
		abort();
	if (c0 & 0x40) { /* the closing kind: nothing, or after the hello */
		if (len && send_hello(s, &h, len, fds, nfds) == 0)
			shutdown(s, SHUT_WR);
		else
			close(s), s = -1;
	} else if (send_hello(s, &h, len, fds, nfds)) {
		abort();
	}
	close(fds[0]);
	close(fds[1]);
	for (int i = 0; i < 3 && !c; i++)
		rw_fuzz_check(rw_net_accept(l, &c) == 0);
	if (c) {
		struct rw_net_mr *mr = NULL;
		struct rw_net_req *req = NULL;
		void *d = buf;
		size_t sz = BUF_BYTES;
		int tag = 0;

		/* accepted: everything was right, and the reply says so */
		rw_fuzz_check(s >= 0);
		accepted++;
		got = recv(s, &reply, sizeof(reply), MSG_DONTWAIT);
		rw_fuzz_check(got == (ssize_t)sizeof(reply) && reply.status == 0 &&
			      reply.conn_id == h.conn_id);
		if (rw_net_reg_mr(c, buf, BUF_BYTES, RW_PTR_HOST, &mr) == 0 &&
		    rw_net_irecv(c, 1, &d, &sz, &tag, &mr, &req) == 0 && req)
			test_until(req, 4);
		if (mr)
			rw_net_dereg_mr(c, mr);
		rw_net_close_recv(c);
	} else if (s >= 0 && len == sizeof(h) && !(c0 & 0x40)) {
		/* refused or still pending (no hello yet): never a reply of 0 */
		got = recv(s, &reply, sizeof(reply), MSG_DONTWAIT);
		rw_fuzz_check(got <= 0 || (got == (ssize_t)sizeof(reply) && reply.status < 0));
	}
	if (s >= 0)
		close(s);
	rw_net_close_listen(l);
	rw_net_destroy(n);
}

/* --- mode 1: the ring ------------------------------------------------------- */

struct ring {
	struct rw_net_comm *s, *r;
	struct rw_shm_comm *sc;
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *reqs[MAX_REQS];
	int nreqs;
};

static void add_req(struct ring *g, struct rw_net_req *req)
{
	if (req)
		g->reqs[g->nreqs++] = req;
}

static void test_all(struct ring *g, int tries)
{
	for (int i = 0; i < g->nreqs;)
		if (test_until(g->reqs[i], tries)) {
			finished++;
			g->reqs[i] = g->reqs[--g->nreqs];
		} else
			i++;
}

static bool pair(struct rw_net *n, struct rw_net_listen **l, struct ring *g)
{
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	uint64_t end;

	if (rw_net_listen(n, 0, handle, l))
		abort();
	end = rw_now_ms() + 10000;
	while (!g->s && rw_now_ms() < end)
		if (rw_net_connect(n, 0, handle, &g->s))
			abort();
	while (g->s && !g->r && rw_now_ms() < end)
		if (rw_net_accept(*l, &g->r))
			abort();
	if (!g->s || !g->r)
		abort(); /* a loaded machine, not a finding */
	g->sc = rw_shm_comm_from(g->s);
	return true;
}

static void ring(const uint8_t *data, size_t size)
{
	static char sbuf[BUF_BYTES], rbuf[BUF_BYTES];
	struct rw_net *n = net_new();
	struct rw_net_listen *l = NULL;
	struct ring g = {0};
	struct rw_shm_seg *seg;
	size_t pos = 0;

	pair(n, &l, &g);
	seg = g.sc->d.seg;
	if (rw_net_reg_mr(g.s, sbuf, BUF_BYTES, RW_PTR_HOST, &g.smr) ||
	    rw_net_reg_mr(g.r, rbuf, BUF_BYTES, RW_PTR_HOST, &g.rmr))
		abort();
	while (pos < size) {
		uint8_t op = data[pos++], b[16] = {0};
		size_t k;

		switch (op % 6) {
		case 0: {
			uint64_t tail = __atomic_load_n(&seg->tx.tail, __ATOMIC_RELAXED);
			char *slot = g.sc->d.slots +
				     (size_t)(tail % g.sc->d.nslots) * g.sc->d.slot_bytes;
			size_t hdr = RW_MIN((size_t)RW_SHM_SLOT_HDR_BYTES, size - pos), len;

			memset(slot, 0, RW_SHM_SLOT_HDR_BYTES);
			memcpy(slot, data + pos, hdr);
			pos += hdr;
			len = pos < size ? data[pos++] % 65 : 0;
			len = RW_MIN(len, size - pos);
			memcpy(slot + RW_SHM_SLOT_HDR_BYTES, data + pos, len);
			pos += len;
			/* v3: the stamp publishes the slot */
			__atomic_store_n(&((struct rw_shm_slot *)slot)->stamp, (uint32_t)(tail + 1),
					 __ATOMIC_RELEASE);
			__atomic_store_n(&seg->tx.tail, tail + 1, __ATOMIC_RELEASE);
			break;
		}
		case 1: {
			uint64_t posted = __atomic_load_n(&seg->rx.posted, __ATOMIC_RELAXED);
			struct rw_shm_post *p = &g.sc->d.post[posted % RW_SHM_POST_RING];

			k = RW_MIN(sizeof(*p), size - pos);
			memset(p, 0, sizeof(*p));
			memcpy(p, data + pos, k);
			pos += k;
			/* v3: the stamp publishes the entry */
			__atomic_store_n(&p->stamp, (uint32_t)(posted + 1), __ATOMIC_RELEASE);
			__atomic_store_n(&seg->rx.posted, posted + 1, __ATOMIC_RELEASE);
			break;
		}
		case 2: {
			uint8_t a[17] = {0};
			void *d[RW_NET_MAX_RECVS];
			size_t sizes[RW_NET_MAX_RECVS];
			int tags[RW_NET_MAX_RECVS], nb;
			struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
			struct rw_net_req *req = NULL;

			k = RW_MIN(sizeof(a), size - pos);
			memcpy(a, data + pos, k);
			pos += k;
			nb = 1 + a[0] % RW_NET_MAX_RECVS;
			for (int i = 0; i < nb; i++) {
				d[i] = rbuf + (size_t)i * (BUF_BYTES / RW_NET_MAX_RECVS);
				sizes[i] = RW_MIN((size_t)a[1 + i] * 512,
						  (size_t)BUF_BYTES / RW_NET_MAX_RECVS);
				tags[i] = a[9 + i] % 4;
				mrs[i] = g.rmr;
			}
			if (g.nreqs < MAX_REQS &&
			    rw_net_irecv(g.r, nb, d, sizes, tags, mrs, &req) == 0)
				add_req(&g, req);
			break;
		}
		case 3: {
			struct rw_net_req *req = NULL;

			k = RW_MIN((size_t)2, size - pos);
			memcpy(b, data + pos, k);
			pos += k;
			if (g.nreqs < MAX_REQS &&
			    rw_net_isend(g.s, sbuf, (size_t)b[0] * 256, b[1] % 4, g.smr, &req) == 0)
				add_req(&g, req);
			break;
		}
		case 4:
			test_all(&g, 1);
			break;
		default: {
			/* the 8-byte words of the sender's and receiver's lines */
			uint64_t *w;

			k = RW_MIN((size_t)9, size - pos);
			memcpy(b, data + pos, k);
			pos += k;
			w = (uint64_t *)((char *)seg + 64 + (size_t)(b[0] % 16) * 8);
			memcpy(w, b + 1, 8);
			break;
		}
		}
	}
	test_all(&g, 8);
	if (g.smr)
		rw_net_dereg_mr(g.s, g.smr);
	if (g.rmr)
		rw_net_dereg_mr(g.r, g.rmr);
	rw_net_close_send(g.s);
	rw_net_close_recv(g.r);
	rw_net_close_listen(l);
	rw_net_destroy(n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		ring(data + 1, size - 1);
	else
		hello(data + 1, size - 1);
	rw_fuzz_check(rw_shm_live_total() == 0);
	return 0;
}

#ifndef RW_FUZZ_LIBFUZZER
/* 0: a good hello; 1: a good hello with an unsealed segment; 2: a short,
 * closed hello; 3: an honest exchange through the ring (eager, fragments,
 * CMA); 4: forged slots and posts among honest traffic. */
static int make_seeds(struct rw_fuzz_seed *sd)
{
	struct rw_shm_slot sl = {.kind = RW_SHM_SLOT_INLINE, .size = 16, .len = 16};
	struct rw_shm_post po = {.n = 1, .seq = 0, .size = {4096}};
	struct rw_shm_hello h = {.conn_id = 7, .seg_bytes = 3};

	rw_fuzz_put8(&sd[0], 0), rw_fuzz_put8(&sd[0], 0x3e), rw_fuzz_put8(&sd[0], 0x03),
		rw_fuzz_put(&sd[0], &h, sizeof(h));
	rw_fuzz_put8(&sd[1], 0), rw_fuzz_put8(&sd[1], 0x3e), rw_fuzz_put8(&sd[1], 0x05),
		rw_fuzz_put(&sd[1], &h, sizeof(h));
	rw_fuzz_put8(&sd[2], 0), rw_fuzz_put8(&sd[2], 0xfe), rw_fuzz_put8(&sd[2], 20),
		rw_fuzz_put(&sd[2], &h, sizeof(h));
	rw_fuzz_put8(&sd[3], 1);
	{
		const uint8_t recv1[] = {2, 0, 64, 0, 0, 0, 0, 0, 0, 0, 1};
		const uint8_t recv3[] = {2, 2, 8, 8, 200, 0, 0, 0, 0, 0, 0, 1, 2};
		const uint8_t sends[] = {3, 1, 1, 4, 3, 40, 2, 4, 3, 0, 0, 4, 3, 200, 2, 4};

		rw_fuzz_put(&sd[3], recv1, sizeof(recv1));
		for (int i = sizeof(recv1); i < 18; i++)
			rw_fuzz_put8(&sd[3], 0);
		rw_fuzz_put(&sd[3], recv3, sizeof(recv3));
		for (int i = sizeof(recv3); i < 18; i++)
			rw_fuzz_put8(&sd[3], 0);
		rw_fuzz_put(&sd[3], sends, sizeof(sends));
	}
	rw_fuzz_put8(&sd[4], 1);
	rw_fuzz_put8(&sd[4], 2), rw_fuzz_put(&sd[4], (const uint8_t[17]){0, 8}, 17);
	rw_fuzz_put8(&sd[4], 0), rw_fuzz_put(&sd[4], &sl, sizeof(sl)), rw_fuzz_put8(&sd[4], 16);
	for (int i = 0; i < 16; i++)
		rw_fuzz_put8(&sd[4], (uint8_t)i);
	rw_fuzz_put8(&sd[4], 4);
	rw_fuzz_put8(&sd[4], 1), rw_fuzz_put(&sd[4], &po, sizeof(po));
	rw_fuzz_put8(&sd[4], 3), rw_fuzz_put8(&sd[4], 4), rw_fuzz_put8(&sd[4], 0);
	rw_fuzz_put8(&sd[4], 4);
	rw_fuzz_put8(&sd[4], 5), rw_fuzz_put8(&sd[4], 0),
		rw_fuzz_put(&sd[4], (const uint8_t[8]){0xff, 0xff}, 8);
	rw_fuzz_put8(&sd[4], 4);
	return 5;
}

/* The seeds reach the deep end: an accepted hello, finished requests. */
static void verdict(void)
{
	print_message("[          ] %ld hellos accepted, %ld requests ended, %zu log bytes\n",
		      accepted, finished, log_bytes);
	assert_true(accepted > 0 && finished > 0 && log_bytes > 0);
}

/* "--seeds DIR" writes the built-in seeds. */
int main(int argc, char **argv)
{
	static const struct rw_fuzz_target t = {
		.name = "fuzz_shm",
		.one = LLVMFuzzerTestOneInput,
		.mutations = 60,
		.max_edits = 6,
		.keep = 1,
		.rng = 0x9e3779b97f4a7c15ull,
		.min_seeds = 1,
		.make_seeds = make_seeds,
		.verdict = verdict,
	};

	return rw_fuzz_main(argc, argv, &t, NULL, 0);
}
#endif

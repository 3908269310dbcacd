/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway's network events for NCCL's profiler, through the plugin tables
 * NCCL binds (ncclNetPlugin_v10, _v11, _v12): a stand-in profiler callback
 * records every call, and the tests check that
 *   - each transfer posted with a phandle starts exactly one event per
 *     buffer, with that phandle, ringway's plugin id and a descriptor that
 *     says the truth (transport, op, bytes, tag, device, comm, peer);
 *   - each start gets exactly one stop, with the same eHandle storage, when
 *     test() says done, or when the comm closes / the context is finalized
 *     with the transfer still in flight; nothing is left open;
 *   - a NULL isend ("not now") or a transfer without a phandle starts none;
 *   - no callback (NULL at init), or RINGWAY_PROFILER_EVENTS=off: no call;
 *   - RINGWAY_PROFILER_EVENTS=nccl: NCCL's own socket / IB descriptors.
 *
 *   test_abi_prof <path to libnccl-net-ringway.so>
 *
 * The transport is RINGWAY_TRANSPORT's (CTest runs socket, shm, ib on the
 * emulated fabric, and auto, which picks shm for this process's own peer).
 * Each test runs in a forked child that connects to itself.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_profiler_net.h"
#include "harness.h"
#include "include/ringway_profiler.h"

#define MAX_EV	  512
#define CAP	  (1u << 20) /* every receive buffer */
#define NTOKENS	  256	     /* phandles: &tokens[k] */
#define NOT_STOPD (-1)

struct ev {
	void **slot; /* the eHandle storage of the start */
	void *phandle;
	int64_t id;
	union {
		ringwayProfilerNetDescr_v1_t rw;
		ncclProfilerNetSockDescr_v1_t so;
		ncclProfilerNetIbDescr_v1_t ib;
	} d;
	int stops;
};

static struct {
	struct ev ev[MAX_EV];
	int nev, nstops, calls;
} rec;

static char tokens[NTOKENS];
static int next_token;

static void *new_phandle(void)
{
	H_CHECK(next_token < NTOKENS, "test: out of phandles");
	return &tokens[next_token++];
}

/* The stand-in profiler: what NCCL's ncclProfilerCallback and a profiler
 * plugin's startEvent/stopEvent would see. */
static ncclResult_t recorder(void **eh, int type, void *ph, int64_t id, void *data)
{
	struct ev *e;

	rec.calls++;
	H_CHECK(eh, "callback without eHandle (type %d)", type);
	if (type == ncclProfilerNetEventStart) {
		H_CHECK(ph && data, "start: pHandle %p, extData %p", ph, data);
		H_CHECK(rec.nev < MAX_EV, "test: more than %d events", MAX_EV);
		e = &rec.ev[rec.nev++];
		e->slot = eh;
		e->phandle = ph;
		e->id = id;
		if (id == RINGWAY_PROFILER_NET_ID)
			memcpy(&e->d.rw, data, sizeof(e->d.rw));
		else if (id == (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | 1))
			memcpy(&e->d.so, data, sizeof(e->d.so));
		else if (id == (int64_t)(NCCL_PROFILER_NET_TYPE_IB | 1))
			memcpy(&e->d.ib, data, sizeof(e->d.ib));
		else
			H_CHECK(0, "start with unknown plugin id %#llx", (unsigned long long)id);
		*eh = e; /* what a profiler gives back: its event */
		return ncclSuccess;
	}
	H_CHECK(type == ncclProfilerNetEventStop, "callback type %d", type);
	H_CHECK(!ph && id == 0 && !data, "stop: pHandle %p, id %lld, extData %p", ph, (long long)id,
		data);
	e = *eh;
	H_CHECK(e >= rec.ev && e < rec.ev + rec.nev, "stop of an eHandle no start gave (%p)",
		(void *)e);
	H_CHECK(e->slot == eh, "stop's eHandle storage %p is not its start's %p", (void *)eh,
		(void *)e->slot);
	H_CHECK(e->stops == 0, "second stop of the event of phandle %p", e->phandle);
	e->stops++;
	rec.nstops++;
	return ncclSuccess;
}

static struct ev *event_of(void *ph)
{
	struct ev *found = NULL;

	for (int i = 0; i < rec.nev; i++) {
		if (rec.ev[i].phandle != ph)
			continue;
		H_CHECK(!found, "two events started with phandle %p", ph);
		found = &rec.ev[i];
	}
	return found;
}

static int expected_transport(void)
{
	const char *t = getenv("RINGWAY_TRANSPORT");

	if (t && strcmp(t, "socket") == 0)
		return RINGWAY_PROFILER_SOCKET;
	if (t && strcmp(t, "ib") == 0)
		return RINGWAY_PROFILER_IB;
	return RINGWAY_PROFILER_SHM; /* shm, or auto to a peer on this host */
}

/* --- posting with phandles ------------------------------------------------- */

static void *post_send(void *sc, void *data, size_t len, int tag, void *mh, void *ph)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	void *req;

	for (;;) {
		int before = rec.nev;

		req = (void *)0x1;
		H_CHECK(h_isend_ph(sc, data, len, tag, mh, ph, &req) == ncclSuccess,
			"v%d isend(%zu)", h_version, len);
		if (req)
			return req;
		H_CHECK(rec.nev == before, "v%d: an isend that took nothing started an event",
			h_version);
		H_CHECK(rw_now_ms() < deadline, "v%d isend(%zu): never accepted", h_version, len);
		h_backoff(&spins);
	}
}

static void *post_recv(void *rc, int n, void **data, const size_t *caps, int *tags, void **mhs,
		       void **phs)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	void *req;

	for (;;) {
		req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
		H_CHECK(h_irecv_ph(rc, n, data, caps, tags, mhs, phs, &req) == ncclSuccess,
			"v%d irecv(n=%d)", h_version, n);
		if (req)
			return req;
		H_CHECK(rw_now_ms() < deadline, "v%d irecv: never accepted", h_version);
		h_backoff(&spins);
	}
}

/* --- one connection to ourselves, with registered buffers ------------------- */

struct conn {
	void *ctx, *lc, *sc, *rc;
	unsigned char *sbuf, *rbuf;
	void *smh, *rmh;
};

static void conn_open(struct conn *c, void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	h_self_connect(ctx, ctx, &c->lc, &c->sc, &c->rc);
	c->sbuf = h_alloc(CAP);
	c->rbuf = h_alloc(2 * CAP);
	H_CHECK(h_reg_mr(c->sc, c->sbuf, CAP, NCCL_PTR_HOST, &c->smh) == ncclSuccess, "regMr");
	H_CHECK(h_reg_mr(c->rc, c->rbuf, 2 * CAP, NCCL_PTR_HOST, &c->rmh) == ncclSuccess, "regMr");
}

static void conn_close(struct conn *c)
{
	H_CHECK(h_dereg_mr(c->sc, c->smh) == ncclSuccess, "deregMr");
	H_CHECK(h_dereg_mr(c->rc, c->rmh) == ncclSuccess, "deregMr");
	H_CHECK(h_close_send(c->sc) == ncclSuccess, "closeSend");
	H_CHECK(h_close_recv(c->rc) == ncclSuccess, "closeRecv");
	H_CHECK(h_close_listen(c->lc) == ncclSuccess, "closeListen");
	free(c->sbuf);
	free(c->rbuf);
}

/* Test the requests (both sides live in this thread) until all are done;
 * as each completes, the event of its phandle (NULL: none) must be stopped. */
static void wait_all(int n, void **reqs, void **phs, int *recv_sizes)
{
	uint64_t deadline = rw_now_ms() + H_STEP_TIMEOUT_MS;
	unsigned spins = 0;
	int left = n;

	while (left) {
		for (int i = 0; i < n; i++) {
			int done = 0, sizes[64] = {0};

			if (!reqs[i])
				continue;
			H_CHECK(h_test(reqs[i], &done, sizes) == ncclSuccess, "v%d test: %s",
				h_version, h_log.last_warn);
			if (!done)
				continue;
			reqs[i] = NULL;
			left--;
			if (recv_sizes)
				recv_sizes[i] = sizes[0];
			H_CHECK(!phs || !phs[i] || !rec.nev || event_of(phs[i])->stops == 1,
				"v%d: request %d done, its event not stopped", h_version, i);
		}
		H_CHECK(rw_now_ms() < deadline, "v%d: %d request(s) not done after %d ms",
			h_version, left, H_STEP_TIMEOUT_MS);
		h_backoff(&spins);
	}
}

/* One message of len bytes with tag, events with phandles sph / rph (NULL:
 * none); the size received is checked. */
static void transfer(struct conn *c, size_t len, int tag, void *sph, void *rph)
{
	size_t cap = CAP;
	void *rdata = c->rbuf, *reqs[2], *phs[2] = {rph, sph};
	int got[2] = {-1, -1};

	reqs[0] = post_recv(c->rc, 1, &rdata, &cap, &tag, &c->rmh, rph ? (void *[]){rph} : NULL);
	reqs[1] = post_send(c->sc, c->sbuf, len, tag, c->smh, sph);
	wait_all(2, reqs, phs, got);
	H_CHECK((size_t)got[0] == len, "v%d: received %d of %zu bytes", h_version, got[0], len);
}

static void check_rw_event(const struct ev *e, const struct conn *c, int op, size_t bytes, int tag,
			   int index)
{
	const ringwayProfilerNetDescr_v1_t *d = &e->d.rw;
	uint64_t comm = (uint64_t)(uintptr_t)(op == RINGWAY_PROFILER_SEND ? c->sc : c->rc);

	H_CHECK(e->id == RINGWAY_PROFILER_NET_ID, "plugin id %#llx", (unsigned long long)e->id);
	H_CHECK((e->id & NCCL_PROFILER_NET_TYPE_MASK) == RINGWAY_PROFILER_NET_TYPE &&
			(e->id & NCCL_PROFILER_NET_VER_MASK) == 1,
		"plugin id does not split into ringway's type and version 1");
	H_CHECK(d->type == ringwayProfileTransfer, "descr type %d", d->type);
	H_CHECK(d->transport == expected_transport(), "transport %d, expected %d", d->transport,
		expected_transport());
	H_CHECK(d->op == op, "op %d, expected %d", d->op, op);
	H_CHECK(d->bytes == bytes, "bytes %llu, expected %zu", (unsigned long long)d->bytes, bytes);
	H_CHECK(d->tag == tag, "tag %d, expected %d", d->tag, tag);
	H_CHECK(d->index == index, "index %d, expected %d", d->index, index);
	H_CHECK(d->device == H_DEV, "device %d", d->device);
	H_CHECK(d->comm == comm, "comm %#llx, expected %#llx", (unsigned long long)d->comm,
		(unsigned long long)comm);
	H_CHECK(d->channels >= 1, "channels %d", d->channels);
	H_CHECK(d->connId != UINT64_MAX, "no connection id");
	H_CHECK(memchr(d->peer, '\0', sizeof(d->peer)) && d->peer[0], "peer '%.64s'", d->peer);
}

/* --- the tests --------------------------------------------------------------- */

static const size_t sizes[] = {0, 1, 65536, CAP};

static void events_child(void *arg)
{
	int version = *(const int *)arg;
	struct h_props p0;
	struct conn c, c2;
	void *ctx = NULL;
	int nsizes = (int)RW_ARRAY_SIZE(sizes);

	h_prof_hook = recorder;
	h_child_setup(version, &ctx, &p0);
	conn_open(&c, ctx);

	/* One event per transfer, each with its phandle, stopped at done. */
	for (int i = 0; i < nsizes; i++) {
		void *sph = new_phandle(), *rph = new_phandle();

		transfer(&c, sizes[i], H_TAG, sph, rph);
		check_rw_event(event_of(sph), &c, RINGWAY_PROFILER_SEND, sizes[i], H_TAG, 0);
		check_rw_event(event_of(rph), &c, RINGWAY_PROFILER_RECV, CAP, H_TAG, 0);
		/* the comm's transfer numbers; one connection id per comm */
		H_CHECK(event_of(sph)->d.rw.seq == (uint64_t)i &&
				event_of(rph)->d.rw.seq == (uint64_t)i,
			"v%d: transfer %d has seq %llu / %llu", version, i,
			(unsigned long long)event_of(sph)->d.rw.seq,
			(unsigned long long)event_of(rph)->d.rw.seq);
		H_CHECK(event_of(sph)->d.rw.connId == event_of(&tokens[0])->d.rw.connId &&
				event_of(rph)->d.rw.connId == event_of(&tokens[1])->d.rw.connId,
			"v%d: the connection id changed within a comm", version);
	}
	H_CHECK(rec.nev == 2 * nsizes && rec.nstops == rec.nev, "v%d: %d events, %d stops", version,
		rec.nev, rec.nstops);

	/* No phandle: no event, on either side. */
	transfer(&c, 100, H_TAG, NULL, NULL);
	H_CHECK(rec.nev == 2 * nsizes, "v%d: a transfer without phandles started events", version);

	/* A grouped receive: one event per buffer, its own phandle. */
	if (p0.max_recvs >= 2) {
		size_t caps[2] = {4096, 8192};
		int tags[2] = {7, 8};
		void *data[2] = {c.rbuf, c.rbuf + CAP};
		void *mhs[2] = {c.rmh, c.rmh};
		void *phs[2] = {new_phandle(), new_phandle()};
		void *sph[2] = {new_phandle(), new_phandle()};
		void *reqs[3], *wphs[3] = {NULL, sph[0], sph[1]};

		reqs[0] = post_recv(c.rc, 2, data, caps, tags, mhs, phs);
		reqs[1] = post_send(c.sc, c.sbuf, 100, 7, c.smh, sph[0]);
		reqs[2] = post_send(c.sc, c.sbuf, 200, 8, c.smh, sph[1]);
		wait_all(3, reqs, wphs, NULL);
		for (int i = 0; i < 2; i++) {
			check_rw_event(event_of(phs[i]), &c, RINGWAY_PROFILER_RECV, caps[i],
				       tags[i], i);
			H_CHECK(event_of(phs[i])->stops == 1, "v%d: grouped buffer %d not stopped",
				version, i);
			check_rw_event(event_of(sph[i]), &c, RINGWAY_PROFILER_SEND, 100u * (i + 1),
				       tags[i], 0);
		}
		H_CHECK(event_of(phs[0])->d.rw.seq == event_of(phs[1])->d.rw.seq,
			"v%d: a grouped receive's buffers have different seq", version);
	}
	H_CHECK(rec.nstops == rec.nev, "v%d: %d events, %d stops", version, rec.nev, rec.nstops);

	/* Closing with transfers in flight stops their events. */
	{
		size_t cap = CAP;
		int tag = H_TAG;
		void *rdata = c.rbuf, *rph = new_phandle(), *sph = new_phandle();
		void *lone = new_phandle();

		post_recv(c.rc, 1, &rdata, &cap, &tag, &c.rmh, (void *[]){rph});
		post_send(c.sc, c.sbuf, CAP, H_TAG, c.smh, sph);
		rdata = c.rbuf + CAP;
		post_recv(c.rc, 1, &rdata, &cap, &tag, &c.rmh, (void *[]){lone});
		H_CHECK(rec.nstops == rec.nev - 3, "v%d: stops before test() or close", version);
		conn_close(&c);
		H_CHECK(event_of(rph)->stops == 1 && event_of(sph)->stops == 1 &&
				event_of(lone)->stops == 1,
			"v%d: close left events open", version);
	}

	/* The context goes with a transfer in flight (v11+: finalize). */
	conn_open(&c2, ctx);
	{
		size_t cap = CAP;
		int tag = H_TAG;
		void *rdata = c2.rbuf, *rph = new_phandle();

		post_recv(c2.rc, 1, &rdata, &cap, &tag, &c2.rmh, (void *[]){rph});
		if (version >= 11) { /* the last context: the comms are closed for us */
			h_child_finalize(ctx);
			free(c2.sbuf);
			free(c2.rbuf);
		} else {
			conn_close(&c2);
		}
		H_CHECK(event_of(rph)->stops == 1, "v%d: an event outlived its comm", version);
	}
	H_CHECK(rec.nstops == rec.nev, "v%d: %d events, %d stops", version, rec.nev, rec.nstops);
	for (int i = 0; i < rec.nev; i++)
		H_CHECK(rec.ev[i].stops == 1, "v%d: event %d stopped %d times", version, i,
			rec.ev[i].stops);
	fprintf(stderr, "[v%d] %d events, every one stopped once\n", version, rec.nev);
}

/* Counts calls; any call fails the test where it is used. */
static void silent_child(void *arg)
{
	int version = *(const int *)arg;
	struct h_props p0;
	struct conn c;
	void *ctx = NULL;

	h_prof_hook = recorder;
	h_child_setup(version, &ctx, &p0);
	conn_open(&c, ctx);
	for (int i = 0; i < (int)RW_ARRAY_SIZE(sizes); i++)
		transfer(&c, sizes[i], H_TAG, new_phandle(), new_phandle());
	conn_close(&c);
	H_CHECK(rec.calls == 0, "v%d: %d profiler calls, expected none", version, rec.calls);
	h_child_finalize(ctx);
}

static void no_callback_child(void *arg)
{
	h_prof_none = true; /* init gets NULL */
	silent_child(arg);
}

static void off_child(void *arg)
{
	setenv("RINGWAY_PROFILER_EVENTS", "off", 1);
	silent_child(arg);
}

/* RINGWAY_PROFILER_EVENTS=nccl: NCCL's descriptors for each transport. */
static void nccl_format_child(void *arg)
{
	int version = *(const int *)arg;
	int transport = expected_transport();
	struct h_props p0;
	struct conn c;
	void *ctx = NULL;

	setenv("RINGWAY_PROFILER_EVENTS", "nccl", 1);
	h_prof_hook = recorder;
	h_child_setup(version, &ctx, &p0);
	conn_open(&c, ctx);
	for (int i = 0; i < (int)RW_ARRAY_SIZE(sizes); i++) {
		void *sph = new_phandle(), *rph = new_phandle();
		struct ev *s, *r;

		transfer(&c, sizes[i], H_TAG, sph, rph);
		s = event_of(sph);
		r = event_of(rph);
		if (transport == RINGWAY_PROFILER_IB) {
			H_CHECK(s->id == (int64_t)(NCCL_PROFILER_NET_TYPE_IB | 1) && s->id == r->id,
				"ib: plugin id %#llx", (unsigned long long)s->id);
			H_CHECK(s->d.ib.type == ncclProfileQp && r->d.ib.type == ncclProfileQp,
				"ib: descr type");
			H_CHECK(s->d.ib.qp.length == sizes[i] && r->d.ib.qp.length == CAP,
				"ib: lengths %zu %zu", s->d.ib.qp.length, r->d.ib.qp.length);
			H_CHECK(s->d.ib.qp.qpNum > 0 && s->d.ib.qp.device == H_DEV,
				"ib: qp %d dev %d", s->d.ib.qp.qpNum, s->d.ib.qp.device);
		} else {
			H_CHECK(s->id == (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | 1) &&
					s->id == r->id,
				"socket: plugin id %#llx", (unsigned long long)s->id);
			H_CHECK(s->d.so.type == ncclProfileSocket, "socket: descr type");
			H_CHECK(s->d.so.sock.op == NCCL_PROFILER_SOCKET_SEND &&
					r->d.so.sock.op == NCCL_PROFILER_SOCKET_RECV,
				"socket: ops %d %d", s->d.so.sock.op, r->d.so.sock.op);
			H_CHECK(s->d.so.sock.length == sizes[i] && r->d.so.sock.length == CAP,
				"socket: lengths %zu %zu", s->d.so.sock.length,
				r->d.so.sock.length);
			H_CHECK(transport == RINGWAY_PROFILER_SOCKET ? s->d.so.sock.fd >= 0
								     : s->d.so.sock.fd == -1,
				"socket: fd %d", s->d.so.sock.fd);
		}
	}
	conn_close(&c);
	H_CHECK(rec.nev == 2 * (int)RW_ARRAY_SIZE(sizes) && rec.nstops == rec.nev,
		"v%d: %d events, %d stops", version, rec.nev, rec.nstops);
	h_child_finalize(ctx);
}

static void events(void **state)
{
	h_run_version(events_child, state, "events");
}

static void no_callback(void **state)
{
	h_run_version(no_callback_child, state, "no callback");
}

static void off(void **state)
{
	h_run_version(off_child, state, "RINGWAY_PROFILER_EVENTS=off");
}

static void nccl_format(void **state)
{
	h_run_version(nccl_format_child, state, "RINGWAY_PROFILER_EVENTS=nccl");
}

static int teardown(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		H_VERSION_TEST(events, 10, teardown),
		H_VERSION_TEST(events, 11, teardown),
		H_VERSION_TEST(events, 12, teardown),
		H_VERSION_TEST(no_callback, 10, teardown),
		H_VERSION_TEST(no_callback, 11, teardown),
		H_VERSION_TEST(no_callback, 12, teardown),
		H_VERSION_TEST(off, 11, teardown),
		H_VERSION_TEST(nccl_format, 10, teardown),
		H_VERSION_TEST(nccl_format, 12, teardown),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s <path to libnccl-net-ringway.so>\n", argv[0]);
		return 2;
	}
	h_plugin_path = argv[1];
	setenv("RINGWAY_SOCKET_IFNAME", "lo", 0);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

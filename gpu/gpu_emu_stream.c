/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streams and events of the host-emulated GPU (rw_gpu_emu.h).  A stream is
 * a FIFO of ops run by a thread of its own: copies, memsets, host functions
 * (kernels stand-ins), event records and waits on events.  An op stays at
 * the head of its queue while it runs and retires under emu.lock, which
 * bumps the stream's done count and broadcasts emu.done; every wait here
 * is on emu.done, bounded by RW_EMU_WAIT_MS.
 *
 * An event counts its records (rec_gen); the record op, when its stream
 * reaches it, raises done_gen to its own generation and stamps the time.
 * So an event never recorded, or whose last record has run, is complete.
 */
#include "gpu/gpu_emu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"

#define STREAM_MAGIC 0x52574553u /* "RWES" */
#define EVENT_MAGIC  0x52574545u /* "RWEE" */

enum op_kind { OP_COPY, OP_SET, OP_HOST, OP_RECORD, OP_WAIT };
enum copy_class { H2D, D2H, D2D, H2H };

struct rw_emu_event {
	uint32_t magic;
	pid_t pid;
	uint64_t rec_gen, done_gen;
	uint64_t t_ns;
	int refs; /* the owner's, and one per op that names it */
	bool dead;
};

struct op {
	enum op_kind kind;
	void *dst;
	const void *src;
	size_t n;
	int value;
	void (*fn)(void *arg);
	void *arg;
	bool kernel;
	struct rw_emu_event *ev;
	uint64_t gen;
	struct op *next;
};

struct rw_emu_stream {
	uint32_t magic;
	pid_t pid;
	uint64_t id;
	pthread_t thread;
	pthread_cond_t more;
	struct op *head, *tail;
	uint64_t enq, done;
	bool stop;
	struct rw_emu_stream *next;
};

static uint64_t next_stream_id;

/* ---- waiting ------------------------------------------------------------------ */

static void deadline_after(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void rw_emu_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

/* Wait on emu.done (lock held) until deadline; -ETIMEDOUT after it. */
static int wait_done(const struct timespec *deadline)
{
	int e = pthread_cond_timedwait(&rw_emu_g.done, &rw_emu_g.lock, deadline);

	return e == ETIMEDOUT ? -ETIMEDOUT : 0;
}

/* Wait (lock held) until s has retired everything up to target. */
static int wait_stream(struct rw_emu_stream *s, uint64_t target, const char *who)
{
	struct timespec dl;

	deadline_after(&dl, RW_EMU_WAIT_MS);
	while (s->done < target) {
		if (wait_done(&dl) && s->done < target) {
			RW_WARN(RW_LOG_INIT,
				"gpu-emu: %s: stream %p still runs op %llu of %llu after %d ms",
				who, (void *)s, (unsigned long long)s->done + 1,
				(unsigned long long)target, RW_EMU_WAIT_MS);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* ---- the stream thread ------------------------------------------------------------ */

static void event_put(struct rw_emu_event *ev)
{
	if (--ev->refs == 0) {
		ev->magic = 0;
		free(ev);
	}
}

static void run_op(struct op *o)
{
	unsigned int delay = __atomic_load_n(&rw_emu_g.delay_us, __ATOMIC_RELAXED);
	struct timespec dl;

	if (delay && (o->kind == OP_COPY || o->kind == OP_SET || o->kind == OP_HOST)) {
		struct timespec d = {.tv_sec = delay / 1000000,
				     .tv_nsec = (long)(delay % 1000000) * 1000};

		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
	}
	switch (o->kind) {
	case OP_COPY:
		memmove(o->dst, o->src, o->n);
		break;
	case OP_SET:
		memset(o->dst, o->value, o->n);
		break;
	case OP_HOST:
		o->fn(o->arg);
		rw_emu_count(o->kernel ? &rw_emu_g.n.kernels : &rw_emu_g.n.host_fns, 1);
		break;
	case OP_WAIT:
		pthread_mutex_lock(&rw_emu_g.lock);
		deadline_after(&dl, RW_EMU_WAIT_MS);
		while (o->ev->done_gen < o->gen) {
			if (wait_done(&dl) && o->ev->done_gen < o->gen) {
				RW_WARN(RW_LOG_INIT,
					"gpu-emu: stream wait on event %p (record %llu) gave up "
					"after %d ms",
					(void *)o->ev, (unsigned long long)o->gen, RW_EMU_WAIT_MS);
				break;
			}
		}
		pthread_mutex_unlock(&rw_emu_g.lock);
		break;
	case OP_RECORD:
		break;
	}
}

static void *stream_main(void *arg)
{
	struct rw_emu_stream *s = arg;
	struct op *o;

	pthread_mutex_lock(&rw_emu_g.lock);
	for (;;) {
		while (!s->head && !s->stop)
			pthread_cond_wait(&s->more, &rw_emu_g.lock);
		o = s->head;
		if (!o)
			break;
		pthread_mutex_unlock(&rw_emu_g.lock);
		run_op(o);
		pthread_mutex_lock(&rw_emu_g.lock);
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		if (o->kind == OP_RECORD && o->gen > o->ev->done_gen) {
			o->ev->done_gen = o->gen;
			o->ev->t_ns = rw_now_ns();
		}
		if (o->ev)
			event_put(o->ev);
		s->done++;
		pthread_cond_broadcast(&rw_emu_g.done);
		free(o);
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	return NULL;
}

/* ---- streams -------------------------------------------------------------------- */

/* A new stream, listed (lock held). */
static int stream_new(struct rw_emu_stream **out)
{
	struct rw_emu_stream *s = calloc(1, sizeof(*s));
	int e;

	if (!s)
		return -ENOMEM;
	s->magic = STREAM_MAGIC;
	s->pid = rw_emu_g.pid;
	s->id = ++next_stream_id;
	pthread_cond_init(&s->more, NULL);
	e = pthread_create(&s->thread, NULL, stream_main, s);
	if (e) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: stream thread: pthread_create: %s", strerror(e));
		pthread_cond_destroy(&s->more);
		free(s);
		return -e;
	}
	s->next = rw_emu_g.streams;
	rw_emu_g.streams = s;
	*out = s;
	return 0;
}

/* The stream a handle names (NULL: the default stream, made on first use);
 * lock held. */
static int stream_get(void *stream, const char *who, struct rw_emu_stream **out)
{
	struct rw_emu_stream *s = stream;

	if (!s) {
		if (!rw_emu_g.null_stream) {
			int rc = stream_new(&rw_emu_g.null_stream);

			if (rc)
				return rc;
		}
		*out = rw_emu_g.null_stream;
		return 0;
	}
	if (s->magic != STREAM_MAGIC) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: %s: %p is not a stream", who, stream);
		return -EINVAL;
	}
	if (s->pid != rw_emu_g.pid) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: %s: stream %p was made by process %d before fork (this is %d)",
			who, stream, (int)s->pid, (int)rw_emu_g.pid);
		return -EIO;
	}
	*out = s;
	return 0;
}

/* Append o to stream (takes o, also on failure). */
static int enqueue(void *stream, struct op *o, const char *who)
{
	struct rw_emu_stream *s;
	int rc;

	pthread_mutex_lock(&rw_emu_g.lock);
	rc = stream_get(stream, who, &s);
	if (rc == 0) {
		if (o->ev)
			o->ev->refs++;
		if (s->tail)
			s->tail->next = o;
		else
			s->head = o;
		s->tail = o;
		s->enq++;
		pthread_cond_signal(&s->more);
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (rc)
		free(o);
	return rc;
}

static struct op *op_new(enum op_kind kind)
{
	struct op *o = calloc(1, sizeof(*o));

	if (o)
		o->kind = kind;
	return o;
}

int rw_emu_stream_create(void **stream)
{
	struct rw_emu_stream *s;
	int rc;

	pthread_mutex_lock(&rw_emu_g.lock);
	rc = stream_new(&s);
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (rc)
		return rc;
	rw_emu_count(&rw_emu_g.n.streams_live, 1);
	*stream = s;
	return 0;
}

void rw_emu_stream_destroy(void *stream)
{
	struct rw_emu_stream *s;

	if (!stream)
		return;
	pthread_mutex_lock(&rw_emu_g.lock);
	if (stream_get(stream, "stream_destroy", &s)) {
		pthread_mutex_unlock(&rw_emu_g.lock);
		return;
	}
	(void)wait_stream(s, s->enq, "stream_destroy"); /* what is enqueued still runs */
	s->stop = true;
	pthread_cond_signal(&s->more);
	pthread_mutex_unlock(&rw_emu_g.lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&rw_emu_g.lock);
	for (struct rw_emu_stream **pp = &rw_emu_g.streams; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	pthread_cond_destroy(&s->more);
	s->magic = 0;
	free(s);
	rw_emu_count(&rw_emu_g.n.streams_live, (uint64_t)-1);
}

int rw_emu_stream_sync(void *stream)
{
	struct rw_emu_stream *s;
	int rc;

	rw_emu_count_blocking();
	pthread_mutex_lock(&rw_emu_g.lock);
	rc = stream_get(stream, "stream_sync", &s);
	if (rc == 0)
		rc = wait_stream(s, s->enq, "stream_sync");
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

int rw_emu_stream_query(void *stream)
{
	struct rw_emu_stream *s;
	int rc;

	pthread_mutex_lock(&rw_emu_g.lock);
	rc = stream_get(stream, "stream_query", &s);
	if (rc == 0)
		rc = s->done == s->enq ? 0 : -EAGAIN;
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

int rw_emu_device_sync(const char *who)
{
	struct timespec dl;
	int rc = 0;
	bool busy;

	uint64_t *ids = NULL, *targets = NULL;
	size_t n = 0, cap = 0;

	rw_emu_count_blocking();
	deadline_after(&dl, RW_EMU_WAIT_MS);
	pthread_mutex_lock(&rw_emu_g.lock);
	/* each stream until it has run what it held when we came (a stream
	 * destroyed meanwhile has run all of it) */
	for (struct rw_emu_stream *s = rw_emu_g.streams; s; s = s->next) {
		if (s->done == s->enq)
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			uint64_t *a = realloc(ids, c * sizeof(*a)), *b;

			if (a)
				ids = a;
			b = a ? realloc(targets, c * sizeof(*b)) : NULL;
			if (!b) {
				rc = -ENOMEM;
				break;
			}
			targets = b;
			cap = c;
		}
		ids[n] = s->id;
		targets[n++] = s->enq;
	}
	do {
		busy = false;
		for (size_t i = 0; i < n && !busy; i++) {
			for (struct rw_emu_stream *s = rw_emu_g.streams; s; s = s->next) {
				if (s->id == ids[i]) {
					busy = s->done < targets[i];
					break;
				}
			}
		}
		if (busy && wait_done(&dl)) {
			RW_WARN(RW_LOG_INIT, "gpu-emu: %s: streams still busy after %d ms", who,
				RW_EMU_WAIT_MS);
			rc = -ETIMEDOUT;
			break;
		}
	} while (busy && rc == 0);
	pthread_mutex_unlock(&rw_emu_g.lock);
	free(ids);
	free(targets);
	return rc;
}

void rw_emu_streams_forget(void)
{
	rw_emu_g.streams = NULL;
	rw_emu_g.null_stream = NULL;
	__atomic_store_n(&rw_emu_g.n.streams_live, 0, __ATOMIC_RELAXED);
}

/* ---- copies and host functions ---------------------------------------------------- */

static bool is_dev(enum rw_mem_kind k)
{
	return k == RW_MEM_DEVICE || k == RW_MEM_MANAGED;
}

/* Both ends of a copy, translated, and its class. */
static int copy_ends(const char *who, void *dst, const void *src, size_t bytes, void **d,
		     const void **s, enum copy_class *cls)
{
	enum rw_mem_kind kd, ks;
	void *sv;
	int rc;

	if (!dst || !src) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: %s(dst=%p, src=%p, %zu bytes): NULL buffer", who,
			dst, src, bytes);
		return -EINVAL;
	}
	rc = rw_emu_translate(who, dst, bytes, d, &kd);
	if (rc == 0)
		rc = rw_emu_translate(who, src, bytes, &sv, &ks);
	if (rc)
		return rc;
	*s = sv;
	*cls = is_dev(ks) ? (is_dev(kd) ? D2D : D2H) : (is_dev(kd) ? H2D : H2H);
	return 0;
}

static void count_copy(enum copy_class cls, size_t bytes)
{
	rw_emu_count(&rw_emu_g.n.copies[cls], 1);
	rw_emu_count(&rw_emu_g.n.bytes[cls], bytes);
}

/* The legacy stream orders the blocking calls: wait for what it holds. */
static int null_stream_drain(const char *who)
{
	int rc = 0;

	rw_emu_count_blocking();
	pthread_mutex_lock(&rw_emu_g.lock);
	if (rw_emu_g.null_stream && rw_emu_g.null_stream->pid == rw_emu_g.pid)
		rc = wait_stream(rw_emu_g.null_stream, rw_emu_g.null_stream->enq, who);
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

int rw_emu_memcpy(void *dst, const void *src, size_t bytes)
{
	enum copy_class cls;
	const void *s;
	void *d;
	int rc;

	if (!bytes)
		return 0;
	rc = copy_ends("memcpy", dst, src, bytes, &d, &s, &cls);
	if (rc == 0)
		rc = null_stream_drain("memcpy");
	if (rc)
		return rc;
	memmove(d, s, bytes);
	count_copy(cls, bytes);
	return 0;
}

int rw_emu_memcpy_async(void *dst, const void *src, size_t bytes, void *stream)
{
	enum copy_class cls;
	struct op *o;
	int rc;

	if (!bytes)
		return 0;
	o = op_new(OP_COPY);
	if (!o)
		return -ENOMEM;
	rc = copy_ends("memcpy_async", dst, src, bytes, &o->dst, &o->src, &cls);
	if (rc) {
		free(o);
		return rc;
	}
	o->n = bytes;
	rc = enqueue(stream, o, "memcpy_async");
	if (rc == 0)
		count_copy(cls, bytes);
	return rc;
}

int rw_emu_memset(void *dst, int value, size_t bytes)
{
	enum rw_mem_kind k;
	void *d;
	int rc;

	if (!bytes)
		return 0;
	rc = rw_emu_translate("memset", dst, bytes, &d, &k);
	if (rc)
		return rc;
	if (!dst || k == RW_MEM_HOST) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: memset(%p, %zu bytes): not device memory", dst,
			bytes);
		return -EINVAL;
	}
	rc = null_stream_drain("memset");
	if (rc)
		return rc;
	memset(d, value, bytes);
	rw_emu_count(&rw_emu_g.n.memsets, 1);
	return 0;
}

int rw_emu_launch_host(void *stream, void (*fn)(void *arg), void *arg, bool kernel)
{
	struct op *o;

	if (!fn) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: launch_host(stream=%p): NULL function", stream);
		return -EINVAL;
	}
	o = op_new(OP_HOST);
	if (!o)
		return -ENOMEM;
	o->fn = fn;
	o->arg = arg;
	o->kernel = kernel;
	return enqueue(stream, o, kernel ? "kernel launch" : "launch_host");
}

/* ---- events ------------------------------------------------------------------------- */

static int event_check(void *event, const char *who, struct rw_emu_event **out)
{
	struct rw_emu_event *ev = event;

	if (!ev || ev->magic != EVENT_MAGIC) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: %s: %p is not an event", who, event);
		return -EINVAL;
	}
	if (ev->pid != rw_emu_g.pid) {
		RW_WARN(RW_LOG_INIT, "gpu-emu: %s: event %p was made by process %d before fork",
			who, event, (int)ev->pid);
		return -EIO;
	}
	*out = ev;
	return 0;
}

int rw_emu_event_create(void **event)
{
	struct rw_emu_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->magic = EVENT_MAGIC;
	ev->pid = rw_emu_g.pid;
	ev->refs = 1;
	*event = ev;
	return 0;
}

void rw_emu_event_destroy(void *event)
{
	struct rw_emu_event *ev;

	if (!event)
		return;
	pthread_mutex_lock(&rw_emu_g.lock);
	if (event_check(event, "event_destroy", &ev) == 0 && !ev->dead) {
		ev->dead = true;
		event_put(ev); /* freed once no pending op names it */
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
}

int rw_emu_event_record(void *event, void *stream)
{
	struct rw_emu_event *ev;
	struct op *o = op_new(OP_RECORD);
	int rc;

	if (!o)
		return -ENOMEM;
	pthread_mutex_lock(&rw_emu_g.lock);
	rc = event_check(event, "event_record", &ev);
	if (rc == 0)
		o->gen = ++ev->rec_gen;
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (rc) {
		free(o);
		return rc;
	}
	o->ev = ev;
	return enqueue(stream, o, "event_record");
}

int rw_emu_stream_wait_event(void *stream, void *event)
{
	struct rw_emu_event *ev;
	struct op *o = op_new(OP_WAIT);
	int rc;

	if (!o)
		return -ENOMEM;
	pthread_mutex_lock(&rw_emu_g.lock);
	rc = event_check(event, "stream_wait_event", &ev);
	if (rc == 0)
		o->gen = ev->rec_gen; /* the last record before this call */
	pthread_mutex_unlock(&rw_emu_g.lock);
	if (rc) {
		free(o);
		return rc;
	}
	o->ev = ev;
	return enqueue(stream, o, "stream_wait_event");
}

int rw_emu_event_query(void *event)
{
	struct rw_emu_event *ev;
	int rc;

	pthread_mutex_lock(&rw_emu_g.lock);
	rc = event_check(event, "event_query", &ev);
	if (rc == 0)
		rc = ev->done_gen >= ev->rec_gen ? 0 : -EAGAIN;
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

int rw_emu_event_sync(void *event)
{
	struct rw_emu_event *ev;
	struct timespec dl;
	uint64_t target;
	int rc;

	rw_emu_count_blocking();
	deadline_after(&dl, RW_EMU_WAIT_MS);
	pthread_mutex_lock(&rw_emu_g.lock);
	rc = event_check(event, "event_sync", &ev);
	target = rc ? 0 : ev->rec_gen;
	while (rc == 0 && ev->done_gen < target) {
		if (wait_done(&dl) && ev->done_gen < target) {
			RW_WARN(RW_LOG_INIT, "gpu-emu: event_sync(%p): not reached after %d ms",
				event, RW_EMU_WAIT_MS);
			rc = -ETIMEDOUT;
		}
	}
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

int rw_emu_event_elapsed_ms(void *start, void *end, float *ms)
{
	struct rw_emu_event *a, *b;
	int rc;

	pthread_mutex_lock(&rw_emu_g.lock);
	rc = event_check(start, "event_elapsed_ms", &a);
	if (rc == 0)
		rc = event_check(end, "event_elapsed_ms", &b);
	if (rc == 0 && (!a->rec_gen || !b->rec_gen)) {
		RW_WARN(RW_LOG_INIT,
			"gpu-emu: event_elapsed_ms(%p, %p): an event was never "
			"recorded",
			start, end);
		rc = -EINVAL;
	}
	if (rc == 0 && (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen))
		rc = -EAGAIN;
	if (rc == 0)
		*ms = (float)((double)((int64_t)(b->t_ns - a->t_ns)) / 1e6);
	pthread_mutex_unlock(&rw_emu_g.lock);
	return rc;
}

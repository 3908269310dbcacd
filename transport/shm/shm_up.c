/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host bytes up into a device buffer without waiting for the device: a
 * message from host memory to a receive in device memory (fragments from
 * the slots, chunks read by cross-memory attach) is staged piece by piece
 * into a small ring of pinned buffers, each copied up asynchronously on the
 * comm's stream with an event behind it.  A piece is reused once its event
 * has run, and the message completes once every piece's has (the receiver
 * drains, shm_rx.c), so test() only ever polls: when the ring is full it
 * leaves the rest for the next call.  The ring, its events and the stream
 * are made the first time a comm needs them and freed at close, after the
 * stream has run dry (shm_comm.c).
 */
#include "transport/shm/shm_internal.h"

#include <string.h>

#include "gpu/rw_cuda.h"

static int up_init(struct rw_shm_comm *c)
{
	struct rw_shm_up *u = &c->d.up;
	int rc = 0;

	if (u->pinned)
		return 0;
	if (!c->d.stream)
		rc = rw_cuda_stream_create(&c->d.stream);
	for (int i = 0; rc == 0 && i < RW_SHM_UP_PIECES; i++) {
		if (!u->ev[i])
			rc = rw_cuda_event_create(&u->ev[i]);
	}
	if (rc == 0)
		rc = rw_cuda_host_alloc((void **)&u->pinned,
					(size_t)RW_SHM_UP_PIECES * RW_SHM_UP_PIECE_BYTES);
	return rc;
}

int rw_shm_up_reap(struct rw_shm_comm *c)
{
	struct rw_shm_up *u = &c->d.up;

	while (u->n) {
		int rc = rw_cuda_event_query(u->ev[u->head]);

		if (rc == -EAGAIN)
			return -EAGAIN;
		if (rc && !u->err)
			u->err = rc;
		u->head = (u->head + 1) % RW_SHM_UP_PIECES;
		u->n--;
	}
	return u->err;
}

int rw_shm_up_piece(struct rw_shm_comm *c, char **piece)
{
	struct rw_shm_up *u = &c->d.up;
	int rc = up_init(c);

	if (rc)
		return rc;
	if (u->n == RW_SHM_UP_PIECES)
		rw_shm_up_reap(c); /* an error stays in u->err for the drain */
	if (u->n == RW_SHM_UP_PIECES)
		return -EAGAIN;
	*piece = u->pinned + (size_t)((u->head + u->n) % RW_SHM_UP_PIECES) * RW_SHM_UP_PIECE_BYTES;
	return 0;
}

int rw_shm_up_push(struct rw_shm_comm *c, void *dst, size_t len)
{
	struct rw_shm_up *u = &c->d.up;
	unsigned k = (u->head + u->n) % RW_SHM_UP_PIECES;
	int rc = rw_cuda_memcpy_async(dst, u->pinned + (size_t)k * RW_SHM_UP_PIECE_BYTES, len,
				      c->d.stream);

	if (rc == 0)
		rc = rw_cuda_event_record(u->ev[k], c->d.stream);
	if (rc == 0)
		u->n++;
	return rc;
}

int rw_shm_up_stage(struct rw_shm_comm *c, char *dst, const char *src, size_t len, size_t *done)
{
	while (*done < len) {
		size_t k = RW_MIN((size_t)RW_SHM_UP_PIECE_BYTES, len - *done);
		char *piece;
		int rc = rw_shm_up_piece(c, &piece);

		if (rc)
			return rc;
		memcpy(piece, src + *done, k);
		rc = rw_shm_up_push(c, dst + *done, k);
		if (rc)
			return rc;
		*done += k;
	}
	return 0;
}

void rw_shm_up_release(struct rw_shm_comm *c)
{
	struct rw_shm_up *u = &c->d.up;

	/* the caller synchronised the stream: no copy reads a piece now */
	for (int i = 0; i < RW_SHM_UP_PIECES; i++) {
		if (u->ev[i])
			rw_cuda_event_destroy(u->ev[i]);
	}
	if (u->pinned)
		rw_cuda_host_free(u->pinned);
	*u = (struct rw_shm_up){0};
}

/* SPDX-License-Identifier: Apache-2.0 */
/* describe (rw_net.h): a socket comm for profiler events. */
#include <stdio.h>

#include "transport/socket/sock_internal.h"

int rw_sock_describe(struct rw_net_comm *comm, struct rw_net_desc *desc)
{
	struct rw_sock_comm *c;
	int rc;

	if (!comm || !desc)
		return -EINVAL;
	c = rw_sock_comm_from(comm);
	rc = rw_obj_check_any(&c->obj, rw_sock_comm_kinds, 2);
	if (rc)
		return rc;
	*desc = (struct rw_net_desc){.kind = RW_NET_KIND_SOCKET, .conn_id = UINT64_MAX};
	if (c->d && c->d->nstreams > 0) {
		desc->nchannels = c->d->nstreams;
		if (c->d->streams[0].fd >= 0)
			desc->conn_id = (uint64_t)c->d->streams[0].fd;
	}
	snprintf(desc->peer, sizeof(desc->peer), "%.*s", (int)sizeof(desc->peer) - 1, c->peer);
	return 0;
}

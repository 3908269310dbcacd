/* SPDX-License-Identifier: Apache-2.0 */
/* describe (rw_net.h): a same-host comm for profiler events. */
#include <stdio.h>

#include "transport/shm/shm_internal.h"

int rw_shm_describe(struct rw_net_comm *comm, struct rw_net_desc *desc)
{
	struct rw_shm_comm *c;
	int rc;

	if (!desc)
		return -EINVAL;
	rc = rw_shm_comm_check(comm, 0, "describe", &c);
	if (rc)
		return rc;
	*desc = (struct rw_net_desc){
		.kind = RW_NET_KIND_SHM,
		.nchannels = 1,
		.conn_id = c->conn_id,
	};
	snprintf(desc->peer, sizeof(desc->peer), "%.*s", (int)sizeof(desc->peer) - 1, c->peer);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* describe (rw_net.h): a verbs comm for profiler events. */
#include <stdio.h>

#include "transport/ib/ib_internal.h"

int rw_ib_describe(struct rw_net_comm *comm, struct rw_net_desc *desc)
{
	struct rw_ib_comm *c;
	int rc;

	if (!desc)
		return -EINVAL;
	rc = rw_ib_comm_check(comm, 0, &c);
	if (rc)
		return rc;
	*desc = (struct rw_net_desc){
		.kind = RW_NET_KIND_IB,
		.nchannels = c->nqps,
		.conn_id = c->nqps > 0 && c->qps[0] ? c->qps[0]->qp_num : UINT64_MAX,
	};
	snprintf(desc->peer, sizeof(desc->peer), "%.*s", (int)sizeof(desc->peer) - 1, c->peer);
	return 0;
}

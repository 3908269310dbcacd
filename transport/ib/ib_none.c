/* SPDX-License-Identifier: Apache-2.0 */
/* The ib transport in a build without libibverbs headers: never usable. */
#include "transport/ib/ib.h"

#include <errno.h>
#include <stdio.h>

#include "common/rw_log.h"

int rw_ib_create_why(const struct rw_config *cfg, struct rw_net **out, char *why, size_t why_len)
{
	(void)cfg, (void)out;
	if (why && why_len)
		snprintf(why, why_len,
			 "ringway was built without the libibverbs headers "
			 "(RINGWAY_WITH_VERBS; apt-get install libibverbs-dev)");
	return -ENOTSUP;
}

int rw_ib_create(const struct rw_config *cfg, struct rw_net **out)
{
	char why[160];
	int rc = rw_ib_create_why(cfg, out, why, sizeof(why));

	RW_WARN(RW_LOG_INIT | RW_LOG_NET, "NET/IB: the ib transport is unusable: %s", why);
	return rc;
}

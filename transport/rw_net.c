/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/rw_net.h"

#include "common/rw_log.h"

int rw_net_unsupported_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
				     uint64_t offset, int fd, struct rw_net_mr **mr)
{
	(void)data, (void)size, (void)type, (void)offset, (void)fd, (void)mr;
	RW_WARN_ONCE(RW_LOG_NET, "%s: regMrDmaBuf(fd=%d) is not supported", rw_net_name(comm->net),
		     fd);
	return -ENOTSUP;
}

int rw_net_unsupported_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
			      struct rw_net_mr **mrs, struct rw_net_req **req)
{
	(void)n, (void)data, (void)sizes, (void)mrs, (void)req;
	RW_WARN_ONCE(RW_LOG_NET, "%s: iflush is not supported", rw_net_name(comm->net));
	return -ENOTSUP;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interface selection moved to the TCP toolbox (rw_tcp_if_select in
 * transport/tcp/tcp_ifname.c).  This forwarder keeps sock.h's old name for
 * the callers that still use it (tests/common/fuzz_params.c); it goes with
 * sock.h's declaration once they call the toolbox.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/socket/sock_internal.h"
#include "transport/tcp/rw_tcp.h"

static_assert(sizeof(struct rw_sock_ifaddr) == sizeof(struct rw_tcp_ifaddr) &&
		      (int)RW_SOCK_IF_RULE_LOOPBACK == (int)RW_TCP_IF_RULE_LOOPBACK,
	      "sock.h's interface types mirror the toolbox's");

int rw_sock_if_select(const char *spec, int family, const struct rw_sock_ifaddr *in, size_t nin,
		      struct rw_sock_ifaddr *out, size_t max, size_t *nout,
		      enum rw_sock_if_rule *rule)
{
	struct rw_tcp_ifaddr *tin, *tout;
	enum rw_tcp_if_rule r;
	size_t n = 0;
	int rc;

	if ((!in && nin) || !out || !nout)
		return -EINVAL;
	tin = calloc(nin ? nin : 1, sizeof(*tin));
	tout = calloc(max ? max : 1, sizeof(*tout));
	if (!tin || !tout) {
		free(tin);
		free(tout);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nin; i++) {
		memcpy(tin[i].name, in[i].name, sizeof(tin[i].name));
		tin[i].addr = in[i].addr;
	}
	rc = rw_tcp_if_select(spec, family, tin, nin, tout, max, &n, &r);
	if (!rc) {
		for (size_t i = 0; i < n; i++) {
			memcpy(out[i].name, tout[i].name, sizeof(out[i].name));
			out[i].addr = tout[i].addr;
		}
		*nout = n;
		if (rule)
			*rule = (enum rw_sock_if_rule)r;
	}
	free(tin);
	free(tout);
	return rc;
}

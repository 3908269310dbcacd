/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rw_net conformance suite over the ib transport on the emulated
 * fabric (run under tests/softverbs/sv_run).  Set-up goes over 127.0.0.1.
 * Usage: test_ib_conf [roce|ib|roce-multi]
 *   roce        sv_roce0 (RoCE v2, automatic GID), one QP per connection
 *   ib          sv_ib0 (InfiniBand, LIDs)
 *   roce-multi  sv_roce0 with 3 QPs per connection: messages of 64 KiB and
 *               more are split into pieces over them
 */
#include <stdio.h>
#include <string.h>

#include "net/net_conformance.h"
#include "transport/ib/ib.h"

#define COMMON                                                                                     \
	"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SOCKET_FAMILY", "ipv4", "RINGWAY_TIMEOUT_MS",     \
		"2000"

static const char *const env_roce[] = {
	COMMON,
	"RINGWAY_IB_HCA",
	"=sv_roce0",
	NULL,
};

static const char *const env_ib[] = {
	COMMON,
	"RINGWAY_IB_HCA",
	"=sv_ib0",
	NULL,
};

static const char *const env_multi[] = {
	COMMON, "RINGWAY_IB_HCA", "=sv_roce0:1", "RINGWAY_IB_QPS_PER_CONN", "3", NULL,
};

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "roce";
	struct conf_backend b = {
		.name = "ib on softverbs, RoCE",
		.create = rw_ib_create,
		.env = env_roce,
		.live_objects = rw_ib_live_total,
		.peer_hint = "127.0.0.1",
		.handle_addr = rw_ib_handle_addr,
		.drop_warning = "dropping connection",
	};

	if (strcmp(mode, "ib") == 0) {
		b.name = "ib on softverbs, InfiniBand";
		b.env = env_ib;
	} else if (strcmp(mode, "roce-multi") == 0) {
		b.name = "ib on softverbs, RoCE, 3 QPs per connection";
		b.env = env_multi;
	} else if (strcmp(mode, "roce") != 0) {
		fprintf(stderr, "usage: %s [roce|ib|roce-multi]\n", argv[0]);
		return 2;
	}
	return conf_run(&b);
}

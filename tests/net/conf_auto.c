/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance suite through rw_net_create() with RINGWAY_TRANSPORT=auto
 * (transport/net_auto.c): the devices and listen handles are the composite's,
 * every peer of the suite is on this host, so the connections are shm ones.
 * Usage: test_net_conformance_auto [socket]
 *   socket  RINGWAY_TRANSPORT=socket through the same entry point
 */
#include <string.h>

#include "net/net_conformance.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"

static const char *const env_auto[] = {
	"RINGWAY_TRANSPORT",
	"auto",
	"RINGWAY_SOCKET_IFNAME",
	"=lo",
	"RINGWAY_SOCKET_FAMILY",
	"ipv4",
	"RINGWAY_TIMEOUT_MS",
	"2000",
	NULL,
};

static const char *const env_socket[] = {
	"RINGWAY_TRANSPORT",
	"socket",
	"RINGWAY_SOCKET_IFNAME",
	"=lo",
	"RINGWAY_SOCKET_FAMILY",
	"ipv4",
	"RINGWAY_TIMEOUT_MS",
	"2000",
	NULL,
};

static long live_total(void)
{
	return rw_shm_live_total() + rw_sock_live_total();
}

int main(int argc, char **argv)
{
	struct conf_backend b = {
		.name = "auto (shm for peers on this host)",
		.create = rw_net_create,
		.env = env_auto,
		.live_objects = live_total,
		.peer_hint = "pid ",
	};

	if (argc > 1 && strcmp(argv[1], "socket") == 0) {
		b.name = "RINGWAY_TRANSPORT=socket through rw_net_create";
		b.env = env_socket;
		b.peer_hint = "127.0.0.1";
		b.handle_addr = rw_sock_handle_addr;
		b.drop_warning = "dropping connection";
	}
	return conf_run(&b);
}

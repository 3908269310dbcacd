/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance suite over the socket transport on 127.0.0.1.
 * Usage: test_net_conformance_sock [stripe]
 *   (none)  the defaults (RINGWAY_SOCKET_NSTREAMS, _MIN_STRIPE)
 *   stripe  3 streams, striping from 4 KiB: uneven slices, most messages
 *           through the helper threads
 */
#include <string.h>

#include "net/net_conformance.h"
#include "transport/socket/sock.h"

/* One name, value pair a line. */
/* clang-format off */
static const char *const env_default[] = {
	"RINGWAY_SOCKET_IFNAME", "=lo",
	"RINGWAY_SOCKET_FAMILY", "ipv4",
	"RINGWAY_TIMEOUT_MS", "2000",
	NULL,
};

static const char *const env_stripe[] = {
	"RINGWAY_SOCKET_IFNAME", "=lo",
	"RINGWAY_SOCKET_FAMILY", "ipv4",
	"RINGWAY_TIMEOUT_MS", "2000",
	"RINGWAY_SOCKET_NSTREAMS", "3",
	"RINGWAY_SOCKET_MIN_STRIPE", "4096",
	NULL,
};
/* clang-format on */

int main(int argc, char **argv)
{
	struct conf_backend b = {
		.name = "socket",
		.create = rw_sock_create,
		.env = env_default,
		.live_objects = rw_sock_live_total,
		.peer_hint = "127.0.0.1",
		.handle_addr = rw_sock_handle_addr,
		.drop_warning = "dropping connection",
	};

	if (argc > 1 && strcmp(argv[1], "stripe") == 0) {
		b.name = "socket, 3 streams, stripes from 4 KiB";
		b.env = env_stripe;
	}
	return conf_run(&b);
}

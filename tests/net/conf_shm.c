/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance suite over the same-host transport.
 * Usage: test_net_conformance_shm [slots|cma]
 *   (none)  the defaults: small messages in slots, large ones by
 *           cross-memory attach
 *   slots   RINGWAY_SHM_CMA=0 and a small ring (4 slots of 16 KiB): every
 *           large message is pipelined through the slots in many pieces
 *   cma     cross-memory attach from 4 KiB up, 2 slots
 */
#include <string.h>

#include "net/net_conformance.h"
#include "transport/shm/shm.h"

static const char *const env_default[] = {
	"RINGWAY_TIMEOUT_MS",
	"2000",
	NULL,
};

static const char *const env_slots[] = {
	"RINGWAY_TIMEOUT_MS",
	"2000",
	"RINGWAY_SHM_CMA",
	"0",
	"RINGWAY_SHM_NSLOTS",
	"4",
	"RINGWAY_SHM_SLOT_BYTES",
	"16K",
	NULL,
};

static const char *const env_cma[] = {
	"RINGWAY_TIMEOUT_MS",
	"2000",
	"RINGWAY_SHM_CMA_MIN",
	"4K",
	"RINGWAY_SHM_NSLOTS",
	"2",
	"RINGWAY_SHM_SLOT_BYTES",
	"8K",
	NULL,
};

int main(int argc, char **argv)
{
	struct conf_backend b = {
		.name = "shm",
		.create = rw_shm_create,
		.env = env_default,
		.live_objects = rw_shm_live_total,
		.peer_hint = "pid ",
	};

	if (argc > 1 && strcmp(argv[1], "slots") == 0) {
		b.name = "shm, slot ring only (4 x 16 KiB)";
		b.env = env_slots;
	} else if (argc > 1 && strcmp(argv[1], "cma") == 0) {
		b.name = "shm, cross-memory attach from 4 KiB";
		b.env = env_cma;
	}
	return conf_run(&b);
}

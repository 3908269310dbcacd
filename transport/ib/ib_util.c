/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport's pure parts (no verbs header needed): the HCA filter,
 * the GID choice, port speeds, the handle decoder and the live-object
 * counters.  Built with or without libibverbs headers.
 */
#include "transport/ib/ib.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/ib_live.h"
#include "transport/ib/ib_proto.h"

/* --- HCA filter ----------------------------------------------------------------- */

int rw_ib_spec_parse(const char *s, struct rw_ib_spec *out)
{
	struct rw_ib_spec sp = {.n = 0};

	if (!s)
		s = "";
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '^') {
		sp.exclude = true;
		s++;
	}
	if (*s == '=') {
		sp.exact = true;
		s++;
	}
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char item[96], *colon;
		size_t b = 0;

		while (b < len && isspace((unsigned char)s[b]))
			b++;
		while (len > b && isspace((unsigned char)s[len - 1]))
			len--;
		if (len > b) {
			if (len - b >= sizeof(item) || sp.n == RW_IB_SPEC_MAX)
				return -EINVAL;
			memcpy(item, s + b, len - b);
			item[len - b] = '\0';
			sp.e[sp.n].port = -1;
			colon = strchr(item, ':');
			if (colon) {
				char *num_end;
				long port;

				*colon = '\0';
				port = strtol(colon + 1, &num_end, 10);
				if (colon[1] == '\0' || *num_end || port < 1 || port > 255)
					return -EINVAL;
				sp.e[sp.n].port = (int)port;
			}
			if (strlen(item) == 0 || strlen(item) >= sizeof(sp.e[0].name))
				return -EINVAL;
			strcpy(sp.e[sp.n].name, item);
			sp.n++;
		}
		if (!end)
			break;
		s = end + 1;
	}
	*out = sp;
	return 0;
}

bool rw_ib_spec_match(const struct rw_ib_spec *sp, const char *name, int port)
{
	bool listed = false;

	if (sp->n == 0)
		return true;
	for (int i = 0; i < sp->n && !listed; i++) {
		const char *want = sp->e[i].name;
		bool name_ok = sp->exact ? strcmp(name, want) == 0
					 : strncmp(name, want, strlen(want)) == 0;

		listed = name_ok && (sp->e[i].port < 0 || sp->e[i].port == port);
	}
	return sp->exclude ? !listed : listed;
}

/* --- GID choice ----------------------------------------------------------------- */

static bool gid_zero(const uint8_t *g)
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

static bool gid_v4mapped(const uint8_t *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(g, prefix, sizeof(prefix)) == 0;
}

static bool gid_link_local(const uint8_t *g)
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* Higher is better; 0: unusable. */
static int gid_rank(const struct rw_ib_gid *g)
{
	bool v2 = g->type == RW_IB_GID_ROCE_V2;

	if (gid_zero(g->raw))
		return 0;
	if (gid_v4mapped(g->raw))
		return v2 ? 6 : 4;
	if (!gid_link_local(g->raw))
		return v2 ? 5 : 3;
	return v2 ? 2 : 1;
}

int rw_ib_gid_pick(const struct rw_ib_gid *gids, int n, bool ethernet)
{
	int best = -1, best_rank = 0;

	for (int i = 0; i < n; i++) {
		int r;

		if (!ethernet) {
			if (!gid_zero(gids[i].raw))
				return i;
			continue;
		}
		r = gid_rank(&gids[i]);
		if (r > best_rank) {
			best = i;
			best_rank = r;
		}
	}
	return best;
}

int rw_ib_speed_mbps(unsigned int active_speed, unsigned int active_width)
{
	int lane, lanes;

	switch (active_speed) {
	case 1:
		lane = 2500;
		break; /* SDR */
	case 2:
		lane = 5000;
		break; /* DDR */
	case 4:
		lane = 10000;
		break; /* QDR */
	case 8:
		lane = 10000;
		break; /* FDR10 */
	case 16:
		lane = 14000;
		break; /* FDR */
	case 32:
		lane = 25000;
		break; /* EDR */
	case 64:
		lane = 50000;
		break; /* HDR */
	case 128:
		lane = 100000;
		break; /* NDR */
	case 256:
		lane = 200000;
		break; /* XDR */
	default:
		return 0;
	}
	switch (active_width) {
	case 1:
		lanes = 1;
		break;
	case 2:
		lanes = 4;
		break;
	case 4:
		lanes = 8;
		break;
	case 8:
		lanes = 12;
		break;
	case 16:
		lanes = 2;
		break;
	default:
		return 0;
	}
	return lane * lanes;
}

/* --- handles ---------------------------------------------------------------------- */

int rw_ib_handle_addr(const void *handle, struct sockaddr_storage *out)
{
	struct rw_ib_handle h;

	if (!handle || !out)
		return -EINVAL;
	memcpy(&h, handle, sizeof(h));
	if (h.magic != RW_IB_MAGIC || h.version != RW_IB_VERSION)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (h.family == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)out;

		in->sin_family = AF_INET;
		in->sin_port = h.port;
		memcpy(&in->sin_addr, h.addr, 4);
	} else if (h.family == 6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = h.port;
		memcpy(&in6->sin6_addr, h.addr, 16);
		in6->sin6_scope_id = h.scope_id;
	} else {
		return -EINVAL;
	}
	return 0;
}

/* --- live objects ----------------------------------------------------------------- */

struct rw_live rw_ib_live = {.name = "ib", .nkinds = RW_IB_LIVE_COUNT};

long rw_ib_live_total(void)
{
	return rw_live_sum(&rw_ib_live, 0);
}

long rw_ib_live_regs(void)
{
	return rw_live_get(&rw_ib_live, RW_IB_LIVE_REGS);
}

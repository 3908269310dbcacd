/* SPDX-License-Identifier: Apache-2.0 */
/* Which network interfaces to use: discovery, and NCCL_SOCKET_IFNAME's rules. */
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_params.h"
#include "transport/tcp/rw_tcp.h"

#define MAX_TOKENS 32
#define TOKEN_LEN  64

struct if_spec {
	bool exclude; /* '^': everything but the listed names */
	bool exact;   /* '=': whole names, not prefixes */
	int n;
	char tok[MAX_TOKENS][TOKEN_LEN];
};

static void spec_parse(const char *s, struct if_spec *sp)
{
	memset(sp, 0, sizeof(*sp));
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '^') {
		sp->exclude = true;
		s++;
	}
	if (*s == '=') {
		sp->exact = true;
		s++;
	}
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *b = s, *e = s + len;

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (e > b && sp->n < MAX_TOKENS) {
			size_t n = RW_MIN((size_t)(e - b), (size_t)TOKEN_LEN - 1);

			memcpy(sp->tok[sp->n], b, n);
			sp->tok[sp->n][n] = '\0';
			sp->n++;
		}
		s += len + (end ? 1 : 0);
	}
}

static bool spec_lists(const struct if_spec *sp, const char *name)
{
	for (int i = 0; i < sp->n; i++) {
		if (sp->exact ? strcmp(name, sp->tok[i]) == 0
			      : strncmp(name, sp->tok[i], strlen(sp->tok[i])) == 0)
			return true;
	}
	return false;
}

static bool family_ok(int family, const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return family != RW_SOCKET_FAMILY_IPV6;
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		return family != RW_SOCKET_FAMILY_IPV4 && !IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
	}
	return false;
}

static size_t select_with(const struct if_spec *sp, int family, const struct rw_tcp_ifaddr *in,
			  size_t nin, struct rw_tcp_ifaddr *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < nin; i++) {
		size_t j;

		if (!family_ok(family, &in[i].addr) || spec_lists(sp, in[i].name) == sp->exclude)
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(out[j].name, in[i].name) == 0)
				break;
		if (j < n) {
			/* seen: an IPv4 address wins over an IPv6 one */
			if (out[j].addr.ss_family == AF_INET6 && in[i].addr.ss_family == AF_INET)
				out[j].addr = in[i].addr;
			continue;
		}
		if (n < max)
			out[n++] = in[i];
	}
	return n;
}

int rw_tcp_if_select(const char *spec, int family, const struct rw_tcp_ifaddr *in, size_t nin,
		     struct rw_tcp_ifaddr *out, size_t max, size_t *nout, enum rw_tcp_if_rule *rule)
{
	/* Default, then NCCL's fallbacks, in order. */
	static const struct {
		const char *spec;
		enum rw_tcp_if_rule rule;
	} defaults[] = {
		{"^docker,lo,virbr", RW_TCP_IF_RULE_DEFAULT},
		{"docker", RW_TCP_IF_RULE_DOCKER},
		{"lo", RW_TCP_IF_RULE_LOOPBACK},
	};
	struct if_spec sp;
	const char *p = spec;
	size_t n = 0;

	if ((!in && nin) || !out || !nout)
		return -EINVAL;
	while (p && isspace((unsigned char)*p))
		p++;
	if (p && *p) {
		spec_parse(p, &sp);
		*nout = select_with(&sp, family, in, nin, out, max);
		if (rule)
			*rule = RW_TCP_IF_RULE_SPEC;
		return 0;
	}
	for (size_t i = 0; i < RW_ARRAY_SIZE(defaults); i++) {
		spec_parse(defaults[i].spec, &sp);
		n = select_with(&sp, family, in, nin, out, max);
		if (n || i + 1 == RW_ARRAY_SIZE(defaults)) {
			if (rule)
				*rule = defaults[i].rule;
			break;
		}
	}
	*nout = n;
	return 0;
}

int rw_tcp_if_discover(struct rw_tcp_ifaddr *out, size_t max, size_t *n)
{
	struct ifaddrs *ifs, *ifa;
	size_t k = 0;

	if (!out || !n)
		return -EINVAL;
	if (getifaddrs(&ifs))
		return -errno;
	for (ifa = ifs; ifa && k < max; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) ||
		    (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6) ||
		    strlen(ifa->ifa_name) >= IF_NAMESIZE)
			continue;
		memset(&out[k], 0, sizeof(out[k]));
		strcpy(out[k].name, ifa->ifa_name);
		memcpy(&out[k].addr, ifa->ifa_addr,
		       ifa->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
							   : sizeof(struct sockaddr_in6));
		k++;
	}
	freeifaddrs(ifs);
	*n = k;
	return 0;
}

/* "eth0,ib0" (each name once), "none" when empty. */
static void list_names(const struct rw_tcp_ifaddr *a, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		bool seen = false;
		int w;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(a[i].name, a[j].name) == 0;
		if (seen)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", a[i].name);
		used += w > 0 ? (size_t)w : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

#define MAX_DISCOVERED 128

int rw_tcp_if_pick(const char *spec, int family, struct rw_tcp_ifaddr *out, size_t max,
		   size_t *nout, enum rw_tcp_if_rule *rule, char *found, size_t found_len)
{
	struct rw_tcp_ifaddr *all;
	size_t nall = 0;
	int rc;

	if (!out || !nout)
		return -EINVAL;
	all = calloc(MAX_DISCOVERED, sizeof(*all));
	if (!all)
		return -ENOMEM;
	rc = rw_tcp_if_discover(all, MAX_DISCOVERED, &nall);
	if (!rc)
		rc = rw_tcp_if_select(spec, family, all, nall, out, max, nout, rule);
	if (!rc && found && found_len)
		list_names(all, nall, found, found_len);
	free(all);
	return rc;
}

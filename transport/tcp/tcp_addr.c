/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses: formatting, parsing "host:port", comparing. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/rw_tcp.h"

void rw_tcp_addr_str(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (!len)
		return;
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		if (in6->sin6_scope_id)
			snprintf(buf, len, "[%s%%%u]:%u", host, in6->sin6_scope_id,
				 ntohs(in6->sin6_port));
		else
			snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?(family %d)", sa->ss_family);
	}
}

void rw_tcp_host_str(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char *colon;

	if (!len)
		return;
	rw_tcp_addr_str(sa, buf, len);
	colon = strrchr(buf, ':');
	if (colon && (sa->ss_family == AF_INET || sa->ss_family == AF_INET6))
		*colon = '\0'; /* drop ":port" */
}

socklen_t rw_tcp_addr_len(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int rw_tcp_addr_port(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void rw_tcp_addr_set_port(struct sockaddr_storage *sa, int port)
{
	if (sa->ss_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
	else if (sa->ss_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

bool rw_tcp_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return true; /* other families are all one "host" */
}

bool rw_tcp_is_loopback(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	return sa->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

int rw_tcp_hostport_split(const char *s, char *host, size_t hostlen, int *port)
{
	const char *h = s, *colon, *end;
	size_t n;
	long p;
	char *pend;

	if (!s || !host || !port)
		return -EINVAL;
	end = s + strlen(s);
	if (*h == '[') {
		const char *close = strchr(h, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h++;
		n = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(h, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - h);
	}
	if (n == 0 || n >= hostlen || colon + 1 == end || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	p = strtol(colon + 1, &pend, 10);
	if (errno || *pend || p < 1 || p > 65535)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (int)p;
	return 0;
}

int rw_tcp_addr_parse(const char *s, struct sockaddr_storage *out)
{
	struct sockaddr_storage sa;
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], *pct;
	int port;

	if (!s || !out || rw_tcp_hostport_split(s, host, sizeof(host), &port))
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	if (s[0] == '[') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;

		pct = strchr(host, '%');
		if (pct) {
			char *e;
			unsigned long scope;

			*pct++ = '\0';
			errno = 0;
			scope = strtoul(pct, &e, 10);
			if (e == pct || *e || errno || scope > UINT32_MAX) {
				scope = if_nametoindex(pct); /* "fe80::1%eth0" */
				if (!scope)
					return -EINVAL;
			}
			in6->sin6_scope_id = (uint32_t)scope;
		}
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
	}
	rw_tcp_addr_set_port(&sa, port);
	*out = sa;
	return 0;
}

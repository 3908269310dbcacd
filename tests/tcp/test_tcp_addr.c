/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP toolbox's addresses: formatting, parsing, comparing. */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "transport/tcp/rw_tcp.h"

/* s parses, prints back as s, and parses to the same address again. */
static void round_trip(const char *s, int family, int port)
{
	struct sockaddr_storage a, b;
	char buf[RW_TCP_ADDRSTRLEN];

	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(rw_tcp_addr_parse(s, &a), 0);
	assert_int_equal(a.ss_family, family);
	assert_int_equal(rw_tcp_addr_port(&a), port);
	rw_tcp_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, s);
	assert_int_equal(rw_tcp_addr_parse(buf, &b), 0);
	assert_memory_equal(&a, &b, rw_tcp_addr_len(&a));
}

static void format_and_parse_round_trip(void **state)
{
	struct sockaddr_storage a;
	char buf[RW_TCP_ADDRSTRLEN];

	(void)state;
	round_trip("127.0.0.1:5", AF_INET, 5);
	round_trip("10.1.2.3:65535", AF_INET, 65535);
	round_trip("[::1]:29500", AF_INET6, 29500);
	round_trip("[2001:db8::17]:1", AF_INET6, 1);
	round_trip("[fe80::1%2]:80", AF_INET6, 80);
	assert_int_equal(rw_tcp_addr_parse("[fe80::1%2]:80", &a), 0);
	assert_int_equal(((struct sockaddr_in6 *)&a)->sin6_scope_id, 2);
	assert_int_equal(rw_tcp_addr_len(&a), sizeof(struct sockaddr_in6));
	assert_int_equal(rw_tcp_addr_parse("[fe80::1%lo]:80", &a), 0); /* a name as the scope */
	assert_int_not_equal(((struct sockaddr_in6 *)&a)->sin6_scope_id, 0);

	/* the host alone, for messages */
	assert_int_equal(rw_tcp_addr_parse("192.168.0.9:77", &a), 0);
	assert_int_equal(rw_tcp_addr_len(&a), sizeof(struct sockaddr_in));
	rw_tcp_host_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "192.168.0.9");
	assert_int_equal(rw_tcp_addr_parse("[::1]:77", &a), 0);
	rw_tcp_host_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]");
	rw_tcp_addr_set_port(&a, 4242);
	rw_tcp_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:4242");

	/* other families, and a buffer too small: still a terminated string */
	memset(&a, 0, sizeof(a));
	a.ss_family = AF_UNIX;
	rw_tcp_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "?(family 1)");
	assert_int_equal(rw_tcp_addr_port(&a), 0);
	assert_int_equal(rw_tcp_addr_parse("10.0.0.1:80", &a), 0);
	rw_tcp_addr_str(&a, buf, 6);
	assert_string_equal(buf, "10.0.");
}

static void bad_input_is_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:0",
		"127.0.0.1:65536",
		"127.0.0.1:-1",
		"127.0.0.1:+80",
		"127.0.0.1: 80",
		"127.0.0.1:80x",
		":80",
		"[::1]80",
		"[::1",
		"::1:80",
		"[]:80",
		"[127.0.0.1]:80",
		"1.2.3.256:80",
		"host.name:80",
		"[fe80::1%]:80",
		"[fe80::1%no-such-if9]:80",
	};
	struct sockaddr_storage a, before;
	char host[64];
	int port = -7;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	before = a;
	for (size_t i = 0; i < RW_ARRAY_SIZE(bad); i++) {
		if (rw_tcp_addr_parse(bad[i], &a) != -EINVAL)
			fail_msg("'%s' parsed", bad[i]);
		assert_memory_equal(&a, &before, sizeof(a)); /* untouched on failure */
	}
	assert_int_equal(rw_tcp_addr_parse(NULL, &a), -EINVAL);
	assert_int_equal(rw_tcp_addr_parse("1.2.3.4:5", NULL), -EINVAL);

	/* the split takes names too, and needs room for the host */
	assert_int_equal(rw_tcp_hostport_split("node-7.example:29500", host, sizeof(host), &port),
			 0);
	assert_string_equal(host, "node-7.example");
	assert_int_equal(port, 29500);
	assert_int_equal(rw_tcp_hostport_split("[fe80::1%eth0]:1", host, sizeof(host), &port), 0);
	assert_string_equal(host, "fe80::1%eth0");
	assert_int_equal(port, 1);
	assert_int_equal(rw_tcp_hostport_split("abcdef:1", host, 6, &port), -EINVAL);
	assert_int_equal(rw_tcp_hostport_split("abcde:1", host, 6, &port), 0);
	assert_int_equal(rw_tcp_hostport_split("host:99999999999999999999", host, 64, &port),
			 -EINVAL);
}

static void hosts_compare_without_ports(void **state)
{
	struct sockaddr_storage a, b;

	(void)state;
	assert_int_equal(rw_tcp_addr_parse("10.0.0.1:1", &a), 0);
	assert_int_equal(rw_tcp_addr_parse("10.0.0.1:2", &b), 0);
	assert_true(rw_tcp_same_host(&a, &b));
	assert_int_equal(rw_tcp_addr_parse("10.0.0.2:1", &b), 0);
	assert_false(rw_tcp_same_host(&a, &b));
	assert_int_equal(rw_tcp_addr_parse("[::ffff:10.0.0.1]:1", &b), 0);
	assert_false(rw_tcp_same_host(&a, &b)); /* another family */
	assert_int_equal(rw_tcp_addr_parse("[2001:db8::1]:1", &a), 0);
	assert_int_equal(rw_tcp_addr_parse("[2001:db8::1]:9", &b), 0);
	assert_true(rw_tcp_same_host(&a, &b));

	assert_int_equal(rw_tcp_addr_parse("127.9.9.9:1", &a), 0);
	assert_true(rw_tcp_is_loopback(&a));
	assert_int_equal(rw_tcp_addr_parse("128.0.0.1:1", &a), 0);
	assert_false(rw_tcp_is_loopback(&a));
	assert_int_equal(rw_tcp_addr_parse("[::1]:1", &a), 0);
	assert_true(rw_tcp_is_loopback(&a));
	assert_int_equal(rw_tcp_addr_parse("[::2]:1", &a), 0);
	assert_false(rw_tcp_is_loopback(&a));
}

/* Not an address, but the toolbox's too: the handshakes' nonces. */
static void nonces_are_never_zero_and_differ(void **state)
{
	uint64_t seen[512];

	(void)state;
	for (size_t i = 0; i < RW_ARRAY_SIZE(seen); i++) {
		seen[i] = rw_tcp_nonce64();
		assert_true(seen[i] != 0);
		for (size_t j = 0; j < i; j++)
			assert_true(seen[i] != seen[j]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(format_and_parse_round_trip, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(bad_input_is_refused, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(hosts_compare_without_ports, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(nonces_are_never_zero_and_differ, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Interface selection of the TCP toolbox (NCCL_SOCKET_IFNAME rules). */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common/rw_params.h"
#include "transport/tcp/rw_tcp.h"

#define MAXIF 16

static struct rw_tcp_ifaddr in[MAXIF], out[MAXIF];
static size_t nin, nout;
static enum rw_tcp_if_rule rule;

static void add(const char *name, const char *addr)
{
	struct rw_tcp_ifaddr *a = &in[nin++];

	memset(a, 0, sizeof(*a));
	strcpy(a->name, name);
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->addr;

		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a->addr;

		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
	}
}

static int setup(void **state)
{
	(void)state;
	nin = nout = 0;
	rule = -1;
	rw_test_log_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static void pick(const char *spec, int family)
{
	nout = 99;
	assert_int_equal(rw_tcp_if_select(spec, family, in, nin, out, MAXIF, &nout, &rule), 0);
}

/* "eth0,ib0" with each chosen address's family ("eth0/4,ib0/6"). */
static const char *got(void)
{
	static char buf[256];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nout; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s/%c", i ? "," : "",
					 out[i].name, out[i].addr.ss_family == AF_INET ? '4' : '6');
	return buf;
}

static void machine(void)
{
	add("lo", "127.0.0.1");
	add("lo", "::1");
	add("eth0", "10.0.0.2");
	add("docker0", "172.17.0.1");
	add("virbr0", "192.168.122.1");
	add("eth0", "fd00::2");
	add("ib0", "fd01::5");
	add("eth1", "fe80::1"); /* link-local only: never usable */
	add("ib0", "10.1.0.5");
	add("ethernet9", "10.9.0.1");
	add("em1", "10.8.0.1");
}

static void default_skips_lo_docker_virbr(void **state)
{
	(void)state;
	machine();
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,ib0/4,ethernet9/4,em1/4");
	assert_int_equal(rule, RW_TCP_IF_RULE_DEFAULT);
	pick(NULL, RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,ib0/4,ethernet9/4,em1/4");
	pick("   ", RW_SOCKET_FAMILY_ANY); /* blank = unset */
	assert_int_equal(rule, RW_TCP_IF_RULE_DEFAULT);
}

static void default_falls_back_to_docker_then_lo(void **state)
{
	(void)state;
	add("lo", "127.0.0.1");
	add("docker0", "172.17.0.1");
	add("virbr0", "192.168.122.1");
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "docker0/4");
	assert_int_equal(rule, RW_TCP_IF_RULE_DOCKER);

	nin = 0;
	add("lo", "::1");
	add("lo", "127.0.0.1");
	add("virbr0", "192.168.122.1");
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "lo/4"); /* IPv4 preferred, even when second */
	assert_int_equal(rule, RW_TCP_IF_RULE_LOOPBACK);
	pick("", RW_SOCKET_FAMILY_IPV6);
	assert_string_equal(got(), "lo/6");
}

static void nothing_at_all(void **state)
{
	(void)state;
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	assert_int_equal(rule, RW_TCP_IF_RULE_LOOPBACK);
	add("eth1", "fe80::1");
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	pick("eth", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
}

static void prefixes(void **state)
{
	(void)state;
	machine();
	pick("eth", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,ethernet9/4");
	assert_int_equal(rule, RW_TCP_IF_RULE_SPEC);
	pick("ib,em", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "ib0/4,em1/4");
	pick(" ib0 , em ", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "ib0/4,em1/4");
	pick("lo", RW_SOCKET_FAMILY_ANY); /* asked for: no fallback message */
	assert_string_equal(got(), "lo/4");
	assert_int_equal(rule, RW_TCP_IF_RULE_SPEC);
	pick("docker", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "docker0/4");
	pick("e", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,ethernet9/4,em1/4");
}

static void exclusions(void **state)
{
	(void)state;
	machine();
	/* a user's ^list replaces the default rules: lo and docker come back */
	pick("^eth,ib", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "lo/4,docker0/4,virbr0/4,em1/4");
	pick("^", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "lo/4,eth0/4,docker0/4,virbr0/4,ib0/4,ethernet9/4,em1/4");
	pick("^lo,docker,virbr,eth,ib,em", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
}

static void exact_names(void **state)
{
	(void)state;
	machine();
	add("eth01", "10.0.1.2");
	pick("=eth0", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4");
	pick("=eth0,em1", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,em1/4");
	pick("=eth", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	pick("^=eth0", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "lo/4,docker0/4,virbr0/4,ib0/4,ethernet9/4,em1/4,eth01/4");
	pick("=", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	/* "=^" is an exact name starting with '^', not an exclusion */
	pick("=^eth0", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
}

static void family_filter(void **state)
{
	(void)state;
	machine();
	add("v6only", "2001:db8::7");
	pick("", RW_SOCKET_FAMILY_IPV4);
	assert_string_equal(got(), "eth0/4,ib0/4,ethernet9/4,em1/4");
	pick("", RW_SOCKET_FAMILY_IPV6);
	assert_string_equal(got(), "eth0/6,ib0/6,v6only/6");
	pick("", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4,ib0/4,ethernet9/4,em1/4,v6only/6");
	pick("eth1", RW_SOCKET_FAMILY_ANY); /* link-local only */
	assert_int_equal(nout, 0);
	pick("=lo", RW_SOCKET_FAMILY_IPV6);
	assert_string_equal(got(), "lo/6");
}

static void garbage_specs(void **state)
{
	(void)state;
	machine();
	pick("###", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	pick(",,,", RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	pick("eth0,,", RW_SOCKET_FAMILY_ANY);
	assert_string_equal(got(), "eth0/4");
	pick("an-interface-name-far-longer-than-IFNAMSIZ-allows-xxxxxxxxxxxxxxxxxxxxxxxxxxx",
	     RW_SOCKET_FAMILY_ANY);
	assert_int_equal(nout, 0);
	pick("^^eth", RW_SOCKET_FAMILY_ANY); /* excludes names starting "^eth" */
	assert_int_equal(nout, 7);
}

static void bounded_output_and_bad_args(void **state)
{
	size_t n = 5;

	(void)state;
	machine();
	assert_int_equal(rw_tcp_if_select("", 0, in, nin, out, 2, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "eth0");
	assert_string_equal(out[1].name, "ib0");
	assert_int_equal(rw_tcp_if_select("", 0, NULL, 3, out, 2, &n, NULL), -EINVAL);
	assert_int_equal(rw_tcp_if_select("", 0, in, nin, NULL, 2, &n, NULL), -EINVAL);
	assert_int_equal(rw_tcp_if_select("", 0, in, nin, out, 2, NULL, NULL), -EINVAL);
	assert_int_equal(rw_tcp_if_select("", 0, NULL, 0, out, 2, &n, NULL), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(default_skips_lo_docker_virbr, setup, teardown),
		cmocka_unit_test_setup_teardown(default_falls_back_to_docker_then_lo, setup,
						teardown),
		cmocka_unit_test_setup_teardown(nothing_at_all, setup, teardown),
		cmocka_unit_test_setup_teardown(prefixes, setup, teardown),
		cmocka_unit_test_setup_teardown(exclusions, setup, teardown),
		cmocka_unit_test_setup_teardown(exact_names, setup, teardown),
		cmocka_unit_test_setup_teardown(family_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage_specs, setup, teardown),
		cmocka_unit_test_setup_teardown(bounded_output_and_bad_args, setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

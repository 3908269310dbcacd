/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket transport specifics the conformance suite does not see: device
 * properties from a recorded sysfs tree, creation errors, host-only
 * registration, the handle and hello checks, connect failures, lazy helper
 * threads, IPv6 loopback.
 */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_proto.h"

#define WAIT_MS 10000

static char root[64];
static struct rw_net *net;

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* mkdir -p root/rel */
static void mkdirs(const char *rel)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	assert_int_equal(system(cmd), 0);
}

/* root/rel -> target */
static void link_to(const char *target, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	(void)state;
	net = NULL;
	rw_test_log_reset();
	snprintf(root, sizeof(root), "/tmp/rw-sockprops-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	long live;

	(void)state;
	rw_net_destroy(net);
	net = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		return -1;
	live = rw_sock_live_total();
	if (live)
		fail_msg("%ld socket-transport objects alive after destroy", live);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static int make(const char *const *pairs)
{
	struct rw_config cfg;

	assert_int_equal(rw_test_config(&cfg, pairs), 0);
	return rw_sock_create(&cfg, &net);
}

static void make_lo(const char *timeout_ms)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME",
			     "=lo",
			     "RINGWAY_SOCKET_FAMILY",
			     "ipv4",
			     "RINGWAY_TIMEOUT_MS",
			     timeout_ms,
			     NULL};

	assert_int_equal(make(env), 0);
}

static void open_pair(struct rw_net_comm **s, struct rw_net_comm **r)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	*s = *r = NULL;
	while (!*s || !*r) {
		if (!*s)
			assert_int_equal(rw_net_connect(net, 0, handle, s), 0);
		if (!*r)
			assert_int_equal(rw_net_accept(l, r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

/* One message s -> r; returns the received size. */
static size_t exchange(struct rw_net_comm *s, struct rw_net_comm *r, char *sbuf, char *rbuf,
		       size_t size, struct rw_net_mr *smr, struct rw_net_mr *rmr,
		       struct rw_net_req **sreq_out)
{
	struct rw_net_req *sreq = NULL, *rreq = NULL;
	size_t got = 0, ssize = 0;
	int tag = 0, sdone = 0, rdone = 0;
	void *d = rbuf;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	assert_int_equal(rw_net_irecv(r, 1, &d, &size, &tag, &rmr, &rreq), 0);
	assert_non_null(rreq);
	/* taken once the receive's post has reached the sender */
	while (!sreq) {
		assert_int_equal(rw_net_isend(s, sbuf, size, 0, smr, &sreq), 0);
		assert_true(rw_now_ms() < deadline);
	}
	while (!sdone || !rdone) {
		if (!sdone)
			assert_int_equal(rw_net_test(sreq, &sdone, &ssize), 0);
		if (!rdone)
			assert_int_equal(rw_net_test(rreq, &rdone, &got), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(ssize, size);
	if (sreq_out)
		*sreq_out = sreq;
	return got;
}

static void props_from_recorded_sysfs(void **state)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SYSFS_ROOT", root, NULL};
	struct rw_net_props p;
	int ndev;

	(void)state;
	/* a virtio NIC: the device link resolves below the PCI function */
	mkdirs("sys/devices/pci0000:00/0000:00:1f.6/virtio3/net/lo");
	mkdirs("sys/class/net");
	link_to("../../devices/pci0000:00/0000:00:1f.6/virtio3/net/lo", "sys/class/net/lo");
	link_to("../../../virtio3", "sys/devices/pci0000:00/0000:00:1f.6/virtio3/net/lo/device");
	put("sys/class/net/lo/speed", "25000\n");
	put("sys/class/net/lo/ifindex", "7\n");
	put("sys/class/net/lo/address", "0a:0b:0c:0d:0e:0f\n");

	assert_int_equal(make(env), 0);
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_int_equal(ndev, 1);
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_string_equal(p.name, "lo");
	assert_non_null(p.pci_path);
	assert_string_equal(p.pci_path, "/sys/devices/pci0000:00/0000:00:1f.6");
	assert_int_equal(p.speed_mbps, 25000);
	assert_true(p.guid == ((7ull << 48) | 0x0a0b0c0d0e0full));
	assert_int_equal(p.ptr_support, RW_PTR_HOST);
	assert_int_equal(p.reg_is_global, 0);
	assert_int_equal(p.force_flush, 0);
	assert_int_equal(p.port, 0);
	assert_int_equal(p.max_comms, 65536);
	assert_int_equal(p.max_recvs, RW_NET_MAX_RECVS);
	assert_int_equal(p.vdev_ndevs, 1);
	assert_int_equal(p.vdev_devs[0], 0);
	assert_true(p.max_p2p_bytes == (1ull << 40));
	assert_true(p.max_coll_bytes == (1ull << 40));
	assert_int_equal(p.max_multi_request_size, 1);
	assert_int_equal(p.rail_id, RW_NET_ID_UNDEF);
	assert_int_equal(p.plane_id, RW_NET_ID_UNDEF);
}

static void props_when_sysfs_knows_nothing(void **state)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SYSFS_ROOT", root, NULL};
	const char *real[] = {"RINGWAY_SOCKET_IFNAME", "=lo", NULL};
	struct rw_net_props p;

	(void)state;
	assert_int_equal(make(env), 0);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_null(p.pci_path);
	assert_int_equal(p.speed_mbps, 10000);
	assert_true(p.guid == (1ull << 48)); /* position 0 stands in for ifindex 1 */
	rw_net_destroy(net);
	net = NULL;

	/* the real lo: not PCI, no speed */
	assert_int_equal(make(real), 0);
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_null(p.pci_path);
	assert_int_equal(p.speed_mbps, 10000);
}

static void create_errors(void **state)
{
	const char *none[] = {"RINGWAY_SOCKET_IFNAME", "=no-such-if0", NULL};
	const char *dflt[] = {NULL};
	struct rw_config cfg;
	int ndev = 0;

	(void)state;
	rw_config_defaults(&cfg);
	assert_int_equal(rw_sock_create(NULL, &net), -EINVAL);
	assert_int_equal(rw_sock_create(&cfg, NULL), -EINVAL);
	rw_test_log_expect("no interface matches RINGWAY_SOCKET_IFNAME='=no-such-if0'");
	assert_int_equal(make(none), -ENODEV);
	assert_null(net);
	assert_int_equal(rw_test_log_count("no interface matches"), 1);
	/* the default rules find something on any machine (lo at worst) */
	assert_int_equal(make(dflt), 0);
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_true(ndev >= 1);
}

static void registration_is_host_only(void **state)
{
	struct rw_net_comm *s, *r;
	struct rw_net_mr *mr = NULL;
	char buf[64];

	(void)state;
	make_lo("5000");
	open_pair(&s, &r);
	rw_test_log_expect("host memory only");
	rw_test_log_expect("regMrDmaBuf");
	assert_int_equal(rw_net_reg_mr(s, buf, sizeof(buf), RW_PTR_CUDA, &mr), -ENOTSUP);
	assert_int_equal(rw_net_reg_mr(r, buf, sizeof(buf), RW_PTR_DMABUF, &mr), -ENOTSUP);
	assert_int_equal(rw_net_reg_mr_dmabuf(s, buf, sizeof(buf), RW_PTR_CUDA, 0, 3, &mr),
			 -ENOTSUP);
	assert_null(mr);
	assert_int_equal(rw_test_log_count("host memory only"), 2);
	assert_int_equal(rw_net_reg_mr(s, buf, sizeof(buf), RW_PTR_HOST, &mr), 0);
	assert_int_equal(rw_net_dereg_mr(s, mr), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
}

static void handle_layout(void **state)
{
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_sock_handle h;
	struct sockaddr_storage sa;
	struct sockaddr_in *in = (struct sockaddr_in *)&sa;
	struct rw_net_listen *l;
	struct rw_net_comm *c = NULL;

	(void)state;
	make_lo("5000");
	memset(handle, 0xee, sizeof(handle));
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	memcpy(&h, handle, sizeof(h));
	assert_int_equal(h.magic, RW_SOCK_MAGIC);
	assert_int_equal(h.version, RW_SOCK_PROTO_VERSION);
	assert_int_equal(h.family, RW_SOCK_FAMILY_IPV4);
	assert_true(h.nonce != 0);
	for (size_t i = sizeof(h); i < sizeof(handle); i++)
		assert_int_equal(handle[i], 0);
	assert_int_equal(rw_sock_handle_addr(handle, &sa), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(ntohl(in->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_true(in->sin_port == h.port && h.port != 0);

	rw_test_log_expect("not a socket-transport handle");
	handle[4] = RW_SOCK_PROTO_VERSION + 1;
	assert_int_equal(rw_sock_handle_addr(handle, &sa), -EINVAL);
	assert_int_equal(rw_net_connect(net, 0, handle, &c), -EINVAL);
	handle[4] = RW_SOCK_PROTO_VERSION;
	handle[0] ^= 1;
	assert_int_equal(rw_net_connect(net, 0, handle, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(rw_net_close_listen(l), 0);
}

static int raw_client(const unsigned char *handle)
{
	struct sockaddr_storage sa;
	int fd;

	assert_int_equal(rw_sock_handle_addr(handle, &sa), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(struct sockaddr_in)), 0);
	return fd;
}

static int raw_hello(const unsigned char *handle, uint8_t version, uint64_t nonce_xor,
		     uint8_t stream, uint8_t nstreams, uint64_t conn_id)
{
	struct rw_sock_handle h;
	struct rw_sock_hello hello;
	int fd = raw_client(handle);

	memcpy(&h, handle, sizeof(h));
	hello = (struct rw_sock_hello){.magic = RW_SOCK_MAGIC,
				       .version = version,
				       .stream = stream,
				       .nstreams = nstreams,
				       .nonce = h.nonce ^ nonce_xor,
				       .conn_id = conn_id};
	assert_int_equal(write(fd, &hello, sizeof(hello)), (ssize_t)sizeof(hello));
	return fd;
}

static void hello_checks(void **state)
{
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *s = NULL, *r = NULL;
	int fds[5];
	uint64_t deadline;
	char version_msg[64];

	(void)state;
	make_lo("1000");
	rw_test_log_expect("dropping connection");
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	fds[0] = raw_hello(handle, RW_SOCK_PROTO_VERSION, 1, 0, 1, 11); /* nonce */
	fds[1] = raw_hello(handle, RW_SOCK_PROTO_VERSION + 1, 0, 0, 1, 12);
	fds[2] = raw_hello(handle, RW_SOCK_PROTO_VERSION, 0, 2, 2, 13); /* index */
	fds[3] = raw_hello(handle, RW_SOCK_PROTO_VERSION, 0, 0, 2, 14); /* 1 of 2 */
	fds[4] = raw_hello(handle, RW_SOCK_PROTO_VERSION, 0, 0, 2, 14); /* again */
	deadline = rw_now_ms() + WAIT_MS;
	while (!s || !r) {
		if (!s)
			assert_int_equal(rw_net_connect(net, 0, handle, &s), 0);
		if (!r)
			assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	while (rw_test_log_count("streams arrived") == 0 && rw_now_ms() < deadline) {
		struct rw_net_comm *none = NULL;

		assert_int_equal(rw_net_accept(l, &none), 0);
		assert_null(none);
		usleep(5000);
	}
	assert_int_equal(rw_test_log_count("wrong nonce"), 1);
	snprintf(version_msg, sizeof(version_msg), "protocol version %d, this side speaks %d",
		 RW_SOCK_PROTO_VERSION + 1, RW_SOCK_PROTO_VERSION);
	assert_int_equal(rw_test_log_count(version_msg), 1);
	assert_int_equal(rw_test_log_count("stream 2 of 2 is out of range"), 1);
	assert_int_equal(rw_test_log_count("repeats a stream"), 1);
	assert_int_equal(rw_test_log_count("1 of 2 streams arrived"), 1);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
}

static void connect_refused_and_timed_out(void **state)
{
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *c = NULL;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct rw_sock_handle h;
	char port[32];
	uint64_t t0;
	int rc, lfd, filler[4];

	(void)state;
	make_lo("500");
	/* nobody listens any more: refused at once, naming the address */
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	memcpy(&h, handle, sizeof(h));
	snprintf(port, sizeof(port), "127.0.0.1:%u", ntohs(h.port));
	rw_test_log_expect(port);
	t0 = rw_now_ms();
	do
		rc = rw_net_connect(net, 0, handle, &c);
	while (!rc && !c && rw_now_ms() - t0 < WAIT_MS);
	assert_int_equal(rc, -ECONNREFUSED);
	assert_null(c);
	assert_true(rw_test_log_count(port) >= 1);

	/* a listener whose accept queue is full drops our SYNs: time out */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	for (int i = 0; i < 4; i++) {
		filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		connect(filler[i], (struct sockaddr *)&sa, sizeof(sa));
	}
	usleep(20000);
	h.port = sa.sin_port;
	memcpy(handle, &h, sizeof(h));
	snprintf(port, sizeof(port), "127.0.0.1:%u", ntohs(h.port));
	rw_test_log_expect(port);
	t0 = rw_now_ms();
	do
		rc = rw_net_connect(net, 0, handle, &c);
	while (!rc && !c && rw_now_ms() - t0 < WAIT_MS);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(rw_now_ms() - t0 >= 500 && rw_now_ms() - t0 < 3000);
	assert_true(rw_test_log_count("not established within 500 ms") == 1);
	for (int i = 0; i < 4; i++)
		close(filler[i]);
	close(lfd);
}

static void helpers_start_lazily_and_requests_are_checked(void **state)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME",
			     "=lo",
			     "RINGWAY_SOCKET_FAMILY",
			     "ipv4",
			     "RINGWAY_SOCKET_NSTREAMS",
			     "3",
			     "RINGWAY_SOCKET_MIN_STRIPE",
			     "64K",
			     NULL};
	struct rw_net_comm *s, *r;
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *done_req;
	struct rw_sock_live live;
	size_t size = 1 << 20;
	char *sbuf = malloc(size), *rbuf = malloc(size);
	int d;

	(void)state;
	assert_int_equal(make(env), 0);
	open_pair(&s, &r);
	assert_int_equal(rw_net_reg_mr(s, sbuf, size, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rbuf, size, RW_PTR_HOST, &rmr), 0);
	rw_sock_live_objects(&live);
	assert_int_equal(live.nets, 1);
	assert_int_equal(live.comms, 2);
	assert_int_equal(live.listeners, 0);
	assert_int_equal(live.mrs, 2);
	assert_int_equal(live.fds, 6);
	assert_int_equal(live.threads, 0);

	rw_test_fill(sbuf, size, 3);
	assert_int_equal(exchange(s, r, sbuf, rbuf, 1000, smr, rmr, NULL), 1000);
	rw_sock_live_objects(&live);
	assert_int_equal(live.threads, 0); /* small messages need no helper */
	assert_int_equal(live.reqs, 0);
	assert_int_equal(exchange(s, r, sbuf, rbuf, size, smr, rmr, &done_req), size);
	assert_memory_equal(sbuf, rbuf, size);
	rw_sock_live_objects(&live);
	assert_int_equal(live.threads, 4); /* streams 1 and 2, each side */

	/* a request that completed is gone */
	rw_test_log_expect("completed");
	assert_int_equal(rw_net_test(done_req, &d, NULL), -EBADF);

	assert_int_equal(rw_net_dereg_mr(s, smr), 0);
	assert_int_equal(rw_net_dereg_mr(r, rmr), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	rw_sock_live_objects(&live);
	assert_int_equal(live.threads + live.fds + live.comms + live.mrs + live.reqs, 0);
	free(sbuf);
	free(rbuf);
}

/* One stream: the calling thread moves everything, no helper at all. */
static void one_stream_needs_no_thread(void **state)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME",
			     "=lo",
			     "RINGWAY_SOCKET_FAMILY",
			     "ipv4",
			     "RINGWAY_SOCKET_NSTREAMS",
			     "1",
			     "RINGWAY_SOCKET_MIN_STRIPE",
			     "4K",
			     NULL};
	struct rw_net_comm *s, *r;
	struct rw_net_mr *smr, *rmr;
	struct rw_sock_live live;
	size_t size = 8 << 20;
	char *sbuf = malloc(size), *rbuf = malloc(size);

	(void)state;
	assert_int_equal(make(env), 0);
	open_pair(&s, &r);
	assert_int_equal(rw_net_reg_mr(s, sbuf, size, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rbuf, size, RW_PTR_HOST, &rmr), 0);
	rw_test_fill(sbuf, size, 8);
	assert_int_equal(exchange(s, r, sbuf, rbuf, size, smr, rmr, NULL), size);
	assert_memory_equal(sbuf, rbuf, size);
	rw_sock_live_objects(&live);
	assert_int_equal(live.threads, 0);
	assert_int_equal(live.fds, 2);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	free(sbuf);
	free(rbuf);
}

static void ipv6_loopback(void **state)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SOCKET_FAMILY", "ipv6", NULL};
	unsigned char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *s = NULL, *r = NULL;
	struct rw_net_mr *smr, *rmr;
	char sbuf[300] = "over ::1", rbuf[300];
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	rw_test_log_expect("no interface matches"); /* a host without ::1 */
	if (make(env) == -ENODEV)
		skip();
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_int_equal(((struct rw_sock_handle *)handle)->family, RW_SOCK_FAMILY_IPV6);
	while (!s || !r) {
		if (!s)
			assert_int_equal(rw_net_connect(net, 0, handle, &s), 0);
		if (!r)
			assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(rw_net_reg_mr(s, sbuf, sizeof(sbuf), RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rbuf, sizeof(rbuf), RW_PTR_HOST, &rmr), 0);
	assert_int_equal(exchange(s, r, sbuf, rbuf, sizeof(sbuf), smr, rmr, NULL), sizeof(sbuf));
	assert_string_equal(rbuf, "over ::1");
	assert_int_equal(rw_net_close_send(s), 0); /* drops the registrations too */
	assert_int_equal(rw_net_close_recv(r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(props_from_recorded_sysfs, setup, teardown),
		cmocka_unit_test_setup_teardown(props_when_sysfs_knows_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(create_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(registration_is_host_only, setup, teardown),
		cmocka_unit_test_setup_teardown(handle_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(hello_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_refused_and_timed_out, setup, teardown),
		cmocka_unit_test_setup_teardown(helpers_start_lazily_and_requests_are_checked,
						setup, teardown),
		cmocka_unit_test_setup_teardown(one_stream_needs_no_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(ipv6_loopback, setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

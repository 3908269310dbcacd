/* SPDX-License-Identifier: Apache-2.0 */
/*
 * makeVDevice through the plugin's tables, as NCCL calls it (run under
 * tests/softverbs/sv_run, the ib transport on sv_ib0 and sv_roce0): the
 * virtual device numbered after the physical ones and counted by
 * devices(), its merged properties in v11's and v12's structs (vProps
 * listing the NICs), refusals (a device twice, out of range, more than the
 * version's vProps hold, a virtual device), and a message through it; then
 * the same for a communicator with a traffic class of its own (init's
 * config), which every ib connection under the virtual device takes.
 *   test_fuse_plugin PLUGIN.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_net.h"
#include "common/rw_common.h"

static int failures;
static int comms, tc96_comms; /* ib comms announced; of them with traffic class 96 */

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	(void)flags, (void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strstr(msg, "comm with peer")) {
		comms++;
		tc96_comms += strstr(msg, "traffic class 96") != NULL;
	}
	if (level > NCCL_LOG_WARN && !getenv("RINGWAY_TEST_VERBOSE"))
		return;
	fprintf(stderr, "[plugin %s] %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

/* One 3 MiB message over the virtual device, every byte checked. */
static void transfer(ncclNet_v11_t *n, void *ctx, int dev)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
	void *l = NULL, *s = NULL, *r = NULL, *smh = NULL, *rmh = NULL, *sreq = NULL, *rreq = NULL;
	size_t size = (3u << 20) + 11;
	char *sb = malloc(size), *rb = calloc(1, size);
	uint64_t deadline = rw_now_ms() + 20000;
	int sdone = 0, rdone = 0, got = -1, tag = 3;

	for (size_t i = 0; i < size; i++)
		sb[i] = (char)(i * 7 + (i >> 13));
	CHECK(n->listen(ctx, dev, handle, &l) == ncclSuccess && l, "listen on the virtual device");
	while (l && (!s || !r) && rw_now_ms() < deadline) {
		if (!s)
			CHECK(n->connect(ctx, dev, handle, &s, NULL) == ncclSuccess, "connect");
		if (!r)
			CHECK(n->accept(l, &r, NULL) == ncclSuccess, "accept");
	}
	CHECK(s && r, "no connection on the virtual device");
	if (l)
		n->closeListen(l);
	if (!s || !r)
		goto out;
	CHECK(n->regMr(s, sb, size, NCCL_PTR_HOST, &smh) == ncclSuccess, "regMr send");
	CHECK(n->regMr(r, rb, size, NCCL_PTR_HOST, &rmh) == ncclSuccess, "regMr recv");
	while (!rreq && rw_now_ms() < deadline) {
		void *d = rb;
		size_t cap = size;

		CHECK(n->irecv(r, 1, &d, &cap, &tag, &rmh, NULL, &rreq) == ncclSuccess, "irecv");
	}
	while (!sreq && rw_now_ms() < deadline)
		CHECK(n->isend(s, sb, size, tag, smh, NULL, &sreq) == ncclSuccess, "isend");
	while ((!sdone || !rdone) && sreq && rreq && rw_now_ms() < deadline && !failures) {
		if (!sdone)
			CHECK(n->test(sreq, &sdone, NULL) == ncclSuccess, "test send");
		if (!rdone)
			CHECK(n->test(rreq, &rdone, &got) == ncclSuccess, "test recv");
	}
	CHECK(sdone && rdone, "the message did not arrive");
	CHECK(got == (int)size, "received %d bytes, sent %zu", got, size);
	CHECK(rdone && memcmp(sb, rb, size) == 0, "the bytes differ");
	n->deregMr(s, smh);
	n->deregMr(r, rmh);
out:
	if (s)
		n->closeSend(s);
	if (r)
		n->closeRecv(r);
	free(sb);
	free(rb);
}

int main(int argc, char **argv)
{
	ncclNetCommConfig_v11_t config = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	ncclNetProperties_v11_t p0, p1, pv;
	ncclNetProperties_v12_t q;
	ncclNet_v11_t *n;
	ncclNet_v12_t *n12;
	ncclNet_v9_t *n9;
	void *dl, *ctx = NULL;
	int ndev = 0, d = -1;

	if (!getenv("SOFTVERBS_ROOT")) {
		fprintf(stderr, "test_fuse_plugin: run under sv_run (SOFTVERBS_ROOT unset)\n");
		return 77;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: test_fuse_plugin PLUGIN.so\n");
		return 2;
	}
	setenv("RINGWAY_TRANSPORT", "ib", 1);
	setenv("RINGWAY_IB_HCA", "sv_ib0,sv_roce0", 1);
	setenv("RINGWAY_SOCKET_IFNAME", "=lo", 1);
	setenv("RINGWAY_SOCKET_FAMILY", "ipv4", 1);
	setenv("RINGWAY_TIMEOUT_MS", "5000", 1);
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
		return 1;
	}
	n = dlsym(dl, "ncclNetPlugin_v11");
	n12 = dlsym(dl, "ncclNetPlugin_v12");
	n9 = dlsym(dl, "ncclNetPlugin_v9");
	CHECK(n && n12 && n9 && n->makeVDevice && n12->makeVDevice && n9->makeVDevice,
	      "a table without makeVDevice");
	if (failures)
		return 1;
	CHECK(n->init(&ctx, 1, &config, logger, NULL) == ncclSuccess, "init");
	CHECK(n->devices(&ndev) == ncclSuccess && ndev == 2, "%d devices, not 2", ndev);
	if (failures)
		return 1;

	/* refusals: nothing is made */
	fprintf(stderr, "# four refusals follow, each with a WARN naming the value\n");
	CHECK(n->makeVDevice(&d, &(ncclNetVDeviceProps_v11_t){2, {1, 1}}) != ncclSuccess,
	      "a device twice was fused");
	CHECK(n->makeVDevice(&d, &(ncclNetVDeviceProps_v11_t){2, {0, 9}}) != ncclSuccess,
	      "device 9 was fused");
	CHECK(n->makeVDevice(&d, &(ncclNetVDeviceProps_v11_t){5, {0, 1, 0, 1}}) != ncclSuccess,
	      "5 devices in v11's vProps of 4 were accepted");
	CHECK(n12->makeVDevice(&d, &(ncclNetVDeviceProps_v12_t){5, {0, 1, 0, 1, 0}}) != ncclSuccess,
	      "5 devices were fused");
	CHECK(n->devices(&ndev) == ncclSuccess && ndev == 2, "a refusal made a device");
	CHECK(d == -1, "a refusal wrote d");

	/* the good one, as NCCL_NET_FORCE_MERGE=sv_ib0,sv_roce0 asks */
	CHECK(n->makeVDevice(&d, &(ncclNetVDeviceProps_v11_t){2, {0, 1}}) == ncclSuccess,
	      "makeVDevice(0, 1)");
	CHECK(d == 2, "the virtual device is %d, not 2", d);
	CHECK(n->devices(&ndev) == ncclSuccess && ndev == 3, "devices() says %d after it", ndev);
	CHECK(n->getProperties(0, &p0) == ncclSuccess && n->getProperties(1, &p1) == ncclSuccess &&
		      n->getProperties(2, &pv) == ncclSuccess,
	      "getProperties");
	CHECK(strcmp(pv.name, "sv_ib0+sv_roce0") == 0, "name %s", pv.name);
	CHECK(pv.speed == p0.speed + p1.speed, "speed %d, not %d + %d", pv.speed, p0.speed,
	      p1.speed);
	CHECK(pv.port == p0.port && pv.guid == p0.guid, "port/guid not the first NIC's");
	CHECK(pv.latency >= p0.latency && pv.latency >= p1.latency, "latency %f", pv.latency);
	CHECK(pv.vProps.ndevs == 2 && pv.vProps.devs[0] == 0 && pv.vProps.devs[1] == 1,
	      "vProps {%d, %d %d}", pv.vProps.ndevs, pv.vProps.devs[0], pv.vProps.devs[1]);
	CHECK(p0.vProps.ndevs == 1 && p0.vProps.devs[0] == 0, "a NIC's vProps");
	CHECK(pv.maxRecvs == 1 && pv.maxP2pBytes > 0 && pv.netDeviceType == NCCL_NET_DEVICE_HOST,
	      "limits");
	CHECK(n12->getProperties(2, &q) == ncclSuccess && q.vProps.ndevs == 2 &&
		      q.vProps.devs[1] == 1 && q.speed == pv.speed,
	      "v12 properties");
	CHECK(n->makeVDevice(&d, &(ncclNetVDeviceProps_v11_t){2, {2, 0}}) != ncclSuccess,
	      "a virtual device was fused again");
	transfer(n, ctx, 2);
	CHECK(tc96_comms == 0, "%d comms with traffic class 96 before any asked", tc96_comms);
	{
		ncclNetCommConfig_v11_t c96 = {.trafficClass = 96};
		void *ctx96 = NULL;
		int before = comms;

		CHECK(n->init(&ctx96, 2, &c96, logger, NULL) == ncclSuccess, "init, class 96");
		transfer(n, ctx96, 2);
		/* every connection under the virtual device, both ends, over
		 * each of the two NICs */
		CHECK(tc96_comms == comms - before && tc96_comms >= 4,
		      "%d of %d comms with traffic class 96", tc96_comms, comms - before);
		CHECK(n->finalize(ctx96) == ncclSuccess, "finalize, class 96");
	}
	CHECK(n->finalize(ctx) == ncclSuccess, "finalize");
	if (!failures)
		printf("test_fuse_plugin: all checks passed\n");
	return failures ? 1 : 0;
}

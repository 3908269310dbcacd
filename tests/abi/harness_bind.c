/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The harness's view of one ncclNetPlugin_vN table: dlopen as NCCL does,
 * dlsym the data symbol, and one switch per call over the versions.  Each
 * case calls through that version's own table type, so the compiler checks
 * the arguments against every version's prototype.
 */
#include "harness.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

struct h_log h_log;
const char *h_plugin_path;
int h_version;

static union {
	const void *any;
	const ncclNet_v6_t *v6;
	const ncclNet_v7_t *v7;
	const ncclNet_v8_t *v8;
	const ncclNet_v9_t *v9;
	const ncclNet_v10_t *v10;
	const ncclNet_v11_t *v11;
	const ncclNet_v12_t *v12;
} t;

/* case ver: the call through version ver's table. */
#define H_CASE(ver, call)                                                                          \
	case ver:                                                                                  \
		return t.v##ver->call
/* The cases of v6..v10 and of v11..v12 for a call written alike in each. */
#define H_CASES_V6_V10(call)                                                                       \
	H_CASE(6, call);                                                                           \
	H_CASE(7, call);                                                                           \
	H_CASE(8, call);                                                                           \
	H_CASE(9, call);                                                                           \
	H_CASE(10, call)
#define H_CASES_V11_V12(call)                                                                      \
	H_CASE(11, call);                                                                          \
	H_CASE(12, call)
#define H_CASES_EVERY_VERSION(call)                                                                \
	H_CASES_V6_V10(call);                                                                      \
	H_CASES_V11_V12(call)

static uint64_t next_comm_id = 0xc0ffee0000000001ull;

/* --- logger and profiler given to init ------------------------------------ */

void h_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
	      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == NCCL_LOG_WARN) {
		h_log.warns++;
		snprintf(h_log.last_warn, sizeof(h_log.last_warn), "%s", msg);
		fprintf(stderr, "[pid %d] plugin WARN %s:%d %s\n", (int)getpid(), file, line, msg);
	} else if (level == NCCL_LOG_INFO) {
		h_log.infos++;
		if (strstr(msg, ": NET/ringway ABI v")) {
			h_log.startup_lines++;
			h_log.startup_flags = flags;
			snprintf(h_log.startup, sizeof(h_log.startup), "%s", msg);
		}
	}
}

ncclProfilerCallback_t h_prof_hook;
bool h_prof_none;

/* The callback given to init (v10+): forwards to h_prof_hook; without one,
 * being called is a failure (h_isend/h_irecv pass no profiler handles, and
 * ringway emits nothing without them). */
static ncclResult_t h_profiler(void **eHandle, int type, void *pHandle, int64_t pluginId,
			       void *extData)
{
	if (h_prof_hook)
		return h_prof_hook(eHandle, type, pHandle, pluginId, extData);
	H_CHECK(0, "profiler callback called (type %d)", type);
	return ncclSuccess;
}

/* --- loading ---------------------------------------------------------------- */

void *h_open(void)
{
	void *dl = dlopen(h_plugin_path, RTLD_NOW | RTLD_LOCAL);

	H_CHECK(dl, "dlopen(%s): %s", h_plugin_path, dlerror());
	return dl;
}

void h_bind(void *dl, int version)
{
	char sym[32];

	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
	t.any = dlsym(dl, sym);
	H_CHECK(t.any, "dlsym(%s): %s", sym, dlerror());
	h_version = version;
}

const void *h_table(void)
{
	return t.any;
}

/* --- lifecycle ---------------------------------------------------------------- */

int h_init(void **ctx)
{
	ncclNetCommConfig_v11_t c11 = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	ncclNetCommConfig_v12_t c12 = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};

	if (h_version <= 10 && ctx)
		*ctx = NULL;
	switch (h_version) {
		H_CASE(6, init(h_logger));
		H_CASE(7, init(h_logger));
		H_CASE(8, init(h_logger));
		H_CASE(9, init(h_logger));
		H_CASE(10, init(h_logger, h_prof_none ? NULL : h_profiler));
		H_CASE(11,
		       init(ctx, next_comm_id++, &c11, h_logger, h_prof_none ? NULL : h_profiler));
		H_CASE(12,
		       init(ctx, next_comm_id++, &c12, h_logger, h_prof_none ? NULL : h_profiler));
	}
	H_CHECK(0, "no version bound");
	return -1;
}

int h_finalize(void *ctx)
{
	switch (h_version) {
		H_CASES_V11_V12(finalize(ctx));
	}
	H_CHECK(0, "v%d has no finalize", h_version);
	return -1;
}

int h_devices(int *ndev)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(devices(ndev));
	}
	return -1;
}

/* --- properties: prefill with garbage, as NCCL's stack variable is ---------- */

#define H_GARBAGE 0xa5

#define H_COPY_COMMON(o, p)                                                                        \
	do {                                                                                       \
		(o)->name = (p).name;                                                              \
		(o)->pci_path = (p).pciPath;                                                       \
		(o)->guid = (p).guid;                                                              \
		(o)->ptr_support = (p).ptrSupport;                                                 \
		(o)->speed = (p).speed;                                                            \
		(o)->port = (p).port;                                                              \
		(o)->latency = (p).latency;                                                        \
		(o)->max_comms = (p).maxComms;                                                     \
		(o)->max_recvs = (p).maxRecvs;                                                     \
	} while (0)

#define H_COPY_V9(o, p, cap)                                                                       \
	do {                                                                                       \
		(o)->reg_is_global = (p).regIsGlobal;                                              \
		(o)->force_flush = (p).forceFlush;                                                 \
		(o)->net_device_type = (int)(p).netDeviceType;                                     \
		(o)->net_device_version = (p).netDeviceVersion;                                    \
		(o)->vndevs = (p).vProps.ndevs;                                                    \
		(o)->vdevs_cap = (cap);                                                            \
		memcpy((o)->vdevs, (p).vProps.devs, sizeof((p).vProps.devs));                      \
		(o)->max_p2p_bytes = (p).maxP2pBytes;                                              \
		(o)->max_coll_bytes = (p).maxCollBytes;                                            \
	} while (0)

int h_props(int dev, struct h_props *o)
{
	int rc = -1;

	memset(o, 0, sizeof(*o));
	o->version = h_version;
	switch (h_version) {
	case 6: {
		ncclNetProperties_v6_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v6->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		break;
	}
	case 7: {
		ncclNetProperties_v7_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v7->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		o->net_device_type = (int)p.netDeviceType;
		o->net_device_version = p.netDeviceVersion;
		break;
	}
	case 8: {
		ncclNetProperties_v8_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v8->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		o->reg_is_global = p.regIsGlobal;
		o->net_device_type = (int)p.netDeviceType;
		o->net_device_version = p.netDeviceVersion;
		break;
	}
	case 9: {
		ncclNetProperties_v9_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v9->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		H_COPY_V9(o, p, NCCL_NET_MAX_DEVS_PER_NIC_V9);
		break;
	}
	case 10: {
		ncclNetProperties_v10_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v10->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		H_COPY_V9(o, p, NCCL_NET_MAX_DEVS_PER_NIC_V10);
		break;
	}
	case 11: {
		ncclNetProperties_v11_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v11->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		H_COPY_V9(o, p, NCCL_NET_MAX_DEVS_PER_NIC_V11);
		o->max_multi_request_size = p.maxMultiRequestSize;
		break;
	}
	case 12: {
		ncclNetProperties_v12_t p;

		memset(&p, H_GARBAGE, sizeof(p));
		rc = t.v12->getProperties(dev, &p);
		H_COPY_COMMON(o, p);
		H_COPY_V9(o, p, NCCL_NET_MAX_DEVS_PER_NIC_V12);
		o->max_multi_request_size = p.maxMultiRequestSize;
		o->rail_id = p.railId;
		o->plane_id = p.planeId;
		break;
	}
	}
	return rc;
}

int h_props_null(int dev)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(getProperties(dev, NULL));
	}
	return -1;
}

/* --- connection setup ------------------------------------------------------------ */

int h_listen(void *ctx, int dev, void *handle, void **lc)
{
	switch (h_version) {
		H_CASES_V6_V10(listen(dev, handle, lc));
		H_CASES_V11_V12(listen(ctx, dev, handle, lc));
	}
	return -1;
}

int h_connect(void *ctx, int dev, void *handle, void **sc)
{
	ncclNetCommConfig_v10_t c10 = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
	ncclNetDeviceHandle_v7_t *devh = NULL;
	int rc = -1;

	switch (h_version) {
		H_CASE(6, connect(dev, handle, sc));
	case 7:
		rc = t.v7->connect(dev, handle, sc, &devh);
		break;
	case 8:
		rc = t.v8->connect(dev, handle, sc, &devh);
		break;
	case 9:
		rc = t.v9->connect(dev, handle, sc, &devh);
		break;
	case 10:
		rc = t.v10->connect(dev, &c10, handle, sc, &devh);
		break;
	case 11:
		rc = t.v11->connect(ctx, dev, handle, sc, &devh);
		break;
	case 12:
		rc = t.v12->connect(ctx, dev, handle, sc, &devh);
		break;
	}
	H_CHECK(devh == NULL, "connect wrote a device handle (%p)", (void *)devh);
	return rc;
}

int h_accept(void *lc, void **rc_out)
{
	ncclNetDeviceHandle_v7_t *devh = NULL;
	int rc = -1;

	switch (h_version) {
		H_CASE(6, accept(lc, rc_out));
	case 7:
		rc = t.v7->accept(lc, rc_out, &devh);
		break;
	case 8:
		rc = t.v8->accept(lc, rc_out, &devh);
		break;
	case 9:
		rc = t.v9->accept(lc, rc_out, &devh);
		break;
	case 10:
		rc = t.v10->accept(lc, rc_out, &devh);
		break;
	case 11:
		rc = t.v11->accept(lc, rc_out, &devh);
		break;
	case 12:
		rc = t.v12->accept(lc, rc_out, &devh);
		break;
	}
	H_CHECK(devh == NULL, "accept wrote a device handle (%p)", (void *)devh);
	return rc;
}

/* --- memory -------------------------------------------------------------------------- */

int h_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	H_CHECK(size <= INT_MAX, "harness: %zu bytes do not fit v6/v7 regMr", size);
	switch (h_version) {
		H_CASE(6, regMr(comm, data, (int)size, type, mh));
		H_CASE(7, regMr(comm, data, (int)size, type, mh));
		H_CASE(8, regMr(comm, data, size, type, mh));
		H_CASE(9, regMr(comm, data, size, type, mh));
		H_CASE(10, regMr(comm, data, size, type, mh));
		H_CASES_V11_V12(regMr(comm, data, size, type, mh));
	}
	return -1;
}

int h_dereg_mr(void *comm, void *mh)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(deregMr(comm, mh));
	}
	return -1;
}

/* --- data path ------------------------------------------------------------------------- */

int h_isend(void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	H_CHECK(size <= INT_MAX, "harness: %zu bytes do not fit an int size", size);
	switch (h_version) {
		H_CASE(6, isend(sc, data, (int)size, tag, mh, req));
		H_CASE(7, isend(sc, data, (int)size, tag, mh, req));
		H_CASE(8, isend(sc, data, (int)size, tag, mh, req));
		H_CASE(9, isend(sc, data, size, tag, mh, req));
		H_CASE(10, isend(sc, data, size, tag, mh, NULL, req));
		H_CASE(11, isend(sc, data, size, tag, mh, NULL, req));
		H_CASE(12, isend(sc, data, size, tag, mh, NULL, req));
	}
	return -1;
}

int h_irecv(void *rc, int n, void **data, const size_t *sizes, int *tags, void **mhs, void **req)
{
	size_t wide[64];
	int narrow[64];

	H_CHECK(n >= 0 && n <= 64, "harness: n=%d", n);
	for (int i = 0; i < n; i++) {
		wide[i] = sizes[i];
		narrow[i] = sizes[i] > INT_MAX ? INT_MAX : (int)sizes[i];
	}
	switch (h_version) {
		H_CASE(6, irecv(rc, n, data, narrow, tags, mhs, req));
		H_CASE(7, irecv(rc, n, data, narrow, tags, mhs, req));
		H_CASE(8, irecv(rc, n, data, narrow, tags, mhs, req));
		H_CASE(9, irecv(rc, n, data, wide, tags, mhs, req));
		H_CASE(10, irecv(rc, n, data, wide, tags, mhs, NULL, req));
		H_CASE(11, irecv(rc, n, data, wide, tags, mhs, NULL, req));
		H_CASE(12, irecv(rc, n, data, wide, tags, mhs, NULL, req));
	}
	return -1;
}

int h_iflush(void *rc, int n, void **data, int *sizes, void **mhs, void **req)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(iflush(rc, n, data, sizes, mhs, req));
	}
	return -1;
}

int h_test(void *req, int *done, int *sizes)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(test(req, done, sizes));
	}
	return -1;
}

/* --- teardown ---------------------------------------------------------------------------- */

int h_close_send(void *sc)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(closeSend(sc));
	}
	return -1;
}

int h_close_recv(void *rc)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(closeRecv(rc));
	}
	return -1;
}

int h_close_listen(void *lc)
{
	switch (h_version) {
		H_CASES_EVERY_VERSION(closeListen(lc));
	}
	return -1;
}

/* --- v10+: with profiler handles ----------------------------------------------------------- */

int h_isend_ph(void *sc, void *data, size_t size, int tag, void *mh, void *phandle, void **req)
{
	switch (h_version) {
		H_CASE(10, isend(sc, data, size, tag, mh, phandle, req));
		H_CASES_V11_V12(isend(sc, data, size, tag, mh, phandle, req));
	}
	H_CHECK(0, "v%d has no profiler handles", h_version);
	return -1;
}

int h_irecv_ph(void *rc, int n, void **data, const size_t *sizes, int *tags, void **mhs,
	       void **phandles, void **req)
{
	size_t wide[64];

	H_CHECK(n >= 0 && n <= 64, "harness: n=%d", n);
	memcpy(wide, sizes, (size_t)n * sizeof(*sizes));
	switch (h_version) {
		H_CASE(10, irecv(rc, n, data, wide, tags, mhs, phandles, req));
		H_CASES_V11_V12(irecv(rc, n, data, wide, tags, mhs, phandles, req));
	}
	H_CHECK(0, "v%d has no profiler handles", h_version);
	return -1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL_* and RINGWAY_* variables that matter, each RINGWAY_* value
 * through the registry's own parser, and the combinations that contradict
 * each other or keep ringway from being used.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/doctor/doctor.h"

const char *dr_env(const struct dr_state *st, const char *name)
{
	for (int i = 0; i < st->nvars; i++)
		if (strcmp(st->vars[i].name, name) == 0)
			return st->vars[i].value;
	return NULL;
}

static bool is_true(const char *v)
{
	return v && v[0] && strcmp(v, "0") != 0;
}

/* The NCCL variables worth showing when set, and what they do to ringway. */
static const struct {
	const char *name, *meaning;
} nccl_known[] = {
	{"NCCL_NET_PLUGIN", "which net plugin library NCCL dlopens"},
	{"NCCL_NET", "the only network NCCL may use; it fails instead of falling back"},
	{"NCCL_NET_PLUGIN_REF_COUNT", "1 keeps the plugin loaded: the NCCL 2.28-2.29 unload issue"},
	{"NCCL_COLLNET_ENABLE", "1 lets NCCL hand whole allreduces to ringway (CollNet)"},
	{"NCCL_IB_DISABLE", "NCCL's own IB transport only; ringway's ib is not affected"},
	{"NCCL_SOCKET_IFNAME",
	 "NCCL's bootstrap and own sockets; ringway reads RINGWAY_SOCKET_IFNAME"},
	{"NCCL_IB_HCA", "NCCL's own IB transport; ringway reads RINGWAY_IB_HCA"},
	{"NCCL_DEBUG", "NCCL's log level, which ringway follows under NCCL"},
	{"NCCL_DEBUG_SUBSYS", "INIT,NET shows ringway's load line"},
	{"NCCL_NET_GDR_LEVEL", "how near a NIC must be to a GPU for GPUDirect RDMA"},
	{"NCCL_DMABUF_ENABLE", "0 keeps NCCL from registering GPU memory as dma-buf"},
	{"NCCL_NET_MERGE_LEVEL", "NIC fusion (makeVDevice)"},
	{"NCCL_NET_FORCE_MERGE", "NIC fusion (makeVDevice)"},
	{"NCCL_HOSTID", "ranks with different host ids talk only through the net plugin"},
	{"NCCL_ALGO", "CollNetChain/CollNetDirect select CollNet"},
};

static void list_vars(const struct dr_state *st, struct dr_section *s)
{
	for (int i = 0; i < st->nvars; i++) {
		const struct dr_var *v = &st->vars[i];
		const char *meaning = NULL;

		if (strncmp(v->name, "NCCL_", 5) != 0)
			continue;
		for (size_t k = 0; k < RW_ARRAY_SIZE(nccl_known); k++)
			if (strcmp(nccl_known[k].name, v->name) == 0)
				meaning = nccl_known[k].meaning;
		if (meaning)
			dr_add(s, DR_INFO, v->name, "%s (%s)", v->value, meaning);
		else
			dr_add(s, DR_INFO, v->name, "%s", v->value);
	}
}

/* Every RINGWAY_* through the registry: unknown names and bad values. */
static void check_ringway_vars(const struct dr_state *st, struct dr_section *s)
{
	for (int i = 0; i < st->nvars; i++) {
		const struct dr_var *v = &st->vars[i];
		const struct rw_param_desc *d;
		struct rw_config scratch;
		char want[160];
		int rc;

		if (strncmp(v->name, "RINGWAY_", 8) != 0)
			continue;
		d = rw_param_find(v->name);
		if (!d) {
			dr_add(s, DR_WARN, v->name,
			       "not a ringway variable (misspelt? `ringway-netperf --params` lists "
			       "them): ignored");
			continue;
		}
		rw_config_defaults(&scratch);
		rc = rw_config_set(&scratch, v->name, v->value);
		if (rc) {
			rw_param_describe(d, want, sizeof(want));
			dr_add(s, DR_FAIL, v->name,
			       "'%s' rejected (expected %s): ringway uses the default '%s'",
			       d->secret ? "(hidden)" : v->value, want, d->def);
			continue;
		}
		dr_add(s, DR_OK, v->name, "%s", d->secret ? "(set)" : v->value);
	}
}

static void contradictions(const struct dr_state *st, struct dr_section *s)
{
	const char *net = dr_env(st, "NCCL_NET"), *plugin = dr_env(st, "NCCL_NET_PLUGIN");
	const char *rt = dr_env(st, "RINGWAY_TRANSPORT");
	int n = 0;

	if (net && strcasecmp(net, "ringway") == 0) {
		if (!plugin && !st->plugin_found) { /* no libnccl-net.so that is ringway */
			dr_add(s, DR_FAIL, "NCCL_NET",
			       "NCCL_NET=ringway without NCCL_NET_PLUGIN: NCCL loads only "
			       "libnccl-net.so and fails with \"Failed to initialize any NET "
			       "plugin\"; set NCCL_NET_PLUGIN=ringway");
			n++;
		} else if (!st->plugin_found) {
			dr_add(s, DR_FAIL, "NCCL_NET",
			       "NCCL_NET=ringway but NCCL_NET_PLUGIN=%s does not load ringway (see "
			       "Plugin): communicator init fails",
			       plugin);
			n++;
		}
	} else if (net && st->plugin_found) {
		dr_add(s, DR_WARN, "NCCL_NET",
		       "NCCL_NET=%s: NCCL uses only that network, never ringway (NCCL_NET=ringway "
		       "to use it)",
		       net);
		n++;
	} else if (!net && st->plugin_found) {
		dr_add(s, DR_INFO, "NCCL_NET",
		       "unset: should ringway fail to initialise, NCCL silently uses its own "
		       "IB/Socket; NCCL_NET=ringway makes that an error");
	}
	if (is_true(dr_env(st, "NCCL_IB_DISABLE")) && rt && strcasecmp(rt, "ib") == 0) {
		dr_add(s, DR_WARN, "NCCL_IB_DISABLE",
		       "NCCL_IB_DISABLE=%s with RINGWAY_TRANSPORT=ib: NCCL_IB_DISABLE turns off "
		       "only NCCL's own IB; ringway still uses RDMA. To keep RDMA off, "
		       "RINGWAY_TRANSPORT=socket",
		       dr_env(st, "NCCL_IB_DISABLE"));
		n++;
	}
	if (is_true(dr_env(st, "NCCL_COLLNET_ENABLE"))) {
		bool any = false;

		for (int v = 1; v <= DR_MAX_VERSION; v++)
			any |= st->collnet_v[v] && (!st->nccl_found || st->nccl_asks_coll[v]);
		if (!st->plugin_found || !any) {
			dr_add(s, DR_FAIL, "NCCL_COLLNET_ENABLE",
			       "NCCL_COLLNET_ENABLE=%s but %s: NCCL turns CollNet off",
			       dr_env(st, "NCCL_COLLNET_ENABLE"),
			       !st->plugin_found ? "ringway is not loaded, so there are no "
						   "ncclCollNetPlugin_vN symbols"
						 : "no ncclCollNetPlugin_vN of ringway is one this "
						   "NCCL asks for");
			n++;
		} else {
			dr_add(s, DR_INFO, "NCCL_COLLNET_ENABLE",
			       "CollNet on: NCCL uses it from 2 nodes up "
			       "(NCCL_COLLNET_NODE_THRESHOLD)");
		}
	}
	if (st->plugin_found && st->nccl_code >= 22800 && st->nccl_code < 23000 &&
	    !is_true(dr_env(st, "NCCL_NET_PLUGIN_REF_COUNT")) &&
	    !strstr(st->plugin_path, "libnccl-net.so")) {
		dr_add(s, DR_WARN, "NCCL_NET_PLUGIN_REF_COUNT",
		       "NCCL 2.28-2.29 unloads the plugin with the last communicator and then "
		       "forgets its name (fixed in 2.30.3): a program that creates communicators "
		       "one after another should set NCCL_NET_PLUGIN_REF_COUNT=1");
		n++;
	}
	if (rt && strcasecmp(rt, "shm") == 0) {
		dr_add(s, DR_WARN, "RINGWAY_TRANSPORT",
		       "shm reaches only ranks on this host: a job over several hosts fails to "
		       "connect");
		n++;
	}
	if (dr_env(st, "NCCL_SOCKET_IFNAME") && !dr_env(st, "RINGWAY_SOCKET_IFNAME")) {
		dr_add(s, DR_WARN, "NCCL_SOCKET_IFNAME",
		       "NCCL_SOCKET_IFNAME=%s is not read by ringway: set "
		       "RINGWAY_SOCKET_IFNAME=%s too if ringway's sockets should use it",
		       dr_env(st, "NCCL_SOCKET_IFNAME"), dr_env(st, "NCCL_SOCKET_IFNAME"));
		n++;
	}
	if (dr_env(st, "NCCL_IB_HCA") && !dr_env(st, "RINGWAY_IB_HCA")) {
		dr_add(s, DR_WARN, "NCCL_IB_HCA",
		       "NCCL_IB_HCA=%s is not read by ringway: set RINGWAY_IB_HCA=%s too",
		       dr_env(st, "NCCL_IB_HCA"), dr_env(st, "NCCL_IB_HCA"));
		n++;
	}
	if (!n)
		dr_add(s, DR_OK, "contradictions", "none found");
}

void dr_check_env(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "env", "Environment (NCCL_*, RINGWAY_*)");

	list_vars(st, s);
	check_ringway_vars(st, s);
	contradictions(st, s);
}

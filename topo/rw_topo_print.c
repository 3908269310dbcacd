/* SPDX-License-Identifier: Apache-2.0 */
/* The text report and the Graphviz picture of a topology and its decisions. */
#include "topo/rw_topo_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(enum rw_topo_nic_kind k)
{
	static const char *const names[] = {
		[RW_TOPO_NIC_IB] = "InfiniBand",
		[RW_TOPO_NIC_ROCE] = "RoCE",
		[RW_TOPO_NIC_ETH] = "Ethernet",
	};

	return (unsigned)k < RW_ARRAY_SIZE(names) ? names[k] : "?";
}

static const char *state_name(enum rw_topo_link_state s)
{
	static const char *const names[] = {
		[RW_TOPO_LINK_UNKNOWN] = "state ?",
		[RW_TOPO_LINK_UP] = "up",
		[RW_TOPO_LINK_DOWN] = "down",
	};

	return (unsigned)s < RW_ARRAY_SIZE(names) ? names[s] : "?";
}

static void speed_str(int mbps, char *buf, size_t len)
{
	if (mbps <= 0)
		snprintf(buf, len, "speed ?");
	else if (mbps % 1000 == 0)
		snprintf(buf, len, "%d Gb/s", mbps / 1000);
	else
		snprintf(buf, len, "%d Mb/s", mbps);
}

static void guid_str(uint64_t g, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

static void write_devices(const struct rw_topo *t, FILE *f)
{
	fprintf(f, "source: %s\n", t->source);
	fprintf(f, "machine: %s\n", t->machine[0] ? t->machine : "?");
	fprintf(f, "CPU: %s\n", t->cpu_model[0] ? t->cpu_model : "?");
	fprintf(f, "\nNUMA nodes: %d\n", t->nnuma);
	for (int i = 0; i < t->nnuma; i++)
		fprintf(f, "  NUMA %d: %d cores, %d PUs (%s)\n", t->numa[i].os_index,
			t->numa[i].ncores, t->numa[i].npus, t->numa[i].cpus);
	fprintf(f, "\nGPUs: %d\n", t->ngpus);
	for (int i = 0; i < t->ngpus; i++)
		fprintf(f, "  GPU %d  %s  %s  NUMA %d\n", i, t->gpus[i].busid, t->gpus[i].model,
			t->gpus[i].numa);
	fprintf(f, "\nNICs: %d\n", t->nnics);
	for (int i = 0; i < t->nnics; i++) {
		const struct rw_topo_nic *n = &t->nics[i];
		char speed[32], guid[32], rail[32] = "";

		speed_str(n->speed_mbps, speed, sizeof(speed));
		guid_str(n->guid, guid, sizeof(guid));
		if (n->rail_id != RW_TOPO_ID_UNDEF)
			snprintf(rail, sizeof(rail), "  rail %d plane %d", n->rail_id, n->plane_id);
		fprintf(f, "  NIC %d  %-8s %s  %s%s%s  port %d %s  %s  NUMA %d  guid %s%s\n", i,
			n->name, n->busid[0] ? n->busid : "(no PCI)", kind_name(n->kind),
			n->netdev[0] && strcmp(n->netdev, n->name) ? "  netdev " : "",
			n->netdev[0] && strcmp(n->netdev, n->name) ? n->netdev : "", n->port,
			state_name(n->state), speed, n->numa, guid, rail);
	}
}

/* nvidia-smi topo -m style: path type between every pair of devices. */
static void write_matrix(const struct rw_topo *t, FILE *f)
{
	int nd = t->ngpus + t->nnics;

	if (nd < 2)
		return;
	fprintf(f, "\npaths (NVL NVLink, PIX one PCIe switch, PXB several switches, "
		   "PHB host bridge,\n       NODE across host bridges in a NUMA node, "
		   "SYS across NUMA nodes):\n      ");
	for (int j = 0; j < nd; j++)
		fprintf(f, j < t->ngpus ? " GPU%-2d" : " NIC%-2d", j < t->ngpus ? j : j - t->ngpus);
	fputc('\n', f);
	for (int i = 0; i < nd; i++) {
		struct rw_topo_dev a = i < t->ngpus ? RW_TOPO_GPU(i) : RW_TOPO_NIC(i - t->ngpus);

		fprintf(f, i < t->ngpus ? "GPU%-2d " : "NIC%-2d ", i < t->ngpus ? i : i - t->ngpus);
		for (int j = 0; j < nd; j++) {
			struct rw_topo_dev b =
				j < t->ngpus ? RW_TOPO_GPU(j) : RW_TOPO_NIC(j - t->ngpus);
			struct rw_topo_path p;

			rw_topo_path(t, a, b, &p);
			fprintf(f, " %-5s", i == j ? "X" : rw_topo_path_name(p.type));
		}
		fputc('\n', f);
	}
}

static int write_decisions(const struct rw_topo *t, int nhosts, FILE *f)
{
	struct rw_topo_channel ch[RW_TOPO_MAX_CHANNELS];
	int *order = calloc((size_t)t->ngpus + 1, sizeof(int));
	int g = 0, nch = 0, rc;

	if (!order)
		return -ENOMEM;
	fprintf(f, "\nGPU -> NIC:\n");
	if (!t->ngpus)
		fprintf(f, "  no GPU: ranks on this host reduce in host memory\n");
	for (int i = 0; i < t->ngpus; i++) {
		struct rw_topo_nic_choice c;

		rw_topo_nic_for_gpu(t, i, &c);
		fprintf(f, "  GPU %s \u2192 %s: %s\n", t->gpus[i].busid,
			c.nic >= 0 ? t->nics[c.nic].name : "none", c.reason);
	}
	rc = rw_topo_ring_order(t, order, t->ngpus, &g);
	if (rc)
		goto out_free;
	fprintf(f, "\nring order:");
	if (!g)
		fprintf(f, " none (no GPU)");
	for (int i = 0; i < g; i++) {
		struct rw_topo_path p;

		rw_topo_path(t, RW_TOPO_GPU(order[i]), RW_TOPO_GPU(order[(i + 1) % g]), &p);
		fprintf(f, " GPU %d", order[i]);
		if (g > 1)
			fprintf(f, " -%s->", rw_topo_path_name(p.type));
	}
	if (g > 1)
		fprintf(f, " (GPU %d)", order[0]);
	fputc('\n', f);

	fprintf(f, "\nchannels:");
	rc = rw_topo_channels(t, ch, RW_TOPO_MAX_CHANNELS, &nch);
	if (rc == -ENODEV) {
		fprintf(f, " none: no NIC, this host cannot reach another one\n");
		if (nhosts >= 2)
			fprintf(f,
				"\nring through %d hosts like this one: none (no NIC); "
				"the ring stays inside each host\n",
				nhosts);
		rc = 0;
		goto out_free;
	}
	if (rc)
		goto out_free;
	fprintf(f, " %d\n", nch);
	for (int c = 0; c < nch; c++) {
		fprintf(f, "  channel %d: in %s", c, t->nics[ch[c].nic_in].name);
		if (ch[c].gpu_in >= 0)
			fprintf(f, " -> GPU %d ... GPU %d", ch[c].gpu_in, ch[c].gpu_out);
		fprintf(f, " -> out %s", t->nics[ch[c].nic_out].name);
		if (g > 1)
			fprintf(f, "  (replaces GPU %d -> GPU %d, %s)", ch[c].gpu_out, ch[c].gpu_in,
				rw_topo_path_name(ch[c].cut));
		fputc('\n', f);
	}
	if (nhosts >= 2) {
		const struct rw_topo **hosts = calloc((size_t)nhosts, sizeof(*hosts));
		int max = nhosts * RW_MAX(t->ngpus, 1), n = 0;
		struct rw_topo_hop *hops = calloc((size_t)max, sizeof(*hops));

		rc = -ENOMEM;
		if (hosts && hops) {
			for (int h = 0; h < nhosts; h++)
				hosts[h] = t;
			rc = 0;
		}
		fprintf(f, "\nring through %d hosts like this one (channel 0 of %d):\n", nhosts,
			nch);
		if (!rc)
			rc = rw_topo_multihost_ring(hosts, nhosts, 0, hops, max, &n);
		for (int i = 0; !rc && i < n; i++) {
			if (hops[i].nic_in >= 0)
				fprintf(f, "  host %d: [in %s]", hops[i].host,
					t->nics[hops[i].nic_in].name);
			if (hops[i].gpu >= 0)
				fprintf(f, " GPU %d", hops[i].gpu);
			else
				fprintf(f, " CPU");
			if (hops[i].nic_out >= 0)
				fprintf(f, " [out %s] -> host %d\n", t->nics[hops[i].nic_out].name,
					(hops[i].host + 1) % nhosts);
		}
		free(hosts);
		free(hops);
	}
out_free:
	free(order);
	return rc;
}

int rw_topo_write_report(const struct rw_topo *t, int nhosts, FILE *f)
{
	int rc;

	write_devices(t, f);
	write_matrix(t, f);
	rc = write_decisions(t, nhosts, f);
	if (t->nnotes)
		fprintf(f, "\nnotes:\n");
	for (int i = 0; i < t->nnotes; i++)
		fprintf(f, "  - %s\n", t->notes[i]);
	if (rc)
		return rc;
	return ferror(f) ? -EIO : 0;
}

/* --- Graphviz --------------------------------------------------------------------- */

/* The innermost PCIe switch above a PCI node (its upstream port), or -1. */
static int switch_of(const struct rw_topo *t, int node)
{
	int v = node >= 0 ? t->pci[node].parent : -1;

	if (v < 0 || t->pci[v].kind != RW_TOPO_PCI_BRIDGE)
		return -1;
	v = t->pci[v].parent;
	return v >= 0 && t->pci[v].kind == RW_TOPO_PCI_BRIDGE ? v : -1;
}

static int hostbridge(const struct rw_topo *t, int node)
{
	if (node < 0)
		return -1;
	while (t->pci[node].parent >= 0)
		node = t->pci[node].parent;
	return node;
}

static void dot_device(const struct rw_topo *t, int kind, int i, FILE *f, const char *pad)
{
	if (kind == RW_TOPO_DEV_GPU) {
		fprintf(f,
			"%sgpu%d [label=\"GPU %d\\n%s\\n%s\", shape=box, style=filled, "
			"fillcolor=\"#b7e07a\"];\n",
			pad, i, i, t->gpus[i].busid, t->gpus[i].model);
	} else {
		char speed[32];

		speed_str(t->nics[i].speed_mbps, speed, sizeof(speed));
		fprintf(f,
			"%snic%d [label=\"%s\\n%s\\n%s %s\", shape=ellipse, style=filled, "
			"fillcolor=\"%s\"];\n",
			pad, i, t->nics[i].name, t->nics[i].busid[0] ? t->nics[i].busid : "no PCI",
			kind_name(t->nics[i].kind), speed,
			t->nics[i].kind == RW_TOPO_NIC_ETH ? "#dddddd" : "#9cc7f0");
	}
}

/* Devices whose host bridge is hb (-1: not on PCI), grouped by switch. */
static void dot_hostbridge(const struct rw_topo *t, int hb, FILE *f)
{
	for (int sw = -1; sw < t->npci; sw++) {
		bool open = false;

		for (int k = 0; k < 2; k++) {
			int nd = k ? t->nnics : t->ngpus;

			for (int i = 0; i < nd; i++) {
				int node = k ? t->nic_pci[i] : t->gpu_pci[i];

				if (hostbridge(t, node) != hb || switch_of(t, node) != sw)
					continue;
				if (sw >= 0 && !open) {
					fprintf(f,
						"      subgraph cluster_sw%d {\n        "
						"label=\"PCIe "
						"switch %s\"; style=rounded;\n",
						sw, t->pci[sw].busid);
					open = true;
				}
				dot_device(t, k ? RW_TOPO_DEV_NIC : RW_TOPO_DEV_GPU, i, f,
					   sw >= 0 ? "        " : "      ");
			}
		}
		if (open)
			fprintf(f, "      }\n");
	}
}

static void dot_clusters(const struct rw_topo *t, FILE *f)
{
	/* NUMA nodes hold host bridges; unknown NUMA (-1) and non-PCI NICs last */
	for (int k = 0; k <= t->nnuma; k++) {
		int numa = k < t->nnuma ? t->numa[k].os_index : -1;
		bool open = false;

		for (int hb = 0; hb < t->npci; hb++) {
			bool used = false;

			if (t->pci[hb].kind != RW_TOPO_PCI_HOSTBRIDGE || t->pci[hb].numa != numa)
				continue;
			for (int i = 0; i < t->ngpus && !used; i++)
				used = hostbridge(t, t->gpu_pci[i]) == hb;
			for (int i = 0; i < t->nnics && !used; i++)
				used = hostbridge(t, t->nic_pci[i]) == hb;
			if (!used)
				continue;
			if (!open) {
				if (k < t->nnuma)
					fprintf(f,
						"  subgraph cluster_numa%d {\n    label=\"NUMA %d "
						"(%d cores)\"; style=filled; "
						"fillcolor=\"#f4f4f4\";\n",
						numa, numa, t->numa[k].ncores);
				else
					fprintf(f, "  subgraph cluster_numa_unknown {\n    "
						   "label=\"NUMA "
						   "?\";\n");
				open = true;
			}
			fprintf(f,
				"    subgraph cluster_hb%d {\n      label=\"host bridge %s\"; "
				"style=dashed;\n",
				hb, t->pci[hb].busid);
			dot_hostbridge(t, hb, f);
			fprintf(f, "    }\n");
		}
		if (open)
			fprintf(f, "  }\n");
	}
	for (int i = 0; i < t->nnics; i++)
		if (t->nic_pci[i] < 0)
			dot_device(t, RW_TOPO_DEV_NIC, i, f, "  ");
}

int rw_topo_write_dot(const struct rw_topo *t, FILE *f)
{
	struct rw_topo_channel ch[RW_TOPO_MAX_CHANNELS];
	int *order = calloc((size_t)t->ngpus + 1, sizeof(int));
	int g = 0, nch = 0;

	if (!order)
		return -ENOMEM;
	fprintf(f, "// ringway-topo: %s\n// render: dot -Tpng in.dot -o out.png (or -Tsvg)\n",
		t->source);
	fprintf(f,
		"digraph ringway {\n  graph [fontname=\"Helvetica\", compound=true, "
		"label=\"%s\", labelloc=t];\n  node [fontname=\"Helvetica\", fontsize=10];\n"
		"  edge [fontname=\"Helvetica\", fontsize=9];\n",
		t->machine[0] ? t->machine : "ringway topology");
	dot_clusters(t, f);
	/* NVLinks */
	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus; b++) {
			float bw = t->nvl_bw[a * t->ngpus + b];

			if (bw > 0)
				fprintf(f,
					"  gpu%d -> gpu%d [dir=none, color=\"#76b900\", "
					"penwidth=%.1f, label=\"NVL %.0f\"];\n",
					a, b, 1.0f + bw / 25.0f, bw);
		}
	for (int a = 0; a < t->ngpus; a++)
		if (t->nvs_bw[a] > 0)
			fprintf(f,
				"  %sgpu%d -> nvswitch [dir=none, color=\"#76b900\", label=\"NVL "
				"%.0f\"];\n",
				a == 0 || t->nvs_bw[a - 1] <= 0
					? "nvswitch [label=\"NVSwitch\", shape=hexagon];\n  "
					: "",
				a, t->nvs_bw[a]);
	/* GPU -> NIC */
	for (int i = 0; i < t->ngpus; i++) {
		struct rw_topo_nic_choice c;

		if (!rw_topo_nic_for_gpu(t, i, &c) && c.nic >= 0)
			fprintf(f,
				"  gpu%d -> nic%d [style=dashed, color=\"#3973ac\", "
				"label=\"%s\"];\n",
				i, c.nic, rw_topo_path_name(c.path.type));
	}
	/* the ring (channel 0), leaving and entering through its NICs */
	if (!rw_topo_ring_order(t, order, t->ngpus, &g) &&
	    !rw_topo_channels(t, ch, RW_TOPO_MAX_CHANNELS, &nch)) {
		for (int i = 0; i + 1 < g; i++)
			fprintf(f,
				"  gpu%d -> gpu%d [color=red, penwidth=2, constraint=false, "
				"label=\"ring %d\"];\n",
				order[(ch[0].first + i) % g], order[(ch[0].first + i + 1) % g], i);
		if (g)
			fprintf(f,
				"  nic%d -> gpu%d [color=red, penwidth=2, label=\"ring in\"];\n"
				"  gpu%d -> nic%d [color=red, penwidth=2, label=\"ring out\"];\n",
				ch[0].nic_in, ch[0].gpu_in, ch[0].gpu_out, ch[0].nic_out);
	} else if (g > 1) {
		for (int i = 0; i < g; i++)
			fprintf(f, "  gpu%d -> gpu%d [color=red, penwidth=2, constraint=false];\n",
				order[i], order[(i + 1) % g]);
	}
	fprintf(f, "}\n");
	free(order);
	return ferror(f) ? -EIO : 0;
}

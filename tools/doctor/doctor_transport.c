/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each transport usable or not, and exactly why: socket (interfaces), shm
 * (memfd, cross-memory attach, /dev/shm for NCCL's own use), ib (library,
 * devices, port state, GID table, GPUDirect by dma-buf or nvidia-peermem);
 * then the GPU <-> NIC pairing of topo/.
 */
#define _GNU_SOURCE /* memfd_create, process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_build.h"
#include "tools/doctor/doctor.h"
#include "topo/rw_sysfs.h"
#include "topo/rw_topo.h"
#include "transport/ib/ib.h"
#include "transport/rw_net.h"

static void describe_devices(struct rw_net *net, struct dr_section *s, const char *what, bool gdr)
{
	int ndev = 0;

	if (rw_net_devices(net, &ndev) || ndev < 1) {
		dr_add(s, DR_FAIL, what, "no device");
		return;
	}
	for (int d = 0; d < ndev; d++) {
		struct rw_net_props p = {0};
		const char *bdf;

		if (rw_net_get_properties(net, d, &p))
			continue;
		bdf = p.pci_path ? strrchr(p.pci_path, '/') : NULL;
		dr_add_value(s, DR_INFO, "device", p.speed_mbps, "Mbps", "%d: %s, %d Mbps%s%s%s", d,
			     p.name ? p.name : "?", p.speed_mbps, bdf ? ", PCI " : "",
			     bdf ? bdf + 1 : "",
			     !gdr			     ? ""
			     : p.ptr_support & RW_PTR_DMABUF ? ", GPUDirect RDMA by dma-buf"
			     : p.ptr_support & RW_PTR_CUDA
				     ? ", GPUDirect RDMA by nvidia-peermem"
				     : ", GPUDirect RDMA off (host memory only)");
	}
}

/* --- socket -------------------------------------------------------------- */

static void check_socket(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "socket", "Transport socket (TCP)");
	struct rw_net *net = NULL;
	int rc = rw_sock_create(&st->cfg, &net);

	if (rc) {
		dr_log_take(s, NULL);
		dr_add(s, st->cfg.transport == RW_TRANSPORT_SOCKET ? DR_FAIL : DR_WARN, "usable",
		       "no: %s%s%s", strerror(-rc),
		       st->cfg.socket_ifname[0] ? " with RINGWAY_SOCKET_IFNAME=" : "",
		       st->cfg.socket_ifname);
		return;
	}
	dr_log_take(s, NULL);
	st->socket_ok = true;
	dr_add(s, DR_OK, "usable", "yes, %lld stream(s) per connection (RINGWAY_SOCKET_NSTREAMS)",
	       (long long)st->cfg.socket_nstreams);
	describe_devices(net, s, "devices", false);
	rw_net_destroy(net);
}

/* --- shm ------------------------------------------------------------------- */

static const char *ptrace_scope_meaning(long v)
{
	switch (v) {
	case 0:
		return "any process of the same user";
	case 1:
		return "only a process's descendants: ranks are siblings, so no";
	case 2:
		return "only with CAP_SYS_PTRACE";
	default:
		return "nobody";
	}
}

/* Can a sibling rank read our memory?  A child reads its parent's, which
 * Yama's scope 1 forbids exactly as it forbids sibling ranks. */
static int cma_probe(char *why, size_t len)
{
	static volatile uint64_t word = 0x72696e67776179ull;
	pid_t parent = getpid(), pid;
	int status = 0;

	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		uint64_t got = 0;
		struct iovec l = {.iov_base = &got, .iov_len = sizeof(got)};
		struct iovec rm = {.iov_base = (void *)&word, .iov_len = sizeof(got)};
		ssize_t n = process_vm_readv(parent, &l, 1, &rm, 1, 0);

		_exit(n == (ssize_t)sizeof(got) && got == word ? 0 : errno ? errno : 255);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		snprintf(why, len, "the probe process did not finish");
		return -EIO;
	}
	if (WEXITSTATUS(status) == 0)
		return 0;
	snprintf(why, len, "process_vm_readv: %s", strerror(WEXITSTATUS(status)));
	return -EPERM;
}

static void check_shm(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "shm", "Transport shm (same host)");
	struct rw_net *net = NULL;
	struct statvfs vfs;
	char buf[64], why[256];
	long scope = -1;
	int fd, rc;

	fd = memfd_create("ringway-doctor", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, 4096) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		dr_add(s, DR_FAIL, "memfd", "a sealed memfd cannot be made: %s", strerror(errno));
	} else {
		dr_add(s, DR_OK, "memfd", "sealed memfd segments work (nothing goes to /dev/shm)");
	}
	if (fd >= 0)
		close(fd);
	if (rw_sysfs_read("", "proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) == 0)
		scope = strtol(buf, NULL, 10);
	if (!st->cfg.shm_cma) {
		dr_add(s, DR_INFO, "cma",
		       "off (RINGWAY_SHM_CMA=0): messages go through the slot ring");
	} else if (cma_probe(why, sizeof(why)) == 0) {
		dr_add(s, DR_OK, "cma",
		       "cross-memory attach permitted%s%s%s: host messages >= %zu bytes are copied "
		       "once",
		       scope >= 0 ? " (Yama ptrace_scope " : "", scope >= 0 ? buf : "",
		       scope >= 0 ? ")" : "", st->cfg.shm_cma_min);
	} else {
		dr_add(s, DR_WARN, "cma",
		       "cross-memory attach not permitted (%s%s%s%s): large messages go through "
		       "the slot ring, one more copy; `sysctl kernel.yama.ptrace_scope=0` or "
		       "running in one container namespace with CAP_SYS_PTRACE allows it",
		       why, scope >= 0 ? "; ptrace_scope " : "", scope >= 0 ? buf : "",
		       scope >= 0 ? "" : "");
		if (scope >= 0)
			dr_add(s, DR_INFO, "ptrace_scope", "%ld: %s", scope,
			       ptrace_scope_meaning(scope));
	}
	if (statvfs("/dev/shm", &vfs) == 0) {
		double total = (double)vfs.f_blocks * (double)vfs.f_frsize / 1048576.0;
		double avail = (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0;

		dr_add_value(s, total < 1024 ? DR_WARN : DR_INFO, "/dev/shm", avail, "MiB",
			     "%.0f MiB, %.0f MiB free%s", total, avail,
			     total < 1024
				     ? ": ringway does not use it, but NCCL's own shm transport "
				       "does (docker: --shm-size=1g or more)"
				     : " (used by NCCL itself, not by ringway)");
	} else {
		dr_add(s, DR_WARN, "/dev/shm",
		       "absent (%s): ringway does not need it, NCCL's own shm transport does",
		       strerror(errno));
	}
	rc = rw_shm_create(&st->cfg, &net);
	dr_log_take(s, NULL);
	if (rc) {
		dr_add(s, st->cfg.transport == RW_TRANSPORT_SHM ? DR_FAIL : DR_WARN, "usable",
		       "no: %s", strerror(-rc));
		return;
	}
	st->shm_ok = true;
	dr_add(s, DR_OK, "usable", "yes (peers on this host, same user)");
	rw_net_destroy(net);
}

/* --- ib -------------------------------------------------------------------- */

/* What sysfs says about every RDMA port, usable or not. */
static void ib_sysfs_ports(struct dr_state *st, struct dr_section *s)
{
	const char *root = st->cfg.sysfs_root;
	char **devs = NULL;

	if (rw_sysfs_list(root, "sys/class/infiniband", &devs)) {
		dr_add(s, DR_INFO, "sysfs", "no /sys/class/infiniband%s%s: no RDMA device here",
		       root[0] ? " under " : "", root);
		return;
	}
	for (int i = 0; devs[i]; i++) {
		char rel[512], **ports = NULL;

		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports", devs[i]);
		if (rw_sysfs_list(root, rel, &ports))
			continue;
		for (int p = 0; ports[p]; p++) {
			char state[64] = "?", ll[64] = "?", rate[64] = "?", gids[512] = "";
			size_t used = 0;
			int ngid = 0;

			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%s/state",
				 devs[i], ports[p]);
			rw_sysfs_read(root, rel, state, sizeof(state));
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%s/link_layer",
				 devs[i], ports[p]);
			rw_sysfs_read(root, rel, ll, sizeof(ll));
			snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/%s/rate", devs[i],
				 ports[p]);
			rw_sysfs_read(root, rel, rate, sizeof(rate));
			for (int g = 0; g < 16; g++) {
				char gid[64], type[32] = "";

				snprintf(rel, sizeof(rel),
					 "sys/class/infiniband/%s/ports/%s/gids/%d", devs[i],
					 ports[p], g);
				if (rw_sysfs_read(root, rel, gid, sizeof(gid)))
					break;
				if (strspn(gid, "0:") == strlen(gid))
					continue; /* empty entry */
				snprintf(rel, sizeof(rel),
					 "sys/class/infiniband/%s/ports/%s/gid_attrs/types/%d",
					 devs[i], ports[p], g);
				rw_sysfs_read(root, rel, type, sizeof(type));
				ngid++;
				if (used < sizeof(gids))
					used += (size_t)snprintf(
						gids + used, sizeof(gids) - used, "%s[%d] %s%s%s%s",
						used ? ", " : "", g, gid, type[0] ? " (" : "", type,
						type[0] ? ")" : "");
			}
			dr_add(s, DR_INFO, "port", "%s port %s: %s, %s, %s; %d GID(s)%s%s", devs[i],
			       ports[p], state, ll, rate, ngid, ngid ? ": " : "", gids);
		}
		rw_sysfs_list_free(ports);
	}
	rw_sysfs_list_free(devs);
}

static void check_ib(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "ib", "Transport ib (InfiniBand / RoCE verbs)");
	bool forced = st->cfg.transport == RW_TRANSPORT_IB;
	const char *ev = NULL;
	struct rw_net *net = NULL;
	char why[768] = "";
	int rc;

	ib_sysfs_ports(st, s);
	if (rw_topo_peermem_loaded(st->cfg.sysfs_root, &ev))
		dr_add(s, DR_INFO, "nvidia-peermem", "loaded (%s)", ev);
	else
		dr_add(s, DR_INFO, "nvidia-peermem", "not loaded");
	rc = rw_ib_create_why(&st->cfg, &net, why, sizeof(why));
	dr_log_take(s, "NET/IB");
	if (rc) {
		dr_log_take(s, NULL);
		dr_add(s, forced ? DR_FAIL : DR_INFO, "usable", "no: %s%s",
		       why[0] ? why : strerror(-rc),
		       forced ? " (RINGWAY_TRANSPORT=ib: ringway fails to initialise)"
			      : "; auto uses socket between hosts");
		return;
	}
	dr_log_take(s, NULL);
	st->ib_ok = true;
	dr_add(s, DR_OK, "usable", "yes, library %s, %lld QP(s) per connection",
	       st->cfg.ibverbs_lib, (long long)st->cfg.ib_qps_per_conn);
	describe_devices(net, s, "devices", true);
	rw_net_destroy(net);
}

void dr_check_transports(struct dr_state *st, struct dr_report *r)
{
	char t[32];

	check_socket(st, r);
	check_shm(st, r);
	check_ib(st, r);
	rw_param_choice_name("auto|shm|socket|ib", st->cfg.transport, t, sizeof(t));
	{
		struct dr_section *s = dr_section(r, "choice", "Transport choice");

		if (st->cfg.transport == RW_TRANSPORT_AUTO)
			dr_add(s, st->shm_ok || st->socket_ok || st->ib_ok ? DR_OK : DR_FAIL,
			       "RINGWAY_TRANSPORT",
			       "auto: shm for peers on this host%s, %s between "
			       "hosts",
			       st->shm_ok ? "" : " (unusable here)",
			       st->ib_ok       ? "ib"
			       : st->socket_ok ? "socket"
					       : "nothing usable");
		else
			dr_add(s,
			       (st->cfg.transport == RW_TRANSPORT_SHM && st->shm_ok) ||
					       (st->cfg.transport == RW_TRANSPORT_SOCKET &&
						st->socket_ok) ||
					       (st->cfg.transport == RW_TRANSPORT_IB && st->ib_ok)
				       ? DR_OK
				       : DR_FAIL,
			       "RINGWAY_TRANSPORT", "%s (forced)%s", t,
			       (st->cfg.transport == RW_TRANSPORT_SHM && st->shm_ok) ||
					       (st->cfg.transport == RW_TRANSPORT_SOCKET &&
						st->socket_ok) ||
					       (st->cfg.transport == RW_TRANSPORT_IB && st->ib_ok)
				       ? ""
				       : ", and not usable here (see above)");
	}
}

/* --- GPU <-> NIC ------------------------------------------------------------- */

static const char *nic_kind(enum rw_topo_nic_kind k)
{
	return k == RW_TOPO_NIC_IB ? "InfiniBand" : k == RW_TOPO_NIC_ROCE ? "RoCE" : "Ethernet";
}

void dr_check_topo(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "topo", "GPU <-> NIC (topo/)");
	struct rw_topo *t = NULL;
	int rc, ngpu, nnic;
	const char *note;

	rc = st->topo_xml ? rw_topo_create_from_xml(&st->cfg, st->topo_xml, &t)
			  : rw_topo_create(&st->cfg, &t);
	dr_log_take(s, "WARN "); /* its INFO lines come back as notes below */
	if (rc) {
		dr_add(s, DR_FAIL, "topology", "cannot be read: %s", strerror(-rc));
		return;
	}
	ngpu = rw_topo_gpu_count(t);
	nnic = rw_topo_nic_count(t);
	dr_add(s, DR_INFO, "source", "%s; %d GPU(s), %d NIC(s)", rw_topo_source(t), ngpu, nnic);
	for (int i = 0; i < nnic; i++) {
		const struct rw_topo_nic *n = rw_topo_nic_get(t, i);

		char speed[32] = "speed unknown";

		if (n->speed_mbps > 0)
			snprintf(speed, sizeof(speed), "%d Mbps", n->speed_mbps);
		dr_add(s, DR_INFO, "nic", "%d: %s (%s%s%s), %s, %s%s", i, n->name,
		       nic_kind(n->kind), n->netdev[0] && strcmp(n->netdev, n->name) ? ", " : "",
		       n->netdev[0] && strcmp(n->netdev, n->name) ? n->netdev : "",
		       n->state == RW_TOPO_LINK_UP     ? "up"
		       : n->state == RW_TOPO_LINK_DOWN ? "down"
						       : "state unknown",
		       speed, n->busid[0] ? "" : ", not on PCI");
	}
	if (ngpu == 0)
		dr_add(s, DR_INFO, "pairing", "no GPU: channels go over the host's NICs in turn");
	for (int g = 0; g < ngpu; g++) {
		const struct rw_topo_gpu *gpu = rw_topo_gpu_get(t, g);
		struct rw_topo_nic_choice c;

		if (rw_topo_nic_for_gpu(t, g, &c))
			continue;
		if (c.nic < 0) {
			dr_add(s, DR_WARN, "pairing", "GPU %d (%s) -> no NIC: %s", g, gpu->busid,
			       c.reason);
			continue;
		}
		dr_add(s, c.path.type >= RW_TOPO_PATH_SYS ? DR_WARN : DR_OK, "pairing",
		       "GPU %d (%s) -> %s: %s%s", g, gpu->busid, rw_topo_nic_get(t, c.nic)->name,
		       c.reason,
		       c.path.type >= RW_TOPO_PATH_SYS ? "; its nearest NIC is across NUMA nodes: "
							 "every transfer crosses the "
							 "CPU interconnect"
						       : "");
	}
	for (int i = 0; (note = rw_topo_note(t, i)) != NULL; i++)
		dr_add(s, DR_INFO, "note", "%s", note);
	rw_topo_destroy(t);
}

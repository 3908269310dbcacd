/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sv_run: run a command on the emulated RDMA fabric.
 *
 *   sv_run [--] command [args...]
 *
 * Before it starts the command, sv_run
 *   1. writes a fake sysfs tree under a new temporary directory (TMPDIR or
 *      /tmp) with three softverbs devices (below);
 *   2. makes /dev/infiniband/<uverbs> exist as character devices: in a
 *      private mount namespace (as root, or as any user inside a user
 *      namespace) a tmpfs that mirrors /dev plus the new nodes is mounted
 *      over /dev, so the machine is not touched; as root without namespaces
 *      it creates the nodes (symlinks to /dev/null) and removes them after;
 *   3. makes socket(AF_NETLINK, NETLINK_RDMA) fail (seccomp), so libibverbs
 *      reads the fake sysfs even on a kernel that has RDMA netlink;
 *   4. exports SYSFS_PATH, RDMAV_DRIVERS (this build's libsoftverbs),
 *      SOFTVERBS_FABRIC, SOFTVERBS_ROOT and RINGWAY_SYSFS_ROOT.
 * The command's exit status is sv_run's.  When the machine cannot provide
 * this (no root, no user namespaces), sv_run prints the reason and exits
 * with 77, which CTest reports as a skip (SKIP_RETURN_CODE).
 *
 * Devices (all one port):
 *   sv_roce0  Ethernet, ACTIVE, 100 Gb/s, GIDs: 0 fe80::..  IB/RoCE v1,
 *             1 fe80::.. RoCE v2, 2 ::ffff:10.11.0.1 IB/RoCE v1,
 *             3 ::ffff:10.11.0.1 RoCE v2
 *   sv_ib0    InfiniBand, ACTIVE, 200 Gb/s, LID 0x11, GID 0 fe80::..
 *   sv_down0  Ethernet, DOWN
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
#if defined(__x86_64__)
#define SV_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SV_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define SV_SKIP 77

struct sv_port_spec {
	const char *link_layer, *state, *rate, *lid;
	const char *gids[4];
	const char *types[4]; /* NULL: no gid_attrs (InfiniBand) */
};

struct sv_dev_spec {
	const char *name, *guid;
	struct sv_port_spec port;
};

static const struct sv_dev_spec devs[] = {
	{"sv_roce0",
	 "0002:c903:00ab:0001",
	 {"Ethernet",
	  "4: ACTIVE",
	  "100 Gb/sec (4X EDR)",
	  "0x0",
	  {"fe80:0000:0000:0000:0202:c9ff:feab:0001", "fe80:0000:0000:0000:0202:c9ff:feab:0001",
	   "0000:0000:0000:0000:0000:ffff:0a0b:0001", "0000:0000:0000:0000:0000:ffff:0a0b:0001"},
	  {"IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"}}},
	{"sv_ib0",
	 "0002:c903:00ab:0011",
	 {"InfiniBand",
	  "4: ACTIVE",
	  "200 Gb/sec (4X HDR)",
	  "0x11",
	  {"fe80:0000:0000:0000:0002:c903:00ab:0011"},
	  {NULL}}},
	{"sv_down0",
	 "0002:c903:00ab:0021",
	 {"Ethernet",
	  "1: DOWN",
	  "100 Gb/sec (4X EDR)",
	  "0x0",
	  {"fe80:0000:0000:0000:0202:c9ff:feab:0021"},
	  {"RoCE v2"}}},
};
#define NDEVS (sizeof(devs) / sizeof(devs[0]))

static char root[256];
static char made_nodes[NDEVS][128]; /* /dev nodes created without a namespace */
static int made_infiniband_dir;

static void why_set(char *why, size_t len, const char *what)
{
	snprintf(why, len, "%s: %s", what, strerror(errno));
}

static int put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", text);
	return fclose(f) ? -errno : 0;
}

static int mkdirs(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
}

static void uverbs_name(size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "svuv%dx%zu", (int)getpid(), i);
}

/* The fake sysfs tree (the schema libibverbs and softverbs read). */
static int write_tree(char *why, size_t wlen)
{
	char rel[256], uv[64];
	int rc = 0;

	rc |= mkdirs("sys/class/infiniband_verbs");
	rc |= mkdirs("fabric");
	rc |= put("sys/class/infiniband_verbs/abi_version", "6");
	for (size_t i = 0; i < NDEVS && !rc; i++) {
		const struct sv_dev_spec *d = &devs[i];
		const struct sv_port_spec *p = &d->port;
		char base[128];

		uverbs_name(i, uv, sizeof(uv));
		snprintf(rel, sizeof(rel), "sys/class/infiniband_verbs/%s", uv);
		rc |= mkdirs(rel);
		snprintf(rel, sizeof(rel), "sys/class/infiniband_verbs/%s/ibdev", uv);
		rc |= put(rel, d->name);
		snprintf(rel, sizeof(rel), "sys/class/infiniband_verbs/%s/dev", uv);
		rc |= put(rel, "1:3"); /* /dev/null */
		snprintf(rel, sizeof(rel), "sys/class/infiniband_verbs/%s/abi_version", uv);
		rc |= put(rel, "1");
		snprintf(base, sizeof(base), "sys/class/infiniband/%s", d->name);
		snprintf(rel, sizeof(rel), "%s/ports/1/gids", base);
		rc |= mkdirs(rel);
		snprintf(rel, sizeof(rel), "%s/ports/1/pkeys", base);
		rc |= mkdirs(rel);
#define PUT_AT(file, text) (snprintf(rel, sizeof(rel), "%s/%s", base, file), put(rel, text))
		rc |= PUT_AT("node_type", "1: CA");
		rc |= PUT_AT("node_guid", d->guid);
		rc |= PUT_AT("hca_type", "softverbs");
		rc |= PUT_AT("fw_ver", "1.0.0");
		rc |= PUT_AT("ports/1/state", p->state);
		rc |= PUT_AT("ports/1/phys_state",
			     strstr(p->state, "ACTIVE") ? "5: LinkUp" : "3: Disabled");
		rc |= PUT_AT("ports/1/link_layer", p->link_layer);
		rc |= PUT_AT("ports/1/lid", p->lid);
		rc |= PUT_AT("ports/1/rate", p->rate);
		rc |= PUT_AT("ports/1/pkeys/0", "0xffff");
		if (p->types[0]) {
			snprintf(rel, sizeof(rel), "%s/ports/1/gid_attrs/types", base);
			rc |= mkdirs(rel);
		}
		for (int g = 0; g < 4 && p->gids[g]; g++) {
			char f[64];

			snprintf(f, sizeof(f), "ports/1/gids/%d", g);
			rc |= PUT_AT(f, p->gids[g]);
			if (p->types[g]) {
				snprintf(f, sizeof(f), "ports/1/gid_attrs/types/%d", g);
				rc |= PUT_AT(f, p->types[g]);
			}
		}
#undef PUT_AT
	}
	if (rc)
		snprintf(why, wlen, "cannot write the fake sysfs tree under %s", root);
	return rc ? -EIO : 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* Enter a private mount namespace: directly as root, else inside a new
 * user namespace where this user is root. */
static int enter_namespace(char *why, size_t len)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0)
		goto private;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		why_set(why, len, "unshare(CLONE_NEWUSER | CLONE_NEWNS)");
		return -1;
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)uid);
	if (write_file("/proc/self/uid_map", map)) {
		why_set(why, len, "writing /proc/self/uid_map");
		return -1;
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)gid);
	write_file("/proc/self/gid_map", map);

      private:
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		why_set(why, len, "mount(/, MS_PRIVATE)");
		return -1;
	}
	return 0;
}

/* Bind src onto a new node dst of the same kind. */
static int bind_entry(const char *src, const char *dst, const struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		if (mkdir(dst, st->st_mode & 07777))
			return -errno;
	} else {
		int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		if (fd < 0)
			return -errno;
		close(fd);
	}
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
}

/* In the private namespace: a tmpfs mirroring /dev, plus our nodes, over /dev. */
static int private_dev(char *why, size_t len)
{
	char newdev[300], src[600], dst[600], uv[64];
	struct dirent *e;
	DIR *d;

	snprintf(newdev, sizeof(newdev), "%s/dev", root);
	if (mkdir(newdev, 0755) || mount("softverbs-dev", newdev, "tmpfs", 0, "mode=755")) {
		why_set(why, len, "mounting a tmpfs for /dev");
		return -1;
	}
	d = opendir("/dev");
	if (!d) {
		why_set(why, len, "opendir(/dev)");
		return -1;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(src, sizeof(src), "/dev/%s", e->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", newdev, e->d_name);
		if (lstat(src, &st))
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[512];
			ssize_t n = readlink(src, target, sizeof(target) - 1);

			if (n > 0) {
				target[n] = '\0';
				if (symlink(target, dst))
					continue;
			}
			continue;
		}
		if (bind_entry(src, dst, &st) && !strcmp(e->d_name, "null")) {
			why_set(why, len, "bind-mounting /dev/null");
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	snprintf(dst, sizeof(dst), "%s/infiniband", newdev);
	mkdir(dst, 0755);
	for (size_t i = 0; i < NDEVS; i++) {
		struct stat st;

		uverbs_name(i, uv, sizeof(uv));
		snprintf(dst, sizeof(dst), "%s/infiniband/%s", newdev, uv);
		if (stat("/dev/null", &st) || bind_entry("/dev/null", dst, &st)) {
			why_set(why, len, "bind-mounting /dev/null as a uverbs node");
			return -1;
		}
	}
	if (mount(newdev, "/dev", NULL, MS_BIND | MS_REC, NULL)) {
		why_set(why, len, "mounting the new /dev");
		return -1;
	}
	return 0;
}

/* As root without namespaces: create the nodes in the real /dev. */
static int direct_dev(char *why, size_t len)
{
	char uv[64];

	if (mkdir("/dev/infiniband", 0755) == 0)
		made_infiniband_dir = 1;
	else if (errno != EEXIST) {
		why_set(why, len, "mkdir /dev/infiniband");
		return -1;
	}
	for (size_t i = 0; i < NDEVS; i++) {
		uverbs_name(i, uv, sizeof(uv));
		snprintf(made_nodes[i], sizeof(made_nodes[i]), "/dev/infiniband/%s", uv);
		if (symlink("/dev/null", made_nodes[i])) {
			why_set(why, len, "creating a node in /dev/infiniband");
			made_nodes[i][0] = '\0';
			return -1;
		}
	}
	return 0;
}

/* Make socket(AF_NETLINK, *, NETLINK_RDMA) fail with EPROTONOSUPPORT. */
static void block_rdma_netlink(void)
{
#ifdef SV_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SV_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_RDMA, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPROTONOSUPPORT & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		fprintf(stderr,
			"sv_run: cannot hide RDMA netlink (%s); a kernel with "
			"RDMA devices would hide the emulated ones\n",
			strerror(errno));
#endif
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	remove(path);
	return 0;
}

static void cleanup(void)
{
	char dev[300];

	for (size_t i = 0; i < NDEVS; i++)
		if (made_nodes[i][0])
			unlink(made_nodes[i]);
	if (made_infiniband_dir)
		rmdir("/dev/infiniband");
	snprintf(dev, sizeof(dev), "%s/dev", root);
	umount2(dev, MNT_DETACH);
	if (root[0])
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static int prepare(char *why, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	char buf[512];

	snprintf(root, sizeof(root), "%s/rw-softverbs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		why_set(why, len, "mkdtemp");
		root[0] = '\0';
		return -1;
	}
	if (write_tree(why, len))
		return -1;
	if (enter_namespace(why, len) || private_dev(why, len)) {
		char ns_why[256];

		snprintf(ns_why, sizeof(ns_why), "%s", why);
		if (geteuid() != 0) {
			snprintf(why, len,
				 "no private /dev for the emulated devices (%s) "
				 "and not root",
				 ns_why);
			return -1;
		}
		if (direct_dev(why, len))
			return -1;
	}
	block_rdma_netlink();
	snprintf(buf, sizeof(buf), "%s/sys", root);
	setenv("SYSFS_PATH", buf, 1);
	setenv("RDMAV_DRIVERS", SV_PROVIDER_DIR "/libsoftverbs", 1);
	snprintf(buf, sizeof(buf), "%s/fabric", root);
	setenv("SOFTVERBS_FABRIC", buf, 1);
	setenv("SOFTVERBS_ROOT", root, 1);
	setenv("RINGWAY_SYSFS_ROOT", root, 1);
	return 0;
}

int main(int argc, char **argv)
{
	char why[512] = "";
	int status = 0;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--"))
		argv++, argc--;
	if (argc < 2) {
		fprintf(stderr, "usage: sv_run [--] command [args...]\n");
		return 2;
	}
	if (prepare(why, sizeof(why))) {
		printf("sv_run: SKIP: the emulated RDMA fabric is not available here: %s\n", why);
		cleanup();
		return SV_SKIP;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("sv_run: fork");
		cleanup();
		return 1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "sv_run: exec %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	cleanup();
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "sv_run: %s killed by signal %d\n", argv[1], WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

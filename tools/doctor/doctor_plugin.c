/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which libnccl-net-ringway.so NCCL would load, by NCCL's own name rules
 * (NCCL_NET_PLUGIN, then the dynamic loader), and what it exports; the NCCL
 * on this machine (ncclGetVersion of the libnccl.so.2 the loader finds, or
 * --nccl PATH), the ncclNetPlugin_vN names it asks for (strings in the
 * binary) and so the ABI version it will bind.
 */
#define _GNU_SOURCE /* dlinfo, RTLD_DI_LINKMAP */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/doctor/doctor.h"

#define PLUGIN_NAME "ringway"
#define PLUGIN_FILE "libnccl-net-" PLUGIN_NAME ".so"
#define MAX_ENTRIES 14 /* NCCL takes at most this many comma-separated names */

/* --- the plugin ---------------------------------------------------------- */

struct candidate {
	char name[512]; /* what NCCL passes to dlopen */
};

/* NCCL's rules (plugin_open.cc): a path, "lib*.so" as is, else NAME then
 * libnccl-net-NAME.so. */
static int candidates_of(const char *entry, struct candidate *c, int max)
{
	size_t len = strlen(entry);
	int n = 0;

	if (strchr(entry, '/') ||
	    (strncmp(entry, "lib", 3) == 0 && len > 6 && strcmp(entry + len - 3, ".so") == 0)) {
		snprintf(c[n++].name, sizeof(c[0].name), "%s", entry);
		return n;
	}
	snprintf(c[n++].name, sizeof(c[0].name), "%s", entry);
	if (n < max)
		snprintf(c[n++].name, sizeof(c[0].name), "libnccl-net-%s.so", entry);
	return n;
}

static void loaded_path(void *h, const char *fallback, char *buf, size_t len)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		snprintf(buf, len, "%s", lm->l_name);
	else
		snprintf(buf, len, "%s", fallback);
}

/* The ncclNetPlugin_vN / ncclCollNetPlugin_vN tables of a loaded library;
 * the name field (first member) of the highest net table. */
static const char *read_exports(void *h, bool *net, bool *coll)
{
	const char *name = NULL;

	for (int v = 1; v <= DR_MAX_VERSION; v++) {
		char sym[48];
		const char *const *tab;

		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		tab = dlsym(h, sym);
		net[v] = tab != NULL;
		if (tab && *tab)
			name = *tab;
		snprintf(sym, sizeof(sym), "ncclCollNetPlugin_v%d", v);
		coll[v] = dlsym(h, sym) != NULL;
	}
	return name;
}

/* Where the loader or the usual places have ringway, for the advice. */
static void where_is_ringway(const struct dr_state *st, char *buf, size_t len)
{
	static const char *const places[] = {
#ifdef RW_DOCTOR_INSTALL_PLUGIN
		RW_DOCTOR_INSTALL_PLUGIN,
#endif
#ifdef RW_DOCTOR_BUILD_PLUGIN
		RW_DOCTOR_BUILD_PLUGIN,
#endif
	};
	void *h = dlopen(PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);

	buf[0] = '\0';
	if (h) {
		char path[4096];

		loaded_path(h, PLUGIN_FILE, path, sizeof(path));
		snprintf(buf, len, "the loader finds %s at %s", PLUGIN_FILE, path);
		dlclose(h);
		return;
	}
	for (size_t i = 0; i < RW_ARRAY_SIZE(places); i++)
		if (access(places[i], R_OK) == 0) {
			snprintf(buf, len,
				 "%s exists but is not on the loader's path: add its folder to "
				 "LD_LIBRARY_PATH, or set NCCL_NET_PLUGIN to the full path",
				 places[i]);
			return;
		}
	snprintf(buf, len, "the loader finds no %s (LD_LIBRARY_PATH=%s)", PLUGIN_FILE,
		 dr_env(st, "LD_LIBRARY_PATH") ? dr_env(st, "LD_LIBRARY_PATH") : "(unset)");
}

static bool is_static_prefix(const char *v)
{
	size_t n = strlen(v);

	return n > 0 && n <= strlen("STATIC_PLUGIN") && strncasecmp(v, "STATIC_PLUGIN", n) == 0;
}

/* Try one dlopen name as NCCL would.  true when it loaded; *is_ringway when
 * its net table is named ringway. */
static bool try_candidate(struct dr_state *st, struct dr_section *s, const char *cand,
			  bool *is_ringway)
{
	bool net[DR_MAX_VERSION + 1], coll[DR_MAX_VERSION + 1];
	char path[4096], vs[128], cs[128];
	const char *name;
	void *h;

	*is_ringway = false;
	if (strchr(cand, '/') && access(cand, F_OK) != 0) {
		dr_add(s, DR_INFO, "tried", "%s: %s", cand, strerror(errno));
		return false;
	}
	dlerror();
	h = dlopen(cand, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		/* dlerror() starts with the name it was given */
		dr_add(s, DR_INFO, "tried", "%s", e ? e : "dlopen failed");
		return false;
	}
	loaded_path(h, cand, path, sizeof(path));
	name = read_exports(h, net, coll);
	dr_versions_str(net, vs, sizeof(vs));
	dr_versions_str(coll, cs, sizeof(cs));
	if (!name) {
		dr_add(s, DR_WARN, "tried",
		       "%s loads (%s) but exports no ncclNetPlugin_vN: NCCL says \"External "
		       "network plugin %s is unsupported\" and goes on without it",
		       cand, path, path);
		dlclose(h);
		return true;
	}
	if (strcasecmp(name, PLUGIN_NAME) != 0) {
		dr_add(s, DR_WARN, "other plugin",
		       "%s is the plugin \"%s\" (%s), not ringway; NCCL takes the first external "
		       "plugin that initialises",
		       cand, name, path);
		dlclose(h);
		return true;
	}
	*is_ringway = true;
	st->plugin_found = true;
	snprintf(st->plugin_path, sizeof(st->plugin_path), "%s", path);
	memcpy(st->net_v, net, sizeof(net));
	memcpy(st->collnet_v, coll, sizeof(coll));
	dr_add(s, DR_OK, "found", "%s (dlopen(\"%s\", RTLD_NOW | RTLD_LOCAL) as NCCL does)", path,
	       cand);
	dr_add(s, DR_INFO, "exports", "ncclNetPlugin_%s; ncclCollNetPlugin_%s (name \"%s\")", vs,
	       cs, name);
	dlclose(h);
	return true;
}

void dr_check_plugin(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "plugin", "Plugin (" PLUGIN_FILE ")");
	const char *v = dr_env(st, "NCCL_NET_PLUGIN");
	char list[RW_PARAM_STR_MAX], where[4600];
	bool first_other = false;
	int nentries = 0;

	if (!v) {
		bool ringway = false;

		dr_add(s, DR_INFO, "NCCL_NET_PLUGIN",
		       "unset: NCCL dlopens libnccl-net.so, nothing else");
		if (try_candidate(st, s, "libnccl-net.so", &ringway) && ringway) {
			dr_add(s, DR_OK, "name rule", "libnccl-net.so is ringway");
			return;
		}
		where_is_ringway(st, where, sizeof(where));
		dr_add(s, DR_FAIL, "not loaded",
		       "NCCL will not load ringway: set NCCL_NET_PLUGIN=ringway (%s)", where);
		return;
	}
	if (strcasecmp(v, "none") == 0) {
		dr_add(s, DR_FAIL, "not loaded",
		       "NCCL_NET_PLUGIN=none: NCCL loads no net plugin; set "
		       "NCCL_NET_PLUGIN=ringway");
		return;
	}
	snprintf(list, sizeof(list), "%s", v);
	for (char *save = NULL, *e = strtok_r(list, ",", &save); e && nentries < MAX_ENTRIES;
	     e = strtok_r(NULL, ",", &save), nentries++) {
		struct candidate c[2];
		int n;

		if (is_static_prefix(e)) {
			dr_add(s, DR_WARN, "name rule",
			       "NCCL_NET_PLUGIN entry \"%s\" is a prefix of STATIC_PLUGIN: NCCL "
			       "dlopens the program itself, never libnccl-net-%s.so",
			       e, e);
			continue;
		}
		n = candidates_of(e, c, 2);
		if (n == 2)
			dr_add(s, DR_INFO, "name rule", "\"%s\": NCCL tries %s, then %s", e,
			       c[0].name, c[1].name);
		else
			dr_add(s, DR_INFO, "name rule", "\"%s\": NCCL tries exactly %s", e,
			       c[0].name);
		for (int i = 0; i < n; i++) {
			bool ringway;

			if (!try_candidate(st, s, c[i].name, &ringway))
				continue;
			if (!ringway && !st->plugin_found)
				first_other = true;
			break; /* NCCL stops at the first name that loads */
		}
		if (st->plugin_found)
			break;
	}
	if (st->plugin_found && first_other)
		dr_add(s, DR_WARN, "order",
		       "another plugin comes before ringway in NCCL_NET_PLUGIN=%s: NCCL uses the "
		       "first one that works (set NCCL_NET=ringway to insist)",
		       v);
	if (!st->plugin_found) {
		where_is_ringway(st, where, sizeof(where));
		if (strchr(v, '/') && access(v, F_OK) != 0)
			dr_add(s, DR_FAIL, "not found",
			       "NCCL_NET_PLUGIN=%s names a file that does not exist (%s)", v,
			       where);
		else
			dr_add(s, DR_FAIL, "not found",
			       "NCCL_NET_PLUGIN=%s: NCCL would print \"NET/Plugin: Could not "
			       "find\" and go on without ringway (%s)",
			       v, where);
	}
}

/* --- NCCL ------------------------------------------------------------------ */

int dr_nccl_abi_for(int code, int *lowest)
{
	static const struct {
		int minor_from, minor_to, highest, lowest;
	} table[] = {
		/* nccl-versions.md: the net versions each release tries */
		{13, 18, 6, 4},	 {19, 19, 7, 5},  {20, 23, 8, 5},  {24, 25, 9, 5},
		{26, 27, 10, 6}, {28, 29, 11, 6}, {30, 32, 12, 6},
	};
	int major = code / 10000, minor = code / 100 % 100;

	*lowest = 0;
	if (code < 20000 || major != 2)
		return 0;
	for (size_t i = 0; i < RW_ARRAY_SIZE(table); i++)
		if (minor >= table[i].minor_from && minor <= table[i].minor_to) {
			*lowest = table[i].lowest;
			return table[i].highest;
		}
	return minor > 32 ? -1 : 0; /* newer than this table, or older than 2.13 */
}

void dr_nccl_version_str(int code, char *buf, size_t len)
{
	if (code >= 20900 || code / 1000 > 2)
		snprintf(buf, len, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
	else
		snprintf(buf, len, "%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}

struct nccl_probe {
	int ok;
	int code;
	char path[4096];
	char err[512];
};

/* dlopen a libnccl in a child (a broken or huge library cannot take the
 * doctor down) and ask it ncclGetVersion. */
static void probe_nccl(const char *name, struct nccl_probe *out)
{
	int fds[2];
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (pipe(fds)) {
		snprintf(out->err, sizeof(out->err), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(out->err, sizeof(out->err), "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		struct nccl_probe res = {0};
		void *h;

		close(fds[0]);
		h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
		if (!h) {
			const char *e = dlerror();

			snprintf(res.err, sizeof(res.err), "%s", e ? e : "dlopen failed");
		} else {
			int (*get)(int *) = (int (*)(int *))dlsym(h, "ncclGetVersion");

			loaded_path(h, name, res.path, sizeof(res.path));
			if (!get)
				snprintf(res.err, sizeof(res.err), "no ncclGetVersion in it");
			else if (get(&res.code) != 0)
				snprintf(res.err, sizeof(res.err), "ncclGetVersion failed");
			else
				res.ok = 1;
		}
		if (write(fds[1], &res, sizeof(res)) != (ssize_t)sizeof(res))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	{
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		size_t got = 0;

		while (got < sizeof(*out) && poll(&p, 1, 10000) == 1) {
			ssize_t n = read(fds[0], (char *)out + got, sizeof(*out) - got);

			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got != sizeof(*out)) {
			memset(out, 0, sizeof(*out));
			snprintf(out->err, sizeof(out->err),
				 "loading %s in a child process failed or took over 10 s", name);
			kill(pid, SIGKILL);
		}
	}
	close(fds[0]);
	waitpid(pid, NULL, 0);
}

/* The names NCCL dlsym()s are literal strings in the library. */
static int scan_names(const char *path, bool *net, bool *coll)
{
	static const char *const pat[2] = {"ncclNetPlugin_v", "ncclCollNetPlugin_v"};
	struct stat sb;
	const char *map;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || sb.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	for (int k = 0; k < 2; k++) {
		size_t plen = strlen(pat[k]), off = 0;
		bool *set = k ? coll : net;

		while (off < (size_t)sb.st_size) {
			const char *hit = memmem(map + off, (size_t)sb.st_size - off, pat[k], plen);
			const char *d;
			int v = 0;

			if (!hit)
				break;
			d = hit + plen;
			while (d < map + sb.st_size && *d >= '0' && *d <= '9' && v < 1000)
				v = v * 10 + (*d++ - '0');
			/* a whole name: the digits end the string */
			if (d > hit + plen && d < map + sb.st_size && *d == '\0' && v >= 1 &&
			    v <= DR_MAX_VERSION)
				set[v] = true;
			off = (size_t)(hit - map) + plen;
		}
	}
	munmap((void *)map, (size_t)sb.st_size);
	return 0;
}

static int highest_common(const bool *a, const bool *b)
{
	for (int v = DR_MAX_VERSION; v >= 1; v--)
		if (a[v] && b[v])
			return v;
	return 0;
}

void dr_check_nccl(struct dr_state *st, struct dr_report *r)
{
	static const char *const usual[] = {"/usr/local/cuda/lib64/libnccl.so.2",
					    "/usr/local/cuda/lib/libnccl.so.2",
					    "/usr/lib/x86_64-linux-gnu/libnccl.so.2"};
	struct dr_section *s = dr_section(r, "nccl", "NCCL on this machine");
	const char *name = st->nccl_path ? st->nccl_path : "libnccl.so.2";
	struct nccl_probe p;
	char ver[32], asks[128], askc[128];
	int table, lowest, bind, bindc;

	probe_nccl(name, &p);
	if (!p.ok && !st->nccl_path) {
		/* not on the loader's path: the usual places, for information */
		for (size_t i = 0; i < RW_ARRAY_SIZE(usual) && !p.ok; i++)
			if (access(usual[i], R_OK) == 0) {
				probe_nccl(usual[i], &p);
				if (p.ok)
					dr_add(s, DR_INFO, "path",
					       "libnccl.so.2 is not on the loader's path; found %s "
					       "(programs such as PyTorch often bring their own)",
					       usual[i]);
			}
	}
	if (!p.ok) {
		dr_add(s, st->nccl_path ? DR_FAIL : DR_WARN, "libnccl", "%s: %s%s", name, p.err,
		       st->nccl_path ? ""
				     : " (no NCCL found here; check the one your program "
				       "brings with --nccl PATH)");
		return;
	}
	st->nccl_found = true;
	st->nccl_code = p.code;
	dr_nccl_version_str(p.code, ver, sizeof(ver));
	dr_add_value(s, DR_INFO, "version", p.code, "", "NCCL %s (ncclGetVersion %d) at %s", ver,
		     p.code, p.path);
	table = dr_nccl_abi_for(p.code, &lowest);
	if (scan_names(p.path, st->nccl_asks, st->nccl_asks_coll) == 0) {
		dr_versions_str(st->nccl_asks, asks, sizeof(asks));
		dr_versions_str(st->nccl_asks_coll, askc, sizeof(askc));
		dr_add(s, DR_INFO, "asks for",
		       "ncclNetPlugin_%s, ncclCollNetPlugin_%s (strings in %s)", asks, askc,
		       p.path);
	}
	if (table > 0)
		dr_add(s, DR_INFO, "version table",
		       "NCCL %s tries net ABI v%d down to v%d (first found wins)", ver, table,
		       lowest);
	else if (table < 0)
		dr_add(s, DR_WARN, "version table",
		       "NCCL %s is newer than ringway's table (2.13-2.32); the strings above say "
		       "what it asks for",
		       ver);
	else
		dr_add(s, DR_FAIL, "version table",
		       "NCCL %s loads no net ABI ringway exports (v6 and later: NCCL 2.13+)", ver);
	if (!st->plugin_found)
		return;
	bind = highest_common(st->nccl_asks, st->net_v);
	bindc = highest_common(st->nccl_asks_coll, st->collnet_v);
	if (!bind && table > 0 && st->net_v[table])
		bind = table; /* no names in the binary (stripped?): trust the table */
	st->nccl_bind = bind;
	if (!bind) {
		dr_add(s, DR_FAIL, "binds",
		       "no ncclNetPlugin_vN that NCCL %s asks for is exported by %s: NCCL says "
		       "\"External network plugin ... is unsupported\"",
		       ver, st->plugin_path);
		return;
	}
	dr_add_value(s, DR_OK, "binds", bind, "",
		     "NCCL %s will bind ringway's ncclNetPlugin_v%d%s; NCCL_DEBUG=INFO prints "
		     "\"NET/Plugin: Loaded net plugin ringway (v%d)\"",
		     ver, bind, bindc ? "" : " (no CollNet version in common)", bind);
	if (bindc)
		dr_add(s, DR_INFO, "collnet", "and ncclCollNetPlugin_v%d", bindc);
	if (table > 0 && bind != table)
		dr_add(s, DR_WARN, "binds",
		       "the version table says NCCL %s prefers v%d; its binary and ringway agree "
		       "on v%d",
		       ver, table, bind);
	for (int v = 1; v <= DR_MAX_VERSION; v++)
		if (st->nccl_asks[v] && !st->net_v[v] && v > bind)
			dr_add(s, DR_WARN, "missing",
			       "NCCL %s would prefer ncclNetPlugin_v%d, which this ringway does "
			       "not export",
			       ver, v);
}

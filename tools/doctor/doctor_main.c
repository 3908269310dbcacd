/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-doctor: is ringway usable here, and if not, why.  Which plugin
 * NCCL would load and the ABI it binds, the NCCL_* / RINGWAY_* variables and
 * their contradictions, every transport with the reason it is or is not
 * usable, the GPU <-> NIC pairing, and a loopback self-test.  Text for a
 * person, --json for scripts; exit 1 when something is wrong.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_log.h"
#include "tools/doctor/doctor.h"

/* --- ringway's log, captured into the report ----------------------------------- */

#define LOG_MAX 256

static struct {
	pthread_mutex_t lock;
	char *line[LOG_MAX];
	int n;
	bool echo; /* --verbose: also to stderr */
} logcap = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void log_sink(void *arg, enum rw_log_level level, unsigned long flags, const char *file,
		     int line, const char *msg)
{
	(void)arg;
	(void)flags;
	(void)file;
	(void)line;
	if (logcap.echo)
		fprintf(stderr, "ringway %s: %s\n", level == RW_LOG_WARN ? "WARN" : "INFO", msg);
	pthread_mutex_lock(&logcap.lock);
	if (logcap.n < LOG_MAX) {
		char *c = malloc(strlen(msg) + 8);

		if (c) {
			sprintf(c, "%s%s", level == RW_LOG_WARN ? "WARN " : "", msg);
			logcap.line[logcap.n++] = c;
		}
	}
	pthread_mutex_unlock(&logcap.lock);
}

void dr_log_take(struct dr_section *s, const char *contains)
{
	int keep = 0;

	pthread_mutex_lock(&logcap.lock);
	for (int i = 0; i < logcap.n; i++) {
		char *c = logcap.line[i];

		if (contains && !strstr(c, contains)) {
			logcap.line[keep++] = c;
			continue;
		}
		/* environment echoes are the env section's business */
		if (!strstr(c, "set by environment to"))
			dr_add(s, DR_INFO, "log", "%s", c);
		free(c);
	}
	logcap.n = keep;
	pthread_mutex_unlock(&logcap.lock);
}

static void log_drop(void)
{
	pthread_mutex_lock(&logcap.lock);
	for (int i = 0; i < logcap.n; i++)
		free(logcap.line[i]);
	logcap.n = 0;
	pthread_mutex_unlock(&logcap.lock);
}

/* --- environment ----------------------------------------------------------------- */

static void keep_var(void *arg, const char *name, const char *value)
{
	struct dr_state *st = arg;
	struct dr_var *v;

	if (st->nvars == DR_MAX_VARS)
		return;
	if (strncmp(name, "LD_LIBRARY_PATH", 15) == 0 && name[15] != '\0')
		return; /* LD_LIBRARY_PATH only, not LD_LIBRARY_PATH_X */
	v = &st->vars[st->nvars++];
	snprintf(v->name, sizeof(v->name), "%s", name);
	snprintf(v->value, sizeof(v->value), "%s", value);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringway-doctor [--json] [--nccl PATH] [--xml FILE] [--selftest SECONDS] "
		"[--verbose]\n"
		"  Checks whether NCCL will load and use ringway here, and says why not.\n"
		"  --json           machine-readable report on stdout\n"
		"  --nccl PATH      the libnccl.so.2 to check (default: the one the loader finds)\n"
		"  --xml FILE       the GPU <-> NIC pairing of a machine saved by `lstopo --of "
		"xml`\n"
		"  --selftest S     loopback self-test budget in seconds (default 5; 0 skips it)\n"
		"  --verbose        also print ringway's log lines on stderr as they come\n"
		"  exit status: 0 usable (warnings possible), 1 a problem was found, 2 usage\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"nccl", required_argument, NULL, 'n'},
		{"xml", required_argument, NULL, 'x'},
		{"selftest", required_argument, NULL, 's'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct dr_state st; /* large: not on the stack */
	struct dr_report r = {0};
	bool json = false;
	int c;

	st.selftest_s = 5;
	while ((c = getopt_long(argc, argv, "jn:x:s:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'n':
			st.nccl_path = optarg;
			break;
		case 'x':
			st.topo_xml = optarg;
			break;
		case 's': {
			char *end;

			st.selftest_s = strtod(optarg, &end);
			if (*end || st.selftest_s < 0 || st.selftest_s > 600) {
				fprintf(stderr, "ringway-doctor: --selftest %s: 0 to 600 seconds\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'v':
			logcap.echo = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	/* every ringway message goes into the report, INFO included */
	rw_log_set_sink(log_sink, NULL);
	rw_log_set_level(RW_LOG_INFO);
	rw_env_foreach("NCCL_", keep_var, &st);
	rw_env_foreach("RINGWAY_", keep_var, &st);
	rw_env_foreach("LD_LIBRARY_PATH", keep_var, &st);
	rw_config_load(&st.cfg, NULL, NULL); /* bad values: reported by the env check */
	log_drop();

	dr_check_plugin(&st, &r);
	dr_check_nccl(&st, &r);
	dr_check_env(&st, &r);
	dr_check_transports(&st, &r);
	dr_check_topo(&st, &r);
	dr_selftest(&st, &r);
	log_drop();

	if (json) {
		dr_print_json(&r, stdout);
	} else {
		printf("ringway-doctor %s (NCCL net plugin ringway; exit 1 when a problem is "
		       "found)\n",
		       RW_VERSION_STRING);
		dr_print_text(&r, stdout);
	}
	c = dr_report_level(&r) == DR_FAIL ? 1 : 0;
	dr_report_free(&r);
	rw_log_set_sink(NULL, NULL);
	return c;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-doctor internals.  The doctor runs a fixed list of checks, each
 * filling one section of a report with items: facts (info) and verdicts
 * (ok, warn, fail), each with a one-line text that says why.  The report is
 * printed for a person or as JSON; any fail makes the exit status 1.
 *
 *   doctor_report.c     the report: items, text and JSON output
 *   doctor_plugin.c     which libnccl-net-ringway.so NCCL would load, its
 *                       exports; the NCCL on the system and the ABI it binds
 *   doctor_env.c        NCCL_* / RINGWAY_* variables and contradictions
 *   doctor_transport.c  socket, shm, ib usable or not and why; GPU <-> NIC
 *   doctor_selftest.c   the loopback self-test through rw_net
 */
#ifndef RW_DOCTOR_H
#define RW_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/rw_common.h"
#include "common/rw_params.h"

enum dr_level { DR_INFO, DR_OK, DR_WARN, DR_FAIL };

struct dr_item {
	enum dr_level level;
	char key[48];
	char text[640];
	bool has_value; /**< a measured or stated figure, for scripts */
	double value;
	char unit[16];
};

struct dr_section {
	char name[24];	/**< "plugin", "nccl", ... (JSON key) */
	char title[64]; /**< "Plugin (libnccl-net-ringway.so)" */
	struct dr_item *items;
	int nitems, cap;
};

#define DR_MAX_SECTIONS 12
#define DR_MAX_VERSION	32 /* highest ncclNetPlugin_vN looked for */

struct dr_report {
	struct dr_section sec[DR_MAX_SECTIONS];
	int nsec;
};

#define DR_MAX_VARS 128

/** One NCCL_* or RINGWAY_* variable of the environment. */
struct dr_var {
	char name[64];
	char value[RW_PARAM_STR_MAX];
};

/** What the checks learn and later checks use. */
struct dr_state {
	struct dr_var vars[DR_MAX_VARS]; /**< NCCL_* then RINGWAY_*, as found */
	int nvars;

	struct rw_config cfg;  /**< RINGWAY_* through the registry (bad values: defaults) */
	const char *nccl_path; /**< --nccl PATH, or NULL: the loader's libnccl.so.2 */
	const char *topo_xml;  /**< --xml FILE, or NULL */
	double selftest_s;     /**< self-test budget, s; 0: skipped */

	/* plugin */
	bool plugin_found;
	char plugin_path[4096];
	bool net_v[DR_MAX_VERSION + 1];	    /**< ncclNetPlugin_vN exported */
	bool collnet_v[DR_MAX_VERSION + 1]; /**< ncclCollNetPlugin_vN exported */

	/* NCCL */
	bool nccl_found;
	int nccl_code;			    /**< ncclGetVersion(), 0 unknown */
	bool nccl_asks[DR_MAX_VERSION + 1]; /**< "ncclNetPlugin_vN" strings in it */
	bool nccl_asks_coll[DR_MAX_VERSION + 1];
	int nccl_bind; /**< net ABI NCCL will bind, 0 none */

	/* transports: usable, filled by doctor_transport.c */
	bool socket_ok, shm_ok, ib_ok;
};

/** The value of variable name (NCCL_* or RINGWAY_*), NULL when unset. */
const char *dr_env(const struct dr_state *st, const char *name);

/* --- the report (doctor_report.c) ------------------------------------------ */

struct dr_section *dr_section(struct dr_report *r, const char *name, const char *title);
struct dr_item *dr_add(struct dr_section *s, enum dr_level level, const char *key, const char *fmt,
		       ...) RW_PRINTF(4, 5);
/** An item with a figure: value in unit ("GB/s", "us"). */
struct dr_item *dr_add_value(struct dr_section *s, enum dr_level level, const char *key,
			     double value, const char *unit, const char *fmt, ...) RW_PRINTF(6, 7);
enum dr_level dr_section_level(const struct dr_section *s);
enum dr_level dr_report_level(const struct dr_report *r);
void dr_print_text(const struct dr_report *r, FILE *f);
void dr_print_json(const struct dr_report *r, FILE *f);
void dr_report_free(struct dr_report *r);
const char *dr_level_name(enum dr_level l);

/* --- ringway's log, captured (doctor_main.c) --------------------------------- */

/** Move the log lines captured since the last call into s as "log" items
 *  (only those containing `contains`, when not NULL; the rest stay). */
void dr_log_take(struct dr_section *s, const char *contains);

/* --- the checks -------------------------------------------------------------- */

void dr_check_plugin(struct dr_state *st, struct dr_report *r);
void dr_check_nccl(struct dr_state *st, struct dr_report *r);
void dr_check_env(struct dr_state *st, struct dr_report *r);
void dr_check_transports(struct dr_state *st, struct dr_report *r);
void dr_check_topo(struct dr_state *st, struct dr_report *r);
void dr_selftest(struct dr_state *st, struct dr_report *r);

/** The net ABI version a NCCL release binds, from its version code
 *  (ncclGetVersion: 22809 = 2.28.9), by nccl-versions' table: 0 when that
 *  NCCL loads no version ringway has (< 2.13) or the code is unknown. */
int dr_nccl_abi_for(int code, int *lowest);

/** "2.28.9" from 22809 (or 2.x codes before 2.9: 1000s). */
void dr_nccl_version_str(int code, char *buf, size_t len);

/** "v6..v12" for a set of versions, "none" when empty. */
void dr_versions_str(const bool *v, char *buf, size_t len);

/** Monotonic time in seconds. */
double dr_now(void);

#endif /* RW_DOCTOR_H */

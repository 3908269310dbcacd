/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's report: sections of items, printed as text or JSON. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/doctor/doctor.h"

const char *dr_level_name(enum dr_level l)
{
	switch (l) {
	case DR_OK:
		return "ok";
	case DR_WARN:
		return "warn";
	case DR_FAIL:
		return "fail";
	default:
		return "info";
	}
}

double dr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct dr_section *dr_section(struct dr_report *r, const char *name, const char *title)
{
	struct dr_section *s;

	for (int i = 0; i < r->nsec; i++)
		if (strcmp(r->sec[i].name, name) == 0)
			return &r->sec[i];
	if (r->nsec == DR_MAX_SECTIONS)
		abort(); /* a fixed list of sections: a programming error */
	s = &r->sec[r->nsec++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->title, sizeof(s->title), "%s", title);
	return s;
}

static struct dr_item *item_new(struct dr_section *s, enum dr_level level, const char *key)
{
	struct dr_item *it;

	if (s->nitems == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct dr_item *n = realloc(s->items, (size_t)cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "ringway-doctor: out of memory\n");
			exit(3);
		}
		s->items = n;
		s->cap = cap;
	}
	it = &s->items[s->nitems++];
	memset(it, 0, sizeof(*it));
	it->level = level;
	snprintf(it->key, sizeof(it->key), "%s", key);
	return it;
}

struct dr_item *dr_add(struct dr_section *s, enum dr_level level, const char *key, const char *fmt,
		       ...)
{
	struct dr_item *it = item_new(s, level, key);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->text, sizeof(it->text), fmt, ap);
	va_end(ap);
	return it;
}

struct dr_item *dr_add_value(struct dr_section *s, enum dr_level level, const char *key,
			     double value, const char *unit, const char *fmt, ...)
{
	struct dr_item *it = item_new(s, level, key);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->text, sizeof(it->text), fmt, ap);
	va_end(ap);
	it->has_value = true;
	it->value = value;
	snprintf(it->unit, sizeof(it->unit), "%s", unit);
	return it;
}

enum dr_level dr_section_level(const struct dr_section *s)
{
	enum dr_level l = DR_INFO; /* facts only: "info" */

	for (int i = 0; i < s->nitems; i++)
		if (s->items[i].level > l)
			l = s->items[i].level;
	return l;
}

enum dr_level dr_report_level(const struct dr_report *r)
{
	enum dr_level l = DR_OK;

	for (int i = 0; i < r->nsec; i++)
		if (dr_section_level(&r->sec[i]) > l)
			l = dr_section_level(&r->sec[i]);
	return l;
}

static const char *tag(enum dr_level l)
{
	switch (l) {
	case DR_OK:
		return "ok  ";
	case DR_WARN:
		return "WARN";
	case DR_FAIL:
		return "FAIL";
	default:
		return "    ";
	}
}

void dr_print_text(const struct dr_report *r, FILE *f)
{
	int nfail = 0, nwarn = 0;

	for (int i = 0; i < r->nsec; i++) {
		const struct dr_section *s = &r->sec[i];

		fprintf(f, "\n== %s: %s\n", s->title, dr_level_name(dr_section_level(s)));
		for (int k = 0; k < s->nitems; k++) {
			const struct dr_item *it = &s->items[k];

			fprintf(f, "  %s %s: %s\n", tag(it->level), it->key, it->text);
			nfail += it->level == DR_FAIL;
			nwarn += it->level == DR_WARN;
		}
	}
	fprintf(f, "\nsummary: %d problem(s), %d warning(s)%s\n", nfail, nwarn,
		nfail ? "; ringway will not work as configured:" : "");
	for (int i = 0; i < r->nsec; i++)
		for (int k = 0; k < r->sec[i].nitems; k++)
			if (r->sec[i].items[k].level >= DR_WARN)
				fprintf(f, "  %s [%s] %s: %s\n", tag(r->sec[i].items[k].level),
					r->sec[i].name, r->sec[i].items[k].key,
					r->sec[i].items[k].text);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void json_item(FILE *f, const char *section, const struct dr_item *it)
{
	fputs("{\"level\": ", f);
	json_str(f, dr_level_name(it->level));
	if (section) {
		fputs(", \"section\": ", f);
		json_str(f, section);
	}
	fputs(", \"key\": ", f);
	json_str(f, it->key);
	fputs(", \"text\": ", f);
	json_str(f, it->text);
	if (it->has_value) {
		fprintf(f, ", \"value\": %.6g, \"unit\": ", it->value);
		json_str(f, it->unit);
	}
	fputc('}', f);
}

void dr_print_json(const struct dr_report *r, FILE *f)
{
	bool first = true;

	fputs("{\n  \"tool\": \"ringway-doctor\",\n  \"status\": ", f);
	json_str(f, dr_level_name(dr_report_level(r)));
	fputs(",\n  \"sections\": {", f);
	for (int i = 0; i < r->nsec; i++) {
		const struct dr_section *s = &r->sec[i];

		fprintf(f, "%s\n    ", i ? "," : "");
		json_str(f, s->name);
		fputs(": {\"title\": ", f);
		json_str(f, s->title);
		fputs(", \"status\": ", f);
		json_str(f, dr_level_name(dr_section_level(s)));
		fputs(", \"items\": [", f);
		for (int k = 0; k < s->nitems; k++) {
			fputs(k ? ",\n      " : "\n      ", f);
			json_item(f, NULL, &s->items[k]);
		}
		fputs("]}", f);
	}
	fputs("\n  },\n  \"problems\": [", f);
	for (int i = 0; i < r->nsec; i++)
		for (int k = 0; k < r->sec[i].nitems; k++) {
			if (r->sec[i].items[k].level < DR_WARN)
				continue;
			fputs(first ? "\n    " : ",\n    ", f);
			json_item(f, r->sec[i].name, &r->sec[i].items[k]);
			first = false;
		}
	fputs("\n  ]\n}\n", f);
}

void dr_report_free(struct dr_report *r)
{
	for (int i = 0; i < r->nsec; i++)
		free(r->sec[i].items);
	r->nsec = 0;
}

void dr_versions_str(const bool *v, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int a = 1; a <= DR_MAX_VERSION; a++) {
		int b = a;

		if (!v[a])
			continue;
		while (b + 1 <= DR_MAX_VERSION && v[b + 1])
			b++;
		if (used < len && b > a)
			used += (size_t)snprintf(buf + used, len - used, "%sv%d..v%d",
						 used ? ", " : "", a, b);
		else if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%sv%d", used ? ", " : "",
						 a);
		a = b;
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

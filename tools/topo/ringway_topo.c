/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway-topo: what ringway sees of a machine and what it decides from it:
 * devices, paths, the NIC of each GPU with the reason, the ring order, the
 * channels and the ring through several hosts; --dot writes a Graphviz
 * picture.  --xml replays a machine saved with `lstopo --of xml`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "common/rw_params.h"
#include "topo/rw_topo.h"
#include "topo/rw_topo_place.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringway-topo [--xml FILE] [--dot FILE|-] [--hosts N] [--ranks N] "
		"[--nvml LIB] [--params]\n"
		"  --xml FILE   replay a machine saved by `lstopo --of xml` (else "
		"RINGWAY_TOPO_XML,\n"
		"               else this machine)\n"
		"  --dot FILE   also write a Graphviz picture to FILE ('-': only the picture, to\n"
		"               stdout); render it with `dot -Tpng FILE -o topo.png` or -Tsvg\n"
		"  --hosts N    show the ring through N hosts like this one (default 2)\n"
		"  --ranks N    show the placement rw_comm_init makes for N ranks dealt\n"
		"               round-robin over the --hosts hosts (LOCAL_RANK: its GPU), with\n"
		"               RINGWAY_NCHANNELS channels, in the words of its INFO log\n"
		"  --nvml LIB   read NVLinks from this NVML library too (default: this machine's\n"
		"               libnvidia-ml.so.1 when discovering it, none for --xml)\n"
		"  --params     print the RINGWAY_* variables and exit\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"xml", required_argument, NULL, 'x'},	 {"dot", required_argument, NULL, 'd'},
		{"hosts", required_argument, NULL, 'n'}, {"ranks", required_argument, NULL, 'r'},
		{"nvml", required_argument, NULL, 'm'},	 {"params", no_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},	 {NULL, 0, NULL, 0},
	};
	const char *xml = NULL, *dot = NULL, *nvml = NULL;
	struct rw_config cfg;
	struct rw_topo *topo;
	int hosts = 2, ranks = 0, c, rc;
	FILE *df = NULL;

	rw_config_load(&cfg, NULL, NULL);
	rw_log_set_level((enum rw_log_level)cfg.debug);
	while ((c = getopt_long(argc, argv, "x:d:n:r:m:ph", opts, NULL)) != -1) {
		switch (c) {
		case 'x':
			xml = optarg;
			break;
		case 'd':
			dot = optarg;
			break;
		case 'n':
			hosts = atoi(optarg);
			if (hosts < 1 || hosts > 1024) {
				fprintf(stderr, "ringway-topo: --hosts %s: use 1 to 1024\n",
					optarg);
				return 2;
			}
			break;
		case 'r':
			ranks = atoi(optarg);
			if (ranks < 1 || ranks > 65536) {
				fprintf(stderr, "ringway-topo: --ranks %s: use 1 to 65536\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			nvml = optarg;
			break;
		case 'p':
			rw_params_print(stdout, &cfg);
			return 0;
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
	if (xml)
		rc = rw_topo_create_from_xml(&cfg, xml, &topo);
	else
		rc = rw_topo_create(&cfg, &topo);
	if (rc) {
		fprintf(stderr, "ringway-topo: no topology (%s)%s\n", strerror(-rc),
			xml || cfg.topo_xml[0] ? ": check the XML file named above" : "");
		return 1;
	}
	if (nvml)
		rw_topo_load_nvml(topo, nvml); /* its failure is a note in the report */
	if (ranks) {
		struct rw_topo_place p;

		rc = rw_topo_place_simulate(topo, hosts, ranks, (int)cfg.nchannels, &p);
		if (!rc) {
			printf("placement of %d rank(s) over %d host(s) like this one:\n", ranks,
			       hosts);
			rc = rw_topo_place_write(&p, "", stdout);
			rw_topo_place_free(&p);
		}
	} else if (dot && strcmp(dot, "-") == 0) {
		rc = rw_topo_write_dot(topo, stdout);
	} else {
		rc = rw_topo_write_report(topo, hosts, stdout);
		if (!rc && dot) {
			df = fopen(dot, "w");
			if (!df) {
				fprintf(stderr, "ringway-topo: cannot write %s: %s\n", dot,
					strerror(errno));
				rc = -errno;
			} else {
				rc = rw_topo_write_dot(topo, df);
				if (fclose(df) && !rc)
					rc = -EIO;
				if (!rc)
					printf("\npicture: %s (dot -Tpng %s -o topo.png)\n", dot,
					       dot);
			}
		}
	}
	rw_topo_destroy(topo);
	if (rc) {
		fprintf(stderr, "ringway-topo: output failed: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}

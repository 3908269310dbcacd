/* SPDX-License-Identifier: Apache-2.0 */
/* The public communicator: transport + rendezvous + engine (world.h). */
#include "coll/world.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/bootstrap.h"
#include "coll/rw_coll.h"
#include "common/rw_log.h"
#include "include/ringway.h"
#include "transport/rw_net.h"

#define NAME_BYTES 64

/* What each rank contributes at the rendezvous. */
struct world_blob {
	char handle[RW_NET_HANDLE_MAXSIZE];
	char name[NAME_BYTES]; /* "host pid 123", for messages */
};

struct rw_comm {
	struct rw_config cfg;
	struct rw_net *net;
	struct rw_bootstrap *boot;
	struct rw_coll_comm *coll;
};

struct rw_coll_comm *rw_world_coll(struct rw_comm *w)
{
	return w->coll;
}

int rw_world_default_root(const struct rw_config *cfg, char *buf, size_t len)
{
	const char *addr = rw_env_get("MASTER_ADDR"), *port = rw_env_get("MASTER_PORT");
	char *end;
	long p;

	if (cfg->root[0]) {
		snprintf(buf, len, "%s", cfg->root);
		return 0;
	}
	if (!addr || !*addr || !port || !*port)
		return -ENOENT;
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || *end || p < 1 || p >= 65535) {
		RW_WARN(RW_LOG_INIT, "MASTER_PORT='%s' is not a port", port);
		return -EINVAL;
	}
	snprintf(buf, len, strchr(addr, ':') ? "[%s]:%ld" : "%s:%ld", addr, p + 1);
	return 0;
}

static int exchange(struct rw_comm *w, const struct rw_world_args *a, struct rw_net_listen *listen,
		    const struct world_blob *mine)
{
	struct world_blob *all;
	const void **handles;
	const char **names;
	struct rw_coll_comm_args ca = {
		.net = w->net,
		.dev = 0,
		.nranks = a->nranks,
		.rank = a->rank,
		.listen = listen,
		.cfg = &w->cfg,
	};
	int rc = -ENOMEM;

	all = calloc((size_t)a->nranks, sizeof(*all));
	handles = calloc((size_t)a->nranks, sizeof(*handles));
	names = calloc((size_t)a->nranks, sizeof(*names));
	if (!all || !handles || !names)
		goto out_free;
	rc = rw_bootstrap_allgather(w->boot, mine, all, sizeof(*all));
	if (rc)
		goto out_free;
	for (int r = 0; r < a->nranks; r++) {
		all[r].name[NAME_BYTES - 1] = '\0';
		handles[r] = all[r].handle;
		names[r] = all[r].name;
	}
	ca.handles = handles;
	ca.peer_names = names;
	rc = rw_coll_comm_create(&ca, &w->coll);

out_free:
	free(all);
	free(handles);
	free(names);
	return rc;
}

int rw_world_create(const struct rw_world_args *a, struct rw_comm **out)
{
	struct world_blob mine = {0};
	struct rw_net_listen *listen = NULL;
	struct rw_comm *w;
	char host[48] = "?";
	int listen_fd = a ? a->listen_fd : -1, rc;

	if (!a || !out || a->nranks < 1 || a->nranks > RW_MAX_RANKS || a->rank < 0 ||
	    a->rank >= a->nranks) {
		RW_WARN(RW_LOG_INIT, "rw_world_create: bad arguments (rank %d of %d, at most %d)",
			a ? a->rank : -1, a ? a->nranks : -1, RW_MAX_RANKS);
		rw_close_fd(&listen_fd);
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		rw_close_fd(&listen_fd);
		return -ENOMEM;
	}
	if (a->cfg)
		w->cfg = *a->cfg;
	else
		rw_config_load(&w->cfg, NULL, NULL);
	rc = rw_bootstrap_create(a->root, listen_fd, a->nranks, a->rank, (int)w->cfg.timeout_ms,
				 w->cfg.secret, &w->boot);
	if (rc)
		goto err_free; /* closed listen_fd */
	rc = rw_net_create(&w->cfg, &w->net);
	if (rc)
		goto err_boot;
	if (a->nranks > 1) {
		rc = rw_net_listen(w->net, 0, mine.handle, &listen);
		if (rc)
			goto err_net;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(mine.name, sizeof(mine.name), "%s pid %d", host, (int)getpid());
	rc = exchange(w, a, listen, &mine);
	if (listen)
		rw_net_close_listen(listen); /* every link is up, or none will be */
	if (rc)
		goto err_net;
	rc = rw_bootstrap_barrier(w->boot);
	if (rc)
		goto err_coll;
	*out = w;
	return 0;

err_coll:
	rw_coll_comm_destroy(w->coll);
err_net:
	rw_net_destroy(w->net);
err_boot:
	rw_bootstrap_destroy(w->boot);
err_free:
	memset(w->cfg.secret, 0, sizeof(w->cfg.secret));
	free(w);
	return rc;
}

int rw_world_destroy(struct rw_comm *w)
{
	int rc = 0;

	if (!w)
		return 0;
	if (!rw_coll_comm_error(w->coll))
		rc = rw_bootstrap_barrier(w->boot);
	rw_coll_comm_destroy(w->coll);
	rw_net_destroy(w->net);
	rw_bootstrap_destroy(w->boot);
	memset(w->cfg.secret, 0, sizeof(w->cfg.secret));
	free(w);
	return rc;
}

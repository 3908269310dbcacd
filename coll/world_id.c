/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_get_unique_id()'s rendezvous (world.h): rank 0 listens on an
 * ephemeral port before any rank knows where, and the id -- its address,
 * that port and a fresh job secret -- travels through whatever the caller
 * has (a c10d Store, MPI).  The listener waits in a small per-process table
 * until rank 0's rw_comm_init_id() takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "coll/world.h"
#include "common/rw_common.h"
#include "common/rw_log.h"
#include "include/ringway.h"
#include "transport/tcp/rw_tcp.h"

#define ID_MAGIC   0x44495752u /* "RWID" */
#define ID_VERSION 1
#define ID_HELD	   16 /* listeners held at once per process */
#define KEY_HEX	   32 /* 16 random bytes */

/* The bytes of an rw_unique_id_t.  Host byte order, like the bootstrap's
 * wire: every rank runs the same build. */
struct id_wire {
	uint32_t magic, version;
	uint64_t token;		      /* finds the listener in the maker's table */
	int32_t pid;		      /* the maker, for messages */
	char key[KEY_HEX + 1];	      /* the job secret, hex */
	char addr[RW_TCP_ADDRSTRLEN]; /* "host:port" or "[v6]:port" */
};

_Static_assert(sizeof(struct id_wire) <= RW_UNIQUE_ID_BYTES, "the id fits rw_unique_id_t");

static struct {
	pthread_mutex_t lock;
	struct held {
		uint64_t token;
		int fd;
		pid_t pid; /* a forked child's copy is not its own */
	} h[ID_HELD];
	unsigned next; /* the slot a 17th id takes */
} held = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* n random bytes: getrandom(), else (never blocking) nonces. */
static void random_bytes(unsigned char *out, size_t n)
{
	ssize_t got = getrandom(out, n, GRND_NONBLOCK);

	for (size_t i = got > 0 ? (size_t)got : 0; i < n; i += 8) {
		uint64_t v = rw_tcp_nonce64();

		memcpy(out + i, &v, RW_MIN((size_t)8, n - i));
	}
}

/* Keep fd for token; a full table gives up its oldest listener. */
static void hold(uint64_t token, int fd)
{
	pid_t me = getpid();
	int free_slot = -1;

	pthread_mutex_lock(&held.lock);
	for (int i = 0; i < ID_HELD && free_slot < 0; i++)
		if (held.h[i].token == 0 || held.h[i].pid != me)
			free_slot = i;
	if (free_slot < 0) {
		free_slot = (int)(held.next++ % ID_HELD);
		RW_INFO(RW_LOG_INIT,
			"rw_get_unique_id: %d ids held unused: closing the oldest one's listener",
			ID_HELD);
		close(held.h[free_slot].fd);
	} else if (held.h[free_slot].token && held.h[free_slot].pid != me) {
		close(held.h[free_slot].fd); /* the parent's, inherited over fork */
	}
	held.h[free_slot] = (struct held){.token = token, .fd = fd, .pid = me};
	pthread_mutex_unlock(&held.lock);
}

/* The listener of token, removed from the table; -1 when not held here. */
static int take(uint64_t token)
{
	pid_t me = getpid();
	int fd = -1;

	pthread_mutex_lock(&held.lock);
	for (int i = 0; i < ID_HELD; i++) {
		if (held.h[i].token == token && held.h[i].pid == me) {
			fd = held.h[i].fd;
			held.h[i] = (struct held){0};
			break;
		}
	}
	pthread_mutex_unlock(&held.lock);
	return fd;
}

int rw_world_id_make(const struct rw_config *cfg, rw_unique_id_t *id)
{
	struct rw_tcp_ifaddr ifa;
	struct sockaddr_storage any = {0};
	struct id_wire w = {.magic = ID_MAGIC, .version = ID_VERSION, .pid = (int32_t)getpid()};
	unsigned char key[KEY_HEX / 2];
	char found[128] = "";
	size_t n = 0;
	int fd = -1, rc;

	if (!id) {
		RW_WARN(RW_LOG_INIT, "rw_get_unique_id: id is NULL");
		return -EINVAL;
	}
	rc = rw_tcp_if_pick(cfg->socket_ifname, (int)cfg->socket_family, &ifa, 1, &n, NULL, found,
			    sizeof(found));
	if (rc || n == 0) {
		RW_WARN(RW_LOG_INIT,
			"rw_get_unique_id: no interface to be reached at "
			"(RINGWAY_SOCKET_IFNAME='%s', "
			"interfaces with an address: %s)%s%s",
			cfg->socket_ifname, found[0] ? found : "none", rc ? ": " : "",
			rc ? strerror(-rc) : "");
		return rc ? rc : -ENODEV;
	}
	/* every address of the interface's family: the id names one, and the
	 * job secret guards the port */
	any.ss_family = ifa.addr.ss_family;
	rc = rw_tcp_listen(&any, 1024, false, &fd);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "rw_get_unique_id: cannot listen: %s", strerror(-rc));
		return rc;
	}
	rw_tcp_addr_set_port(&ifa.addr, rw_tcp_addr_port(&any));
	rw_tcp_addr_str(&ifa.addr, w.addr, sizeof(w.addr));
	random_bytes(key, sizeof(key));
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(w.key + 2 * i, 3, "%02x", key[i]);
	w.token = rw_tcp_nonce64();
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, &w, sizeof(w));
	hold(w.token, fd);
	RW_INFO(RW_LOG_INIT, "rw_get_unique_id: rendezvous at %s (%s)", w.addr, ifa.name);
	memset(key, 0, sizeof(key));
	memset(&w, 0, sizeof(w));
	return 0;
}

int rw_world_id_root(const rw_unique_id_t *id, int rank, char *root, size_t len, int *listen_fd)
{
	struct id_wire w;
	int rc = 0;

	*listen_fd = -1;
	if (!id) {
		RW_WARN(RW_LOG_INIT, "rw_comm_init_id: id is NULL");
		return -EINVAL;
	}
	memcpy(&w, id->internal, sizeof(w));
	w.key[KEY_HEX] = '\0';
	w.addr[sizeof(w.addr) - 1] = '\0';
	if (w.magic != ID_MAGIC || w.version != ID_VERSION || strlen(w.key) != KEY_HEX ||
	    !w.addr[0]) {
		RW_WARN(RW_LOG_INIT,
			"rw_comm_init_id: rank %d: the id is not one rw_get_unique_id() made "
			"(magic "
			"0x%x, version %u)",
			rank, w.magic, w.version);
		rc = -EINVAL;
		goto out;
	}
	if (rank == 0) {
		*listen_fd = take(w.token);
		if (*listen_fd < 0) {
			RW_WARN(RW_LOG_INIT,
				"rw_comm_init_id: rank 0: the id (rendezvous %s, made by pid %d) "
				"has "
				"no listener in this process (pid %d): rank 0 must be the process "
				"whose rw_get_unique_id() made it, and each id serves one "
				"communicator",
				w.addr, (int)w.pid, (int)getpid());
			rc = -EINVAL;
			goto out;
		}
	}
	if ((size_t)snprintf(root, len, "%s#%s", w.addr, w.key) >= len) {
		rw_close_fd(listen_fd);
		rc = -EINVAL;
	}
out:
	memset(&w, 0, sizeof(w));
	return rc;
}

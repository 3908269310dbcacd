/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one translation from ringway's -errno to NCCL's ncclResult_t.
 * NCCL's guidance (plugin README, "Error codes"): network and system call
 * failures are ncclSystemError, misuse by the NCCL core is
 * ncclInternalError, and a peer that went away is ncclRemoteError.
 * ncclInvalidArgument and ncclInProgress are never returned by a plugin.
 */
#include "plugin/rw_plugin.h"

#include <errno.h>

static_assert(ENOTSUP == EOPNOTSUPP, "one case covers both on Linux");

ncclResult_t rw_status_to_nccl(int rc)
{
	if (rc == 0)
		return ncclSuccess;
	if (rc > 0)
		return ncclInternalError; /* not an -errno: a ringway bug */

	switch (-rc) {
	/*
	 * The connection is lost or the peer misbehaved; this host is fine.
	 * The transport has logged the peer's address and the call.
	 */
	case ECONNRESET:   /* the peer reset the connection (it died) */
	case ECONNREFUSED: /* nobody listens at the handle's address any more */
	case EPIPE:	   /* wrote to a connection the peer had closed */
	case ETIMEDOUT:	   /* the peer stayed silent for RINGWAY_TIMEOUT_MS */
	case ECONNABORTED: /* the connection was aborted during setup */
	case EPROTO:	   /* the peer spoke garbage (bad magic, version, size) */
	case EHOSTUNREACH: /* no route to the peer's host */
	case ENETUNREACH:  /* no route to the peer's network */
		return ncclRemoteError;

	/*
	 * The caller broke the contract: NCCL core (or a test) passed a bad
	 * device, a NULL output, a closed or wrong kind of comm, a memory type
	 * the device cannot register, or posted a receive smaller than the
	 * matching send.  Retrying cannot help; this is a bug upstream.
	 */
	case EINVAL:	/* bad argument: device index, NULL pointer, n, type */
	case EBADF:	/* closed comm, or a listen comm used as a send comm */
	case ENOTSUP:	/* an operation or memory type this device lacks */
	case EMSGSIZE:	/* the message is larger than the posted receive */
	case EOVERFLOW: /* a size that does not fit this ABI version's int */
		return ncclInternalError;

	/*
	 * Everything else is the system failing us: ENOMEM, EMFILE, ENODEV
	 * (no usable interface), EADDRINUSE, EIO, ...
	 */
	default:
		return ncclSystemError;
	}
}

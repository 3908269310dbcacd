/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/rw_topo_int.h"

#include <errno.h>

int rw_topo_sysfs_live(struct rw_topo *t)
{
	(void)t;
	return -ENOSYS;
}

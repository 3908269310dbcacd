/* SPDX-License-Identifier: Apache-2.0 */
/* The host-emulated GPU (rw_gpu_emu.h): the switch.  (Being built.) */
#include "gpu/rw_gpu_emu.h"

#include <errno.h>
#include <string.h>

int rw_gpu_emu_enable(int ndevices, unsigned int flags)
{
	(void)ndevices, (void)flags;
	return -ENOSYS;
}

bool rw_gpu_emu_enabled(void)
{
	return false;
}

void rw_gpu_emu_set_delay_us(unsigned int us)
{
	(void)us;
}

void rw_gpu_emu_stats(struct rw_gpu_emu_stats *out)
{
	memset(out, 0, sizeof(*out));
}

void *rw_gpu_emu_access(const void *ptr, size_t len)
{
	(void)len;
	return (void *)ptr;
}

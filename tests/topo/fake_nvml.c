/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for libnvidia-ml.so.1, built three ways (FAKE_NVML_MODE):
 *   0  the 4 GPUs of fixtures/gpu4-nic2.xml with two NVLink pairs across
 *      the PCIe switches: GPU 0 <-> GPU 2 and GPU 1 <-> GPU 3, 2 links each
 *   1  nvmlInit_v2 fails (the driver is not loaded)
 *   2  nvmlDeviceGetNvLinkState is missing (an NVML too old or broken)
 * It only has the entry points ringway's topo/ looks up.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef FAKE_NVML_MODE
#define FAKE_NVML_MODE 0
#endif

#define NVML_ERROR_INVALID_ARGUMENT  2
#define NVML_ERROR_DRIVER_NOT_LOADED 9

struct fake_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int ret);
int nvmlDeviceGetCount_v2(unsigned *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev);
int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_pci *pci);
int nvmlDeviceGetNvLinkState(void *dev, unsigned link, int *active);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned link, struct fake_pci *pci);
int nvmlDeviceGetNvLinkVersion(void *dev, unsigned link, unsigned *version);

static const unsigned buses[] = {0x1a, 0x1b, 0x3d, 0x3e};

static unsigned index_of(void *dev)
{
	return (unsigned)((uintptr_t)dev - 1);
}

static void fill(unsigned i, struct fake_pci *pci)
{
	memset(pci, 0, sizeof(*pci));
	pci->bus = buses[i];
	snprintf(pci->bus_id, sizeof(pci->bus_id), "00000000:%02X:00.0", buses[i]);
	snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), "0000:%02X:00.0", buses[i]);
}

int nvmlInit_v2(void)
{
	return FAKE_NVML_MODE == 1 ? NVML_ERROR_DRIVER_NOT_LOADED : 0;
}

int nvmlShutdown(void)
{
	return 0;
}

const char *nvmlErrorString(int ret)
{
	return ret == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded"
	       : ret				   ? "Error"
						   : "Success";
}

int nvmlDeviceGetCount_v2(unsigned *count)
{
	*count = 4;
	return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev)
{
	if (index >= 4)
		return NVML_ERROR_INVALID_ARGUMENT;
	*dev = (void *)(uintptr_t)(index + 1);
	return 0;
}

int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_pci *pci)
{
	fill(index_of(dev), pci);
	return 0;
}

#if FAKE_NVML_MODE != 2
int nvmlDeviceGetNvLinkState(void *dev, unsigned link, int *active)
{
	(void)dev;
	if (link >= 18)
		return NVML_ERROR_INVALID_ARGUMENT;
	*active = link < 2;
	return 0;
}
#endif

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned link, struct fake_pci *pci)
{
	if (link >= 2)
		return NVML_ERROR_INVALID_ARGUMENT;
	fill(index_of(dev) ^ 2, pci); /* 0 <-> 2, 1 <-> 3 */
	return 0;
}

int nvmlDeviceGetNvLinkVersion(void *dev, unsigned link, unsigned *version)
{
	(void)dev, (void)link;
	*version = 3;
	return 0;
}

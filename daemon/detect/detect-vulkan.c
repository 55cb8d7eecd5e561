/* detect-vulkan.c: which Vulkan physical devices the loader shows.
 *
 * The loader is loaded at run time (dlopen "libvulkan.so.1"), so nothing
 * links against it; <vulkan/vulkan.h> supplies only types (VK_NO_PROTOTYPES).
 * An instance asking for API 1.1 (1.0 with a 1.0-only loader) lists the
 * physical devices; for each, the target is vulkan1.<minor of its
 * apiVersion, at most 3>, the version the API version ("1.3.239"), and the
 * name the driver's deviceName followed by its decoded driverVersion
 * (", driver 22.3.6").  A device that only supports Vulkan 1.0 is skipped:
 * kjit's SPIR-V targets start at 1.1.  Everything is destroyed and closed
 * before returning.
 */
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "detect.h"
#include "kj_types.h"
#include "util.h"

#define VENDOR_NVIDIA 0x10DEu /* encodes driverVersion as 10.8.8.6 bits */
#define DEVICES_MAX 64        /* physical devices we look at */

static PFN_vkGetInstanceProcAddr loader_gipa(void *h)
{
	PFN_vkGetInstanceProcAddr f = NULL;
	void *p = dlsym(h, "vkGetInstanceProcAddr");

	memcpy(&f, &p, sizeof p);
	return f;
}

/* The loader's instance API version, 1.0 when it predates 1.1. */
static uint32_t instance_version(PFN_vkGetInstanceProcAddr gipa)
{
	PFN_vkEnumerateInstanceVersion eiv =
		(PFN_vkEnumerateInstanceVersion)gipa(NULL, "vkEnumerateInstanceVersion");
	uint32_t v = VK_API_VERSION_1_0;

	if (eiv == NULL || eiv(&v) != VK_SUCCESS)
		v = VK_API_VERSION_1_0;
	return v;
}

static void driver_string(const VkPhysicalDeviceProperties *p, char *out, size_t outlen)
{
	uint32_t v = p->driverVersion;

	if (p->vendorID == VENDOR_NVIDIA)
		snprintf(out, outlen, "%u.%u.%u.%u", v >> 22, (v >> 14) & 0xffu, (v >> 6) & 0xffu, v & 0x3fu);
	else
		snprintf(out, outlen, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
			 VK_API_VERSION_PATCH(v));
}

/* Fills g from one device.  0, or -1 when it is below Vulkan 1.1. */
static int device_to_gpu(const VkPhysicalDeviceProperties *p, struct kj__gpu *g)
{
	uint32_t major = VK_API_VERSION_MAJOR(p->apiVersion), minor = VK_API_VERSION_MINOR(p->apiVersion);
	char driver[48];

	if (major < 1 || (major == 1 && minor < 1))
		return -1;
	if (major > 1 || minor > 3)
		minor = 3;
	memset(g, 0, sizeof *g);
	g->backend = KJIT_BACKEND_VULKAN;
	snprintf(g->target, sizeof g->target, "vulkan1.%u", minor);
	driver_string(p, driver, sizeof driver);
	snprintf(g->name, sizeof g->name, "%.*s, driver %s", (int)(sizeof g->name - sizeof driver - 10),
		 p->deviceName, driver);
	snprintf(g->version, sizeof g->version, "%u.%u.%u", VK_API_VERSION_MAJOR(p->apiVersion),
		 VK_API_VERSION_MINOR(p->apiVersion), VK_API_VERSION_PATCH(p->apiVersion));
	return 0;
}

int kj__detect_vulkan(struct kj__gpu *gpus, size_t max, size_t *n, char *note, size_t notelen)
{
	VkInstance inst = VK_NULL_HANDLE;
	VkPhysicalDevice devs[DEVICES_MAX];
	PFN_vkDestroyInstance destroy = NULL;
	uint32_t ndev = DEVICES_MAX;
	size_t old = 0;
	void *h;

	*n = 0;
	if (note && notelen)
		note[0] = '\0';
	if ((h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		kj__seterr(note, notelen, "no Vulkan device: libvulkan.so.1 (the Vulkan loader) not found; set "
			 "KJIT_VULKAN_ENV (e.g. vulkan1.3)");
		return 0;
	}
	PFN_vkGetInstanceProcAddr gipa = loader_gipa(h);
	PFN_vkCreateInstance create = gipa ? (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance") : NULL;
	if (create == NULL) {
		kj__seterr(note, notelen, "no Vulkan device: the loader lacks vkCreateInstance; set KJIT_VULKAN_ENV "
			 "(e.g. vulkan1.3)");
		goto out;
	}
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "kjit-detect",
		.pEngineName = "kjit",
		.apiVersion = instance_version(gipa) >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_1
									 : VK_API_VERSION_1_0,
	};
	VkInstanceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
	VkResult vr = create(&ci, NULL, &inst);
	if (vr != VK_SUCCESS) {
		kj__seterr(note, notelen, "no Vulkan device: vkCreateInstance failed (VkResult %d; no driver "
			 "installed?); set KJIT_VULKAN_ENV (e.g. vulkan1.3)", (int)vr);
		inst = VK_NULL_HANDLE;
		goto out;
	}
	destroy = (PFN_vkDestroyInstance)gipa(inst, "vkDestroyInstance");
	PFN_vkEnumeratePhysicalDevices enumerate =
		(PFN_vkEnumeratePhysicalDevices)gipa(inst, "vkEnumeratePhysicalDevices");
	PFN_vkGetPhysicalDeviceProperties props =
		(PFN_vkGetPhysicalDeviceProperties)gipa(inst, "vkGetPhysicalDeviceProperties");
	if (enumerate == NULL || props == NULL || destroy == NULL) {
		kj__seterr(note, notelen, "no Vulkan device: the loader lacks core entry points; set "
			 "KJIT_VULKAN_ENV (e.g. vulkan1.3)");
		goto out;
	}
	vr = enumerate(inst, &ndev, devs);
	if (vr != VK_SUCCESS && vr != VK_INCOMPLETE)
		ndev = 0;
	for (uint32_t i = 0; i < ndev && *n < max; i++) {
		VkPhysicalDeviceProperties p;
		props(devs[i], &p);
		if (device_to_gpu(&p, &gpus[*n]) == 0)
			(*n)++;
		else
			old++;
	}
	if (*n == 0)
		kj__seterr(note, notelen, "no Vulkan device: the loader lists %u device%s%s; set KJIT_VULKAN_ENV "
			 "(e.g. vulkan1.3)", ndev, ndev == 1 ? "" : "s",
			 old ? " (only Vulkan 1.0, below vulkan1.1)" : "");
out:
	if (inst != VK_NULL_HANDLE && destroy != NULL)
		destroy(inst, NULL);
	dlclose(h);
	return 0;
}

int kj__vulkan_runtime_version(char *out, size_t outlen)
{
	void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);

	out[0] = '\0';
	if (h == NULL)
		return 0;
	PFN_vkGetInstanceProcAddr gipa = loader_gipa(h);
	if (gipa != NULL) {
		uint32_t v = instance_version(gipa);
		snprintf(out, outlen, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
			 VK_API_VERSION_PATCH(v));
	}
	dlclose(h);
	return 0;
}

/*
 * vkrun.c: the Vulkan compute runner (see vkrun.h).
 *
 * Ownership: the runner owns the instance, the device, its queue and a command pool;
 * vkrun_dispatch and vkrun_copy own everything else they create (struct job) and
 * destroy it before returning, on success and on failure alike (one exit, `goto out`).
 * The CHECK macro records which call failed so the caller can print one useful line.
 *
 * Memory: each buffer is a DEVICE_LOCAL allocation (preferring a type that is not also
 * host-visible, so a discrete GPU never reads it across the bus), filled from and read
 * back into a HOST_VISIBLE | HOST_COHERENT staging buffer by vkCmdCopyBuffer.  A device
 * without such memory (lavapipe: one host-visible type) gets its buffers mapped directly
 * and no staging.  Timing: vkCmdWriteTimestamp at BOTTOM_OF_PIPE before and after each
 * dispatch (or copy), i.e. when everything before it has finished, with a
 * compute-to-compute barrier between dispatches so none overlaps the next; ticks are
 * masked to timestampValidBits and scaled by timestampPeriod.  A device without
 * timestamps on its compute queue falls back to host time over a whole round / iters,
 * and vkrun_caps says so.
 */
#define _POSIX_C_SOURCE 200809L
#include "vkrun.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define VKRUN_TIMEOUT_NS 60000000000ull /* a submission that takes a minute is hung */
#define VKRUN_MAX_DEVS 16
#define VKRUN_MAX_EXTS 512
#define VKRUN_WARMUP_MS 500.0 /* timed rounds start after this much repeated work */

struct vkrun {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    uint32_t ts_bits; /* timestampValidBits of the queue family */
    VkCommandPool pool;
    VkPhysicalDeviceMemoryProperties mem;
    struct vkrun_caps caps;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    char err[256];
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        VkResult vr_ = (call);                                                             \
        if (vr_ != VK_SUCCESS) {                                                           \
            set_err(ERRBUF, ERRLEN, "%s failed: VkResult %d", #call, (int)vr_);            \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

#define ERRBUF err
#define ERRLEN errlen

/* Pick the physical device: $KJIT_VK_DEVICE or the first with a compute queue. */
static int pick_device(struct vkrun *r, char *err, size_t errlen)
{
    VkPhysicalDevice devs[VKRUN_MAX_DEVS];
    uint32_t n = VKRUN_MAX_DEVS, want = 0, q = 0;
    const char *env = getenv("KJIT_VK_DEVICE");
    VkResult vr = vkEnumeratePhysicalDevices(r->instance, &n, devs);

    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE) {
        set_err(err, errlen, "vkEnumeratePhysicalDevices failed: VkResult %d", (int)vr);
        return -1;
    }
    if (n == 0) {
        set_err(err, errlen, "no Vulkan physical device (install mesa-vulkan-drivers for lavapipe)");
        return -1;
    }
    if (env)
        want = (uint32_t)strtoul(env, NULL, 10);
    for (uint32_t i = env ? want : 0; i < n; i++) {
        VkQueueFamilyProperties fam[16];
        uint32_t nf = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, fam);
        for (q = 0; q < nf; q++)
            if (fam[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(devs[i], &p);
                r->phys = devs[i];
                r->queue_family = q;
                r->ts_bits = fam[q].timestampValidBits;
                snprintf(r->name, sizeof r->name, "%s", p.deviceName);
                vkGetPhysicalDeviceMemoryProperties(devs[i], &r->mem);
                return 0;
            }
        if (env)
            break;
    }
    set_err(err, errlen, "no Vulkan device with a compute queue%s", env ? " at $KJIT_VK_DEVICE" : "");
    return -1;
}

/* Whether the device lists extension `name`. */
static int has_extension(VkPhysicalDevice phys, const char *name)
{
    VkExtensionProperties *ext = calloc(VKRUN_MAX_EXTS, sizeof *ext);
    uint32_t n = VKRUN_MAX_EXTS;
    int found = 0;

    if (!ext)
        return 0;
    VkResult vr = vkEnumerateDeviceExtensionProperties(phys, NULL, &n, ext);
    if (vr == VK_SUCCESS || vr == VK_INCOMPLETE)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

/* Fill r->caps from the device's properties; *want_dot: the integer dot-product
 * feature can be enabled, *dot_ext: through its extension (before Vulkan 1.3). */
static void read_caps(struct vkrun *r, int *want_dot, int *dot_ext)
{
    VkPhysicalDeviceShaderIntegerDotProductFeatures idf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceShaderIntegerDotProductProperties idp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sp};
    VkPhysicalDeviceProperties p;

    vkGetPhysicalDeviceProperties(r->phys, &p);
    *dot_ext = has_extension(r->phys, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    const int dot_known = *dot_ext || p.apiVersion >= VK_API_VERSION_1_3;
    if (dot_known)
        sp.pNext = &idp, f2.pNext = &idf;
    if (p.apiVersion >= VK_API_VERSION_1_1) {
        vkGetPhysicalDeviceProperties2(r->phys, &p2);
        vkGetPhysicalDeviceFeatures2(r->phys, &f2);
    }
    r->caps.api_version = p.apiVersion;
    r->caps.subgroup_size = sp.subgroupSize;
    r->caps.subgroup_arith = (sp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (sp.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    *want_dot = dot_known && idf.shaderIntegerDotProduct;
    r->caps.int_dot_accel = *want_dot && idp.integerDotProduct4x8BitPackedSignedAccelerated;
    r->caps.shared_bytes = p.limits.maxComputeSharedMemorySize;
    r->caps.timestamps = r->ts_bits > 0 && p.limits.timestampPeriod > 0;
    for (uint32_t i = 0; i < r->mem.memoryTypeCount; i++) /* as make_raw will choose */
        r->caps.device_local |= (r->mem.memoryTypes[i].propertyFlags & (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) == VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    r->caps.ts_period_ns = p.limits.timestampPeriod;
}

int vkrun_create(struct vkrun **out, char *err, size_t errlen)
{
    struct vkrun *r = calloc(1, sizeof *r);
    float prio = 1.0f;
    int rc = -1, want_dot = 0, dot_ext = 0;
    const char *exts[1];
    VkPhysicalDeviceShaderIntegerDotProductFeatures idf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = VK_TRUE};

    if (!r) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "kjit-vkrun",
                             .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    CHECK(vkCreateInstance(&ici, NULL, &r->instance));
    if (pick_device(r, err, errlen) != 0)
        goto out;
    read_caps(r, &want_dot, &dot_ext);
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = r->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    if (want_dot) { /* the q8 matvec's dot-product variant needs the feature enabled */
        dci.pNext = &idf;
        if (dot_ext) {
            exts[0] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
            dci.enabledExtensionCount = 1;
            dci.ppEnabledExtensionNames = exts;
        }
    }
    CHECK(vkCreateDevice(r->phys, &dci, NULL, &r->device));
    r->caps.int_dot = want_dot;
    vkGetDeviceQueue(r->device, r->queue_family, 0, &r->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = r->queue_family};
    CHECK(vkCreateCommandPool(r->device, &pci, NULL, &r->pool));
    *out = r;
    r = NULL;
    rc = 0;
out:
    vkrun_destroy(r);
    return rc;
}

void vkrun_destroy(struct vkrun *r)
{
    if (!r)
        return;
    if (r->device) {
        if (r->pool)
            vkDestroyCommandPool(r->device, r->pool, NULL);
        vkDestroyDevice(r->device, NULL);
    }
    if (r->instance)
        vkDestroyInstance(r->instance, NULL);
    free(r);
}

const char *vkrun_device_name(const struct vkrun *r) { return r ? r->name : ""; }
const struct vkrun_caps *vkrun_caps(const struct vkrun *r) { return r ? &r->caps : NULL; }
const char *vkrun_error(const struct vkrun *r) { return r ? r->err : ""; }

#undef ERRBUF
#undef ERRLEN
#define ERRBUF r->err
#define ERRLEN sizeof r->err

/* The first memory type allowed by type_bits that has every flag of `want` and none of
 * `avoid`; -1 if none. */
static int find_memory(const struct vkrun *r, uint32_t type_bits, VkMemoryPropertyFlags want,
                       VkMemoryPropertyFlags avoid)
{
    for (uint32_t i = 0; i < r->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = r->mem.memoryTypes[i].propertyFlags;
        if ((type_bits & (1u << i)) && (f & want) == want && !(f & avoid))
            return (int)i;
    }
    return -1;
}

static double now_ms(void)
{
    struct timespec ts = {0, 0};
    (void)clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail for CLOCK_MONOTONIC */
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One device buffer, its memory, and its staging twin (none where mapped directly). */
struct vbuf {
    VkBuffer buf, stage;
    VkDeviceMemory mem, stage_mem;
    void *map; /* the staging buffer's mapping, or the buffer's own (direct) */
    VkDeviceSize size;
};

/* Resources of one dispatch or copy, all destroyed by job_release. */
struct job {
    struct vbuf b[VKRUN_MAX_BUFS];
    int nbufs;
    VkShaderModule module;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;
};

static void vbuf_release(VkDevice dev, struct vbuf *v)
{
    VkDeviceMemory m = v->stage_mem ? v->stage_mem : v->mem;
    if (v->map && m)
        vkUnmapMemory(dev, m);
    vkDestroyBuffer(dev, v->stage, NULL); /* VK_NULL_HANDLE is a no-op for both */
    vkFreeMemory(dev, v->stage_mem, NULL);
    vkDestroyBuffer(dev, v->buf, NULL);
    vkFreeMemory(dev, v->mem, NULL);
}

static void job_release(struct vkrun *r, struct job *j)
{
    VkDevice dev = r->device;
    if (j->cmd || j->fence)
        vkQueueWaitIdle(r->queue); /* nothing may be in flight when resources go */
    /* destroying VK_NULL_HANDLE is a no-op for every one of these */
    vkDestroyQueryPool(dev, j->queries, NULL);
    vkDestroyFence(dev, j->fence, NULL);
    if (j->cmd)
        vkFreeCommandBuffers(dev, r->pool, 1, &j->cmd);
    vkDestroyDescriptorPool(dev, j->dpool, NULL);
    vkDestroyPipeline(dev, j->pipeline, NULL);
    vkDestroyPipelineLayout(dev, j->layout, NULL);
    vkDestroyDescriptorSetLayout(dev, j->dsl, NULL);
    vkDestroyShaderModule(dev, j->module, NULL);
    for (int i = 0; i < VKRUN_MAX_BUFS; i++)
        vbuf_release(dev, &j->b[i]);
}

/* A buffer of `size` bytes bound to new device (device != 0) or staging memory;
 * *host_visible: that memory can be mapped. */
static int make_raw(struct vkrun *r, VkDeviceSize size, VkBufferUsageFlags usage, int device,
                    VkBuffer *buf, VkDeviceMemory *mem, int *host_visible)
{
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryRequirements req;
    int type;

    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = usage,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    CHECK(vkCreateBuffer(r->device, &bci, NULL, buf));
    vkGetBufferMemoryRequirements(r->device, *buf, &req);
    if (device) { /* device-only memory first; host-visible device memory; any coherent */
        type = find_memory(r, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
        if (type < 0)
            type = find_memory(r, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
        if (type < 0)
            type = find_memory(r, req.memoryTypeBits, hv, 0);
    } else { /* staging: cached reads back faster where offered */
        type = find_memory(r, req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
        if (type < 0)
            type = find_memory(r, req.memoryTypeBits, hv, 0);
    }
    if (type < 0) {
        snprintf(r->err, sizeof r->err, "no suitable %s memory type for a buffer", device ? "device" : "staging");
        goto out;
    }
    *host_visible = (r->mem.memoryTypes[type].propertyFlags & hv) == hv;
    if (getenv("KJIT_VK_VERBOSE")) /* which memory each buffer got, for reading figures */
        fprintf(stderr, "vkrun: %s buffer of %llu bytes in memory type %d (flags 0x%x)\n", device ? "device"
                : "staging", (unsigned long long)size, type, (unsigned)r->mem.memoryTypes[type].propertyFlags);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)type};
    CHECK(vkAllocateMemory(r->device, &mai, NULL, mem));
    CHECK(vkBindBufferMemory(r->device, *buf, *mem, 0));
    return 0;
out:
    return -1;
}

/* A buffer of `bytes` (rounded up to 4), staged unless its memory is host-visible;
 * data (may be NULL) copied into the host side. */
static int make_buffer(struct vkrun *r, struct vbuf *v, size_t bytes, const void *data)
{
    const VkBufferUsageFlags use = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    int direct = 0, hv = 0;

    v->size = bytes ? (bytes + 3) & ~(VkDeviceSize)3 : 4;
    if (make_raw(r, v->size, use, 1, &v->buf, &v->mem, &direct) != 0)
        return -1;
    if (direct) { /* lavapipe and other host-memory devices */
        CHECK(vkMapMemory(r->device, v->mem, 0, VK_WHOLE_SIZE, 0, &v->map));
    } else {
        if (make_raw(r, v->size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     0, &v->stage, &v->stage_mem, &hv) != 0)
            return -1;
        CHECK(vkMapMemory(r->device, v->stage_mem, 0, VK_WHOLE_SIZE, 0, &v->map));
    }
    if (data)
        memcpy(v->map, data, bytes);
    return 0;
out:
    return -1;
}

/* The job's command buffer and fence. */
static int make_cmd(struct vkrun *r, struct job *j)
{
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = r->pool, .commandBufferCount = 1};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK(vkAllocateCommandBuffers(r->device, &cai, &j->cmd));
    CHECK(vkCreateFence(r->device, &fci, NULL, &j->fence));
    return 0;
out:
    return -1;
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags sa,
                    VkPipelineStageFlags dst, VkAccessFlags da)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Submit the job's command buffer and wait for it. */
static int submit_wait(struct vkrun *r, struct job *j)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &j->cmd};
    CHECK(vkQueueSubmit(r->queue, 1, &si, j->fence));
    CHECK(vkWaitForFences(r->device, 1, &j->fence, VK_TRUE, VKRUN_TIMEOUT_NS));
    CHECK(vkResetFences(r->device, 1, &j->fence));
    return 0;
out:
    return -1;
}

/* Staging to device (up != 0) or back (only buffers with read_back[i]), then wait. */
static int transfer(struct vkrun *r, struct job *j, int up, const struct vkrun_buf *bufs)
{
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    int any = 0;

    for (int i = 0; i < j->nbufs; i++)
        any |= j->b[i].stage != VK_NULL_HANDLE && (up || bufs[i].read_back);
    if (!any)
        return 0;
    CHECK(vkResetCommandBuffer(j->cmd, 0));
    CHECK(vkBeginCommandBuffer(j->cmd, &cbi));
    if (!up)
        barrier(j->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    for (int i = 0; i < j->nbufs; i++) {
        VkBufferCopy bc = {.size = j->b[i].size};
        if (!j->b[i].stage || !(up || bufs[i].read_back))
            continue;
        vkCmdCopyBuffer(j->cmd, up ? j->b[i].stage : j->b[i].buf, up ? j->b[i].buf : j->b[i].stage, 1, &bc);
    }
    if (up)
        barrier(j->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    else
        barrier(j->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK(vkEndCommandBuffer(j->cmd));
    return submit_wait(r, j);
out:
    return -1;
}

static int make_pipeline(struct vkrun *r, struct job *j, const uint8_t *spirv, size_t len,
                         size_t push_bytes)
{
    VkDescriptorSetLayoutBinding bind[VKRUN_MAX_BUFS];
    for (int i = 0; i < j->nbufs; i++)
        bind[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                                 .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 .descriptorCount = 1,
                                                 .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = len,
                                    .pCode = (const uint32_t *)(const void *)spirv};
    CHECK(vkCreateShaderModule(r->device, &smi, NULL, &j->module));
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = (uint32_t)j->nbufs,
                                           .pBindings = bind};
    CHECK(vkCreateDescriptorSetLayout(r->device, &dli, NULL, &j->dsl));
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                               .size = (uint32_t)push_bytes};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &j->dsl,
                                      .pushConstantRangeCount = push_bytes ? 1 : 0,
                                      .pPushConstantRanges = &pcr};
    CHECK(vkCreatePipelineLayout(r->device, &pli, NULL, &j->layout));
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = j->module,
                  .pName = "main"},
        .layout = j->layout};
    CHECK(vkCreateComputePipelines(r->device, VK_NULL_HANDLE, 1, &cpi, NULL, &j->pipeline));
    return 0;
out:
    return -1;
}

/* The descriptor set binding buffer i to binding i. */
static int make_set(struct vkrun *r, struct job *j)
{
    VkDescriptorBufferInfo info[VKRUN_MAX_BUFS];
    VkWriteDescriptorSet wr[VKRUN_MAX_BUFS];
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = (uint32_t)j->nbufs};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    CHECK(vkCreateDescriptorPool(r->device, &dpi, NULL, &j->dpool));
    VkDescriptorSetAllocateInfo dsa = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = j->dpool,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &j->dsl};
    CHECK(vkAllocateDescriptorSets(r->device, &dsa, &j->set));
    for (int i = 0; i < j->nbufs; i++) {
        info[i] = (VkDescriptorBufferInfo){.buffer = j->b[i].buf, .range = VK_WHOLE_SIZE};
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = j->set,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &info[i]};
    }
    vkUpdateDescriptorSets(r->device, (uint32_t)j->nbufs, wr, 0, NULL);
    return 0;
out:
    return -1;
}

/* What one timed unit of work is: a dispatch of the job's pipeline, or a copy of
 * buffer 0 into buffer 1. */
struct work {
    int copy;
    const void *push;
    size_t push_bytes;
    const uint32_t *groups;
};

static void record_work(struct job *j, const struct work *w)
{
    if (w->copy) {
        VkBufferCopy bc = {.size = j->b[0].size};
        vkCmdCopyBuffer(j->cmd, j->b[0].buf, j->b[1].buf, 1, &bc);
        return;
    }
    vkCmdBindPipeline(j->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, j->pipeline);
    vkCmdBindDescriptorSets(j->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, j->layout, 0, 1, &j->set, 0, NULL);
    if (w->push_bytes)
        vkCmdPushConstants(j->cmd, j->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)w->push_bytes,
                           w->push);
    vkCmdDispatch(j->cmd, w->groups[0], w->groups[1], w->groups[2]);
}

/* Record `iters` units of work (timestamps around each when ts), each after a barrier
 * that orders it behind the one before. */
static int record_round(struct vkrun *r, struct job *j, const struct work *w, int iters, int ts)
{
    const VkPipelineStageFlags st = w->copy ? VK_PIPELINE_STAGE_TRANSFER_BIT : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    const VkAccessFlags rw = w->copy ? VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT
                                     : VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};

    CHECK(vkResetCommandBuffer(j->cmd, 0));
    CHECK(vkBeginCommandBuffer(j->cmd, &cbi));
    if (ts)
        vkCmdResetQueryPool(j->cmd, j->queries, 0, 2u * (uint32_t)iters);
    for (int i = 0; i < iters; i++) {
        if (i)
            barrier(j->cmd, st, rw, st, rw);
        if (ts)
            vkCmdWriteTimestamp(j->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, j->queries, 2u * (uint32_t)i);
        record_work(j, w);
        if (ts)
            vkCmdWriteTimestamp(j->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, j->queries, 2u * (uint32_t)i + 1);
    }
    CHECK(vkEndCommandBuffer(j->cmd));
    return 0;
out:
    return -1;
}

/* Warm-up rounds for VKRUN_WARMUP_MS, then `runs` timed rounds of `iters`: ms[k] = round k's median
 * time of one unit (GPU timestamps, else host time / iters), sorted ascending. */
static int time_rounds(struct vkrun *r, struct job *j, const struct work *w, int iters, int runs,
                       double *ms)
{
    uint64_t *stamp = NULL;
    double t[VKRUN_MAX_ITERS];
    const int ts = r->caps.timestamps;
    const uint64_t mask = r->ts_bits >= 64 ? ~0ull : (1ull << r->ts_bits) - 1;
    int rc = -1;

    if (ts) {
        VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                     .queryCount = 2u * (uint32_t)iters};
        CHECK(vkCreateQueryPool(r->device, &qpi, NULL, &j->queries));
        if (!(stamp = calloc(2u * (size_t)iters, sizeof *stamp))) {
            snprintf(r->err, sizeof r->err, "out of memory");
            goto out;
        }
    }
    if (record_round(r, j, w, iters, ts) != 0)
        goto out;
    /* warm-up by time: on the H100 the first few hundred ms of rounds ran at half speed */
    for (double t0 = now_ms(); now_ms() - t0 < VKRUN_WARMUP_MS;)
        if (submit_wait(r, j) != 0)
            goto out;
    for (int k = 0; k < runs; k++) {
        double t0 = now_ms();
        if (submit_wait(r, j) != 0)
            goto out;
        double host = (now_ms() - t0) / iters;
        if (!ts) {
            ms[k] = host;
            continue;
        }
        CHECK(vkGetQueryPoolResults(r->device, j->queries, 0, 2u * (uint32_t)iters,
                                    2u * (size_t)iters * sizeof *stamp, stamp, sizeof *stamp,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        for (int i = 0; i < iters; i++)
            t[i] = (double)((stamp[2 * i + 1] - stamp[2 * i]) & mask) * r->caps.ts_period_ns * 1e-6;
        qsort(t, (size_t)iters, sizeof t[0], cmp_double);
        ms[k] = t[iters / 2];
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    rc = 0;
out:
    free(stamp);
    return rc;
}

int vkrun_dispatch(struct vkrun *r, const uint8_t *spirv, size_t len, struct vkrun_buf *bufs,
                   int nbufs, const void *push, size_t push_bytes, const uint32_t groups[3],
                   int iters, int runs, double *ms)
{
    struct job j;
    const struct work w = {0, push, push_bytes, groups};
    int rc = -1;

    if (!r)
        return -1;
    memset(&j, 0, sizeof j);
    r->err[0] = '\0';
    if (!spirv || len == 0 || len % 4 || nbufs < 1 || nbufs > VKRUN_MAX_BUFS ||
        push_bytes > VKRUN_MAX_PUSH || push_bytes % 4 ||
        (ms && (iters < 1 || iters > VKRUN_MAX_ITERS || runs < 1 || runs > VKRUN_MAX_RUNS))) {
        snprintf(r->err, sizeof r->err, "vkrun_dispatch: bad arguments");
        return -1;
    }
    j.nbufs = nbufs;
    for (int i = 0; i < nbufs; i++)
        if (make_buffer(r, &j.b[i], bufs[i].bytes, bufs[i].data) != 0)
            goto out;
    if (make_pipeline(r, &j, spirv, len, push_bytes) != 0 || make_set(r, &j) != 0 ||
        make_cmd(r, &j) != 0 || transfer(r, &j, 1, bufs) != 0)
        goto out;
    /* the checked run: once, then the results read back */
    if (record_round(r, &j, &w, 1, 0) != 0 || submit_wait(r, &j) != 0 || transfer(r, &j, 0, bufs) != 0)
        goto out;
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].read_back)
            memcpy(bufs[i].data, j.b[i].map, bufs[i].bytes);
    if (ms && time_rounds(r, &j, &w, iters, runs, ms) != 0)
        goto out;
    rc = 0;
out:
    job_release(r, &j);
    return rc;
}

int vkrun_copy(struct vkrun *r, size_t bytes, int iters, int runs, double *ms)
{
    struct job j;
    const struct work w = {1, NULL, 0, NULL};
    int rc = -1;

    if (!r)
        return -1;
    memset(&j, 0, sizeof j);
    r->err[0] = '\0';
    if (bytes == 0 || bytes % 4 || !ms || iters < 1 || iters > VKRUN_MAX_ITERS || runs < 1 ||
        runs > VKRUN_MAX_RUNS) {
        snprintf(r->err, sizeof r->err, "vkrun_copy: bad arguments");
        return -1;
    }
    j.nbufs = 2;
    if (make_buffer(r, &j.b[0], bytes, NULL) != 0 || make_buffer(r, &j.b[1], bytes, NULL) != 0 ||
        make_cmd(r, &j) != 0)
        goto out;
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(j.cmd, &cbi)); /* a real pattern in the source, not zeros */
    vkCmdFillBuffer(j.cmd, j.b[0].buf, 0, VK_WHOLE_SIZE, 0x3f800000u);
    barrier(j.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    CHECK(vkEndCommandBuffer(j.cmd));
    if (submit_wait(r, &j) != 0 || time_rounds(r, &j, &w, iters, runs, ms) != 0)
        goto out;
    rc = 0;
out:
    job_release(r, &j);
    return rc;
}

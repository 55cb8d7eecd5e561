/*
 * vkrun.c: the Vulkan compute runner (see vkrun.h).
 *
 * Ownership: the runner owns the instance, the device, its queue and a command pool;
 * vkrun_dispatch owns everything else it creates and destroys it before returning, on
 * success and on failure alike (one exit, `goto out`).  The CHECK macro records which
 * call failed so the caller can print one useful line.
 */
#define _POSIX_C_SOURCE 200809L
#include "vkrun.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define VKRUN_TIMEOUT_NS 60000000000ull /* a dispatch that takes a minute is hung */
#define VKRUN_MAX_ITERS 1000

struct vkrun {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool pool;
    VkPhysicalDeviceMemoryProperties mem;
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
    VkPhysicalDevice devs[16];
    uint32_t n = 16, want = 0, q = 0;
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

int vkrun_create(struct vkrun **out, char *err, size_t errlen)
{
    struct vkrun *r = calloc(1, sizeof *r);
    float prio = 1.0f;
    int rc = -1;

    if (!r) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "kjit-vkrun",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    CHECK(vkCreateInstance(&ici, NULL, &r->instance));
    if (pick_device(r, err, errlen) != 0)
        goto out;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = r->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    CHECK(vkCreateDevice(r->phys, &dci, NULL, &r->device));
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
const char *vkrun_error(const struct vkrun *r) { return r ? r->err : ""; }

#undef ERRBUF
#undef ERRLEN
#define ERRBUF r->err
#define ERRLEN sizeof r->err

static int find_memory(const struct vkrun *r, uint32_t type_bits, uint32_t *index)
{
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < r->mem.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (r->mem.memoryTypes[i].propertyFlags & want) == want) {
            *index = i;
            return 0;
        }
    return -1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Resources of one dispatch, all destroyed by dispatch_release. */
struct dispatch {
    VkBuffer buf[VKRUN_MAX_BUFS];
    VkDeviceMemory mem[VKRUN_MAX_BUFS];
    void *map[VKRUN_MAX_BUFS];
    VkShaderModule module;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool dpool;
    VkCommandBuffer cmd;
    VkFence fence;
};

static void dispatch_release(struct vkrun *r, struct dispatch *d)
{
    VkDevice dev = r->device;
    if (d->fence)
        vkDestroyFence(dev, d->fence, NULL);
    if (d->cmd)
        vkFreeCommandBuffers(dev, r->pool, 1, &d->cmd);
    if (d->dpool)
        vkDestroyDescriptorPool(dev, d->dpool, NULL);
    if (d->pipeline)
        vkDestroyPipeline(dev, d->pipeline, NULL);
    if (d->layout)
        vkDestroyPipelineLayout(dev, d->layout, NULL);
    if (d->dsl)
        vkDestroyDescriptorSetLayout(dev, d->dsl, NULL);
    if (d->module)
        vkDestroyShaderModule(dev, d->module, NULL);
    for (int i = 0; i < VKRUN_MAX_BUFS; i++) {
        if (d->map[i])
            vkUnmapMemory(dev, d->mem[i]);
        if (d->buf[i])
            vkDestroyBuffer(dev, d->buf[i], NULL);
        if (d->mem[i])
            vkFreeMemory(dev, d->mem[i], NULL);
    }
}

/* Create buffer i, bind host-visible memory, map it and upload the data. */
static int make_buffer(struct vkrun *r, struct dispatch *d, int i, const struct vkrun_buf *b)
{
    VkDeviceSize size = (b->bytes + 3) & ~(VkDeviceSize)3;
    VkMemoryRequirements req;
    uint32_t type;

    if (size == 0)
        size = 4;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    CHECK(vkCreateBuffer(r->device, &bci, NULL, &d->buf[i]));
    vkGetBufferMemoryRequirements(r->device, d->buf[i], &req);
    if (find_memory(r, req.memoryTypeBits, &type) != 0) {
        snprintf(r->err, sizeof r->err, "no host-visible coherent memory type for buffer %d", i);
        goto out;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    CHECK(vkAllocateMemory(r->device, &mai, NULL, &d->mem[i]));
    CHECK(vkBindBufferMemory(r->device, d->buf[i], d->mem[i], 0));
    CHECK(vkMapMemory(r->device, d->mem[i], 0, VK_WHOLE_SIZE, 0, &d->map[i]));
    memcpy(d->map[i], b->data, b->bytes);
    return 0;
out:
    return -1;
}

static int make_pipeline(struct vkrun *r, struct dispatch *d, const uint8_t *spirv, size_t len,
                         int nbufs, size_t push_bytes)
{
    VkDescriptorSetLayoutBinding bind[VKRUN_MAX_BUFS];
    for (int i = 0; i < nbufs; i++)
        bind[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                                 .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 .descriptorCount = 1,
                                                 .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = len,
                                    .pCode = (const uint32_t *)(const void *)spirv};
    CHECK(vkCreateShaderModule(r->device, &smi, NULL, &d->module));
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = (uint32_t)nbufs,
                                           .pBindings = bind};
    CHECK(vkCreateDescriptorSetLayout(r->device, &dli, NULL, &d->dsl));
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                               .size = (uint32_t)push_bytes};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &d->dsl,
                                      .pushConstantRangeCount = push_bytes ? 1 : 0,
                                      .pPushConstantRanges = &pcr};
    CHECK(vkCreatePipelineLayout(r->device, &pli, NULL, &d->layout));
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = d->module,
                  .pName = "main"},
        .layout = d->layout};
    CHECK(vkCreateComputePipelines(r->device, VK_NULL_HANDLE, 1, &cpi, NULL, &d->pipeline));
    return 0;
out:
    return -1;
}

static int record(struct vkrun *r, struct dispatch *d, int nbufs, const void *push,
                  size_t push_bytes, const uint32_t groups[3])
{
    VkDescriptorSet set;
    VkDescriptorBufferInfo info[VKRUN_MAX_BUFS];
    VkWriteDescriptorSet wr[VKRUN_MAX_BUFS];
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = (uint32_t)nbufs};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    CHECK(vkCreateDescriptorPool(r->device, &dpi, NULL, &d->dpool));
    VkDescriptorSetAllocateInfo dsa = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = d->dpool,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &d->dsl};
    CHECK(vkAllocateDescriptorSets(r->device, &dsa, &set));
    for (int i = 0; i < nbufs; i++) {
        info[i] = (VkDescriptorBufferInfo){.buffer = d->buf[i], .range = VK_WHOLE_SIZE};
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = set,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &info[i]};
    }
    vkUpdateDescriptorSets(r->device, (uint32_t)nbufs, wr, 0, NULL);
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = r->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    CHECK(vkAllocateCommandBuffers(r->device, &cai, &d->cmd));
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(d->cmd, &cbi));
    vkCmdBindPipeline(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline);
    vkCmdBindDescriptorSets(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &set, 0, NULL);
    if (push_bytes)
        vkCmdPushConstants(d->cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)push_bytes, push);
    vkCmdDispatch(d->cmd, groups[0], groups[1], groups[2]);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(d->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
    CHECK(vkEndCommandBuffer(d->cmd));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK(vkCreateFence(r->device, &fci, NULL, &d->fence));
    return 0;
out:
    return -1;
}

int vkrun_dispatch(struct vkrun *r, const uint8_t *spirv, size_t len, struct vkrun_buf *bufs,
                   int nbufs, const void *push, size_t push_bytes, const uint32_t groups[3],
                   int iters, double *median_ms)
{
    struct dispatch d;
    double times[VKRUN_MAX_ITERS];
    int rc = -1;

    if (!r)
        return -1;
    memset(&d, 0, sizeof d);
    r->err[0] = '\0';
    if (!spirv || len == 0 || len % 4 || nbufs < 1 || nbufs > VKRUN_MAX_BUFS ||
        push_bytes > VKRUN_MAX_PUSH || push_bytes % 4 || iters < 1 || iters > VKRUN_MAX_ITERS) {
        snprintf(r->err, sizeof r->err, "vkrun_dispatch: bad arguments");
        return -1;
    }
    for (int i = 0; i < nbufs; i++)
        if (make_buffer(r, &d, i, &bufs[i]) != 0)
            goto out;
    if (make_pipeline(r, &d, spirv, len, nbufs, push_bytes) != 0 ||
        record(r, &d, nbufs, push, push_bytes, groups) != 0)
        goto out;
    for (int it = 0; it < iters; it++) {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &d.cmd};
        double t0 = now_ms();
        CHECK(vkQueueSubmit(r->queue, 1, &si, d.fence));
        CHECK(vkWaitForFences(r->device, 1, &d.fence, VK_TRUE, VKRUN_TIMEOUT_NS));
        times[it] = now_ms() - t0;
        CHECK(vkResetFences(r->device, 1, &d.fence));
    }
    for (int i = 0; i < nbufs; i++)
        if (bufs[i].read_back)
            memcpy(bufs[i].data, d.map[i], bufs[i].bytes);
    if (median_ms) {
        qsort(times, (size_t)iters, sizeof times[0], cmp_double);
        *median_ms = times[iters / 2];
    }
    rc = 0;
out:
    if (d.cmd || d.fence)
        vkQueueWaitIdle(r->queue); /* nothing may be in flight when resources go */
    dispatch_release(r, &d);
    return rc;
}

#include "vulkan/pipeline.h"

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/log.h"
#include "vulkan/fault.h"
#include "vulkan/shaders.h"

namespace ember::vulkan {

Result<ShaderModule> ShaderModule::create(const Device& device, std::span<const uint32_t> spirv) {
    VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = spirv.size() * 4;
    ci.pCode = spirv.data();
    VkShaderModule m = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateShaderModule(device.handle(), &ci, nullptr, &m), "vkCreateShaderModule");
    return ShaderModule(device.handle(), m);
}

Result<DescriptorSetLayout> DescriptorSetLayout::create(const Device& device, uint32_t n) {
    std::vector<VkDescriptorSetLayoutBinding> b(n);
    for (uint32_t i = 0; i < n; ++i) {
        b[i].binding = i;
        b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        b[i].descriptorCount = 1;
        b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    ci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    ci.bindingCount = n;
    ci.pBindings = b.data();
    VkDescriptorSetLayout l = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateDescriptorSetLayout(device.handle(), &ci, nullptr, &l),
                 "vkCreateDescriptorSetLayout");
    return DescriptorSetLayout(device.handle(), l);
}

Result<PipelineLayout> PipelineLayout::create(const Device& device,
                                              VkDescriptorSetLayout set_layout,
                                              uint32_t push_bytes) {
    VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    ci.setLayoutCount = 1;
    ci.pSetLayouts = &set_layout;
    ci.pushConstantRangeCount = push_bytes ? 1 : 0;
    ci.pPushConstantRanges = &pr;
    VkPipelineLayout l = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreatePipelineLayout(device.handle(), &ci, nullptr, &l),
                 "vkCreatePipelineLayout");
    return PipelineLayout(device.handle(), l);
}

std::filesystem::path pipeline_cache_path(const Adapter& a) {
    std::filesystem::path dir;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
        dir = x;
    } else if (const char* h = std::getenv("HOME"); h && *h) {
        dir = std::filesystem::path(h) / ".cache";
    } else {
        return {};
    }
    char name[160];
    std::string uuid;
    static const char* digits = "0123456789abcdef";
    for (uint8_t b : a.props.pipelineCacheUUID) {
        uuid += digits[b >> 4];
        uuid += digits[b & 15];
    }
    std::snprintf(name, sizeof name, "pipelines-%04x-%04x-%s-%08x.bin", a.props.vendorID,
                  a.props.deviceID, uuid.c_str(), a.props.driverVersion);
    return dir / "ember" / name;
}

Result<PipelineCache> PipelineCache::create(const Device& device, std::filesystem::path file) {
    std::vector<char> data;
    if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (in) data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // The driver checks the header (vendor, device, cache UUID) and ignores foreign data.
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = data.size();
    ci.pInitialData = data.empty() ? nullptr : data.data();
    VkPipelineCache c = VK_NULL_HANDLE;
    VkResult r = vkCreatePipelineCache(device.handle(), &ci, nullptr, &c);
    if (r != VK_SUCCESS && !data.empty()) {
        EMBER_LOG_WARN("vulkan: ignoring unusable pipeline cache %s", file.string().c_str());
        ci.initialDataSize = 0;
        ci.pInitialData = nullptr;
        data.clear();
        r = vkCreatePipelineCache(device.handle(), &ci, nullptr, &c);
    }
    if (r != VK_SUCCESS) return vk_error(r, "vkCreatePipelineCache");
    PipelineCache pc(device.handle(), c);
    pc.m_file = std::move(file);
    pc.m_loaded = !data.empty();
    return pc;
}

Status PipelineCache::save() const {
    if (m_file.empty()) return {};
    size_t size = 0;
    EMBER_VK_TRY(vkGetPipelineCacheData(device(), handle(), &size, nullptr),
                 "vkGetPipelineCacheData");
    std::vector<char> data(size);
    EMBER_VK_TRY(vkGetPipelineCacheData(device(), handle(), &size, data.data()),
                 "vkGetPipelineCacheData");
    std::error_code ec;
    std::filesystem::create_directories(m_file.parent_path(), ec);
    if (ec)
        return make_error("vulkan.cache_write",
                          "cannot create " + m_file.parent_path().string() + ": " + ec.message());
    auto tmp = m_file;
    tmp += ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(data.data(), std::streamsize(size));
        if (!out) return make_error("vulkan.cache_write", "cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, m_file, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        return make_error("vulkan.cache_write",
                          "cannot rename pipeline cache to " + m_file.string());
    }
    return {};
}

Result<Pipeline> Pipeline::create(const Device& device, VkPipelineCache cache,
                                  VkShaderModule module, VkPipelineLayout layout,
                                  const std::vector<uint32_t>& constants, bool* cache_hit) {
    std::vector<VkSpecializationMapEntry> entries;
    for (uint32_t i = 0; i < constants.size(); ++i)
        entries.push_back({i, uint32_t(i * sizeof(uint32_t)), sizeof(uint32_t)});
    VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(),
                              constants.size() * sizeof(uint32_t), constants.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &spec;
    ci.layout = layout;
    // Creation feedback tells whether the cache served the pipeline (the device is created for
    // Vulkan 1.2, so it is the extension even where 1.3 has it in core).
    VkPipelineCreationFeedback fb{};
    VkPipelineCreationFeedbackCreateInfo fci{
        VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
    fci.pPipelineCreationFeedback = &fb;
    if (device.adapter().has_creation_feedback) ci.pNext = &fci;
    VkPipeline p = VK_NULL_HANDLE;
    EMBER_VK_TRY(
        EMBER_FAULT_OR(Pipeline, device.handle(),
                       vkCreateComputePipelines(device.handle(), cache, 1, &ci, nullptr, &p)),
        "vkCreateComputePipelines");
    if (cache_hit)
        *cache_hit = (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
                     (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT);
    return Pipeline(device.handle(), p);
}

Result<std::unique_ptr<Pipelines>> Pipelines::create(const Device& device, bool use_disk_cache) {
    std::unique_ptr<Pipelines> p(new Pipelines());
    p->m_device = &device;
    EMBER_ASSIGN_OR_RETURN(
        p->m_cache,
        PipelineCache::create(device, use_disk_cache ? pipeline_cache_path(device.adapter())
                                                     : std::filesystem::path()));
    return p;
}

Pipelines::~Pipelines() {
    auto st = save_cache();
    if (!st.ok()) EMBER_LOG_WARN("vulkan: %s", st.error().message.c_str());
}

Status Pipelines::save_cache() {
    std::lock_guard lock(m_mutex);
    if (!m_dirty) return {};
    m_dirty = false;
    return m_cache.save();
}

Result<const Kernel*> Pipelines::get(const std::string& shader, uint32_t n_bindings,
                                     uint32_t push_bytes, uint32_t workgroup_size,
                                     const SpecConstants& extra) {
    std::lock_guard lock(m_mutex);
    std::vector<uint32_t> constants{workgroup_size};
    constants.insert(constants.end(), extra.begin(), extra.end());
    std::string key = shader;
    for (uint32_t c : constants) {
        key += '/';
        key += std::to_string(c);
    }
    if (auto it = m_kernels.find(key); it != m_kernels.end()) return it->second.get();
    auto spirv = find_shader(shader);
    if (spirv.empty())
        return make_error("vulkan.no_shader", "no embedded shader named '" + shader + "'");
    auto k = std::make_unique<Kernel>();
    EMBER_ASSIGN_OR_RETURN(k->set_layout, DescriptorSetLayout::create(*m_device, n_bindings));
    EMBER_ASSIGN_OR_RETURN(k->layout,
                           PipelineLayout::create(*m_device, k->set_layout.handle(), push_bytes));
    EMBER_ASSIGN_OR_RETURN(ShaderModule module, ShaderModule::create(*m_device, spirv));
    bool hit = false;
    auto pipeline = Pipeline::create(*m_device, m_cache.handle(), module.handle(),
                                     k->layout.handle(), constants, &hit);
    if (!pipeline.ok()) {
        Error e = pipeline.take_error();
        return make_error(e.code, "pipeline of shader '" + key + "': " + e.message);
    }
    k->pipeline = std::move(pipeline).value();
    k->n_bindings = n_bindings;
    k->push_bytes = push_bytes;
    k->workgroup_size = workgroup_size;
    ++m_created;
    if (hit) ++m_cache_hits;
    m_dirty = true;
    const Kernel* out = k.get();
    m_kernels.emplace(key, std::move(k));
    return out;
}

}  // namespace ember::vulkan

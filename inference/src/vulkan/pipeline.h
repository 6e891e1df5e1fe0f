// Compute pipelines built from the embedded shaders, and the on-disk pipeline cache.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vulkan/device.h"

namespace ember::vulkan {

class ShaderModule : public Owned<VkShaderModule> {
public:
    using Owned::Owned;
    static Result<ShaderModule> create(const Device& device, std::span<const uint32_t> spirv);
};

// A set layout of n storage buffers at bindings 0..n-1, written with push descriptors.
class DescriptorSetLayout : public Owned<VkDescriptorSetLayout> {
public:
    using Owned::Owned;
    static Result<DescriptorSetLayout> create(const Device& device, uint32_t n_bindings);
};

class PipelineLayout : public Owned<VkPipelineLayout> {
public:
    using Owned::Owned;
    static Result<PipelineLayout> create(const Device& device, VkDescriptorSetLayout set_layout,
                                         uint32_t push_constant_bytes);
};

// VkPipelineCache persisted in $XDG_CACHE_HOME/ember (or ~/.cache/ember), one file per device
// and driver version.
class PipelineCache : public Owned<VkPipelineCache> {
public:
    using Owned::Owned;
    // Loads the file if it exists; a missing or unreadable file starts an empty cache.
    static Result<PipelineCache> create(const Device& device, std::filesystem::path file);
    // Writes the cache atomically (temporary file + rename).
    Status save() const;
    const std::filesystem::path& file() const { return m_file; }
    bool loaded_from_disk() const { return m_loaded; }

private:
    std::filesystem::path m_file;
    bool m_loaded = false;
};

// Where the pipeline cache of a device lives ("" when no cache directory can be found).
std::filesystem::path pipeline_cache_path(const Adapter& adapter);

class Pipeline : public Owned<VkPipeline> {
public:
    using Owned::Owned;
    static Result<Pipeline> create(const Device& device, VkPipelineCache cache,
                                   VkShaderModule module, VkPipelineLayout layout,
                                   const std::vector<uint32_t>& spec, bool* cache_hit);
};

// A ready-to-dispatch kernel.
struct Kernel {
    DescriptorSetLayout set_layout;
    PipelineLayout layout;
    Pipeline pipeline;
    uint32_t n_bindings = 0;
    uint32_t push_bytes = 0;
    uint32_t workgroup_size = 0;
};

// Kernels created on first use and kept for the device's lifetime.
class Pipelines {
public:
    static Result<std::unique_ptr<Pipelines>> create(const Device& device, bool use_disk_cache);
    ~Pipelines();
    // Specialization constant 0 is the workgroup size; `extra` are constants 1, 2, ...
    Result<const Kernel*> get(const std::string& shader, uint32_t n_bindings, uint32_t push_bytes,
                              uint32_t workgroup_size, std::initializer_list<uint32_t> extra = {});
    Status save_cache();
    // Pipelines built so far, and how many the driver reported as taken from the cache.
    int n_created() const { return m_created; }
    int n_cache_hits() const { return m_cache_hits; }
    const PipelineCache& cache() const { return m_cache; }

private:
    Pipelines() = default;
    const Device* m_device = nullptr;
    PipelineCache m_cache;
    std::mutex m_mutex;
    std::map<std::string, std::unique_ptr<Kernel>> m_kernels;
    int m_created = 0, m_cache_hits = 0;
    bool m_dirty = false;
};

}  // namespace ember::vulkan

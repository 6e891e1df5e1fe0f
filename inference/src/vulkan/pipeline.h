// Compute pipelines built from the embedded shaders, and the on-disk pipeline cache.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
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
// Specialization constants 1, 2, ... of a pipeline (0 is the workgroup size): a braced list,
// or of(s) for a shader's named struct of 32-bit constants in constant_id order.
class SpecConstants {
public:
    static constexpr size_t kMax = 32;
    SpecConstants() = default;
    SpecConstants(std::initializer_list<uint32_t> l) : m_n(l.size()) {
        assert(l.size() <= kMax);
        std::copy(l.begin(), l.end(), m_words.begin());
    }
    template <class S>
    static SpecConstants of(const S& s) {
        static_assert(sizeof(S) % 4 == 0 && sizeof(S) / 4 <= kMax &&
                      std::is_trivially_copyable_v<S>);
        SpecConstants c;
        c.m_n = sizeof(S) / 4;
        std::memcpy(c.m_words.data(), &s, sizeof(S));
        return c;
    }
    const uint32_t* begin() const { return m_words.data(); }
    const uint32_t* end() const { return m_words.data() + m_n; }

private:
    std::array<uint32_t, kMax> m_words{};
    size_t m_n = 0;
};

class Pipelines {
public:
    static Result<std::unique_ptr<Pipelines>> create(const Device& device, bool use_disk_cache);
    ~Pipelines();
    // Specialization constant 0 is the workgroup size; `extra` are constants 1, 2, ...
    Result<const Kernel*> get(const std::string& shader, uint32_t n_bindings, uint32_t push_bytes,
                              uint32_t workgroup_size, const SpecConstants& extra = {});
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

#include "vulkan/shaders.h"

namespace ember::vulkan {
namespace spirv {
struct Entry {
    const char* name;
    const unsigned char* data;
    std::size_t size;
};
extern const Entry kModules[];
}  // namespace spirv

std::span<const uint32_t> find_shader(std::string_view name) {
    for (const spirv::Entry* e = spirv::kModules; e->name; ++e)
        if (name == e->name) return {reinterpret_cast<const uint32_t*>(e->data), e->size / 4};
    return {};
}

std::vector<std::string_view> shader_names() {
    std::vector<std::string_view> out;
    for (const spirv::Entry* e = spirv::kModules; e->name; ++e) out.push_back(e->name);
    return out;
}

}  // namespace ember::vulkan

// The SPIR-V modules compiled from shaders/ at build time, by variant name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ember::vulkan {

// The module named like "matvec_q4_0_f32", or an empty span.
std::span<const uint32_t> find_shader(std::string_view name);
std::vector<std::string_view> shader_names();

}  // namespace ember::vulkan

#include "common/overrides.h"

#include <cstdlib>

namespace ember {

Overrides read_overrides() {
    auto get = [](const char* name) -> std::string {
        const char* v = std::getenv(name);
        return v ? std::string(v) : std::string();
    };
    Overrides o;
    o.no_tensor_cores = get("EMBER_VULKAN_COOPMAT") == "0";
    o.no_fused = get("EMBER_VULKAN_FUSED") == "0";
    o.validation = get("EMBER_VULKAN_VALIDATION") == "1";
    const std::string profile = get("EMBER_VULKAN_PROFILE");
    o.profile = profile == "1"      ? Overrides::Profile::Stages
                : profile == "span" ? Overrides::Profile::Span
                                    : Overrides::Profile::Off;
    o.fault = get("EMBER_FAULT");
    o.cpu_isa = get("EMBER_CPU_ISA");
    const std::string no_pack = get("EMBER_CPU_NO_PACK");
    o.cpu_no_pack = !no_pack.empty() && no_pack[0] != '0';
    return o;
}

}  // namespace ember

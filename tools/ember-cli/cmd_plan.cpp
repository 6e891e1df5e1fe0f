// devices --plan -m MODEL: the Vulkan backend's plan for the model on the chosen adapter.
#include <cstdio>

#include "args.h"
#include "common.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/context.h"
#include "vulkan/forward.h"
#endif

namespace ember::cli {

int print_vulkan_plan(const std::string& model_path, const std::string& device) {
#ifdef EMBER_HAVE_VULKAN
    auto file = gguf::File::open(model_path);
    if (!file) return fail(file.error());
    auto llama = load_llama(**file);
    if (!llama) return fail(llama.error());
    auto adapter = vulkan::Context::pick_adapter(device);
    if (!adapter) return fail(adapter.error());
    const vulkan::Plan plan = vulkan::make_plan(*adapter, read_overrides());
    std::printf("%s", vulkan::describe_plan(*llama, *adapter, plan).c_str());
    return 0;
#else
    (void)model_path;
    (void)device;
    return fail(make_error("cli.no_vulkan", "this ember-cli was built without the Vulkan backend"));
#endif
}

}  // namespace ember::cli

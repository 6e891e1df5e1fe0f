#include "common.h"

#include <fstream>
#include <sstream>

namespace ember::cli {

Result<LoadParams> load_params(const Args& args) {
    LoadParams p;
    const std::string backend = args.get_or("--backend", "auto");
    if (backend == "auto")
        p.backend = BackendKind::Auto;
    else if (backend == "cpu")
        p.backend = BackendKind::Cpu;
    else if (backend == "vulkan")
        p.backend = BackendKind::Vulkan;
    else
        return make_error("cli.bad_value",
                          "--backend must be cpu, vulkan or auto, got '" + backend + "'");
    p.device = args.get_or("--device", "");
    EMBER_ASSIGN_OR_RETURN(long long threads, args.get_int("--threads", 0, 0, 1024));
    // Without --ctx the engine's default (2048, or the model's training context if shorter);
    // one longer than the model runs is refused, naming both.
    EMBER_ASSIGN_OR_RETURN(long long ctx, args.get_int("--ctx", 0, 1, 1 << 20));
    p.n_threads = int(threads);
    p.n_ctx = int(ctx);
    EMBER_TRY(gpu_budget_params(args, p.gpu_mem_limit, p.gpu_mem_reserve, p.n_gpu_layers));
    return p;
}

Status gpu_budget_params(const Args& args, uint64_t& limit, uint64_t& reserve, int& n_gpu_layers) {
    for (auto [name, out] : {std::pair{"--gpu-mem-limit", &limit}, {"--gpu-mem-free", &reserve}}) {
        const auto v = args.get(name);
        if (!v) continue;
        auto bytes = parse_byte_size(*v);
        if (!bytes)
            return make_error("cli.bad_value", std::string(name) + ": " + bytes.error().message);
        *out = *bytes;
    }
    EMBER_ASSIGN_OR_RETURN(long long layers, args.get_int("--gpu-layers", -1, -1, 1 << 20));
    n_gpu_layers = int(layers);
    return {};
}

Result<std::unique_ptr<Model>> load_model(const Args& args) {
    EMBER_ASSIGN_OR_RETURN(std::string path, args.require("--model"));
    EMBER_ASSIGN_OR_RETURN(LoadParams p, load_params(args));
    return Model::load(path, p);
}

void add_backend_json(nlohmann::json& j, const Model& model) {
    const BackendInfo& b = model.backend();
    j["backend"] = backend_name(b.kind);
    j["device"] = b.device;
    if (!b.fallback_code.empty()) {
        j["fallback_code"] = b.fallback_code;
        j["fallback_reason"] = b.fallback_reason;
    }
    if (b.kind == BackendKind::Cpu) j["threads"] = b.n_threads;
    if (b.n_gpu_layers) {  // partial offload
        j["gpu_layers"] = b.n_gpu_layers;
        j["n_layers"] = b.n_layers;
        j["split"] = b.split;
        j["threads"] = b.n_threads;
    }
    if (b.kind == BackendKind::Vulkan) {
        const MemoryStats m = model.memory();
        j["gpu_mem_used"] = m.used;
        j["gpu_mem_budget"] = m.budget;
        j["gpu_mem_source"] = m.source;
    }
}

Result<std::string> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return make_error("cli.io", "cannot open '" + path + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) return make_error("cli.io", "cannot read '" + path + "'");
    return ss.str();
}

nlohmann::json::string_t safe_dump(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ember::cli

// Pieces shared by the commands that load a model.
#pragma once

#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ember/ember.h"

namespace ember::cli {

// Options every model-loading command accepts.
inline const std::set<std::string> kLoadOptions = {
    "--model", "--backend",       "--device",       "--threads",
    "--ctx",   "--gpu-mem-limit", "--gpu-mem-free", "--gpu-layers"};

Result<LoadParams> load_params(const Args& args);
// The GPU budget options alone (info takes them without loading).
Status gpu_budget_params(const Args& args, uint64_t& limit, uint64_t& reserve, int& n_gpu_layers);
Result<std::unique_ptr<Model>> load_model(const Args& args);
// {"backend", "device", "fallback_code", "fallback_reason", ...} of the loaded model.
void add_backend_json(nlohmann::json& j, const Model& model);
// Reads a whole file; errors name it.
Result<std::string> read_file(const std::string& path);
// JSON text of a string that may hold invalid UTF-8 (replaced, never thrown on).
nlohmann::json::string_t safe_dump(const nlohmann::json& j, int indent = -1);

}  // namespace ember::cli

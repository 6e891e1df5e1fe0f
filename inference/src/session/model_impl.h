// Internals of ember::Model shared by the session part.
#pragma once

#include <memory>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/backend.h"
#include "model/llama.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct Model::Impl {
    LoadParams params;
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<Tokenizer> tokenizer;
    LlamaModel llama;  // views into file; the backend may have released them after upload
    std::unique_ptr<BackendModel> backend;
    BackendInfo backend_info;
    ModelInfo info;
    int n_ctx = 0;
};

// The context a load or session asked for (n_ctx <= 0: default_ctx), or
// "model.context_too_long" naming both numbers where it is longer than the model runs
// (LlamaHParams::max_ctx).
Result<int> choose_context(const LlamaHParams& hp, int64_t n_ctx, int64_t default_ctx,
                           const std::string& path);

}  // namespace ember

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

}  // namespace ember

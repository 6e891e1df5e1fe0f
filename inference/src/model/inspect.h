// The one place a GGUF file's ModelInfo is worked out: ember::inspect (the header only) and
// Model::info() (a loaded model) both call it, so the two never tell a file apart differently.
#pragma once

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/llama.h"

namespace ember {

// The file's fields, the quantization label (the dominant type of the 2-D weights) and, where
// `m` is given (the engine runs the architecture), the shape; without it the shape stays zero
// but for the training context the file states.
ModelInfo describe_file(const gguf::File& f, const LlamaModel* m);

}  // namespace ember

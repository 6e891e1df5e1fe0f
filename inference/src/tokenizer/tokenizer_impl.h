// Internal: the concrete tokenizers behind Tokenizer::from_vocab.
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"

namespace ember::tok {

// v has been checked for sizes and id ranges; these apply the model's defaults.
Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(VocabData&& v);
Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(VocabData&& v);

}  // namespace ember::tok

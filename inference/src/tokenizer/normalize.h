// Unicode NFC normalization of tokenizer input (ICU), for vocabularies whose tokenizer.json
// normalizes text before pre-tokenization (Qwen's).
#pragma once

#include <string>
#include <string_view>

namespace ember::tok {

// Writes text in NFC to out and returns true, or returns false (out untouched) when text is
// already NFC, which is the common case and costs only a scan: ASCII text is never handed to
// ICU, and other text is handed to ICU's quick check before anything is copied.
// Bytes that are not valid UTF-8 are kept as they are; the valid runs between them are
// normalized on their own.
bool nfc_normalize(std::string_view text, std::string& out);

}  // namespace ember::tok

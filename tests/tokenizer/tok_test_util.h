// Helpers shared by the tokenizer tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace ember::test {

inline std::string read_file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
    auto file = gguf::File::open(path);
    if (!file.ok()) {
        ADD_FAILURE() << path << ": " << file.error().message;
        return nullptr;
    }
    auto tok = Tokenizer::from_gguf(**file);
    if (!tok.ok()) {
        ADD_FAILURE() << path << ": " << tok.error().message;
        return nullptr;
    }
    return std::move(tok).value();
}

inline Result<VocabData> load_vocab(const std::string& path) {
    auto file = gguf::File::open(path);
    if (!file.ok()) return file.take_error();
    return Tokenizer::read_vocab(**file);
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
    }
    return s;
}

// Byte-exact, printable form of a text for failure messages.
inline std::string escaped(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += char(c);
        }
    }
    return out;
}

}  // namespace ember::test

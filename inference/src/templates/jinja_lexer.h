// Tokenizer of Jinja2 templates with trim_blocks / lstrip_blocks and '-' / '+' whitespace
// control applied while lexing, as Jinja2's own lexer does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/result.h"

namespace ember::jinja {

enum class Tok : uint8_t {
    Text,        // literal template text (whitespace control already applied)
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,
    String,
    Int,
    Float,
    Op,  // operators and punctuation, text holds it
    Eof,
};

struct Token {
    Tok type = Tok::Eof;
    std::string text;  // Text, Name, String (unescaped), Op
    int64_t ival = 0;
    bool big = false;  // an Int literal beyond int64: its digits are in text
    double fval = 0;
    int line = 1;
};

Result<std::vector<Token>> lex_template(const std::string& source);

}  // namespace ember::jinja

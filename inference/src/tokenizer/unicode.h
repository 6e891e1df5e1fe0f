// UTF-8 helpers and the GPT-2 byte <-> unicode mapping used by the tokenizers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::tok {

enum class Utf8Status { Valid, Incomplete, Invalid };
struct Utf8Check {
    Utf8Status status;
    size_t len;  // Valid: the character's length; Invalid: the maximal ill-formed subpart (>= 1)
};
// Checks the character starting at s[pos] (pos < s.size()) per RFC 3629: no overlongs,
// surrogates or code points above U+10FFFF. Incomplete: a valid prefix cut off by the end.
Utf8Check utf8_check(std::string_view s, size_t pos);

// Length of the character at pos, or 1 for a byte that does not start a valid one.
inline size_t utf8_char_len(std::string_view s, size_t pos) {
    Utf8Check c = utf8_check(s, pos);
    return c.status == Utf8Status::Valid ? c.len : 1;
}

void utf8_append(std::string& out, uint32_t cp);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";         // U+2581 '▁'

// GPT-2's reversible byte -> printable code point map (printable bytes map to themselves,
// the rest to U+0100 and up), as UTF-8 strings, and its inverse.
const std::array<std::string, 256>& byte_to_unicode();
// The byte a mapped code point stands for, or -1.
int unicode_to_byte(uint32_t cp);

// Decodes the (valid) character at s[pos]; advances pos.
uint32_t utf8_decode(std::string_view s, size_t& pos);

}  // namespace ember::tok

#include "tokenizer/unicode.h"

namespace ember::tok {

Utf8Check utf8_check(std::string_view s, size_t pos) {
    const auto b0 = uint8_t(s[pos]);
    if (b0 < 0x80) return {Utf8Status::Valid, 1};
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        if (b0 == 0xE0) lo = 0xA0;  // overlong
        if (b0 == 0xED) hi = 0x9F;  // surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        if (b0 == 0xF0) lo = 0x90;  // overlong
        if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
        return {Utf8Status::Invalid, 1};
    }
    for (size_t k = 1; k < need; ++k) {
        if (pos + k >= s.size()) return {Utf8Status::Incomplete, k};
        const auto b = uint8_t(s[pos + k]);
        const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) return {Utf8Status::Invalid, k};
    }
    return {Utf8Status::Valid, need};
}

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

uint32_t utf8_decode(std::string_view s, size_t& pos) {
    const auto b0 = uint8_t(s[pos]);
    const size_t n = utf8_char_len(s, pos);
    if (n == 1) {
        ++pos;
        return b0;
    }
    uint32_t cp = b0 & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (uint8_t(s[pos + k]) & 0x3F);
    pos += n;
    return cp;
}

namespace {

struct ByteMap {
    std::array<std::string, 256> to_unicode;
    std::array<int, 324> to_byte{};  // mapped code points are all below U+0144

    ByteMap() {
        to_byte.fill(-1);
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const uint32_t cp = printable ? uint32_t(b) : next++;
            utf8_append(to_unicode[size_t(b)], cp);
            to_byte[cp] = b;
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() {
    return byte_map().to_unicode;
}

int unicode_to_byte(uint32_t cp) {
    const auto& m = byte_map().to_byte;
    return cp < m.size() ? m[cp] : -1;
}

}  // namespace ember::tok

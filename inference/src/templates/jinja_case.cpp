#include "templates/jinja_case.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <cstdint>
#include <vector>

namespace ember::jinja {
namespace {

// A decoded character, or a byte that is not part of valid UTF-8 (kept as it is).
constexpr uint32_t kRawByte = 0x80000000u;

std::vector<uint32_t> decode(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    const int32_t n = static_cast<int32_t>(s.size());
    for (int32_t i = 0; i < n;) {
        const int32_t start = i;
        UChar32 c;
        U8_NEXT(p, i, n, c);
        if (c < 0) {  // invalid: keep the first byte, retry from the next
            out.push_back(kRawByte | p[start]);
            i = start + 1;
        } else {
            out.push_back(static_cast<uint32_t>(c));
        }
    }
    return out;
}

void encode(std::string& out, uint32_t c) {
    if (c & kRawByte) {
        out += static_cast<char>(c & 0xFF);
        return;
    }
    char buf[4];
    int32_t len = 0;
    UBool err = false;
    U8_APPEND(reinterpret_cast<uint8_t*>(buf), len, 4, static_cast<UChar32>(c), err);
    out.append(buf, static_cast<size_t>(len));
}

bool has(uint32_t c, UProperty p) {
    return !(c & kRawByte) && u_hasBinaryProperty(static_cast<UChar32>(c), p);
}
bool is_cased(uint32_t c) {
    return has(c, UCHAR_CASED);
}
bool is_case_ignorable(uint32_t c) {
    return has(c, UCHAR_CASE_IGNORABLE);
}
bool is_titlecase(uint32_t c) {
    return !(c & kRawByte) && u_charType(static_cast<UChar32>(c)) == U_TITLECASE_LETTER;
}

enum class Map { Upper, Lower, Title };

// One character's full case mapping (it may become several: "ß" upper is "SS").
void map_char(std::string& out, uint32_t c, Map m) {
    if (c < 0x80) {
        char a = static_cast<char>(c);
        if (m == Map::Lower && a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
        if (m != Map::Lower && a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
        out += a;
        return;
    }
    if (c & kRawByte) {
        encode(out, c);
        return;
    }
    std::string one;
    encode(one, c);
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode err = U_ZERO_ERROR;
    // The root locale: Python's mappings are the language-independent ones.
    if (m == Map::Upper)
        icu::CaseMap::utf8ToUpper("", 0, one, sink, nullptr, err);
    else if (m == Map::Lower)
        icu::CaseMap::utf8ToLower("", 0, one, sink, nullptr, err);
    else
        icu::CaseMap::utf8ToTitle("", U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_BREAK_ADJUSTMENT,
                                  nullptr, one, sink, nullptr, err);
    if (U_FAILURE(err)) out += one;
}

// Python's final_sigma(): U+03A3 after a cased letter (case-ignorable ones skipped) and not
// before one lower-cases to U+03C2.
bool final_sigma(const std::vector<uint32_t>& cs, size_t i) {
    size_t j = i;
    while (j > 0 && is_case_ignorable(cs[j - 1])) --j;
    if (j == 0 || !is_cased(cs[j - 1])) return false;
    j = i + 1;
    while (j < cs.size() && is_case_ignorable(cs[j])) ++j;
    return j == cs.size() || !is_cased(cs[j]);
}

void lower_char(std::string& out, const std::vector<uint32_t>& cs, size_t i) {
    if (cs[i] == 0x3A3)
        encode(out, final_sigma(cs, i) ? 0x3C2 : 0x3C3);
    else
        map_char(out, cs[i], Map::Lower);
}

bool is_space(uint32_t c) {
    if (c & kRawByte) return false;
    const auto dir = u_charDirection(static_cast<UChar32>(c));
    return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR || dir == U_SEGMENT_SEPARATOR ||
           u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR;
}

bool in_class(uint32_t c, CharClass k) {
    if (c & kRawByte) return false;
    const auto uc = static_cast<UChar32>(c);
    const int nt = u_getIntPropertyValue(uc, UCHAR_NUMERIC_TYPE);
    switch (k) {
        case CharClass::Alpha:
            return u_isalpha(uc);
        case CharClass::Digit:
            return nt == U_NT_DECIMAL || nt == U_NT_DIGIT;
        case CharClass::Alnum:
            return u_isalpha(uc) || nt != U_NT_NONE;
        case CharClass::Space:
            return is_space(c);
    }
    return false;
}

}  // namespace

std::string py_upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (uint32_t c : decode(s)) map_char(out, c, Map::Upper);
    return out;
}

std::string py_lower(std::string_view s) {
    const std::vector<uint32_t> cs = decode(s);
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < cs.size(); ++i) lower_char(out, cs, i);
    return out;
}

std::string py_capitalize(std::string_view s) {
    const std::vector<uint32_t> cs = decode(s);
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < cs.size(); ++i) {
        if (i == 0)
            map_char(out, cs[i], Map::Title);
        else
            lower_char(out, cs, i);
    }
    return out;
}

std::string py_title(std::string_view s) {
    const std::vector<uint32_t> cs = decode(s);
    std::string out;
    out.reserve(s.size());
    bool previous_cased = false;
    for (size_t i = 0; i < cs.size(); ++i) {
        if (previous_cased)
            lower_char(out, cs, i);
        else
            map_char(out, cs[i], Map::Title);
        previous_cased = is_cased(cs[i]);
    }
    return out;
}

std::string jinja_title(std::string_view s) {
    // re.split(r"([-\s({\[<]+)", s): runs of separators and runs of word characters.
    const std::vector<uint32_t> cs = decode(s);
    auto is_sep = [](uint32_t c) {
        return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_space(c);
    };
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < cs.size();) {
        size_t end = i + 1;
        while (end < cs.size() && is_sep(cs[end]) == is_sep(cs[i])) ++end;
        // item[0].upper() + item[1:].lower(): the rest's final sigma sees only the rest.
        map_char(out, cs[i], Map::Upper);
        const std::vector<uint32_t> rest(cs.begin() + static_cast<long>(i) + 1,
                                         cs.begin() + static_cast<long>(end));
        for (size_t k = 0; k < rest.size(); ++k) lower_char(out, rest, k);
        i = end;
    }
    return out;
}

bool py_isupper(std::string_view s) {
    bool cased = false;
    for (uint32_t c : decode(s)) {
        if (has(c, UCHAR_LOWERCASE) || is_titlecase(c)) return false;
        if (has(c, UCHAR_UPPERCASE)) cased = true;
    }
    return cased;
}

bool py_islower(std::string_view s) {
    bool cased = false;
    for (uint32_t c : decode(s)) {
        if (has(c, UCHAR_UPPERCASE) || is_titlecase(c)) return false;
        if (has(c, UCHAR_LOWERCASE)) cased = true;
    }
    return cased;
}

bool py_is(std::string_view s, CharClass k) {
    if (s.empty()) return false;
    for (uint32_t c : decode(s))
        if (!in_class(c, k)) return false;
    return true;
}

}  // namespace ember::jinja

#include "tokenizer/normalize.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <utility>
#include <vector>

#include "common/log.h"
#include "tokenizer/unicode.h"

namespace ember::tok {
namespace {

// Fails only with a broken ICU installation: then text is tokenized as it is (as llama.cpp
// does), after one warning.
const icu::Normalizer2* nfc_instance() {
    static const icu::Normalizer2* nfc = [] {
        UErrorCode st = U_ZERO_ERROR;
        const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(st);
        if (U_FAILURE(st)) {
            EMBER_LOG_WARN("tokenizer: ICU has no NFC normalizer (%s); text is not normalized",
                           u_errorName(st));
            return static_cast<const icu::Normalizer2*>(nullptr);
        }
        return n;
    }();
    return nfc;
}

icu::StringPiece piece(std::string_view s) {
    return icu::StringPiece(s.data(), int32_t(s.size()));
}

}  // namespace

bool nfc_normalize(std::string_view text, std::string& out) {
    // Fast path: ASCII text is NFC. Otherwise ICU checks the whole text, since the first
    // non-ASCII character may be a mark that composes with the ASCII letter before it.
    size_t first = 0;
    while (first < text.size() && uint8_t(text[first]) < 0x80) ++first;
    if (first == text.size()) return false;
    const icu::Normalizer2* nfc = nfc_instance();
    if (!nfc || text.size() > size_t(INT32_MAX)) return false;  // ICU takes int32 lengths

    // Runs of valid UTF-8 ([begin, end), valid) and single invalid bytes (not valid).
    struct Run {
        size_t begin, end;
        bool valid;
    };
    std::vector<Run> runs;
    bool normalized = true;
    size_t start = 0, i = first;
    auto close_valid = [&](size_t end) {
        if (start >= end) return;
        runs.push_back({start, end, true});
        if (normalized) {
            UErrorCode st = U_ZERO_ERROR;
            const bool yes = nfc->isNormalizedUTF8(piece(text.substr(start, end - start)), st);
            normalized = U_SUCCESS(st) && yes;
        }
    };
    while (i < text.size()) {
        const Utf8Check c = utf8_check(text, i);
        if (c.status == Utf8Status::Valid) {
            i += c.len;
            continue;
        }
        close_valid(i);
        runs.push_back({i, i + 1, false});
        start = ++i;
    }
    close_valid(text.size());
    if (normalized) return false;

    std::string result;
    result.reserve(text.size() + text.size() / 8);
    icu::StringByteSink<std::string> sink(&result);
    for (const Run& r : runs) {
        const std::string_view s = text.substr(r.begin, r.end - r.begin);
        if (!r.valid) {
            result.append(s);
            continue;
        }
        UErrorCode st = U_ZERO_ERROR;
        const size_t before = result.size();
        nfc->normalizeUTF8(0, piece(s), sink, nullptr, st);
        if (U_FAILURE(st)) {  // not expected on valid UTF-8: keep the run as written
            result.resize(before);
            result.append(s);
        }
    }
    out = std::move(result);
    return true;
}

}  // namespace ember::tok

// Shared by the fuzz targets: invariant checks that turn a broken promise into a crash report.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ember/result.h"

namespace ember::fuzz {

// Aborts (which libFuzzer reports with the input) when an invariant of the API is broken.
#define EMBER_FUZZ_REQUIRE(cond, what)                                                       \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            std::fprintf(stderr, "fuzz invariant broken: %s (%s:%d): %s\n", #cond, __FILE__, \
                         __LINE__, std::string(what).c_str());                               \
            std::abort();                                                                    \
        }                                                                                    \
    } while (0)

// Every error crossing the engine's boundary has a code and a message for a person.
inline void require_good_error(const Error& e) {
    EMBER_FUZZ_REQUIRE(!e.code.empty() && e.code.find('.') != std::string::npos, e.code);
    EMBER_FUZZ_REQUIRE(!e.message.empty(), e.code);
}

// Strict UTF-8: shortest forms only, no surrogates, at most U+10FFFF.
inline bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        size_t n;
        unsigned cp;
        if (c < 0x80)
            n = 1, cp = c;
        else if ((c & 0xe0) == 0xc0)
            n = 2, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            n = 3, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            n = 4, cp = c & 0x07;
        else
            return false;
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; k++) {
            const unsigned char cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        static const unsigned kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n;
    }
    return true;
}

}  // namespace ember::fuzz

// regex_replace: the Ansible-style filter some GPT4All templates use, on PCRE2.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <string>

#include "templates/jinja_interp.h"

namespace ember::jinja {
namespace {

// Python re.sub replacement syntax (\1, \g<1>, \g<name>) to PCRE2's ($1, ${name}).
std::string translate_replacement(const std::string& r) {
    std::string out;
    for (size_t k = 0; k < r.size(); ++k) {
        char c = r[k];
        if (c == '$') {
            out += "$$";
        } else if (c == '\\' && k + 1 < r.size()) {
            char n = r[k + 1];
            if (std::isdigit(static_cast<unsigned char>(n))) {
                size_t e = k + 1;
                while (e < r.size() && e < k + 3 && std::isdigit(static_cast<unsigned char>(r[e])))
                    ++e;
                out += "${" + r.substr(k + 1, e - k - 1) + "}";
                k = e - 1;
            } else if (n == 'g' && k + 2 < r.size() && r[k + 2] == '<') {
                size_t close = r.find('>', k + 3);
                if (close == std::string::npos) {
                    out += c;
                    continue;
                }
                out += "${" + r.substr(k + 3, close - k - 3) + "}";
                k = close;
            } else if (n == 'n') {
                out += '\n';
                ++k;
            } else if (n == 't') {
                out += '\t';
                ++k;
            } else if (n == '\\') {
                out += '\\';
                ++k;
            } else {
                out += c;
            }
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

Result<Value> regex_replace(Interp& in, const std::string& subject, const std::string& pattern,
                            const std::string& repl, bool icase, bool multiline, int64_t count,
                            int line) {
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    if (icase) opts |= PCRE2_CASELESS;
    if (multiline) opts |= PCRE2_MULTILINE;
    int errcode = 0;
    PCRE2_SIZE erroff = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   opts, &errcode, &erroff, nullptr);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        return in.error(line, "regex_replace: bad pattern '" + pattern + "' at offset " +
                                  std::to_string(erroff) + ": " + reinterpret_cast<char*>(msg));
    }
    pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(mctx,
                          10'000'000);  // hostile patterns fail instead of backtracking for ever
    pcre2_set_depth_limit(mctx, 10'000);
    std::string r = translate_replacement(repl);
    Value out;
    std::string result;
    if (count <= 0) {
        PCRE2_SIZE outlen = subject.size() * 2 + r.size() + 64;
        int rc = 0;
        for (int attempt = 0; attempt < 2; ++attempt) {
            result.assign(outlen, '\0');
            rc = pcre2_substitute(re, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                                  0, PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                                  nullptr, mctx, reinterpret_cast<PCRE2_SPTR>(r.data()), r.size(),
                                  reinterpret_cast<PCRE2_UCHAR*>(result.data()), &outlen);
            if (rc != PCRE2_ERROR_NOMEMORY) break;
            if (outlen > in.limits().max_output) break;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof(msg));
            pcre2_match_context_free(mctx);
            pcre2_code_free(re);
            return in.error(line,
                            std::string("regex_replace failed: ") + reinterpret_cast<char*>(msg));
        }
        result.resize(outlen);
    } else {
        // A bounded count: substitute one match at a time.
        result = subject;
        size_t start = 0;
        for (int64_t n = 0; n < count && start <= result.size(); ++n) {
            pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
            int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(result.data()), result.size(),
                                 start, 0, md, mctx);
            if (rc < 0) {
                pcre2_match_data_free(md);
                break;
            }
            PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
            PCRE2_SIZE outlen = result.size() * 2 + r.size() + 64;
            std::string buf(outlen, '\0');
            int src =
                pcre2_substitute(re, reinterpret_cast<PCRE2_SPTR>(result.data()), result.size(),
                                 start, PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, nullptr, mctx,
                                 reinterpret_cast<PCRE2_SPTR>(r.data()), r.size(),
                                 reinterpret_cast<PCRE2_UCHAR*>(buf.data()), &outlen);
            size_t match_end = ov[1], match_start = ov[0];
            pcre2_match_data_free(md);
            if (src <= 0) break;
            buf.resize(outlen);
            size_t tail = result.size() - match_end;
            size_t new_end = buf.size() - tail;
            result = std::move(buf);
            start = new_end == match_start ? new_end + 1 : new_end;
        }
    }
    pcre2_match_context_free(mctx);
    pcre2_code_free(re);
    EMBER_TRY(in.charge(result.size(), line));
    out = Value::string(std::move(result));
    return out;
}

}  // namespace ember::jinja

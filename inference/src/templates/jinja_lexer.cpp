#include "templates/jinja_lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ember::jinja {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void rstrip_ws(std::string& s) {
    size_t n = s.size();
    while (n > 0 && is_space(s[n - 1])) --n;
    s.resize(n);
}

void put_utf8(std::string& out, uint32_t cp) {
    if (cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Python's "unicode_escape" decoding, which Jinja2 applies to string literals; unknown escapes
// such as \s stay as they are (regexes rely on that).
std::string unescape(std::string_view s) {
    std::string out;
    for (size_t k = 0; k < s.size(); ++k) {
        char c = s[k];
        if (c != '\\' || k + 1 >= s.size()) {
            out += c;
            continue;
        }
        char e = s[++k];
        switch (e) {
            case '\n':
                break;  // line continuation
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case 'a':
                out += '\a';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'v':
                out += '\v';
                break;
            case 'x':
            case 'u':
            case 'U': {
                size_t want = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                size_t got = 0;
                while (got < want && k + 1 + got < s.size() && hex_digit(s[k + 1 + got]) >= 0) {
                    cp = cp * 16 + static_cast<uint32_t>(hex_digit(s[k + 1 + got]));
                    ++got;
                }
                if (got == want) {
                    put_utf8(out, cp);
                    k += got;
                } else {
                    out += '\\';
                    out += e;
                }
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int j = 0; j < 2 && k + 1 < s.size() && s[k + 1] >= '0' && s[k + 1] <= '7';
                         ++j)
                        cp = cp * 8 + static_cast<uint32_t>(s[++k] - '0');
                    put_utf8(out, cp);
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string src) : m_src(std::move(src)) {}

    Result<std::vector<Token>> run() {
        while (m_pos < m_src.size()) {
            size_t text_begin = m_pos;
            if (m_strip_next) {
                while (text_begin < m_src.size() && is_space(m_src[text_begin])) ++text_begin;
                m_strip_next = false;
            }
            size_t open = find_opener(text_begin);
            if (open == std::string::npos) {
                emit_text(text_begin, m_src.substr(text_begin));
                break;
            }
            char kind = m_src[open + 1];
            char ctrl = open + 2 < m_src.size() ? m_src[open + 2] : '\0';
            std::string text = m_src.substr(text_begin, open - text_begin);
            bool is_raw = kind == '%' && raw_begin_len(open) > 0;
            if (ctrl == '-') {
                rstrip_ws(text);
            } else if (ctrl != '+' && kind != '{') {
                lstrip_block(text, text_begin);
            }
            emit_text(text_begin, std::move(text));
            size_t inner = open + 2 + ((ctrl == '-' || ctrl == '+') ? 1 : 0);
            if (kind == '#') {
                EMBER_TRY(comment(open, inner));
            } else if (is_raw) {
                EMBER_TRY(raw(open));
            } else {
                EMBER_TRY(tag(open, inner, kind));
            }
        }
        Token eof;
        eof.type = Tok::Eof;
        eof.line = line_at(m_src.size());
        m_out.push_back(eof);
        return std::move(m_out);
    }

private:
    std::string m_src;
    size_t m_pos = 0;
    bool m_strip_next = false;
    std::vector<Token> m_out;
    size_t m_line_pos = 0;
    int m_line = 1;

    int line_at(size_t p) {
        if (p > m_src.size()) p = m_src.size();
        while (m_line_pos < p) {
            if (m_src[m_line_pos] == '\n') ++m_line;
            ++m_line_pos;
        }
        return m_line;
    }

    Error fail(size_t p, const std::string& msg) {
        return make_error("template.syntax", "line " + std::to_string(line_at(p)) + ": " + msg);
    }

    size_t find_opener(size_t from) const {
        for (size_t k = from; k + 1 < m_src.size(); ++k) {
            if (m_src[k] == '{' && std::strchr("{%#", m_src[k + 1]) && m_src[k + 1] != '\0')
                return k;
        }
        return std::string::npos;
    }

    void emit_text(size_t at, std::string text) {
        if (text.empty()) return;
        Token t;
        t.type = Tok::Text;
        t.line = line_at(at);
        t.text = std::move(text);
        m_out.push_back(std::move(t));
    }

    // lstrip_blocks: spaces and tabs between the start of a line and a block or comment tag go.
    void lstrip_block(std::string& text, size_t text_begin) const {
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        bool line_starting = text_begin == 0 || m_src[text_begin - 1] == '\n';
        if (l_pos == 0 && !line_starting) return;
        for (size_t k = l_pos; k < text.size(); ++k)
            if (!is_space(text[k])) return;
        text.resize(l_pos);
    }

    // After a block-like end: '-' strips all following whitespace, '+' keeps it, otherwise
    // trim_blocks removes one newline.
    void after_end(char ctrl) {
        if (ctrl == '-') {
            m_strip_next = true;
        } else if (ctrl != '+' && m_pos < m_src.size() && m_src[m_pos] == '\n') {
            ++m_pos;
        }
    }

    Status comment(size_t open, size_t inner) {
        size_t end = m_src.find("#}", inner);
        if (end == std::string::npos) return fail(open, "unclosed comment '{#'");
        char ctrl = end > inner ? m_src[end - 1] : '\0';
        m_pos = end + 2;
        after_end(ctrl == '-' || ctrl == '+' ? ctrl : '\0');
        return {};
    }

    // Length of "{%[-+]? raw [-]?%}" at p, or 0.
    size_t raw_begin_len(size_t p) const { return keyword_tag_len(p, "raw"); }

    size_t keyword_tag_len(size_t p, const char* word) const {
        size_t k = p + 2;
        if (k < m_src.size() && (m_src[k] == '-' || m_src[k] == '+')) ++k;
        while (k < m_src.size() && is_space(m_src[k])) ++k;
        size_t wl = std::strlen(word);
        if (m_src.compare(k, wl, word) != 0) return 0;
        k += wl;
        if (k < m_src.size() &&
            (std::isalnum(static_cast<unsigned char>(m_src[k])) || m_src[k] == '_'))
            return 0;
        while (k < m_src.size() && is_space(m_src[k])) ++k;
        if (k < m_src.size() && (m_src[k] == '-' || m_src[k] == '+')) ++k;
        if (m_src.compare(k, 2, "%}") != 0) return 0;
        return k + 2 - p;
    }

    Status raw(size_t open) {
        size_t len = raw_begin_len(open);
        m_pos = open + len;
        if (m_src[open + len - 3] == '-') {
            while (m_pos < m_src.size() && is_space(m_src[m_pos])) ++m_pos;
        }
        size_t content_begin = m_pos;
        size_t k = content_begin;
        while (true) {
            k = m_src.find("{%", k);
            if (k == std::string::npos) return fail(open, "unclosed '{% raw %}' (no endraw)");
            size_t elen = keyword_tag_len(k, "endraw");
            if (elen == 0) {
                k += 2;
                continue;
            }
            std::string content = m_src.substr(content_begin, k - content_begin);
            char ctrl = m_src[k + 2];
            if (ctrl == '-')
                rstrip_ws(content);
            else if (ctrl != '+')
                lstrip_block(content, content_begin);
            emit_text(content_begin, std::move(content));
            m_pos = k + elen;
            after_end(m_src[m_pos - 3]);
            return {};
        }
    }

    Status tag(size_t open, size_t inner, char kind) {
        Token begin;
        begin.type = kind == '%' ? Tok::BlockBegin : Tok::VarBegin;
        begin.line = line_at(open);
        m_out.push_back(begin);
        const char close = kind == '%' ? '%' : '}';
        m_pos = inner;
        int depth = 0;
        while (true) {
            while (m_pos < m_src.size() && is_space(m_src[m_pos])) ++m_pos;
            if (m_pos >= m_src.size())
                return fail(open, kind == '%' ? "unclosed block tag '{%'" : "unclosed '{{'");
            const char* s = m_src.c_str() + m_pos;
            if (depth == 0) {
                char ctrl = '\0';
                size_t n = 0;
                if ((s[0] == '-' || s[0] == '+') && s[1] == close && s[2] == '}') {
                    ctrl = s[0];
                    n = 3;
                } else if (s[0] == close && s[1] == '}') {
                    n = 2;
                }
                if (n) {
                    Token end;
                    end.type = kind == '%' ? Tok::BlockEnd : Tok::VarEnd;
                    end.line = line_at(m_pos);
                    m_out.push_back(end);
                    m_pos += n;
                    if (kind == '%')
                        after_end(ctrl);
                    else if (ctrl == '-')
                        m_strip_next = true;
                    return {};
                }
            }
            EMBER_TRY(expr_token(depth));
        }
    }

    Status expr_token(int& depth) {
        Token t;
        t.line = line_at(m_pos);
        const std::string& src = m_src;
        size_t p = m_pos;
        unsigned char c = static_cast<unsigned char>(src[p]);
        bool after_dot = !m_out.empty() && m_out.back().type == Tok::Op && m_out.back().text == ".";
        if (std::isalpha(c) || c == '_' || c >= 0x80) {
            size_t e = p;
            while (e < src.size() && (std::isalnum(static_cast<unsigned char>(src[e])) ||
                                      src[e] == '_' || static_cast<unsigned char>(src[e]) >= 0x80))
                ++e;
            t.type = Tok::Name;
            t.text = src.substr(p, e - p);
            m_pos = e;
        } else if (std::isdigit(c)) {
            size_t e = p;
            auto digits = [&] {
                while (e < src.size() && (std::isdigit(static_cast<unsigned char>(src[e])) ||
                                          (src[e] == '_' && e + 1 < src.size() &&
                                           std::isdigit(static_cast<unsigned char>(src[e + 1])))))
                    ++e;
            };
            digits();
            bool is_float = false;
            if (!after_dot && e + 1 < src.size() && src[e] == '.' &&
                std::isdigit(static_cast<unsigned char>(src[e + 1]))) {
                ++e;
                digits();
                is_float = true;
            }
            if (!after_dot && e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
                size_t q = e + 1;
                if (q < src.size() && (src[q] == '+' || src[q] == '-')) ++q;
                if (q < src.size() && std::isdigit(static_cast<unsigned char>(src[q]))) {
                    e = q;
                    digits();
                    is_float = true;
                }
            }
            std::string num;
            for (size_t k = p; k < e; ++k)
                if (src[k] != '_') num += src[k];
            if (is_float) {
                t.type = Tok::Float;
                t.fval = std::strtod(num.c_str(), nullptr);
            } else {
                t.type = Tok::Int;
                errno = 0;
                unsigned long long v = std::strtoull(num.c_str(), nullptr, 10);
                if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
                    t.big = true;  // Python's ints have no bound: a BigInt value
                else
                    t.ival = static_cast<int64_t>(v);
            }
            t.text = num;
            m_pos = e;
        } else if (c == '\'' || c == '"') {
            size_t e = p + 1;
            while (e < src.size() && src[e] != static_cast<char>(c)) {
                if (src[e] == '\\') ++e;
                ++e;
            }
            if (e >= src.size()) return fail(p, "unterminated string literal");
            t.type = Tok::String;
            t.text = unescape(std::string_view(src).substr(p + 1, e - p - 1));
            m_pos = e + 1;
        } else {
            static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                              "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                              "]",  "{",  "}",  ",",  ".",  ":",  "|"};
            const char* s = src.c_str() + p;
            for (const char* op : ops) {
                size_t n = std::strlen(op);
                if (std::strncmp(s, op, n) == 0) {
                    t.type = Tok::Op;
                    t.text = op;
                    m_pos = p + n;
                    break;
                }
            }
            if (t.type != Tok::Op) {
                return fail(
                    p, std::string("unexpected character '") + static_cast<char>(c) + "' in tag");
            }
            if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
            if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
        }
        m_out.push_back(std::move(t));
        return {};
    }
};

}  // namespace

Result<std::vector<Token>> lex_template(const std::string& source) {
    // Jinja2 normalizes newlines and drops a single trailing newline (keep_trailing_newline=False).
    std::string src;
    src.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
        if (source[k] == '\r') {
            src += '\n';
            if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
        } else {
            src += source[k];
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();
    return Lexer(std::move(src)).run();
}

}  // namespace ember::jinja

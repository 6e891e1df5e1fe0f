// JSON for templates: tojson's json.dumps and the parser of JSON given as template inputs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "templates/jinja_value.h"

namespace ember::jinja {

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (size_t k = 0; k < s.size(); ++k) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof(b), "\\u%04x", c);
                    out += b;
                } else if (c >= 0x80 && ensure_ascii) {
                    // Decode one UTF-8 sequence and write it as (surrogate pairs of) \uXXXX.
                    uint32_t cp = 0;
                    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
                    cp = c & (0x3F >> extra);
                    for (int j = 0; j < extra && k + 1 < s.size(); ++j)
                        cp = (cp << 6) | (static_cast<unsigned char>(s[++k]) & 0x3F);
                    char b[16];
                    if (cp >= 0x10000) {
                        cp -= 0x10000;
                        std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                                      0xDC00 + (cp & 0x3FF));
                    } else {
                        std::snprintf(b, sizeof(b), "\\u%04x", cp);
                    }
                    out += b;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

static Status json_value(std::string& out, const Value& v, const JsonOptions& opt, int level) {
    if (level > 200) return make_error("template.render", "tojson: nesting too deep");
    if (out.size() > opt.max_size) return make_error("template.render", "tojson: result too long");
    auto newline = [&](int lvl) -> Status {
        if (!opt.indent) return {};
        const size_t n = opt.indent->size() * static_cast<size_t>(lvl);
        if (out.size() + n + 1 > opt.max_size)
            return make_error("template.render", "tojson: result too long");
        out += '\n';
        for (int k = 0; k < lvl; ++k) out += *opt.indent;
        return {};
    };
    // With an indent, Python drops the trailing space of the item separator.
    std::string item_sep = opt.item_sep;
    if (opt.indent && item_sep == ", ") item_sep = ",";
    switch (v.type) {
        case Type::None:
            out += "null";
            return {};
        case Type::Bool:
            out += v.b ? "true" : "false";
            return {};
        case Type::Int:
            out += std::to_string(v.i);
            return {};
        case Type::BigInt:
            out += v.str();
            return {};
        case Type::Float:
            if (std::isnan(v.f))
                out += "NaN";
            else if (std::isinf(v.f))
                out += v.f < 0 ? "-Infinity" : "Infinity";
            else
                out += format_float(v.f);
            return {};
        case Type::String:
            json_string(out, v.str(), opt.ensure_ascii);
            return {};
        case Type::List: {
            const auto& items = v.list_data().items;
            if (items.empty()) {
                out += "[]";
                return {};
            }
            out += '[';
            for (size_t k = 0; k < items.size(); ++k) {
                if (k) out += item_sep;
                EMBER_TRY(newline(level + 1));
                EMBER_TRY(json_value(out, items[k], opt, level + 1));
            }
            EMBER_TRY(newline(level));
            out += ']';
            return {};
        }
        case Type::Dict: {
            std::vector<const std::pair<Value, Value>*> items;
            for (const auto& kv : v.dict_data().items) items.push_back(&kv);
            if (items.empty()) {
                out += "{}";
                return {};
            }
            if (opt.sort_keys) {
                std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) {
                    auto c = compare(a->first, b->first);
                    return c.ok() && *c < 0;
                });
            }
            out += '{';
            for (size_t k = 0; k < items.size(); ++k) {
                if (k) out += item_sep;
                EMBER_TRY(newline(level + 1));
                const Value& key = items[k]->first;
                if (key.is_string())
                    json_string(out, key.str(), opt.ensure_ascii);
                else if (key.is_number() || key.is_none()) {
                    std::string tmp;
                    EMBER_TRY(json_value(tmp, key, opt, level + 1));
                    json_string(out, tmp, opt.ensure_ascii);
                } else {
                    return make_error(
                        "template.render",
                        std::string("tojson: keys must be str, not ") + type_name(key));
                }
                out += opt.key_sep;
                EMBER_TRY(json_value(out, items[k]->second, opt, level + 1));
            }
            EMBER_TRY(newline(level));
            out += '}';
            return {};
        }
        default:
            return make_error("template.render", std::string("tojson: object of type '") +
                                                     type_name(v) + "' is not JSON serializable");
    }
}

Result<std::string> to_json(const Value& v, const JsonOptions& opt) {
    std::string out;
    EMBER_TRY(json_value(out, v, opt, 0));
    if (out.size() > opt.max_size) return make_error("template.render", "tojson: result too long");
    return out;
}

namespace {

struct JsonParser {
    std::string_view s;
    size_t pos = 0;
    int depth = 0;

    Error fail(const std::string& what) {
        return make_error("template.extra_json",
                          "extra variables JSON at offset " + std::to_string(pos) + ": " + what);
    }
    void ws() {
        while (pos < s.size() &&
               (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
            ++pos;
    }
    static void put_utf8(std::string& out, uint32_t cp) {
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
    Result<uint32_t> hex4() {
        if (pos + 4 > s.size()) return fail("truncated \\u escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s[pos++];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<uint32_t>(c - 'A' + 10);
            else
                return fail("bad hex digit in \\u escape");
        }
        return v;
    }
    Result<std::string> str() {
        ++pos;  // opening quote
        std::string out;
        while (true) {
            if (pos >= s.size()) return fail("unterminated string");
            char c = s[pos++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos >= s.size()) return fail("unterminated escape");
            char e = s[pos++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
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
                case 'u': {
                    EMBER_ASSIGN_OR_RETURN(uint32_t cp, hex4());
                    if (cp >= 0xD800 && cp < 0xDC00 && pos + 1 < s.size() && s[pos] == '\\' &&
                        s[pos + 1] == 'u') {
                        pos += 2;
                        EMBER_ASSIGN_OR_RETURN(uint32_t lo, hex4());
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    put_utf8(out, cp);
                    break;
                }
                default:
                    return fail(std::string("unknown escape \\") + e);
            }
        }
    }
    Result<Value> value() {
        if (++depth > 200) return fail("nesting too deep");
        ws();
        if (pos >= s.size()) return fail("unexpected end");
        char c = s[pos];
        Result<Value> r = fail("unexpected character");
        if (c == '{') {
            ++pos;
            Value d = Value::dict();
            ws();
            if (pos < s.size() && s[pos] == '}') {
                ++pos;
                r = d;
            } else {
                while (true) {
                    ws();
                    if (pos >= s.size() || s[pos] != '"') return fail("expected a string key");
                    EMBER_ASSIGN_OR_RETURN(std::string key, str());
                    ws();
                    if (pos >= s.size() || s[pos] != ':') return fail("expected ':'");
                    ++pos;
                    EMBER_ASSIGN_OR_RETURN(Value v, value());
                    d.dict_data().set(Value::string(std::move(key)), std::move(v));
                    ws();
                    if (pos < s.size() && s[pos] == ',') {
                        ++pos;
                        continue;
                    }
                    if (pos < s.size() && s[pos] == '}') {
                        ++pos;
                        break;
                    }
                    return fail("expected ',' or '}'");
                }
                r = d;
            }
        } else if (c == '[') {
            ++pos;
            std::vector<Value> items;
            ws();
            if (pos < s.size() && s[pos] == ']') {
                ++pos;
            } else {
                while (true) {
                    EMBER_ASSIGN_OR_RETURN(Value v, value());
                    items.push_back(std::move(v));
                    ws();
                    if (pos < s.size() && s[pos] == ',') {
                        ++pos;
                        continue;
                    }
                    if (pos < s.size() && s[pos] == ']') {
                        ++pos;
                        break;
                    }
                    return fail("expected ',' or ']'");
                }
            }
            r = Value::list(std::move(items));
        } else if (c == '"') {
            EMBER_ASSIGN_OR_RETURN(std::string v, str());
            r = Value::string(std::move(v));
        } else if (s.substr(pos, 4) == "true") {
            pos += 4;
            r = Value::boolean(true);
        } else if (s.substr(pos, 5) == "false") {
            pos += 5;
            r = Value::boolean(false);
        } else if (s.substr(pos, 4) == "null") {
            pos += 4;
            r = Value::none();
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = pos;
            bool is_float = false;
            if (s[pos] == '-') ++pos;
            while (pos < s.size() && std::strchr("0123456789.eE+-", s[pos])) {
                if (s[pos] == '.' || s[pos] == 'e' || s[pos] == 'E') is_float = true;
                ++pos;
            }
            std::string num(s.substr(start, pos - start));
            if (!is_float) {
                // Python's json gives an int of any size.
                const bool neg = num[0] == '-';
                auto iv = Value::integer_text(neg, std::string_view(num).substr(neg ? 1 : 0));
                if (!iv) return fail("bad number '" + num + "'");
                r = std::move(*iv);
            }
            if (is_float) {
                double dv = 0;
                auto res = std::from_chars(num.data(), num.data() + num.size(), dv);
                if (res.ec != std::errc() || res.ptr != num.data() + num.size())
                    return fail("bad number '" + num + "'");
                r = Value::number(dv);
            }
        }
        --depth;
        return r;
    }
};

}  // namespace

Result<Value> parse_json(std::string_view text) {
    JsonParser p{text};
    EMBER_ASSIGN_OR_RETURN(Value v, p.value());
    p.ws();
    if (p.pos != text.size()) return p.fail("trailing characters");
    return v;
}

}  // namespace ember::jinja

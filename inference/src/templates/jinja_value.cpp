#include "templates/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace ember::jinja {

const Value* DictData::find(const Value& key) const {
    for (const auto& kv : items)
        if (equals(kv.first, key)) return &kv.second;
    return nullptr;
}

const Value* DictData::find(std::string_view key) const {
    for (const auto& kv : items)
        if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
    return nullptr;
}

void DictData::set(Value key, Value value) {
    for (auto& kv : items) {
        if (equals(kv.first, key)) {
            kv.second = std::move(value);
            return;
        }
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string name) {
    Value v;
    if (!name.empty()) v.p = std::make_shared<std::string>(std::move(name));
    return v;
}
Value Value::none() {
    Value v;
    v.type = Type::None;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.type = Type::Bool;
    v.b = b;
    return v;
}
Value Value::integer(int64_t x) {
    Value v;
    v.type = Type::Int;
    v.i = x;
    return v;
}
Value Value::number(double x) {
    Value v;
    v.type = Type::Float;
    v.f = x;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.type = Type::String;
    v.p = std::make_shared<std::string>(std::move(s));
    return v;
}
Value Value::list(std::vector<Value> items, bool tuple) {
    Value v;
    v.type = Type::List;
    auto d = std::make_shared<ListData>();
    d->items = std::move(items);
    d->is_tuple = tuple;
    v.p = std::move(d);
    return v;
}
Value Value::dict(DictKind kind) {
    Value v;
    v.type = Type::Dict;
    auto d = std::make_shared<DictData>();
    d->kind = kind;
    v.p = std::move(d);
    return v;
}
Value Value::function(std::string name, NativeFn fn) {
    Value v;
    v.type = Type::Callable;
    v.p = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

const std::string& Value::undefined_name() const {
    static const std::string empty;
    return p ? str() : empty;
}

bool truthy(const Value& v) {
    switch (v.type) {
        case Type::Undefined:
        case Type::None:
            return false;
        case Type::Bool:
            return v.b;
        case Type::Int:
            return v.i != 0;
        case Type::Float:
            return v.f != 0.0;
        case Type::String:
            return !v.str().empty();
        case Type::List:
            return !v.list_data().items.empty();
        case Type::Dict:
            return !v.dict_data().items.empty();
        case Type::Callable:
            return true;
    }
    return false;
}

namespace {
// Lists can be made to contain themselves (l.append(l)); bound the recursion.
thread_local int g_depth = 0;
struct DepthGuard {
    DepthGuard() { ++g_depth; }
    ~DepthGuard() { --g_depth; }
    bool too_deep() const { return g_depth > 200; }
};
}  // namespace

bool equals(const Value& a, const Value& b) {
    DepthGuard guard;
    if (guard.too_deep()) return false;
    if (a.is_number() && b.is_number()) {
        if (a.type == Type::Float || b.type == Type::Float) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.type != b.type) return false;
    switch (a.type) {
        case Type::Undefined:
        case Type::None:
            return true;
        case Type::String:
            return a.str() == b.str();
        case Type::List: {
            if (a.list_data().is_tuple != b.list_data().is_tuple) return false;
            const auto& x = a.list_data().items;
            const auto& y = b.list_data().items;
            if (x.size() != y.size()) return false;
            for (size_t k = 0; k < x.size(); ++k)
                if (!equals(x[k], y[k])) return false;
            return true;
        }
        case Type::Dict: {
            const auto& x = a.dict_data();
            const auto& y = b.dict_data();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& kv : x.items) {
                const Value* o = y.find(kv.first);
                if (!o || !equals(kv.second, *o)) return false;
            }
            return true;
        }
        case Type::Callable:
            return a.p == b.p;
        default:
            return false;
    }
}

Result<int> compare(const Value& a, const Value& b) {
    DepthGuard guard;
    if (guard.too_deep())
        return make_error("template.render", "values nested too deeply to compare");
    if (a.is_number() && b.is_number()) {
        if (a.type == Type::Float || b.type == Type::Float) {
            double x = a.as_float(), y = b.as_float();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        // Byte order of UTF-8 is code point order, as Python compares.
        int c = a.str().compare(b.str());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list()) {
        const auto& x = a.list_data().items;
        const auto& y = b.list_data().items;
        for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
            if (equals(x[k], y[k])) continue;
            return compare(x[k], y[k]);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    return make_error("template.render", std::string("cannot order '") + type_name(a) + "' and '" +
                                             type_name(b) + "'");
}

const char* type_name(const Value& v) {
    switch (v.type) {
        case Type::Undefined:
            return "undefined";
        case Type::None:
            return "NoneType";
        case Type::Bool:
            return "bool";
        case Type::Int:
            return "int";
        case Type::Float:
            return "float";
        case Type::String:
            return "str";
        case Type::List:
            return v.list_data().is_tuple ? "tuple" : "list";
        case Type::Dict:
            return v.dict_data().kind == DictKind::Namespace ? "Namespace"
                   : v.dict_data().kind == DictKind::Loop    ? "LoopContext"
                                                             : "dict";
        case Type::Callable:
            return "function";
    }
    return "?";
}

std::string format_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits, then Python's layout: scientific below 1e-4 or from 1e16.
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    std::string mant = sci.substr(0, e);
    int exp = std::atoi(sci.c_str() + e + 1);
    std::string digits;
    for (char c : mant)
        if (c != '.') digits += c;
    std::string out;
    if (exp < -4 || exp >= 16) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        out += eb;
    } else if (exp < 0) {
        out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
        size_t int_len = static_cast<size_t>(exp) + 1;
        if (digits.size() <= int_len) {
            out = digits + std::string(int_len - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, int_len) + "." + digits.substr(int_len);
        }
    }
    return neg ? "-" + out : out;
}

static std::string repr_string(const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char q = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        switch (c) {
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
            default:
                if (c == static_cast<unsigned char>(q)) {
                    out += '\\';
                    out += static_cast<char>(c);
                } else if (c < 0x20 || c == 0x7f) {
                    char b[8];
                    std::snprintf(b, sizeof(b), "\\x%02x", c);
                    out += b;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += q;
    return out;
}

std::string to_repr(const Value& v) {
    DepthGuard guard;
    if (guard.too_deep()) return "...";
    switch (v.type) {
        case Type::String:
            return repr_string(v.str());
        case Type::List: {
            const auto& l = v.list_data();
            std::string out = l.is_tuple ? "(" : "[";
            for (size_t k = 0; k < l.items.size(); ++k) {
                if (k) out += ", ";
                out += to_repr(l.items[k]);
            }
            if (l.is_tuple && l.items.size() == 1) out += ",";
            out += l.is_tuple ? ")" : "]";
            return out;
        }
        case Type::Dict: {
            const auto& d = v.dict_data();
            std::string out = d.kind == DictKind::Namespace ? "<Namespace {" : "{";
            for (size_t k = 0; k < d.items.size(); ++k) {
                if (k) out += ", ";
                out += to_repr(d.items[k].first) + ": " + to_repr(d.items[k].second);
            }
            out += d.kind == DictKind::Namespace ? "}>" : "}";
            return out;
        }
        default:
            return to_str(v);
    }
}

std::string to_str(const Value& v) {
    switch (v.type) {
        case Type::Undefined:
            return "";
        case Type::None:
            return "None";
        case Type::Bool:
            return v.b ? "True" : "False";
        case Type::Int:
            return std::to_string(v.i);
        case Type::Float:
            return format_float(v.f);
        case Type::String:
            return v.str();
        case Type::Callable:
            return "<function " + v.callable().name + ">";
        default:
            return to_repr(v);
    }
}

// ---- JSON ---------------------------------------------------------------------------------

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
    auto newline = [&](int lvl) {
        if (opt.indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(opt.indent * lvl), ' ');
    };
    // With an indent, Python drops the trailing space of the item separator.
    std::string item_sep = opt.item_sep;
    if (opt.indent >= 0 && item_sep == ", ") item_sep = ",";
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
                newline(level + 1);
                EMBER_TRY(json_value(out, items[k], opt, level + 1));
            }
            newline(level);
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
                newline(level + 1);
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
            newline(level);
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
                int64_t iv = 0;
                auto res = std::from_chars(num.data(), num.data() + num.size(), iv);
                if (res.ec == std::errc() && res.ptr == num.data() + num.size())
                    r = Value::integer(iv);
                else
                    is_float = true;
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

std::vector<size_t> utf8_offsets(std::string_view s) {
    std::vector<size_t> offs;
    offs.reserve(s.size() + 1);
    for (size_t k = 0; k < s.size(); ++k)
        if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) offs.push_back(k);
    offs.push_back(s.size());
    return offs;
}

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (char c : s)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace ember::jinja

#include "templates/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

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
Result<Value> Value::integer_text(bool negative, std::string_view digits) {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
        return make_error("template.render", "not an integer: '" + std::string(digits) + "'");
    size_t z = digits.find_first_not_of('0');
    std::string_view d = z == std::string_view::npos ? std::string_view("0") : digits.substr(z);
    // |int64 min| = 9223372036854775808 has 19 digits, as does int64 max.
    const std::string_view max_mag = negative ? "9223372036854775808" : "9223372036854775807";
    if (d.size() < 19 || (d.size() == 19 && d <= max_mag)) {
        uint64_t m = 0;
        for (char c : d) m = m * 10 + static_cast<uint64_t>(c - '0');
        return Value::integer(negative ? static_cast<int64_t>(0 - m) : static_cast<int64_t>(m));
    }
    Value v;
    v.type = Type::BigInt;
    v.i = negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    v.p = std::make_shared<std::string>((negative ? "-" : "") + std::string(d));
    return v;
}

double Value::as_float() const {
    if (type == Type::Float) return f;
    if (type == Type::BigInt) return std::strtod(str().c_str(), nullptr);
    return static_cast<double>(as_int());
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
        case Type::BigInt:
            return true;
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
        // A BigInt never fits int64, so it only equals the same BigInt.
        if (a.is_big() || b.is_big()) return a.is_big() && b.is_big() && a.str() == b.str();
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

// Integers where one is a BigInt: a BigInt lies beyond every int64 on its sign's side; two
// BigInts of one sign compare by their number of digits, then their digits.
static int compare_big(const Value& a, const Value& b) {
    auto side = [](const Value& v) { return !v.is_big() ? 0 : v.str()[0] == '-' ? -1 : 1; };
    const int sa = side(a), sb = side(b);
    if (sa != sb) return sa < sb ? -1 : 1;
    std::string_view da = a.str(), db = b.str();
    if (sa < 0) {
        da.remove_prefix(1);
        db.remove_prefix(1);
    }
    int c = da.size() != db.size() ? (da.size() < db.size() ? -1 : 1) : da.compare(db);
    c = c < 0 ? -1 : (c > 0 ? 1 : 0);
    return sa < 0 ? -c : c;
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
        if (a.is_big() || b.is_big()) return compare_big(a, b);
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
        case Type::BigInt:
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
        case Type::BigInt:
            return v.str();
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

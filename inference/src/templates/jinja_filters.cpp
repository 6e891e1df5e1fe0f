// Jinja2's built-in filters and tests (plus transformers' tojson and an Ansible-style
// regex_replace that GPT4All templates use).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "templates/jinja_interp.h"

namespace ember::jinja {

std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
Result<std::string> py_replace(Interp& in, int line, const std::string& s, const std::string& old,
                               const std::string& repl, int64_t count);
Result<Value> percent_format(Interp& in, const std::string& fmt, const Value& args, int line);

namespace {

Result<int64_t> length_of(Interp& in, const Value& v, int line) {
    switch (v.type) {
        case Type::Undefined:
            return 0;
        case Type::String:
            return static_cast<int64_t>(utf8_length(v.str()));
        case Type::List:
            return static_cast<int64_t>(v.list_data().items.size());
        case Type::Dict:
            return static_cast<int64_t>(v.dict_data().items.size());
        default:
            return in.error(line,
                            std::string("object of type '") + type_name(v) + "' has no len()");
    }
}

// Jinja2's attribute getter for map/selectattr/sort: dotted paths, item lookup first.
Result<Value> attr_path(Interp& in, const Value& item, const Value& attr, int line) {
    if (attr.is_integral()) return in.get_item(item, attr, line);
    std::string path = to_str(attr);
    Value cur = item;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        Value key = Value::string(part);
        if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit))
            key = Value::integer(std::atoll(part.c_str()));
        EMBER_ASSIGN_OR_RETURN(cur, in.get_item(cur, key, line));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// Sort key of a value: lowercased when sorting case-insensitively.
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value::string(ascii_lower(v.str()));
    return v;
}

Status check_orderable(Interp& in, const std::vector<Value>& keys, int line) {
    for (size_t k = 1; k < keys.size(); ++k)
        EMBER_TRY(compare(keys[0], keys[k]).ok()
                      ? Status{}
                      : in.error(line, "cannot sort values of types '" +
                                           std::string(type_name(keys[0])) + "' and '" +
                                           type_name(keys[k]) + "'"));
    return {};
}

Result<std::vector<Value>> sorted(Interp& in, std::vector<Value> items, bool reverse,
                                  bool case_sensitive, const Value& attribute, int line) {
    std::vector<Value> keys;
    for (const auto& it : items) {
        Value k = it;
        if (!attribute.is_undefined() && !attribute.is_none()) {
            EMBER_ASSIGN_OR_RETURN(k, attr_path(in, it, attribute, line));
        }
        keys.push_back(sort_key(k, case_sensitive));
    }
    EMBER_TRY(check_orderable(in, keys, line));
    std::vector<size_t> order(items.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        auto c = reverse ? compare(keys[b], keys[a]) : compare(keys[a], keys[b]);
        return c.ok() && *c < 0;
    });
    std::vector<Value> out;
    for (size_t k : order) out.push_back(items[k]);
    return out;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

// Python's str.splitlines() for the ASCII line boundaries.
std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> lines;
    std::string cur;
    for (size_t k = 0; k < s.size(); ++k) {
        char c = s[k];
        if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' ||
            c == '\x1e') {
            if (c == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
            lines.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) lines.push_back(std::move(cur));
    return lines;
}

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

std::string title_case(const std::string& s) {
    // Jinja2's title: words start after whitespace, '-', or an opening bracket.
    std::string out;
    bool start = true;
    for (char c : s) {
        bool sep = std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' ||
                   c == '{' || c == '[' || c == '<';
        if (sep) {
            out += c;
            start = true;
        } else {
            out += start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                         : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            start = false;
        }
    }
    return out;
}

double round_half_even(double x, int64_t digits) {
    if (digits >= 0 && digits <= 300 && std::isfinite(x)) {
        // printf rounds the exact binary value half-to-even, as Python's round() does.
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(digits), x);
        return std::strtod(buf, nullptr);
    }
    double scale = std::pow(10.0, static_cast<double>(digits));
    double y = x * scale;
    double r = std::nearbyint(y);  // the default rounding mode rounds halves to even
    return r / scale;
}

}  // namespace

Result<Value> apply_filter(Interp& in, const std::string& name, Value v, CallArgs& args, int line) {
    auto bind = [&](std::initializer_list<const char*> names) {
        return bind_args(in, args, names, "filter '" + name + "'", line);
    };
    auto str_result = [&](std::string s) -> Result<Value> {
        EMBER_TRY(in.charge(s.size(), line));
        return Value::string(std::move(s));
    };
    if (name == "trim") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"chars"}));
        return str_result(py_strip(to_str(v), a[0], true, true));
    }
    if (name == "length" || name == "count") {
        EMBER_TRY(bind({}));
        EMBER_ASSIGN_OR_RETURN(int64_t n, length_of(in, v, line));
        return Value::integer(n);
    }
    if (name == "join") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"d", "attribute"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        std::string sep = to_str(a[0]), out;
        for (size_t k = 0; k < items.size(); ++k) {
            if (k) out += sep;
            Value item = items[k];
            if (!a[1].is_undefined()) {
                EMBER_ASSIGN_OR_RETURN(item, attr_path(in, item, a[1], line));
            }
            out += to_str(item);
            if (out.size() > in.limits().max_output) return in.error(line, "join: result too long");
        }
        return str_result(std::move(out));
    }
    if (name == "tojson") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"indent", "ensure_ascii", "separators", "sort_keys"}));
        JsonOptions opt;
        if (a[0].is_integral())
            opt.indent = static_cast<int>(std::clamp<int64_t>(a[0].as_int(), 0, 64));
        else if (!a[0].is_undefined() && !a[0].is_none())
            return in.error(line, "tojson: indent must be an integer");
        opt.ensure_ascii = truthy(a[1]);
        if (a[2].is_list() && a[2].list_data().items.size() == 2) {
            opt.item_sep = to_str(a[2].list_data().items[0]);
            opt.key_sep = to_str(a[2].list_data().items[1]);
        } else if (opt.indent >= 0) {
            opt.item_sep = ",";
        }
        opt.sort_keys = truthy(a[3]);
        EMBER_ASSIGN_OR_RETURN(std::string s, to_json(v, opt));
        return str_result(std::move(s));
    }
    if (name == "first" || name == "last") {
        EMBER_TRY(bind({}));
        if (name == "last" && !v.is_list() && !v.is_string() && !v.is_undefined())
            return in.error(line, std::string("last: cannot reverse '") + type_name(v) + "'");
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
        EMBER_TRY(bind({}));
        std::string s = to_str(v);
        if (name == "upper") return str_result(ascii_upper(s));
        if (name == "lower") return str_result(ascii_lower(s));
        if (name == "title") return str_result(title_case(s));
        s = ascii_lower(s);
        if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
        return str_result(s);
    }
    if (name == "replace") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"old", "new", "count"}));
        int64_t count = a[2].is_integral() ? a[2].as_int() : -1;
        EMBER_ASSIGN_OR_RETURN(std::string r,
                               py_replace(in, line, to_str(v), to_str(a[0]), to_str(a[1]), count));
        return str_result(std::move(r));
    }
    if (name == "default" || name == "d") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"default_value", "boolean"}));
        bool use_default = v.is_undefined() || (truthy(a[1]) && !truthy(v));
        if (!use_default) return v;
        return a[0].is_undefined() ? Value::string("") : a[0];
    }
    if (name == "string") {
        EMBER_TRY(bind({}));
        return v.is_string() ? v : str_result(to_str(v));
    }
    if (name == "int") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"default", "base"}));
        Value def = a[0].is_undefined() ? Value::integer(0) : a[0];
        if (v.is_integral()) return Value::integer(v.as_int());
        if (v.type == Type::Float) {
            if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return def;
            return Value::integer(static_cast<int64_t>(v.f));
        }
        if (v.is_string()) {
            std::string s = py_strip(v.str(), Value(), true, true);
            int base = a[1].is_integral() ? static_cast<int>(a[1].as_int()) : 10;
            if (base < 2 || base > 36) base = 10;
            char* end = nullptr;
            errno = 0;
            long long x = std::strtoll(s.c_str(), &end, base);
            if (!s.empty() && end && *end == '\0' && errno == 0) return Value::integer(x);
            double d = std::strtod(s.c_str(), &end);
            if (!s.empty() && end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
                return Value::integer(static_cast<int64_t>(d));
        }
        return def;
    }
    if (name == "float") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"default"}));
        Value def = a[0].is_undefined() ? Value::number(0.0) : a[0];
        if (v.is_number()) return Value::number(v.as_float());
        if (v.is_string()) {
            std::string s = py_strip(v.str(), Value(), true, true);
            char* end = nullptr;
            double d = std::strtod(s.c_str(), &end);
            if (!s.empty() && end && *end == '\0') return Value::number(d);
        }
        return def;
    }
    if (name == "list") {
        EMBER_TRY(bind({}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        return Value::list(std::move(items));
    }
    if (name == "map" || name == "select" || name == "reject" || name == "selectattr" ||
        name == "rejectattr") {
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        std::vector<Value> out;
        bool by_attr = name == "selectattr" || name == "rejectattr";
        if (name == "map") {
            const Value* attr = nullptr;
            const Value* def = nullptr;
            for (auto& [k, val] : args.kw) {
                if (k == "attribute")
                    attr = &val;
                else if (k == "default")
                    def = &val;
            }
            if (attr) {
                for (auto& it : items) {
                    EMBER_ASSIGN_OR_RETURN(Value x, attr_path(in, it, *attr, line));
                    if (x.is_undefined() && def) x = *def;
                    out.push_back(std::move(x));
                }
                return Value::list(std::move(out));
            }
            if (args.pos.empty()) return in.error(line, "map: needs a filter name or attribute=");
            std::string fname = to_str(args.pos[0]);
            CallArgs rest;
            rest.pos.assign(args.pos.begin() + 1, args.pos.end());
            rest.kw = args.kw;
            for (auto& it : items) {
                CallArgs copy = rest;
                EMBER_ASSIGN_OR_RETURN(Value x, in.filter(fname, it, copy, line));
                out.push_back(std::move(x));
            }
            return Value::list(std::move(out));
        }
        size_t first = by_attr ? 1 : 0;
        if (by_attr && args.pos.empty()) return in.error(line, name + ": needs an attribute name");
        bool want = name == "select" || name == "selectattr";
        std::string tname = args.pos.size() > first ? to_str(args.pos[first]) : "";
        CallArgs targs;
        if (args.pos.size() > first + 1)
            targs.pos.assign(args.pos.begin() + static_cast<long>(first) + 1, args.pos.end());
        for (auto& it : items) {
            Value x = it;
            if (by_attr) {
                EMBER_ASSIGN_OR_RETURN(x, attr_path(in, it, args.pos[0], line));
            }
            bool ok = false;
            if (tname.empty()) {
                ok = truthy(x);
            } else {
                CallArgs copy = targs;
                EMBER_ASSIGN_OR_RETURN(ok, in.test(tname, x, copy, line));
            }
            if (ok == want) out.push_back(it);
        }
        return Value::list(std::move(out));
    }
    if (name == "items") {
        EMBER_TRY(bind({}));
        if (v.is_undefined()) return Value::list();
        if (!v.is_dict())
            return in.error(line,
                            std::string("items: expected a mapping, got '") + type_name(v) + "'");
        std::vector<Value> out;
        for (const auto& kv : v.dict_data().items)
            out.push_back(Value::list({kv.first, kv.second}, true));
        return Value::list(std::move(out));
    }
    if (name == "dictsort") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"case_sensitive", "by", "reverse"}));
        if (!v.is_dict()) return in.error(line, "dictsort: expected a mapping");
        bool by_value = a[1].is_string() && a[1].str() == "value";
        std::vector<Value> pairs, keys;
        for (const auto& kv : v.dict_data().items) {
            pairs.push_back(Value::list({kv.first, kv.second}, true));
            keys.push_back(sort_key(by_value ? kv.second : kv.first, truthy(a[0])));
        }
        EMBER_TRY(check_orderable(in, keys, line));
        std::vector<size_t> order(pairs.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        bool rev = truthy(a[2]);
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
            auto c = rev ? compare(keys[y], keys[x]) : compare(keys[x], keys[y]);
            return c.ok() && *c < 0;
        });
        std::vector<Value> out;
        for (size_t k : order) out.push_back(pairs[k]);
        return Value::list(std::move(out));
    }
    if (name == "sort") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"reverse", "case_sensitive", "attribute"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        EMBER_ASSIGN_OR_RETURN(
            items, sorted(in, std::move(items), truthy(a[0]), truthy(a[1]), a[2], line));
        return Value::list(std::move(items));
    }
    if (name == "unique") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"case_sensitive", "attribute"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        std::vector<Value> out, seen;
        for (auto& it : items) {
            Value key = it;
            if (!a[1].is_undefined()) {
                EMBER_ASSIGN_OR_RETURN(key, attr_path(in, it, a[1], line));
            }
            key = sort_key(key, truthy(a[0]));
            bool dup = false;
            for (const auto& s : seen)
                if (equals(s, key)) dup = true;
            if (!dup) {
                seen.push_back(key);
                out.push_back(it);
            }
        }
        return Value::list(std::move(out));
    }
    if (name == "min" || name == "max") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"case_sensitive", "attribute"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        if (items.empty()) return Value::undefined(name);
        EMBER_ASSIGN_OR_RETURN(items,
                               sorted(in, std::move(items), false, truthy(a[0]), a[1], line));
        return name == "min" ? items.front() : items.back();
    }
    if (name == "sum") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"attribute", "start"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        Value total = a[1].is_undefined() ? Value::integer(0) : a[1];
        for (auto& it : items) {
            Value x = it;
            if (!a[0].is_undefined()) {
                EMBER_ASSIGN_OR_RETURN(x, attr_path(in, it, a[0], line));
            }
            if (!x.is_number() || !total.is_number())
                return in.error(line, "sum: values must be numbers");
            if (x.type == Type::Float || total.type == Type::Float)
                total = Value::number(total.as_float() + x.as_float());
            else
                total = Value::integer(total.as_int() + x.as_int());
        }
        return total;
    }
    if (name == "reverse") {
        EMBER_TRY(bind({}));
        if (v.is_string()) {
            std::vector<size_t> offs = utf8_offsets(v.str());
            std::string out;
            for (size_t k = offs.size() - 1; k > 0; --k)
                out.append(v.str(), offs[k - 1], offs[k] - offs[k - 1]);
            return Value::string(std::move(out));
        }
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    if (name == "indent") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"width", "first", "blank"}));
        std::string ind = a[0].is_string()
                              ? a[0].str()
                              : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                a[0].is_integral() ? a[0].as_int() : 4, 0, 1024)),
                                            ' ');
        std::vector<std::string> lines = split_lines(to_str(v) + "\n");
        std::string out;
        for (size_t k = 0; k < lines.size(); ++k) {
            if (k) out += "\n";
            bool indent_it = k == 0 ? truthy(a[1]) : (truthy(a[2]) || !lines[k].empty());
            if (indent_it) out += ind;
            out += lines[k];
        }
        return str_result(std::move(out));
    }
    if (name == "safe") return v;
    if (name == "escape" || name == "e" || name == "forceescape")
        return str_result(html_escape(to_str(v)));
    if (name == "round") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"precision", "method"}));
        int64_t prec = a[0].is_integral() ? a[0].as_int() : 0;
        std::string method = a[1].is_string() ? a[1].str() : "common";
        if (!v.is_number())
            return in.error(line,
                            std::string("round: expected a number, got '") + type_name(v) + "'");
        if (method == "common" && v.is_integral()) return Value::integer(v.as_int());
        double scale = std::pow(10.0, static_cast<double>(prec));
        if (method == "common") return Value::number(round_half_even(v.as_float(), prec));
        if (method == "ceil") return Value::number(std::ceil(v.as_float() * scale) / scale);
        if (method == "floor") return Value::number(std::floor(v.as_float() * scale) / scale);
        return in.error(line, "round: method must be 'common', 'ceil' or 'floor'");
    }
    if (name == "abs") {
        EMBER_TRY(bind({}));
        if (v.type == Type::Float) return Value::number(std::fabs(v.f));
        if (v.is_integral()) return Value::integer(std::llabs(v.as_int()));
        return in.error(line, std::string("abs: bad operand type '") + type_name(v) + "'");
    }
    if (name == "batch") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"linecount", "fill_with"}));
        if (!a[0].is_integral() || a[0].as_int() <= 0)
            return in.error(line, "batch: linecount must be a positive integer");
        size_t n = static_cast<size_t>(a[0].as_int());
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        std::vector<Value> out, cur;
        for (auto& it : items) {
            cur.push_back(it);
            if (cur.size() == n) out.push_back(Value::list(std::exchange(cur, {})));
        }
        if (!cur.empty()) {
            if (!a[1].is_undefined() && !a[1].is_none())
                while (cur.size() < n) cur.push_back(a[1]);
            out.push_back(Value::list(std::move(cur)));
        }
        return Value::list(std::move(out));
    }
    if (name == "regex_replace") {
        EMBER_ASSIGN_OR_RETURN(
            auto a, bind({"pattern", "replacement", "ignorecase", "multiline", "count"}));
        if (!a[0].is_string()) return in.error(line, "regex_replace: needs a pattern string");
        return regex_replace(in, to_str(v), a[0].str(), to_str(a[1]), truthy(a[2]), truthy(a[3]),
                             a[4].is_integral() ? a[4].as_int() : 0, line);
    }
    if (name == "attr") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"name"}));
        return in.get_attr(v, to_str(a[0]), line);
    }
    if (name == "format") {
        if (!args.kw.empty()) return in.error(line, "format: keyword arguments are not supported");
        return percent_format(in, to_str(v), Value::list(args.pos, true), line);
    }
    if (name == "wordcount") {
        EMBER_TRY(bind({}));
        int64_t n = 0;
        bool in_word = false;
        for (char c : to_str(v)) {
            bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                     (static_cast<unsigned char>(c) >= 0x80);
            if (w && !in_word) ++n;
            in_word = w;
        }
        return Value::integer(n);
    }
    if (name == "center") {
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"width"}));
        std::string s = to_str(v);
        int64_t width = std::min<int64_t>(a[0].is_integral() ? a[0].as_int() : 80, 1 << 20);
        int64_t len = static_cast<int64_t>(utf8_length(s));
        if (width <= len) return Value::string(s);
        int64_t total = width - len;
        int64_t left = total / 2 + (total & width & 1);
        return str_result(std::string(static_cast<size_t>(left), ' ') + s +
                          std::string(static_cast<size_t>(total - left), ' '));
    }
    if (name == "pprint") return str_result(to_repr(v));
    return in.error(line, "unknown filter '" + name + "'");
}

Result<bool> apply_test(Interp& in, const std::string& name, const Value& v, CallArgs& args,
                        int line) {
    auto arg = [&](size_t n) -> Result<Value> {
        std::string what = "test '" + name + "'";
        if (args.pos.size() + args.kw.size() != n)
            return in.error(line, what + ": expects " + std::to_string(n) + " argument(s)");
        return args.pos.empty() ? args.kw[0].second : args.pos[0];
    };
    if (name != "divisibleby" && name != "equalto" && name != "eq" && name != "==" &&
        name != "ne" && name != "!=" && name != "lt" && name != "<" && name != "le" &&
        name != "<=" && name != "gt" && name != ">" && name != "ge" && name != ">=" &&
        name != "greaterthan" && name != "lessthan" && name != "sameas" && name != "in") {
        if (!args.pos.empty() || !args.kw.empty())
            return in.error(line, "test '" + name + "' takes no arguments");
    }
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.type == Type::Int;
    if (name == "float") return v.type == Type::Float;
    if (name == "boolean") return v.type == Type::Bool;
    if (name == "true") return v.type == Type::Bool && v.b;
    if (name == "false") return v.type == Type::Bool && !v.b;
    if (name == "mapping") return v.is_dict();
    if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
    if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
    if (name == "callable") return v.is_callable();
    if (name == "escaped") return false;
    if (name == "lower" || name == "upper") {
        std::string s = to_str(v);
        return s == (name == "lower" ? ascii_lower(s) : ascii_upper(s));
    }
    if (name == "odd" || name == "even") {
        if (!v.is_integral()) return in.error(line, "test '" + name + "': expected an integer");
        return (v.as_int() % 2 != 0) == (name == "odd");
    }
    if (name == "filter" || name == "test") return v.is_string();
    if (name == "divisibleby") {
        EMBER_ASSIGN_OR_RETURN(Value n, arg(1));
        if (!v.is_integral() || !n.is_integral() || n.as_int() == 0)
            return in.error(line, "divisibleby: needs integers and a non-zero divisor");
        return v.as_int() % n.as_int() == 0;
    }
    if (name == "sameas") {
        EMBER_ASSIGN_OR_RETURN(Value o, arg(1));
        if (v.type != o.type) return false;
        if (v.p || o.p) return v.p == o.p;
        return equals(v, o);
    }
    if (name == "in") {
        EMBER_ASSIGN_OR_RETURN(Value seq, arg(1));
        if (seq.is_string()) return v.is_string() && seq.str().find(v.str()) != std::string::npos;
        if (seq.is_dict()) return seq.dict_data().find(v) != nullptr;
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(seq, line));
        for (const auto& x : items)
            if (equals(x, v)) return true;
        return false;
    }
    if (name == "equalto" || name == "eq" || name == "==") {
        EMBER_ASSIGN_OR_RETURN(Value o, arg(1));
        return equals(v, o);
    }
    if (name == "ne" || name == "!=") {
        EMBER_ASSIGN_OR_RETURN(Value o, arg(1));
        return !equals(v, o);
    }
    static const char* const ordering[] = {"lt", "<",  "le", "<=",          "gt",
                                           ">",  "ge", ">=", "greaterthan", "lessthan"};
    if (std::none_of(std::begin(ordering), std::end(ordering),
                     [&](const char* n) { return name == n; }))
        return in.error(line, "unknown test '" + name + "'");
    EMBER_ASSIGN_OR_RETURN(Value o, arg(1));
    if (v.is_undefined() || o.is_undefined())
        return in.error(line, "test '" + name + "': value is undefined");
    auto c = compare(v, o);
    if (!c.ok()) return in.error(line, c.error().message);
    if (name == "lt" || name == "<" || name == "lessthan") return *c < 0;
    if (name == "le" || name == "<=") return *c <= 0;
    if (name == "gt" || name == ">" || name == "greaterthan") return *c > 0;
    if (name == "ge" || name == ">=") return *c >= 0;
    return in.error(line, "unknown test '" + name + "'");
}

}  // namespace ember::jinja

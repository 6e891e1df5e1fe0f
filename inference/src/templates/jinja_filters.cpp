// Jinja2's built-in filters and tests (plus transformers' tojson and an Ansible-style
// regex_replace that GPT4All templates use).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>

#include "templates/jinja_case.h"
#include "templates/jinja_interp.h"

namespace ember::jinja {

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
Result<std::string> py_replace(Interp& in, int line, const std::string& s, const std::string& old,
                               const std::string& repl, int64_t count);
Result<Value> percent_format(Interp& in, const std::string& fmt, const Value& args, int line);
Result<Value> regex_replace(Interp& in, const std::string& subject, const std::string& pattern,
                            const std::string& repl, bool icase, bool multiline, int64_t count,
                            int line);

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
    if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.str()));
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

// Each group returns nullopt for a filter that is not one of its own.
using FilterResult = std::optional<Result<Value>>;

struct FilterHelpers {
    Interp& in;
    const std::string& name;
    CallArgs& args;
    int line;
    Result<std::vector<Value>> bind(std::initializer_list<const char*> names) const {
        return bind_args(in, args, names, "filter '" + name + "'", line);
    }
    Result<Value> str_result(std::string s) const {
        EMBER_TRY(in.charge(s.size(), line));
        return Value::string(std::move(s));
    }
};

#define EMBER_FILTER_HELPERS                                                           \
    const FilterHelpers helpers{in, name, args, line};                                 \
    auto bind = [&](std::initializer_list<const char*> n) { return helpers.bind(n); }; \
    auto str_result = [&](std::string s) { return helpers.str_result(std::move(s)); }; \
    (void)bind;                                                                        \
    (void)str_result

// Trim, length, join, tojson, first/last and the case filters.
FilterResult text_filters(Interp& in, const std::string& name, Value& v, CallArgs& args, int line) {
    EMBER_FILTER_HELPERS;
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
        // Any indent json.dumps takes: n spaces (none below 0) or a string, not capped; the
        // output limit bounds the result.
        opt.max_size = in.limits().max_output;
        if (a[0].is_integral()) {
            const int64_t n = a[0].as_int();
            if (n > static_cast<int64_t>(opt.max_size))
                return in.error(line, "tojson: indent " + std::to_string(n) + " is too large");
            opt.indent = std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
        } else if (a[0].is_string()) {
            opt.indent = a[0].str();
        } else if (!a[0].is_undefined() && !a[0].is_none()) {
            return in.error(line, "tojson: indent must be an integer or a string");
        }
        opt.ensure_ascii = truthy(a[1]);
        if (a[2].is_list() && a[2].list_data().items.size() == 2) {
            opt.item_sep = to_str(a[2].list_data().items[0]);
            opt.key_sep = to_str(a[2].list_data().items[1]);
        } else if (opt.indent) {
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
        // Python's str methods on the whole Unicode range (Jinja2's title is its own).
        if (name == "upper") return str_result(py_upper(s));
        if (name == "lower") return str_result(py_lower(s));
        if (name == "title") return str_result(jinja_title(s));
        return str_result(py_capitalize(s));
    }
    return std::nullopt;
}

// Replace, default, string, int, float, list.
FilterResult conversion_filters(Interp& in, const std::string& name, Value& v, CallArgs& args,
                                int line) {
    EMBER_FILTER_HELPERS;
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
            if (errno == ERANGE && base == 10 && !s.empty()) {  // Python's int() has no bound
                const bool neg = s[0] == '-';
                auto big = Value::integer_text(
                    neg, std::string_view(s).substr(s[0] == '-' || s[0] == '+' ? 1 : 0));
                if (big) return *big;
            }
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
    return std::nullopt;
}

// Map, select, reject, selectattr, rejectattr.
FilterResult select_filters(Interp& in, const std::string& name, Value& v, CallArgs& args,
                            int line) {
    EMBER_FILTER_HELPERS;
    if (name == "map" || name == "select" || name == "reject" || name == "selectattr" ||
        name == "rejectattr") {
        // Jinja2 iterates only `if value:`, so none, undefined or empty give an empty sequence.
        if (!truthy(v)) return Value::list();
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
    return std::nullopt;
}

// dictsort: the (key, value) pairs of dict v, sorted stably by key or by value.
Result<Value> dictsort(Interp& in, const Value& v, bool case_sensitive, bool by_value, bool rev,
                       int line) {
    std::vector<Value> pairs, keys;
    for (const auto& kv : v.dict_data().items) {
        pairs.push_back(Value::list({kv.first, kv.second}, true));
        keys.push_back(sort_key(by_value ? kv.second : kv.first, case_sensitive));
    }
    EMBER_TRY(check_orderable(in, keys, line));
    std::vector<size_t> order(pairs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        auto c = rev ? compare(keys[y], keys[x]) : compare(keys[x], keys[y]);
        return c.ok() && *c < 0;
    });
    std::vector<Value> out;
    for (size_t k : order) out.push_back(pairs[k]);
    return Value::list(std::move(out));
}

// Items, dictsort, sort, unique, min/max, sum, reverse.
FilterResult collection_filters(Interp& in, const std::string& name, Value& v, CallArgs& args,
                                int line) {
    EMBER_FILTER_HELPERS;
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
        return dictsort(in, v, truthy(a[0]), a[1].is_string() && a[1].str() == "value",
                        truthy(a[2]), line);
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
    return std::nullopt;
}

// Indent, escape, round, abs, batch.
FilterResult layout_filters(Interp& in, const std::string& name, Value& v, CallArgs& args,
                            int line) {
    EMBER_FILTER_HELPERS;
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
    return std::nullopt;
}

// Slice, random, regex_replace, attr, format, wordcount, center, pprint.
FilterResult more_filters(Interp& in, const std::string& name, Value& v, CallArgs& args, int line) {
    EMBER_FILTER_HELPERS;
    if (name == "slice") {
        // Jinja2's slice: `slices` lists, the first len % slices of them one item longer; the
        // others get fill_with appended when it is given.
        EMBER_ASSIGN_OR_RETURN(auto a, bind({"slices", "fill_with"}));
        if (!a[0].is_integral()) return in.error(line, "slice: slices must be an integer");
        const int64_t n = a[0].as_int();
        if (n == 0) return in.error(line, "slice: integer division or modulo by zero");
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        if (n < 0) return Value::list();
        if (static_cast<uint64_t>(n) > in.limits().max_items)
            return in.error(line, "slice: too many slices");
        const int64_t len = static_cast<int64_t>(items.size()), per = len / n, extra = len % n;
        std::vector<Value> out;
        int64_t offset = 0;
        for (int64_t k = 0; k < n; ++k) {
            const int64_t start = offset + k * per;
            if (k < extra) ++offset;
            const int64_t end = offset + (k + 1) * per;
            std::vector<Value> part(items.begin() + start, items.begin() + end);
            if (!a[1].is_undefined() && !a[1].is_none() && k >= extra) part.push_back(a[1]);
            out.push_back(Value::list(std::move(part)));
        }
        return Value::list(std::move(out));
    }
    if (name == "random") {
        // Jinja2 uses Python's random.choice; here the pick is deterministic per render
        // (Interp::next_random), so a chat prompt does not change from one turn to the next.
        EMBER_TRY(bind({}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v, line));
        if (items.empty()) return Value::undefined("random");
        return items[in.next_random() % items.size()];
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
    return std::nullopt;
}

#undef EMBER_FILTER_HELPERS

}  // namespace

Result<Value> apply_filter(Interp& in, const std::string& name, Value v, CallArgs& args, int line) {
    for (auto group : {text_filters, conversion_filters, select_filters, collection_filters,
                       layout_filters, more_filters})
        if (FilterResult r = group(in, name, v, args, line)) return std::move(*r);
    return in.error(line, "unknown filter '" + name + "'");
}

}  // namespace ember::jinja

// Python methods of str / list / dict that templates call, string formatting, and the global
// functions (range, namespace, dict, raise_exception).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "templates/jinja_case.h"
#include "templates/jinja_interp.h"

namespace ember::jinja {

// str.strip / lstrip / rstrip: whitespace, or any of `chars` when given (as code points).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
    std::vector<size_t> offs = utf8_offsets(s);
    size_t n = offs.size() - 1;
    std::vector<std::string> set;
    bool ws = chars.is_undefined() || chars.is_none();
    if (!ws) {
        std::string c = to_str(chars);
        std::vector<size_t> co = utf8_offsets(c);
        for (size_t k = 0; k + 1 < co.size(); ++k)
            set.push_back(c.substr(co[k], co[k + 1] - co[k]));
    }
    auto strip_at = [&](size_t k) {
        std::string_view ch(s.data() + offs[k], offs[k + 1] - offs[k]);
        if (ws) return py_is(ch, CharClass::Space);
        return std::find(set.begin(), set.end(), ch) != set.end();
    };
    size_t lo = 0, hi = n;
    if (left)
        while (lo < hi && strip_at(lo)) ++lo;
    if (right)
        while (hi > lo && strip_at(hi - 1)) --hi;
    return s.substr(offs[lo], offs[hi] - offs[lo]);
}

// Python's str.count: non-overlapping occurrences; the empty string occurs between every
// character and at both ends.
static uint64_t py_count(const std::string& s, const std::string& sub) {
    if (sub.empty()) return utf8_length(s) + 1;
    uint64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return n;
}

// Fails before building a result over the interpreter's string limit.
Result<std::string> py_replace(Interp& in, int line, const std::string& s, const std::string& old,
                               const std::string& repl, int64_t count) {
    std::string out;
    {
        uint64_t hits = py_count(s, old);
        if (count >= 0) hits = std::min<uint64_t>(hits, static_cast<uint64_t>(count));
        uint64_t grow = repl.size() > old.size() ? repl.size() - old.size() : 0;
        if (grow &&
            hits > (in.limits().max_output - std::min(s.size(), in.limits().max_output)) / grow)
            return in.error(line, "replace(): result longer than the limit of " +
                                      std::to_string(in.limits().max_output) + " bytes");
    }
    if (old.empty()) {
        // Python inserts the replacement around every character.
        std::vector<size_t> offs = utf8_offsets(s);
        int64_t done = 0;
        for (size_t k = 0; k < offs.size(); ++k) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            if (k + 1 < offs.size()) out.append(s, offs[k], offs[k + 1] - offs[k]);
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t f = s.find(old, pos);
        if (f == std::string::npos) break;
        out.append(s, pos, f - pos);
        out += repl;
        pos = f + old.size();
        ++done;
    }
    out.append(s, pos, std::string::npos);
    return out;
}

// One printf-style conversion; spec is "[flags][width][.precision]" without the type.
static Result<std::string> format_one(Interp& in, const std::string& spec, char type,
                                      const Value& v, int line) {
    char buf[512];
    std::string f = "%" + spec;
    if (spec.size() > 20) return in.error(line, "format spec too long");
    switch (type) {
        case 's':
        case 'r': {
            std::string s = type == 's' ? to_str(v) : to_repr(v);
            if (spec.empty()) return s;
            // Width and precision count bytes here; fine for ASCII.
            int w = std::snprintf(nullptr, 0, (f + "s").c_str(), s.c_str());
            if (w < 0 || w > 1 << 20) return in.error(line, "format result too long");
            std::string out(static_cast<size_t>(w) + 1, '\0');
            std::snprintf(out.data(), out.size(), (f + "s").c_str(), s.c_str());
            out.resize(static_cast<size_t>(w));
            return out;
        }
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o':
        case 'c': {
            if (!v.is_number())
                return in.error(line, std::string("%") + type +
                                          " format: a number is required, not '" + type_name(v) +
                                          "'");
            long long x = v.type == Type::Float ? static_cast<long long>(v.f) : v.as_int();
            if (type == 'c') return std::string(1, static_cast<char>(x));
            std::snprintf(buf, sizeof(buf), (f + "ll" + (type == 'i' ? 'd' : type)).c_str(), x);
            return std::string(buf);
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
            if (!v.is_number())
                return in.error(line, std::string("%") + type +
                                          " format: a number is required, not '" + type_name(v) +
                                          "'");
            double x = v.as_float();
            if (std::fabs(x) > 1e300) x = std::copysign(1e300, x);
            std::snprintf(buf, sizeof(buf), (f + type).c_str(), x);
            return std::string(buf);
        }
        default:
            return in.error(line, std::string("unsupported format character '") + type + "'");
    }
}

static bool valid_spec(const std::string& spec) {
    for (char c : spec)
        if (!std::isdigit(static_cast<unsigned char>(c)) && !std::strchr("-+ #0.", c)) return false;
    return true;
}

// Python's "fmt % args".
Result<Value> percent_format(Interp& in, const std::string& fmt, const Value& args, int line) {
    std::vector<Value> pos;
    if (args.is_list() && args.list_data().is_tuple)
        pos = args.list_data().items;
    else
        pos.push_back(args);
    size_t next = 0;
    std::string out;
    for (size_t k = 0; k < fmt.size(); ++k) {
        if (fmt[k] != '%') {
            out += fmt[k];
            continue;
        }
        if (++k >= fmt.size()) return in.error(line, "incomplete format");
        Value named;
        bool has_name = false;
        if (fmt[k] == '(') {
            size_t close = fmt.find(')', k);
            if (close == std::string::npos) return in.error(line, "incomplete format key");
            if (!args.is_dict()) return in.error(line, "format requires a mapping");
            const Value* v =
                args.dict_data().find(std::string_view(fmt).substr(k + 1, close - k - 1));
            if (!v) return in.error(line, "format key not found");
            named = *v;
            has_name = true;
            k = close + 1;
        }
        size_t start = k;
        while (k < fmt.size() &&
               (std::isdigit(static_cast<unsigned char>(fmt[k])) || std::strchr("-+ #0.", fmt[k])))
            ++k;
        if (k >= fmt.size()) return in.error(line, "incomplete format");
        std::string spec = fmt.substr(start, k - start);
        char type = fmt[k];
        if (type == '%') {
            out += '%';
            continue;
        }
        Value v;
        if (has_name) {
            v = named;
        } else {
            if (next >= pos.size()) return in.error(line, "not enough arguments for format string");
            v = pos[next++];
        }
        EMBER_ASSIGN_OR_RETURN(std::string piece, format_one(in, spec, type, v, line));
        out += piece;
        if (out.size() > in.limits().max_output) return in.error(line, "format result too long");
    }
    if (!args.is_dict() && next < pos.size() && !(pos.size() == 1 && pos[0].is_dict()))
        return in.error(line, "not all arguments converted during string formatting");
    EMBER_TRY(in.charge(out.size(), line));
    return Value::string(std::move(out));
}

// Python's str.format with {} / {0} / {name} fields and simple printf-like specs.
static Result<Value> str_format(Interp& in, const std::string& fmt, const CallArgs& a, int line) {
    std::string out;
    size_t auto_idx = 0;
    for (size_t k = 0; k < fmt.size(); ++k) {
        char c = fmt[k];
        if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') {
            out += '}';
            ++k;
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
            out += '{';
            ++k;
            continue;
        }
        size_t close = fmt.find('}', k);
        if (close == std::string::npos) return in.error(line, "format: unmatched '{'");
        std::string field = fmt.substr(k + 1, close - k - 1);
        std::string spec;
        size_t colon = field.find(':');
        if (colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        Value v;
        if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
            size_t idx = field.empty() ? auto_idx++ : static_cast<size_t>(std::atoi(field.c_str()));
            if (idx >= a.pos.size()) return in.error(line, "format: index out of range");
            v = a.pos[idx];
        } else {
            bool found = false;
            for (const auto& [n, x] : a.kw)
                if (n == field) v = x, found = true;
            if (!found) return in.error(line, "format: missing argument '" + field + "'");
        }
        if (spec.empty()) {
            out += to_str(v);
        } else {
            char type = std::isalpha(static_cast<unsigned char>(spec.back())) ? spec.back() : 's';
            if (std::isalpha(static_cast<unsigned char>(spec.back()))) spec.pop_back();
            if (!valid_spec(spec)) return in.error(line, "format: unsupported spec '" + spec + "'");
            EMBER_ASSIGN_OR_RETURN(std::string piece, format_one(in, spec, type, v, line));
            out += piece;
        }
        if (out.size() > in.limits().max_output) return in.error(line, "format result too long");
        k = close;
    }
    EMBER_TRY(in.charge(out.size(), line));
    return Value::string(std::move(out));
}

static Result<std::vector<std::string>> py_split(Interp& in, int line, const std::string& s,
                                                 const Value& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep.is_undefined() || sep.is_none()) {
        size_t k = 0;
        while (true) {
            while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
            if (k >= s.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
                size_t e = s.size();
                while (e > k && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
                out.push_back(s.substr(k, e - k));
                break;
            }
            if (out.size() >= in.limits().max_items)
                return in.error(line, "split(): too many parts");
            size_t e = k;
            while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
            out.push_back(s.substr(k, e - k));
            k = e;
        }
        return out;
    }
    std::string d = to_str(sep);
    if (d.empty()) return in.error(line, "split(): empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        size_t f = s.find(d, pos);
        if (f == std::string::npos) break;
        if (out.size() >= in.limits().max_items) return in.error(line, "split(): too many parts");
        out.push_back(s.substr(pos, f - pos));
        pos = f + d.size();
    }
    out.push_back(s.substr(pos));
    return out;
}

static Value str_list(const std::vector<std::string>& parts) {
    std::vector<Value> items;
    for (const auto& p : parts) items.push_back(Value::string(p));
    return Value::list(std::move(items));
}

// str.rsplit(sep, maxsplit) with a limit: split from the right by reversing the problem.
static Result<Value> py_rsplit(Interp& in, int line, const std::string& s, const Value& sep,
                               int64_t maxsplit) {
    EMBER_ASSIGN_OR_RETURN(std::vector<std::string> all, py_split(in, line, s, sep, -1));
    if (static_cast<int64_t>(all.size()) <= maxsplit + 1) return str_list(all);
    std::string d = sep.is_undefined() || sep.is_none() ? " " : to_str(sep);
    size_t keep = all.size() - static_cast<size_t>(maxsplit);
    std::string head;
    for (size_t k = 0; k < keep; ++k) head += (k ? d : "") + all[k];
    std::vector<std::string> out{head};
    out.insert(out.end(), all.begin() + static_cast<long>(keep), all.end());
    return str_list(out);
}

// str.splitlines(): \n, \r and \r\n end a line; no empty last line.
static Result<Value> py_splitlines(Interp& in, int line, const std::string& s) {
    std::vector<std::string> lines;
    std::string cur;
    for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '\n' || s[k] == '\r') {
            if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
            if (lines.size() >= in.limits().max_items)
                return in.error(line, "splitlines(): too many lines");
            lines.push_back(std::exchange(cur, {}));
        } else {
            cur += s[k];
        }
    }
    if (!cur.empty()) lines.push_back(cur);
    return str_list(lines);
}

static Result<Value> str_method(Interp& in, const std::string& s, const std::string& m, CallArgs& a,
                                int line) {
    auto bind = [&](std::initializer_list<const char*> names) {
        return bind_args(in, a, names, "str." + m + "()", line);
    };
    auto res = [&](std::string r) -> Result<Value> {
        EMBER_TRY(in.charge(r.size(), line));
        return Value::string(std::move(r));
    };
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"chars"}));
        return res(py_strip(s, x[0], m != "rstrip", m != "lstrip"));
    }
    if (m == "startswith" || m == "endswith") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"prefix"}));
        std::vector<Value> cands =
            x[0].is_list() ? x[0].list_data().items : std::vector<Value>{x[0]};
        for (const auto& c : cands) {
            if (!c.is_string()) return in.error(line, "str." + m + "(): expected a string");
            const std::string& p = c.str();
            if (p.size() > s.size()) continue;
            if (m == "startswith" ? s.compare(0, p.size(), p) == 0
                                  : s.compare(s.size() - p.size(), p.size(), p) == 0)
                return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    if (m == "split" || m == "rsplit") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"sep", "maxsplit"}));
        int64_t maxsplit = x[1].is_integral() ? x[1].as_int() : -1;
        if (m == "rsplit" && maxsplit >= 0) return py_rsplit(in, line, s, x[0], maxsplit);
        EMBER_ASSIGN_OR_RETURN(std::vector<std::string> parts,
                               py_split(in, line, s, x[0], maxsplit));
        return str_list(parts);
    }
    if (m == "splitlines") {
        EMBER_TRY(bind({}));
        return py_splitlines(in, line, s);
    }
    if (m == "upper" || m == "lower" || m == "title" || m == "capitalize") {
        EMBER_TRY(bind({}));
        if (m == "upper") return res(py_upper(s));
        if (m == "lower") return res(py_lower(s));
        return res(m == "title" ? py_title(s) : py_capitalize(s));
    }
    if (m == "replace") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"old", "new", "count"}));
        EMBER_ASSIGN_OR_RETURN(std::string r, py_replace(in, line, s, to_str(x[0]), to_str(x[1]),
                                                         x[2].is_integral() ? x[2].as_int() : -1));
        return res(std::move(r));
    }
    if (m == "format") return str_format(in, s, a, line);
    if (m == "find" || m == "rfind" || m == "index" || m == "count") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"sub"}));
        std::string sub = to_str(x[0]);
        if (m == "count") return Value::integer(static_cast<int64_t>(py_count(s, sub)));
        size_t p = m == "rfind" ? s.rfind(sub) : s.find(sub);
        if (p == std::string::npos) {
            if (m == "index") return in.error(line, "str.index(): substring not found");
            return Value::integer(-1);
        }
        return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
    }
    if (m == "join") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"iterable"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(x[0], line));
        std::string out;
        for (size_t k = 0; k < items.size(); ++k) {
            if (!items[k].is_string()) return in.error(line, "str.join(): items must be strings");
            if (k) out += s;
            out += items[k].str();
            if (out.size() > in.limits().max_output) return in.error(line, "join: result too long");
        }
        return res(out);
    }
    if (m == "isdigit" || m == "isalpha" || m == "isalnum" || m == "isspace" || m == "isupper" ||
        m == "islower") {
        EMBER_TRY(bind({}));
        if (m == "isupper") return Value::boolean(py_isupper(s));
        if (m == "islower") return Value::boolean(py_islower(s));
        const CharClass k = m == "isdigit"   ? CharClass::Digit
                            : m == "isalpha" ? CharClass::Alpha
                            : m == "isalnum" ? CharClass::Alnum
                                             : CharClass::Space;
        return Value::boolean(py_is(s, k));
    }
    return in.error(line, "str has no method '" + m + "'");
}

static Result<Value> list_method(Interp& in, const Value& self, const std::string& m, CallArgs& a,
                                 int line) {
    auto& items = self.list_data().items;
    in.note_mutation(self);
    auto bind = [&](std::initializer_list<const char*> names) {
        return bind_args(in, a, names, "list." + m + "()", line);
    };
    if (m == "append") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"item"}));
        if (items.size() >= in.limits().max_items) return in.error(line, "list too long");
        items.push_back(x[0]);
        return Value::none();
    }
    if (m == "extend") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"iterable"}));
        EMBER_ASSIGN_OR_RETURN(std::vector<Value> more, in.iterate(x[0], line));
        if (items.size() + more.size() > in.limits().max_items)
            return in.error(line, "list too long");
        items.insert(items.end(), more.begin(), more.end());
        return Value::none();
    }
    if (m == "insert") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"index", "item"}));
        if (items.size() >= in.limits().max_items) return in.error(line, "list too long");
        int64_t n = static_cast<int64_t>(items.size());
        int64_t k = x[0].is_integral() ? x[0].as_int() : 0;
        if (k < 0) k = std::max<int64_t>(0, k + n);
        k = std::min(k, n);
        items.insert(items.begin() + k, x[1]);
        return Value::none();
    }
    if (m == "pop") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"index"}));
        int64_t n = static_cast<int64_t>(items.size());
        int64_t k = x[0].is_integral() ? x[0].as_int() : -1;
        if (k < 0) k += n;
        if (k < 0 || k >= n) return in.error(line, "pop index out of range");
        Value v = items[static_cast<size_t>(k)];
        items.erase(items.begin() + k);
        return v;
    }
    if (m == "index" || m == "count") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"value"}));
        int64_t count = 0;
        for (size_t k = 0; k < items.size(); ++k) {
            if (!equals(items[k], x[0])) continue;
            if (m == "index") return Value::integer(static_cast<int64_t>(k));
            ++count;
        }
        if (m == "index") return in.error(line, "list.index(): value not in list");
        return Value::integer(count);
    }
    return in.error(line, "list has no method '" + m + "'");
}

static Result<Value> dict_method(Interp& in, const Value& self, const std::string& m, CallArgs& a,
                                 int line) {
    DictData& d = self.dict_data();
    in.note_mutation(self);
    auto bind = [&](std::initializer_list<const char*> names) {
        return bind_args(in, a, names, "dict." + m + "()", line);
    };
    if (m == "items" || m == "keys" || m == "values") {
        EMBER_TRY(bind({}));
        std::vector<Value> out;
        for (const auto& kv : d.items) {
            if (m == "items")
                out.push_back(Value::list({kv.first, kv.second}, true));
            else
                out.push_back(m == "keys" ? kv.first : kv.second);
        }
        return Value::list(std::move(out));
    }
    if (m == "get") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"key", "default"}));
        if (const Value* v = d.find(x[0])) return *v;
        return x[1].is_undefined() ? Value::none() : x[1];
    }
    if (m == "pop") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"key", "default"}));
        for (size_t k = 0; k < d.items.size(); ++k) {
            if (equals(d.items[k].first, x[0])) {
                Value v = d.items[k].second;
                d.items.erase(d.items.begin() + static_cast<long>(k));
                return v;
            }
        }
        if (x[1].is_undefined())
            return in.error(line, "dict.pop(): key not found: " + to_repr(x[0]));
        return x[1];
    }
    if (m == "setdefault") {
        EMBER_ASSIGN_OR_RETURN(auto x, bind({"key", "default"}));
        if (const Value* v = d.find(x[0])) return *v;
        Value def = x[1].is_undefined() ? Value::none() : x[1];
        d.set(x[0], def);
        return def;
    }
    if (m == "update") {
        for (const auto& p : a.pos) {
            if (!p.is_dict()) return in.error(line, "dict.update(): expected a mapping");
            for (const auto& kv : p.dict_data().items) d.set(kv.first, kv.second);
        }
        for (const auto& [k, v] : a.kw) d.set(Value::string(k), v);
        return Value::none();
    }
    if (m == "copy") {
        EMBER_TRY(bind({}));
        Value c = Value::dict();
        c.dict_data().items = d.items;
        return c;
    }
    return in.error(line, "dict has no method '" + m + "'");
}

Value find_method(const Value& obj, const std::string& name) {
    static const char* const str_methods[] = {
        "strip",      "lstrip",  "rstrip",  "startswith", "endswith",   "split",   "rsplit",
        "splitlines", "upper",   "lower",   "title",      "capitalize", "replace", "format",
        "find",       "rfind",   "index",   "count",      "join",       "isdigit", "isalpha",
        "isalnum",    "isspace", "isupper", "islower"};
    static const char* const list_methods[] = {"append", "extend", "insert",
                                               "pop",    "index",  "count"};
    static const char* const dict_methods[] = {"items", "keys",       "values", "get",
                                               "pop",   "setdefault", "update", "copy"};
    auto has = [&](const auto& names) {
        return std::any_of(std::begin(names), std::end(names),
                           [&](const char* n) { return name == n; });
    };
    if (obj.is_string() && has(str_methods)) {
        return Value::function("str." + name,
                               [obj, name](Interp& in, CallArgs& a) -> Result<Value> {
                                   return str_method(in, obj.str(), name, a, 0);
                               });
    }
    if (obj.is_list() && has(list_methods)) {
        return Value::function("list." + name, [obj, name](Interp& in, CallArgs& a) {
            return list_method(in, obj, name, a, 0);
        });
    }
    if (obj.is_dict() && has(dict_methods)) {
        return Value::function("dict." + name, [obj, name](Interp& in, CallArgs& a) {
            return dict_method(in, obj, name, a, 0);
        });
    }
    return Value::undefined(name);
}

void install_globals(Interp& in) {
    in.set_global(
        "range", Value::function("range", [](Interp& in, CallArgs& a) -> Result<Value> {
            int64_t start = 0, stop = 0, step = 1;
            for (const auto& v : a.pos)
                if (!v.is_integral())
                    return make_error("template.render", "range() needs integer arguments");
            if (a.pos.size() == 1)
                stop = a.pos[0].as_int();
            else if (a.pos.size() == 2 || a.pos.size() == 3) {
                start = a.pos[0].as_int();
                stop = a.pos[1].as_int();
                if (a.pos.size() == 3) step = a.pos[2].as_int();
            } else {
                return make_error("template.render", "range() takes 1 to 3 arguments");
            }
            if (step == 0) return make_error("template.render", "range() step must not be zero");
            std::vector<Value> out;
            for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
                if (out.size() >= in.limits().max_items)
                    return make_error("template.render", "range() too long");
                out.push_back(Value::integer(k));
                if ((step > 0 && k > INT64_MAX - step) || (step < 0 && k < INT64_MIN - step)) break;
            }
            return Value::list(std::move(out));
        }));
    auto make_dict = [](DictKind kind) {
        return [kind](Interp&, CallArgs& a) -> Result<Value> {
            Value d = Value::dict(kind);
            for (const auto& p : a.pos) {
                if (!p.is_dict())
                    return make_error("template.render", "expected a mapping argument");
                for (const auto& kv : p.dict_data().items) d.dict_data().set(kv.first, kv.second);
            }
            for (const auto& [k, v] : a.kw) d.dict_data().set(Value::string(k), v);
            return d;
        };
    };
    in.set_global("namespace", Value::function("namespace", make_dict(DictKind::Namespace)));
    in.set_global("dict", Value::function("dict", make_dict(DictKind::Plain)));
    in.set_global("raise_exception",
                  Value::function("raise_exception", [](Interp&, CallArgs& a) -> Result<Value> {
                      std::string msg = a.pos.empty() ? "" : to_str(a.pos[0]);
                      return make_error("template.raise", "raise_exception: " + msg);
                  }));
}

}  // namespace ember::jinja

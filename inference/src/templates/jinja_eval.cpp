// Expression evaluation with Python semantics.
#include <cmath>
#include <limits>

#include "templates/jinja_interp.h"

namespace ember::jinja {

namespace {

bool starts_with(const std::string& s, const char* p) {
    return s.rfind(p, 0) == 0;
}

std::string undefined_msg(const Value& v) {
    const std::string& n = v.undefined_name();
    return n.empty() ? "value is undefined" : "'" + n + "' is undefined";
}

// Python's slice.indices().
void slice_indices(int64_t len, const Value& start, const Value& stop, int64_t step, int64_t& lo,
                   int64_t& hi) {
    auto clamp = [&](const Value& v, int64_t def_pos, int64_t def_neg) -> int64_t {
        if (v.is_undefined() || v.is_none()) return step > 0 ? def_pos : def_neg;
        int64_t x = v.as_int();
        if (x < 0) {
            x += len;
            if (x < 0) x = step < 0 ? -1 : 0;
        } else if (x >= len) {
            x = step < 0 ? len - 1 : len;
        }
        return x;
    };
    lo = clamp(start, 0, len - 1);
    hi = clamp(stop, len, -1);
}

}  // namespace

Result<Value> Interp::eval(const Expr& e) {
    if (++m_eval_depth > m_limits.max_depth) {
        --m_eval_depth;
        return error(e.line, "expressions or macro calls nested too deeply");
    }
    auto r = eval_inner(e);
    --m_eval_depth;
    if (!r.ok()) {
        const Error& err = r.error();
        if (!starts_with(err.message, "line ") &&
            (err.code == "template.render" || err.code == "template.raise"))
            return make_error(err.code, "line " + std::to_string(e.line) + ": " + err.message);
    }
    return r;
}

Status Interp::eval_args(const Expr& e, size_t first_kid, CallArgs& out) {
    for (size_t k = first_kid; k < e.kids.size(); ++k) {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.kids[k]));
        out.pos.push_back(std::move(v));
    }
    for (const auto& [name, ex] : e.kwargs) {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*ex));
        out.kw.emplace_back(name, std::move(v));
    }
    return {};
}

Result<Value> Interp::eval_list(const Expr& e) {
    std::vector<Value> items;
    items.reserve(e.kids.size());
    for (const auto& k : e.kids) {
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*k));
        items.push_back(std::move(v));
    }
    return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
}

// {k: v, ...}: kids alternate key, value; a key must be hashable (not a list, dict or undefined).
Result<Value> Interp::eval_dict(const Expr& e) {
    Value d = Value::dict();
    for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        EMBER_ASSIGN_OR_RETURN(Value key, eval(*e.kids[k]));
        EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.kids[k + 1]));
        if (key.is_list() || key.is_dict() || key.is_undefined())
            return error(e.line,
                         std::string("unhashable dict key of type '") + type_name(key) + "'");
        d.dict_data().set(std::move(key), std::move(v));
    }
    return d;
}

// Unary - and + on numbers; -x of an int64 that overflows becomes a big integer, and back.
Result<Value> Interp::eval_unary(const Expr& e) {
    using K = Expr::Kind;
    EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
    if (v.is_undefined()) return error(e.line, undefined_msg(v));
    if (!v.is_number())
        return error(e.line, std::string("bad operand type for unary ") +
                                 (e.kind == K::Neg ? "-" : "+") + ": '" + type_name(v) + "'");
    if (e.kind == K::Pos) return v.type == Type::Bool ? Value::integer(v.as_int()) : v;
    if (v.type == Type::Float) return Value::number(-v.f);
    if (v.is_big()) {  // -(2**63) fits int64 again
        const std::string& t = v.big_text();
        const bool neg = t[0] == '-';
        return Value::integer_text(!neg, std::string_view(t).substr(neg ? 1 : 0));
    }
    if (v.as_int() == std::numeric_limits<int64_t>::min())
        return Value::integer_text(false, "9223372036854775808");
    return Value::integer(-v.as_int());
}

Result<Value> Interp::eval_inner(const Expr& e) {
    EMBER_TRY(step(e.line));
    using K = Expr::Kind;
    switch (e.kind) {
        case K::Const:
            return e.value;
        case K::Name:
            return lookup(e.name);
        case K::List:
        case K::Tuple:
            return eval_list(e);
        case K::Dict:
            return eval_dict(e);
        case K::Attr: {
            EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
            return get_attr(obj, e.name, e.line);
        }
        case K::Item: {
            EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
            EMBER_ASSIGN_OR_RETURN(Value key, eval(*e.kids[1]));
            return get_item(obj, key, e.line);
        }
        case K::Slice: {
            EMBER_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
            return eval_slice(obj, e);
        }
        case K::Call: {
            EMBER_ASSIGN_OR_RETURN(Value fn, eval(*e.kids[0]));
            CallArgs args;
            EMBER_TRY(eval_args(e, 1, args));
            return call(fn, args, e.line);
        }
        case K::Filter: {
            Value v;
            if (e.kids[0]) {
                EMBER_ASSIGN_OR_RETURN(v, eval(*e.kids[0]));
            } else {
                v = m_filter_input;
            }
            CallArgs args;
            EMBER_TRY(eval_args(e, 1, args));
            return filter(e.name, std::move(v), args, e.line);
        }
        case K::Test: {
            EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
            CallArgs args;
            EMBER_TRY(eval_args(e, 1, args));
            EMBER_ASSIGN_OR_RETURN(bool r, test(e.name, v, args, e.line));
            return Value::boolean(r != e.negated);
        }
        case K::Neg:
        case K::Pos:
            return eval_unary(e);
        case K::Not: {
            EMBER_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
            return Value::boolean(!truthy(v));
        }
        case K::And:
        case K::Or: {
            EMBER_ASSIGN_OR_RETURN(Value a, eval(*e.kids[0]));
            if (truthy(a) == (e.kind == K::Or)) return a;
            return eval(*e.kids[1]);
        }
        case K::Binary: {
            EMBER_ASSIGN_OR_RETURN(Value a, eval(*e.kids[0]));
            EMBER_ASSIGN_OR_RETURN(Value b, eval(*e.kids[1]));
            return eval_binary(e.name, a, b, e.line);
        }
        case K::Compare:
            return eval_compare(e);
        case K::Cond: {
            EMBER_ASSIGN_OR_RETURN(Value c, eval(*e.kids[1]));
            if (truthy(c)) return eval(*e.kids[0]);
            if (e.kids[2]) return eval(*e.kids[2]);
            return Value::undefined();
        }
    }
    return error(e.line, "internal: unknown expression");
}

static Result<Value> repeat(Interp& in, const Value& seq, int64_t n, int line) {
    if (n < 0) n = 0;
    if (seq.is_string()) {
        const std::string& s = seq.str();
        uint64_t total = static_cast<uint64_t>(s.size()) * static_cast<uint64_t>(n);
        if (!s.empty() && total / s.size() != static_cast<uint64_t>(n))
            return in.error(line, "string repetition too large");
        EMBER_TRY(in.charge(static_cast<size_t>(total), line));
        std::string out;
        out.reserve(static_cast<size_t>(total));
        for (int64_t k = 0; k < n; ++k) out += s;
        return Value::string(std::move(out));
    }
    const auto& items = seq.list_data().items;
    if (!items.empty() && static_cast<uint64_t>(n) > in.limits().max_items / items.size())
        return in.error(line, "list repetition too large");
    std::vector<Value> out;
    for (int64_t k = 0; k < n; ++k) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.list_data().is_tuple);
}

Result<Value> percent_format(Interp& in, const std::string& fmt, const Value& args, int line);

Result<Value> Interp::eval_binary(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "~") {
        std::string s = to_str(a) + to_str(b);
        EMBER_TRY(charge(s.size(), line));
        return Value::string(std::move(s));
    }
    if (op == "%" && a.is_string()) return percent_format(*this, a.str(), b, line);
    if (a.is_undefined()) return error(line, undefined_msg(a));
    if (b.is_undefined()) return error(line, undefined_msg(b));
    auto unsupported = [&]() {
        return error(line, "unsupported operand types for " + op + ": '" + type_name(a) +
                               "' and '" + type_name(b) + "'");
    };
    if (a.is_number() && b.is_number()) {
        bool fl = a.type == Type::Float || b.type == Type::Float;
        if (op == "/") {
            if (b.as_float() == 0.0) return error(line, "division by zero");
            return Value::number(a.as_float() / b.as_float());
        }
        if (fl) {
            double x = a.as_float(), y = b.as_float();
            if (op == "+") return Value::number(x + y);
            if (op == "-") return Value::number(x - y);
            if (op == "*") return Value::number(x * y);
            if (op == "**") return Value::number(std::pow(x, y));
            if (y == 0.0) return error(line, "float division by zero");
            if (op == "//") return Value::number(std::floor(x / y));
            if (op == "%") {
                double r = std::fmod(x, y);
                if (r != 0 && ((r < 0) != (y < 0))) r += y;
                return Value::number(r);
            }
            return unsupported();
        }
        if (a.is_big() || b.is_big())
            return error(line, "integer arithmetic beyond 64 bits is not supported (" + to_str(a) +
                                   " " + op + " " + to_str(b) + ")");
        int64_t x = a.as_int(), y = b.as_int(), r = 0;
        auto overflow = [&]() { return error(line, "integer overflow in " + op); };
        if (op == "+") {
            if (__builtin_add_overflow(x, y, &r)) return overflow();
            return Value::integer(r);
        }
        if (op == "-") {
            if (__builtin_sub_overflow(x, y, &r)) return overflow();
            return Value::integer(r);
        }
        if (op == "*") {
            if (__builtin_mul_overflow(x, y, &r)) return overflow();
            return Value::integer(r);
        }
        if (op == "**") {
            if (y < 0)
                return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
            int64_t result = 1, base = x;
            while (y > 0) {
                if (y & 1)
                    if (__builtin_mul_overflow(result, base, &result)) return overflow();
                y >>= 1;
                if (y && __builtin_mul_overflow(base, base, &base)) return overflow();
            }
            return Value::integer(result);
        }
        if (y == 0) return error(line, "integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) return overflow();
        if (op == "//") {
            int64_t q = x / y;
            if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
            return Value::integer(q);
        }
        if (op == "%") {
            int64_t m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            return Value::integer(m);
        }
        return unsupported();
    }
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            std::string s = a.str() + b.str();
            EMBER_TRY(charge(s.size(), line));
            return Value::string(std::move(s));
        }
        if (a.is_list() && b.is_list()) {
            std::vector<Value> items = a.list_data().items;
            const auto& more = b.list_data().items;
            if (items.size() + more.size() > m_limits.max_items)
                return error(line, "list too long");
            items.insert(items.end(), more.begin(), more.end());
            return Value::list(std::move(items), a.list_data().is_tuple);
        }
    }
    if (op == "*") {
        if ((a.is_string() || a.is_list()) && b.is_integral())
            return repeat(*this, a, b.as_int(), line);
        if ((b.is_string() || b.is_list()) && a.is_integral())
            return repeat(*this, b, a.as_int(), line);
    }
    return unsupported();
}

static Result<bool> contains(Interp& in, const Value& container, const Value& item, int line) {
    switch (container.type) {
        case Type::Undefined:
            return false;
        case Type::String:
            if (!item.is_string())
                return in.error(line,
                                std::string("'in <string>' needs a string on the left, not '") +
                                    type_name(item) + "'");
            return container.str().find(item.str()) != std::string::npos;
        case Type::List:
            for (const auto& v : container.list_data().items)
                if (equals(v, item)) return true;
            return false;
        case Type::Dict:
            return container.dict_data().find(item) != nullptr;
        default:
            return in.error(line, std::string("argument of type '") + type_name(container) +
                                      "' is not iterable");
    }
}

Result<Value> Interp::eval_compare(const Expr& e) {
    EMBER_ASSIGN_OR_RETURN(Value left, eval(*e.kids[0]));
    for (size_t k = 0; k < e.ops.size(); ++k) {
        EMBER_ASSIGN_OR_RETURN(Value right, eval(*e.kids[k + 1]));
        const std::string& op = e.ops[k];
        bool r = false;
        if (op == "==")
            r = equals(left, right);
        else if (op == "!=")
            r = !equals(left, right);
        else if (op == "in" || op == "not in") {
            EMBER_ASSIGN_OR_RETURN(bool c, contains(*this, right, left, e.line));
            r = (op == "in") == c;
        } else {
            if (left.is_undefined()) return error(e.line, undefined_msg(left));
            if (right.is_undefined()) return error(e.line, undefined_msg(right));
            EMBER_ASSIGN_OR_RETURN(int c, compare(left, right));
            r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        if (!r) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Result<Value> Interp::eval_slice(const Value& obj, const Expr& e) {
    Value parts[3];
    for (int k = 0; k < 3; ++k) {
        if (!e.kids[static_cast<size_t>(k) + 1]) continue;
        EMBER_ASSIGN_OR_RETURN(parts[k], eval(*e.kids[static_cast<size_t>(k) + 1]));
        if (!parts[k].is_none() && !parts[k].is_integral())
            return error(e.line, std::string("slice indices must be integers, not '") +
                                     type_name(parts[k]) + "'");
    }
    int64_t step = parts[2].is_integral() ? parts[2].as_int() : 1;
    if (step == 0) return error(e.line, "slice step cannot be zero");
    if (obj.is_undefined()) return error(e.line, undefined_msg(obj));
    if (!obj.is_string() && !obj.is_list())
        return error(e.line, std::string("'") + type_name(obj) + "' object cannot be sliced");
    std::vector<size_t> offs;
    int64_t len = 0;
    if (obj.is_string()) {
        offs = utf8_offsets(obj.str());
        len = static_cast<int64_t>(offs.size()) - 1;
    } else {
        len = static_cast<int64_t>(obj.list_data().items.size());
    }
    int64_t lo = 0, hi = 0;
    slice_indices(len, parts[0], parts[1], step, lo, hi);
    std::vector<int64_t> idx;
    for (int64_t k = lo; step > 0 ? k < hi : k > hi; k += step) idx.push_back(k);
    if (obj.is_string()) {
        const std::string& s = obj.str();
        std::string out;
        if (step == 1) {
            if (!idx.empty())
                out = s.substr(offs[static_cast<size_t>(lo)],
                               offs[static_cast<size_t>(hi)] - offs[static_cast<size_t>(lo)]);
        } else {
            for (int64_t k : idx) {
                size_t a = offs[static_cast<size_t>(k)], b = offs[static_cast<size_t>(k) + 1];
                out.append(s, a, b - a);
            }
        }
        return Value::string(std::move(out));
    }
    std::vector<Value> out;
    for (int64_t k : idx) out.push_back(obj.list_data().items[static_cast<size_t>(k)]);
    return Value::list(std::move(out), obj.list_data().is_tuple);
}

Result<Value> Interp::call(const Value& fn, CallArgs& args, int line) {
    if (fn.is_undefined()) return error(line, undefined_msg(fn) + " (called as a function)");
    if (!fn.is_callable())
        return error(line, std::string("'") + type_name(fn) + "' object is not callable");
    EMBER_TRY(step(line));
    return fn.callable().fn(*this, args);
}

Result<Value> Interp::filter(const std::string& name, Value v, CallArgs& args, int line) {
    return apply_filter(*this, name, std::move(v), args, line);
}

Result<bool> Interp::test(const std::string& name, const Value& v, CallArgs& args, int line) {
    return apply_test(*this, name, v, args, line);
}

Result<Value> Interp::get_attr(const Value& obj, const std::string& name, int line) {
    if (obj.is_undefined()) return error(line, undefined_msg(obj) + " (reading ." + name + ")");
    if (obj.is_dict()) {
        const DictData& d = obj.dict_data();
        if (d.kind == DictKind::Plain) {
            Value m = find_method(obj, name);
            if (!m.is_undefined()) return m;
        }
        if (const Value* v = d.find(name)) return *v;
        return Value::undefined(name);
    }
    Value m = find_method(obj, name);
    if (!m.is_undefined()) return m;
    return Value::undefined(name);
}

Result<Value> Interp::get_item(const Value& obj, const Value& key, int line) {
    if (obj.is_undefined()) return error(line, undefined_msg(obj) + " (subscripted)");
    if (obj.is_dict()) {
        if (const Value* v = obj.dict_data().find(key)) return *v;
    } else if (obj.is_list() && key.is_integral()) {
        const auto& items = obj.list_data().items;
        int64_t k = key.as_int();
        if (k < 0) k += static_cast<int64_t>(items.size());
        if (k >= 0 && k < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(k)];
    } else if (obj.is_string() && key.is_integral()) {
        std::vector<size_t> offs = utf8_offsets(obj.str());
        int64_t n = static_cast<int64_t>(offs.size()) - 1;
        int64_t k = key.as_int();
        if (k < 0) k += n;
        if (k >= 0 && k < n)
            return Value::string(
                obj.str().substr(offs[static_cast<size_t>(k)],
                                 offs[static_cast<size_t>(k) + 1] - offs[static_cast<size_t>(k)]));
    }
    // Like Jinja2, fall back to an attribute (so d['items'] without such a key is the method).
    if (key.is_string()) return get_attr(obj, key.str(), line);
    return Value::undefined(to_str(key));
}

Result<std::vector<Value>> Interp::iterate(const Value& v, int line) {
    switch (v.type) {
        case Type::Undefined:
            return std::vector<Value>{};
        case Type::List:
            return v.list_data().items;
        case Type::Dict: {
            std::vector<Value> keys;
            for (const auto& kv : v.dict_data().items) keys.push_back(kv.first);
            return keys;
        }
        case Type::String: {
            const std::string& s = v.str();
            if (s.size() > m_limits.max_items) return error(line, "string too long to iterate");
            std::vector<size_t> offs = utf8_offsets(s);
            std::vector<Value> chars;
            chars.reserve(offs.size());
            for (size_t k = 0; k + 1 < offs.size(); ++k)
                chars.push_back(Value::string(s.substr(offs[k], offs[k + 1] - offs[k])));
            return chars;
        }
        default:
            return error(line, std::string("'") + type_name(v) + "' object is not iterable");
    }
}

}  // namespace ember::jinja

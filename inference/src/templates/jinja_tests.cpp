// Jinja2's built-in tests (`x is defined`, `x is divisibleby(3)`, ...).
#include <algorithm>
#include <iterator>

#include "templates/jinja_case.h"
#include "templates/jinja_interp.h"

namespace ember::jinja {

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
    if (name == "integer") return v.type == Type::Int || v.is_big();
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
        // str(value).islower() / isupper().
        const std::string s = to_str(v);
        return name == "lower" ? py_islower(s) : py_isupper(s);
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

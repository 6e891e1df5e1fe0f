// Values of the Jinja2 interpreter: Python-like dynamic values with Python semantics for
// truthiness, equality, ordering and str()/repr().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/result.h"

namespace ember::jinja {

class Interp;
struct Value;

// BigInt: an integer outside int64 (Python's ints are unbounded), kept as its decimal text;
// it prints and compares as Python does, and arithmetic on it is an error.
enum class Type : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    BigInt,
    Float,
    String,
    List,
    Dict,
    Callable
};

struct ListData {
    std::vector<Value> items;
    bool is_tuple = false;  // only changes how it prints
};

enum class DictKind : uint8_t { Plain, Namespace, Loop };

struct DictData {
    std::vector<std::pair<Value, Value>> items;  // insertion-ordered, like Python dicts
    DictKind kind = DictKind::Plain;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);
};

struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

using NativeFn = std::function<Result<Value>(Interp&, CallArgs&)>;

struct Callable {
    std::string name;
    NativeFn fn;
};

// Strings are immutable and shared so that copying a Value is O(1) whatever it holds.
struct Value {
    Type type = Type::Undefined;
    union {
        bool b;
        int64_t i;
        double f;
    };
    std::shared_ptr<void> p;  // string / ListData / DictData / Callable; Undefined: its name

    Value() : i(0) {}
    static Value undefined(std::string name = {});
    static Value none();
    static Value boolean(bool v);
    static Value integer(int64_t v);
    // An integer from its decimal digits (no sign, leading zeros allowed): Int where it fits,
    // else BigInt. An error unless digits is all ASCII digits.
    static Result<Value> integer_text(bool negative, std::string_view digits);
    static Value number(double v);
    static Value string(std::string s);
    static Value list(std::vector<Value> items = {}, bool tuple = false);
    static Value dict(DictKind kind = DictKind::Plain);
    static Value function(std::string name, NativeFn fn);

    bool is_undefined() const { return type == Type::Undefined; }
    bool is_none() const { return type == Type::None; }
    bool is_string() const { return type == Type::String; }
    bool is_list() const { return type == Type::List; }
    bool is_dict() const { return type == Type::Dict; }
    bool is_callable() const { return type == Type::Callable; }
    // bool counts as a number, as in Python.
    bool is_number() const {
        return type == Type::Bool || type == Type::Int || type == Type::BigInt ||
               type == Type::Float;
    }
    bool is_big() const { return type == Type::BigInt; }
    bool is_integral() const { return type == Type::Bool || type == Type::Int; }

    const std::string& str() const { return *static_cast<const std::string*>(p.get()); }
    const std::string& undefined_name() const;
    ListData& list_data() const { return *static_cast<ListData*>(p.get()); }
    DictData& dict_data() const { return *static_cast<DictData*>(p.get()); }
    Callable& callable() const { return *static_cast<Callable*>(p.get()); }

    // A BigInt's as_int() is saturated to int64 (is_integral() is false for it).
    int64_t as_int() const { return type == Type::Bool ? (b ? 1 : 0) : i; }
    double as_float() const;
    const std::string& big_text() const { return str(); }  // BigInt: "-123..."
};

// Python semantics.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// <0, 0, >0; an error when the types cannot be ordered.
Result<int> compare(const Value& a, const Value& b);
const char* type_name(const Value& v);
std::string to_str(const Value& v);   // str()
std::string to_repr(const Value& v);  // repr()
std::string format_float(double d);   // Python's repr of a float

struct JsonOptions {
    // json.dumps' indent: none for one line, else each level is indented by this text (an
    // integer indent n is n spaces, as in Python; a negative one is "").
    std::optional<std::string> indent;
    size_t max_size = SIZE_MAX;  // longer output is an error
    std::string item_sep = ", ";
    std::string key_sep = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};
// json.dumps; an error for values JSON cannot hold (undefined, functions).
Result<std::string> to_json(const Value& v, const JsonOptions& opt);
// Parses a JSON document into Values (used for extra template variables).
Result<Value> parse_json(std::string_view text);

// UTF-8 helpers: Python strings count and index code points.
std::vector<size_t> utf8_offsets(std::string_view s);  // start of each code point, plus s.size()
size_t utf8_length(std::string_view s);

}  // namespace ember::jinja

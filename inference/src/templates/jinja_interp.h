// The tree-walking evaluator and the built-in filters, tests, methods and globals it uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/result.h"
#include "templates/jinja_ast.h"
#include "templates/jinja_value.h"

namespace ember::jinja {

struct Limits {
    size_t max_output = 16u << 20;      // bytes of any rendered or built string
    uint64_t max_steps = 2'000'000;     // evaluation steps (bounds loops)
    uint64_t max_alloc = 512ull << 20;  // total bytes of strings built while rendering
    int max_call_depth = 64;            // nested macro calls
    int max_depth = 250;                // nested expressions and statements being evaluated
    size_t max_items = 1'000'000;       // elements of a list built at once
};

struct Scope {
    std::map<std::string, Value, std::less<>> vars;
    std::shared_ptr<Scope> parent;
};

enum class Flow { Normal, Break, Continue };

class Interp {
public:
    explicit Interp(Limits limits = {});
    ~Interp();
    Interp(const Interp&) = delete;
    Interp& operator=(const Interp&) = delete;

    void set_global(const std::string& name, Value v);
    Result<std::string> render(const Template& t);

    // Used by filters and methods.
    Result<Value> call(const Value& fn, CallArgs& args, int line);
    Result<Value> filter(const std::string& name, Value v, CallArgs& args, int line);
    Result<bool> test(const std::string& name, const Value& v, CallArgs& args, int line);
    Result<Value> get_attr(const Value& obj, const std::string& name, int line);
    Result<Value> get_item(const Value& obj, const Value& key, int line);
    Result<std::vector<Value>> iterate(const Value& v, int line);
    // Counts bytes of built strings against the limits; an error once past them.
    Status charge(size_t bytes, int line);
    Error error(int line, const std::string& msg) const;
    // Records a list/dict changed in place: only mutation can make reference cycles, which the
    // destructor breaks by emptying these containers.
    void note_mutation(const Value& container);

    const Limits& limits() const { return m_limits; }
    // The `random` filter's numbers: splitmix64 from a fixed seed, restarted by every render, so
    // that the same template and inputs always render the same text.
    uint64_t next_random();

private:
    Limits m_limits;
    std::shared_ptr<Scope> m_globals;
    std::shared_ptr<Scope> m_scope;
    std::string* m_out = nullptr;
    uint64_t m_steps = 0;
    uint64_t m_alloc = 0;
    uint64_t m_random = 0;
    int m_call_depth = 0;
    int m_eval_depth = 0;
    Value m_filter_input;
    std::vector<Value>
        m_mutated;  // the captured body a filter block or block set applies filters to

    Status step(int line);
    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v);
    Status assign_target(const Expr& target, Value v, int line);
    Status write(const std::string& s, int line);

    Result<Flow> exec_body(const Body& body);
    Result<Flow> exec(const Stmt& s);
    Result<Flow> exec_inner(const Stmt& s);
    Result<Flow> exec_for(const Stmt& s);
    Result<std::string> capture(const Body& body);
    Value make_macro(const Stmt& s, std::shared_ptr<Scope> closure);

    Result<Value> eval(const Expr& e);
    Result<Value> eval_inner(const Expr& e);
    Result<Value> eval_list(const Expr& e);
    Result<Value> eval_dict(const Expr& e);
    Result<Value> eval_unary(const Expr& e);
    Result<Value> eval_binary(const std::string& op, const Value& a, const Value& b, int line);
    Result<Value> eval_compare(const Expr& e);
    Result<Value> eval_slice(const Value& obj, const Expr& e);
    Status eval_args(const Expr& e, size_t first_kid, CallArgs& out);
};

// Binds positional and keyword arguments to parameter names; missing ones come back undefined.
// An unknown keyword or too many positionals is an error naming `what`.
Result<std::vector<Value>> bind_args(Interp& in, const CallArgs& args,
                                     std::initializer_list<const char*> names,
                                     const std::string& what, int line);

// Built-ins implemented in jinja_filters.cpp / jinja_methods.cpp.
Result<Value> apply_filter(Interp& in, const std::string& name, Value v, CallArgs& args, int line);
Result<bool> apply_test(Interp& in, const std::string& name, const Value& v, CallArgs& args,
                        int line);
// A bound method of a str/list/dict, or undefined when there is no such method.
Value find_method(const Value& obj, const std::string& name);
void install_globals(Interp& in);

}  // namespace ember::jinja

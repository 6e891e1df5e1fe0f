// Statement execution and scoping; expressions are in jinja_eval.cpp.
#include "templates/jinja_interp.h"

#include <cassert>
#include <utility>

namespace ember::jinja {

namespace {

// Restores the interpreter's current scope or output buffer on every exit path.
template <class T>
struct Restore {
    T& ref;
    T saved;
    explicit Restore(T& r) : ref(r), saved(r) {}
    ~Restore() { ref = std::move(saved); }
};

}  // namespace

Interp::Interp(Limits limits) : m_limits(limits) {
    m_globals = std::make_shared<Scope>();
    m_scope = m_globals;
    install_globals(*this);
}

Interp::~Interp() {
    for (auto& v : m_mutated) {
        if (v.is_list())
            v.list_data().items.clear();
        else if (v.is_dict())
            v.dict_data().items.clear();
    }
}

void Interp::note_mutation(const Value& container) {
    if (!m_mutated.empty() && m_mutated.back().p == container.p) return;
    m_mutated.push_back(container);
}

void Interp::set_global(const std::string& name, Value v) {
    m_globals->vars[name] = std::move(v);
}

Error Interp::error(int line, const std::string& msg) const {
    // Without a line (built-in methods), eval() adds the line of the calling expression.
    if (line <= 0) return make_error("template.render", msg);
    return make_error("template.render", "line " + std::to_string(line) + ": " + msg);
}

Status Interp::step(int line) {
    if (++m_steps > m_limits.max_steps)
        return error(line, "template exceeded its evaluation budget (runaway loop?)");
    return {};
}

Status Interp::charge(size_t bytes, int line) {
    if (bytes > m_limits.max_output)
        return error(line, "string of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                               std::to_string(m_limits.max_output));
    m_alloc += bytes;
    if (m_alloc > m_limits.max_alloc)
        return error(line, "template built too much text (runaway loop?)");
    return {};
}

Status Interp::write(const std::string& s, int line) {
    if (m_out->size() + s.size() > m_limits.max_output)
        return error(
            line, "output exceeds the limit of " + std::to_string(m_limits.max_output) + " bytes");
    EMBER_TRY(charge(s.size(), line));
    m_out->append(s);
    return {};
}

Value Interp::lookup(const std::string& name) const {
    for (const Scope* s = m_scope.get(); s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return it->second;
    }
    return Value::undefined(name);
}

void Interp::assign(const std::string& name, Value v) {
    m_scope->vars[name] = std::move(v);
}

Status Interp::assign_target(const Expr& target, Value v, int line) {
    if (target.kind == Expr::Kind::Name) {
        assign(target.name, std::move(v));
        return {};
    }
    if (target.kind == Expr::Kind::Attr) {
        Value ns = lookup(target.kids[0]->name);
        if (!ns.is_dict() || ns.dict_data().kind != DictKind::Namespace)
            return error(line, "cannot assign attribute '" + target.name + "' on '" +
                                   target.kids[0]->name + "': it is not a namespace()");
        note_mutation(ns);
        ns.dict_data().set(Value::string(target.name), std::move(v));
        return {};
    }
    // Tuple unpacking.
    EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v, line));
    if (items.size() != target.kids.size())
        return error(line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                               std::to_string(target.kids.size()) + " names");
    for (size_t k = 0; k < items.size(); ++k)
        EMBER_TRY(assign_target(*target.kids[k], std::move(items[k]), line));
    return {};
}

uint64_t Interp::next_random() {
    uint64_t z = (m_random += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Result<std::string> Interp::render(const Template& t) {
    std::string out;
    m_out = &out;
    m_random = 0;
    auto top = std::make_shared<Scope>();
    top->parent = m_globals;
    m_scope = top;
    EMBER_ASSIGN_OR_RETURN(Flow f, exec_body(t.body));
    (void)f;  // break/continue outside a loop are ignored, as Jinja's loopcontrols do
    m_scope = m_globals;
    m_out = nullptr;
    return out;
}

Result<std::string> Interp::capture(const Body& body) {
    std::string buf;
    Restore<std::string*> r(m_out);
    m_out = &buf;
    EMBER_ASSIGN_OR_RETURN(Flow f, exec_body(body));
    (void)f;
    return buf;
}

Result<Flow> Interp::exec_body(const Body& body) {
    for (const auto& s : body) {
        EMBER_ASSIGN_OR_RETURN(Flow f, exec(*s));
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Value Interp::make_macro(const Stmt& s, std::shared_ptr<Scope> closure) {
    // A weak closure: the macro is stored in that very scope, and a strong one would leak it.
    std::weak_ptr<Scope> weak = closure;
    const Stmt* def = &s;
    return Value::function(s.name, [def, weak](Interp& in, CallArgs& args) -> Result<Value> {
        if (in.m_call_depth >= in.m_limits.max_call_depth)
            return in.error(def->line, "macro '" + def->name + "': recursion too deep");
        auto scope = std::make_shared<Scope>();
        auto parent = weak.lock();
        scope->parent = parent ? parent : in.m_globals;
        Restore<std::shared_ptr<Scope>> rs(in.m_scope);
        in.m_scope = scope;
        ++in.m_call_depth;
        struct Dec {
            int& d;
            ~Dec() { --d; }
        } dec{in.m_call_depth};

        std::vector<Value> varargs;
        Value kwargs = Value::dict();
        std::vector<bool> given(def->params.size(), false);
        for (size_t k = 0; k < args.pos.size(); ++k) {
            if (k < def->params.size()) {
                scope->vars[def->params[k]] = args.pos[k];
                given[k] = true;
            } else {
                varargs.push_back(args.pos[k]);
            }
        }
        for (auto& [name, v] : args.kw) {
            if (name == "caller") {
                scope->vars["caller"] = v;
                continue;
            }
            bool found = false;
            for (size_t k = 0; k < def->params.size(); ++k) {
                if (def->params[k] == name) {
                    scope->vars[name] = v;
                    given[k] = true;
                    found = true;
                }
            }
            if (!found) kwargs.dict_data().set(Value::string(name), v);
        }
        for (size_t k = 0; k < def->params.size(); ++k) {
            if (given[k]) continue;
            if (def->defaults[k]) {
                EMBER_ASSIGN_OR_RETURN(Value d, in.eval(*def->defaults[k]));
                scope->vars[def->params[k]] = std::move(d);
            } else {
                scope->vars[def->params[k]] = Value::undefined(def->params[k]);
            }
        }
        scope->vars["varargs"] = Value::list(std::move(varargs), true);
        scope->vars["kwargs"] = kwargs;
        EMBER_ASSIGN_OR_RETURN(std::string out, in.capture(def->body));
        return Value::string(std::move(out));
    });
}

Result<Flow> Interp::exec(const Stmt& s) {
    EMBER_TRY(step(s.line));
    // Statements nest inside macros called from statements: bound the whole recursion.
    if (m_eval_depth >= m_limits.max_depth)
        return error(s.line, "statements or macro calls nested too deeply");
    ++m_eval_depth;
    auto r = exec_inner(s);
    --m_eval_depth;
    return r;
}

Result<Flow> Interp::exec_inner(const Stmt& s) {
    switch (s.kind) {
        case Stmt::Kind::Text:
            EMBER_TRY(write(s.text, s.line));
            return Flow::Normal;
        case Stmt::Kind::Print: {
            EMBER_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
            if (v.is_string())
                EMBER_TRY(write(v.str(), s.line));
            else
                EMBER_TRY(write(to_str(v), s.line));
            return Flow::Normal;
        }
        case Stmt::Kind::If: {
            for (const auto& [cond, body] : s.branches) {
                EMBER_ASSIGN_OR_RETURN(Value c, eval(*cond));
                if (truthy(c)) return exec_body(body);
            }
            return exec_body(s.else_body);
        }
        case Stmt::Kind::For:
            return exec_for(s);
        case Stmt::Kind::Set: {
            EMBER_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
            EMBER_TRY(assign_target(*s.target, std::move(v), s.line));
            return Flow::Normal;
        }
        case Stmt::Kind::SetBlock: {
            EMBER_ASSIGN_OR_RETURN(std::string text, capture(s.body));
            Value v = Value::string(std::move(text));
            if (s.expr) {
                Restore<Value> r(m_filter_input);
                m_filter_input = v;
                EMBER_ASSIGN_OR_RETURN(v, eval(*s.expr));
            }
            EMBER_TRY(assign_target(*s.target, std::move(v), s.line));
            return Flow::Normal;
        }
        case Stmt::Kind::Macro:
            assign(s.name, make_macro(s, m_scope));
            return Flow::Normal;
        case Stmt::Kind::CallBlock: {
            const Expr& call_expr = *s.expr;
            EMBER_ASSIGN_OR_RETURN(Value fn, eval(*call_expr.kids[0]));
            CallArgs args;
            EMBER_TRY(eval_args(call_expr, 1, args));
            Value caller = make_macro(s, m_scope);
            args.kw.emplace_back("caller", caller);
            EMBER_ASSIGN_OR_RETURN(Value out, call(fn, args, s.line));
            EMBER_TRY(write(to_str(out), s.line));
            return Flow::Normal;
        }
        case Stmt::Kind::FilterBlock: {
            EMBER_ASSIGN_OR_RETURN(std::string text, capture(s.body));
            Restore<Value> r(m_filter_input);
            m_filter_input = Value::string(std::move(text));
            EMBER_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
            EMBER_TRY(write(to_str(v), s.line));
            return Flow::Normal;
        }
        case Stmt::Kind::Break:
            return Flow::Break;
        case Stmt::Kind::Continue:
            return Flow::Continue;
        case Stmt::Kind::With: {
            auto scope = std::make_shared<Scope>();
            scope->parent = m_scope;
            std::vector<Value> values;
            for (const auto& a : s.assigns) {
                EMBER_ASSIGN_OR_RETURN(Value v, eval(*a.second));
                values.push_back(std::move(v));
            }
            Restore<std::shared_ptr<Scope>> rs(m_scope);
            m_scope = scope;
            for (size_t k = 0; k < values.size(); ++k)
                EMBER_TRY(assign_target(*s.assigns[k].first, std::move(values[k]), s.line));
            return exec_body(s.body);
        }
        case Stmt::Kind::Scope:
            return exec_body(s.body);
    }
    return Flow::Normal;
}

Result<Flow> Interp::exec_for(const Stmt& s) {
    EMBER_ASSIGN_OR_RETURN(Value seq, eval(*s.expr));
    EMBER_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(seq, s.line));
    Restore<std::shared_ptr<Scope>> rs(m_scope);
    std::shared_ptr<Scope> outer = m_scope;
    if (s.cond) {
        std::vector<Value> kept;
        for (auto& item : items) {
            EMBER_TRY(step(s.line));
            m_scope = std::make_shared<Scope>();
            m_scope->parent = outer;
            EMBER_TRY(assign_target(*s.target, item, s.line));
            EMBER_ASSIGN_OR_RETURN(Value c, eval(*s.cond));
            if (truthy(c)) kept.push_back(std::move(item));
        }
        items = std::move(kept);
        m_scope = outer;
    }
    if (items.empty()) return exec_body(s.else_body);
    const int64_t n = static_cast<int64_t>(items.size());
    // One cycle() per loop, reading the current iteration.
    auto current = std::make_shared<int64_t>(0);
    Value cycle = Value::function("cycle", [current](Interp&, CallArgs& a) -> Result<Value> {
        if (a.pos.empty()) return make_error("template.render", "loop.cycle() needs arguments");
        return a.pos[static_cast<size_t>(*current) % a.pos.size()];
    });
    for (int64_t idx = 0; idx < n; ++idx) {
        EMBER_TRY(step(s.line));
        // A fresh scope per iteration: Jinja2 does not carry sets over to the next iteration.
        m_scope = std::make_shared<Scope>();
        m_scope->parent = outer;
        EMBER_TRY(assign_target(*s.target, items[static_cast<size_t>(idx)], s.line));
        Value loop = Value::dict(DictKind::Loop);
        DictData& d = loop.dict_data();
        d.items.reserve(12);
        // The key strings are immutable, so every loop shares one set.
        static const char* const kNames[] = {"index",  "index0",   "revindex", "revindex0",
                                             "first",  "last",     "length",   "depth",
                                             "depth0", "previtem", "nextitem", "cycle"};
        static const std::vector<Value> kKeys = [] {
            std::vector<Value> keys;
            for (const char* n : kNames) keys.push_back(Value::string(n));
            return keys;
        }();
        size_t next_key = 0;
        auto put = [&](const char* name, Value v) {
            assert(kKeys[next_key].str() == name);
            (void)name;
            d.items.emplace_back(kKeys[next_key++], std::move(v));
        };
        put("index", Value::integer(idx + 1));
        put("index0", Value::integer(idx));
        put("revindex", Value::integer(n - idx));
        put("revindex0", Value::integer(n - idx - 1));
        put("first", Value::boolean(idx == 0));
        put("last", Value::boolean(idx == n - 1));
        put("length", Value::integer(n));
        put("depth", Value::integer(1));
        put("depth0", Value::integer(0));
        put("previtem",
            idx > 0 ? items[static_cast<size_t>(idx - 1)] : Value::undefined("previtem"));
        put("nextitem",
            idx + 1 < n ? items[static_cast<size_t>(idx + 1)] : Value::undefined("nextitem"));
        *current = idx;
        put("cycle", cycle);
        assign("loop", std::move(loop));
        EMBER_ASSIGN_OR_RETURN(Flow f, exec_body(s.body));
        if (f == Flow::Break) break;
    }
    return Flow::Normal;
}

Result<std::vector<Value>> bind_args(Interp& in, const CallArgs& args,
                                     std::initializer_list<const char*> names,
                                     const std::string& what, int line) {
    std::vector<Value> out(names.size());
    if (args.pos.size() > names.size())
        return in.error(line, what + ": takes at most " + std::to_string(names.size()) +
                                  " arguments, got " + std::to_string(args.pos.size()));
    for (size_t k = 0; k < args.pos.size(); ++k) out[k] = args.pos[k];
    for (const auto& [name, v] : args.kw) {
        size_t k = 0;
        for (const char* n : names) {
            if (name == n) break;
            ++k;
        }
        if (k == names.size()) return in.error(line, what + ": unexpected argument '" + name + "'");
        out[k] = v;
    }
    return out;
}

}  // namespace ember::jinja

// Recursive-descent parser with Jinja2's operator precedence.
#include <algorithm>
#include <initializer_list>

#include "templates/jinja_ast.h"
#include "templates/jinja_lexer.h"

namespace ember::jinja {

namespace {

// Bounds nesting (and long operator chains, which nest the tree just as deeply) so that
// evaluating or destroying the tree cannot overflow the stack.
constexpr int kMaxDepth = 100;

class Parser {
public:
    explicit Parser(std::vector<Token> toks) : m_t(std::move(toks)) {}

    Result<std::unique_ptr<Template>> run() {
        auto tmpl = std::make_unique<Template>();
        std::string end;
        EMBER_ASSIGN_OR_RETURN(tmpl->body, body({}, &end, 0, ""));
        return tmpl;
    }

private:
    std::vector<Token> m_t;
    size_t m_i = 0;
    int m_depth = 0;

    struct Guard {
        int& d;
        int n = 1;
        explicit Guard(int& depth) : d(depth) { ++d; }
        ~Guard() { d -= n; }
    };

    const Token& cur() const { return m_t[m_i]; }
    const Token& peek(size_t n = 1) const { return m_t[std::min(m_i + n, m_t.size() - 1)]; }
    void next() {
        if (m_i + 1 < m_t.size()) ++m_i;
    }
    bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case Tok::Text:
                return "template text";
            case Tok::VarBegin:
                return "'{{'";
            case Tok::VarEnd:
                return "'}}'";
            case Tok::BlockBegin:
                return "'{%'";
            case Tok::BlockEnd:
                return "'%}'";
            case Tok::Eof:
                return "end of template";
            case Tok::String:
                return "string";
            default:
                return "'" + t.text + "'";
        }
    }

    Error fail(const std::string& msg, int line = -1) const {
        if (line < 0) line = cur().line;
        return make_error("template.syntax", "line " + std::to_string(line) + ": " + msg);
    }
    Error unexpected(const std::string& expected) const {
        return fail("unexpected " + describe(cur()) + ", expected " + expected);
    }
    Status depth_check() const {
        if (m_depth > kMaxDepth) return fail("expression or block nesting too deep");
        return {};
    }

    Status expect_op(const char* op) {
        if (!is_op(op)) return unexpected(std::string("'") + op + "'");
        next();
        return {};
    }
    Status expect_block_end() {
        if (cur().type != Tok::BlockEnd) return unexpected("'%}'");
        next();
        return {};
    }
    Result<std::string> expect_name() {
        if (cur().type != Tok::Name) return unexpected("a name");
        std::string n = cur().text;
        next();
        return n;
    }

    static ExprPtr node(Expr::Kind k, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->line = line;
        return e;
    }

    // ---- statements ---------------------------------------------------------------------

    // Parses until a block tag whose name is in `ends`; leaves the stream after that name.
    Result<Body> body(std::initializer_list<const char*> ends, std::string* found, int open_line,
                      const char* open_tag) {
        Guard g(m_depth);
        EMBER_TRY(depth_check());
        Body out;
        while (true) {
            const Token& t = cur();
            if (t.type == Tok::Eof) {
                if (ends.size() == 0) return out;
                std::string want;
                for (const char* e : ends)
                    want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
                return fail("unexpected end of template: '" + std::string(open_tag) +
                            "' opened at line " + std::to_string(open_line) + " needs " + want);
            }
            if (t.type == Tok::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Text;
                s->line = t.line;
                s->text = t.text;
                out.push_back(std::move(s));
                next();
            } else if (t.type == Tok::VarBegin) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Print;
                s->line = t.line;
                next();
                EMBER_ASSIGN_OR_RETURN(s->expr, tuple(true, false));
                if (cur().type != Tok::VarEnd) return unexpected("'}}'");
                next();
                out.push_back(std::move(s));
            } else if (t.type == Tok::BlockBegin) {
                const Token& n = peek();
                if (n.type != Tok::Name) {
                    next();
                    return unexpected("a tag name");
                }
                for (const char* e : ends) {
                    if (n.text == e) {
                        *found = e;
                        next();
                        next();
                        return out;
                    }
                }
                next();
                EMBER_ASSIGN_OR_RETURN(StmtPtr s, statement());
                out.push_back(std::move(s));
            } else {
                return unexpected("template text or a tag");
            }
        }
    }

    Result<StmtPtr> statement() {
        int line = cur().line;
        std::string tag = cur().text;
        next();
        auto s = std::make_unique<Stmt>();
        s->line = line;
        std::string end;
        if (tag == "if") {
            s->kind = Stmt::Kind::If;
            while (true) {
                EMBER_ASSIGN_OR_RETURN(ExprPtr cond, tuple(false, false));
                EMBER_TRY(expect_block_end());
                EMBER_ASSIGN_OR_RETURN(Body b, body({"elif", "else", "endif"}, &end, line, "if"));
                s->branches.emplace_back(std::move(cond), std::move(b));
                if (end != "elif") break;
            }
            if (end == "else") {
                EMBER_TRY(expect_block_end());
                EMBER_ASSIGN_OR_RETURN(s->else_body, body({"endif"}, &end, line, "if"));
            }
        } else if (tag == "for") {
            s->kind = Stmt::Kind::For;
            EMBER_ASSIGN_OR_RETURN(s->target, target(false));
            if (!is_name("in")) return unexpected("'in'");
            next();
            EMBER_ASSIGN_OR_RETURN(s->expr, tuple(false, false));
            if (is_name("if")) {
                next();
                EMBER_ASSIGN_OR_RETURN(s->cond, expression(true));
            }
            if (is_name("recursive")) return fail("recursive for loops are not supported");
            EMBER_TRY(expect_block_end());
            EMBER_ASSIGN_OR_RETURN(s->body, body({"endfor", "else"}, &end, line, "for"));
            if (end == "else") {
                EMBER_TRY(expect_block_end());
                EMBER_ASSIGN_OR_RETURN(s->else_body, body({"endfor"}, &end, line, "for"));
            }
        } else if (tag == "set") {
            EMBER_ASSIGN_OR_RETURN(s->target, target(true));
            if (is_op("=")) {
                next();
                s->kind = Stmt::Kind::Set;
                EMBER_ASSIGN_OR_RETURN(s->expr, tuple(true, false));
            } else {
                s->kind = Stmt::Kind::SetBlock;
                if (s->target->kind != Expr::Kind::Name)
                    return fail("a block set needs a single variable name");
                if (is_op("|")) {
                    EMBER_ASSIGN_OR_RETURN(s->expr, filters(nullptr));
                }
                EMBER_TRY(expect_block_end());
                EMBER_ASSIGN_OR_RETURN(s->body, body({"endset"}, &end, line, "set"));
            }
        } else if (tag == "macro") {
            s->kind = Stmt::Kind::Macro;
            EMBER_ASSIGN_OR_RETURN(s->name, expect_name());
            EMBER_TRY(params(*s));
            EMBER_TRY(expect_block_end());
            EMBER_ASSIGN_OR_RETURN(s->body, body({"endmacro"}, &end, line, "macro"));
            if (cur().type == Tok::Name) next();  // optional name after endmacro
        } else if (tag == "call") {
            s->kind = Stmt::Kind::CallBlock;
            if (is_op("(")) EMBER_TRY(params(*s));
            EMBER_ASSIGN_OR_RETURN(s->expr, expression(true));
            if (s->expr->kind != Expr::Kind::Call) return fail("'call' needs a macro call");
            EMBER_TRY(expect_block_end());
            EMBER_ASSIGN_OR_RETURN(s->body, body({"endcall"}, &end, line, "call"));
        } else if (tag == "filter") {
            s->kind = Stmt::Kind::FilterBlock;
            EMBER_ASSIGN_OR_RETURN(s->expr, filter_chain(nullptr));
            EMBER_TRY(expect_block_end());
            EMBER_ASSIGN_OR_RETURN(s->body, body({"endfilter"}, &end, line, "filter"));
        } else if (tag == "break" || tag == "continue") {
            s->kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
        } else if (tag == "with") {
            s->kind = Stmt::Kind::With;
            while (cur().type != Tok::BlockEnd) {
                if (!s->assigns.empty()) EMBER_TRY(expect_op(","));
                EMBER_ASSIGN_OR_RETURN(ExprPtr t, target(false));
                EMBER_TRY(expect_op("="));
                EMBER_ASSIGN_OR_RETURN(ExprPtr v, expression(true));
                s->assigns.emplace_back(std::move(t), std::move(v));
            }
            EMBER_TRY(expect_block_end());
            EMBER_ASSIGN_OR_RETURN(s->body, body({"endwith"}, &end, line, "with"));
        } else if (tag == "generation" || tag == "block") {
            // transformers' {% generation %} only marks assistant text; blocks render in place.
            s->kind = Stmt::Kind::Scope;
            if (tag == "block") {
                EMBER_ASSIGN_OR_RETURN(s->name, expect_name());
            }
            EMBER_TRY(expect_block_end());
            const char* end_tag = tag == "block" ? "endblock" : "endgeneration";
            EMBER_ASSIGN_OR_RETURN(s->body, body({end_tag}, &end, line, tag.c_str()));
            if (tag == "block" && cur().type == Tok::Name) next();
        } else {
            return fail("unknown or unsupported tag '" + tag + "'", line);
        }
        EMBER_TRY(expect_block_end());
        return s;
    }

    Status params(Stmt& s) {
        EMBER_TRY(expect_op("("));
        while (!is_op(")")) {
            if (!s.params.empty()) EMBER_TRY(expect_op(","));
            if (is_op(")")) break;
            EMBER_ASSIGN_OR_RETURN(std::string n, expect_name());
            ExprPtr def;
            if (is_op("=")) {
                next();
                EMBER_ASSIGN_OR_RETURN(def, expression(true));
            }
            s.params.push_back(std::move(n));
            s.defaults.push_back(std::move(def));
        }
        next();
        return {};
    }

    // Assignment targets: name, ns.attr (set only), or a tuple of names.
    Result<ExprPtr> target(bool allow_ns) {
        int line = cur().line;
        bool paren = is_op("(");
        if (paren) next();
        std::vector<ExprPtr> names;
        while (true) {
            EMBER_ASSIGN_OR_RETURN(std::string n, expect_name());
            auto e = node(Expr::Kind::Name, line);
            e->name = n;
            if (allow_ns && !paren && names.empty() && is_op(".")) {
                next();
                auto a = node(Expr::Kind::Attr, line);
                EMBER_ASSIGN_OR_RETURN(a->name, expect_name());
                a->kids.push_back(std::move(e));
                return a;
            }
            names.push_back(std::move(e));
            if (!is_op(",")) break;
            next();
            if (paren && is_op(")")) break;
        }
        if (paren) EMBER_TRY(expect_op(")"));
        if (names.size() == 1 && !paren) return std::move(names[0]);
        auto t = node(Expr::Kind::Tuple, line);
        t->kids = std::move(names);
        return t;
    }

    // ---- expressions ------------------------------------------------------------------

    bool tuple_end() const {
        return cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")") ||
               cur().type == Tok::Eof;
    }

    Result<ExprPtr> tuple(bool with_cond, bool explicit_parens) {
        int line = cur().line;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) {
                if (!is_op(",")) break;
                next();
                is_tuple = true;
            }
            if (tuple_end()) break;
            EMBER_ASSIGN_OR_RETURN(ExprPtr e, expression(with_cond));
            items.push_back(std::move(e));
        }
        if (!is_tuple) {
            if (items.size() == 1) return std::move(items[0]);
            if (!explicit_parens) return unexpected("an expression");
        }
        auto t = node(Expr::Kind::Tuple, line);
        t->kids = std::move(items);
        return t;
    }

    Result<ExprPtr> expression(bool with_cond) {
        Guard g(m_depth);
        EMBER_TRY(depth_check());
        EMBER_ASSIGN_OR_RETURN(ExprPtr e, or_expr());
        if (!with_cond) return e;
        while (is_name("if")) {
            ++m_depth, ++g.n;
            EMBER_TRY(depth_check());
            auto c = node(Expr::Kind::Cond, cur().line);
            next();
            EMBER_ASSIGN_OR_RETURN(ExprPtr test, or_expr());
            ExprPtr other;
            if (is_name("else")) {
                next();
                EMBER_ASSIGN_OR_RETURN(other, expression(true));
            }
            c->kids.push_back(std::move(e));
            c->kids.push_back(std::move(test));
            c->kids.push_back(std::move(other));
            e = std::move(c);
        }
        return e;
    }

    template <class Next>
    Result<ExprPtr> chain(Next next_level, Expr::Kind kind, std::initializer_list<const char*> ops,
                          bool names) {
        EMBER_ASSIGN_OR_RETURN(ExprPtr left, (this->*next_level)());
        Guard g(m_depth);
        while (true) {
            const char* found = nullptr;
            for (const char* op : ops)
                if (names ? is_name(op) : is_op(op)) found = op;
            if (!found) return left;
            ++m_depth, ++g.n;
            EMBER_TRY(depth_check());
            auto b = node(kind, cur().line);
            b->name = found;
            next();
            EMBER_ASSIGN_OR_RETURN(ExprPtr right, (this->*next_level)());
            b->kids.push_back(std::move(left));
            b->kids.push_back(std::move(right));
            left = std::move(b);
        }
    }

    Result<ExprPtr> or_expr() { return chain(&Parser::and_expr, Expr::Kind::Or, {"or"}, true); }
    Result<ExprPtr> and_expr() { return chain(&Parser::not_expr, Expr::Kind::And, {"and"}, true); }

    Result<ExprPtr> not_expr() {
        if (is_name("not")) {
            Guard g(m_depth);
            EMBER_TRY(depth_check());
            auto n = node(Expr::Kind::Not, cur().line);
            next();
            EMBER_ASSIGN_OR_RETURN(ExprPtr e, not_expr());
            n->kids.push_back(std::move(e));
            return n;
        }
        return compare();
    }

    Result<ExprPtr> compare() {
        int line = cur().line;
        EMBER_ASSIGN_OR_RETURN(ExprPtr first, math1());
        ExprPtr cmp;
        Guard g(m_depth);
        while (true) {
            std::string op;
            if (cur().type == Tok::Op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                 cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
                op = cur().text;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
                op = "not in";
                next();
                next();
            } else {
                break;
            }
            ++m_depth, ++g.n;
            EMBER_TRY(depth_check());
            if (!cmp) {
                cmp = node(Expr::Kind::Compare, line);
                cmp->kids.push_back(std::move(first));
            }
            EMBER_ASSIGN_OR_RETURN(ExprPtr rhs, math1());
            cmp->ops.push_back(op);
            cmp->kids.push_back(std::move(rhs));
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    Result<ExprPtr> math1() {
        return chain(&Parser::concat, Expr::Kind::Binary, {"+", "-"}, false);
    }
    Result<ExprPtr> concat() { return chain(&Parser::math2, Expr::Kind::Binary, {"~"}, false); }
    Result<ExprPtr> math2() {
        return chain(&Parser::pow, Expr::Kind::Binary, {"*", "/", "//", "%"}, false);
    }
    Result<ExprPtr> pow() { return chain(&Parser::unary_f, Expr::Kind::Binary, {"**"}, false); }
    Result<ExprPtr> unary_f() { return unary(true); }

    Result<ExprPtr> unary(bool with_filter) {
        Guard g(m_depth);
        EMBER_TRY(depth_check());
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = node(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, cur().line);
            next();
            EMBER_ASSIGN_OR_RETURN(ExprPtr operand, unary(false));
            e->kids.push_back(std::move(operand));
        } else {
            EMBER_ASSIGN_OR_RETURN(e, primary());
        }
        EMBER_ASSIGN_OR_RETURN(e, postfix(std::move(e)));
        if (with_filter) return filters(std::move(e));
        return e;
    }

    Result<ExprPtr> primary() {
        const Token& t = cur();
        int line = t.line;
        if (t.type == Tok::Name) {
            const std::string& n = t.text;
            ExprPtr e = node(Expr::Kind::Const, line);
            if (n == "true" || n == "True")
                e->value = Value::boolean(true);
            else if (n == "false" || n == "False")
                e->value = Value::boolean(false);
            else if (n == "none" || n == "None")
                e->value = Value::none();
            else {
                e->kind = Expr::Kind::Name;
                e->name = n;
            }
            next();
            return e;
        }
        if (t.type == Tok::String) {
            std::string s;
            while (cur().type == Tok::String) {
                s += cur().text;
                next();
            }
            ExprPtr e = node(Expr::Kind::Const, line);
            e->value = Value::string(std::move(s));
            return e;
        }
        if (t.type == Tok::Int || t.type == Tok::Float) {
            ExprPtr e = node(Expr::Kind::Const, line);
            if (t.type == Tok::Float) {
                e->value = Value::number(t.fval);
            } else if (!t.big) {
                e->value = Value::integer(t.ival);
            } else {
                auto big = Value::integer_text(false, t.text);
                if (!big) return fail(big.error().message);
                e->value = std::move(*big);
            }
            next();
            return e;
        }
        if (is_op("(")) {
            next();
            EMBER_ASSIGN_OR_RETURN(ExprPtr e, tuple(true, true));
            EMBER_TRY(expect_op(")"));
            return e;
        }
        if (is_op("[") || is_op("{")) {
            bool is_dict = is_op("{");
            const char* close = is_dict ? "}" : "]";
            ExprPtr e = node(is_dict ? Expr::Kind::Dict : Expr::Kind::List, line);
            next();
            while (!is_op(close)) {
                if (!e->kids.empty()) {
                    EMBER_TRY(expect_op(","));
                    if (is_op(close)) break;
                }
                EMBER_ASSIGN_OR_RETURN(ExprPtr item, expression(true));
                e->kids.push_back(std::move(item));
                if (is_dict) {
                    EMBER_TRY(expect_op(":"));
                    EMBER_ASSIGN_OR_RETURN(ExprPtr v, expression(true));
                    e->kids.push_back(std::move(v));
                }
            }
            next();
            return e;
        }
        return unexpected("an expression");
    }

    Result<ExprPtr> postfix(ExprPtr e) {
        Guard g(m_depth);
        while (true) {
            if (is_op(".") || is_op("[") || is_op("(")) {
                ++m_depth, ++g.n;
                EMBER_TRY(depth_check());
            }
            if (is_op(".")) {
                int line = cur().line;
                next();
                if (cur().type == Tok::Name) {
                    auto a = node(Expr::Kind::Attr, line);
                    a->name = cur().text;
                    a->kids.push_back(std::move(e));
                    e = std::move(a);
                } else if (cur().type == Tok::Int) {
                    if (cur().big) return fail("index too large: " + cur().text);
                    auto a = node(Expr::Kind::Item, line);
                    auto idx = node(Expr::Kind::Const, line);
                    idx->value = Value::integer(cur().ival);
                    a->kids.push_back(std::move(e));
                    a->kids.push_back(std::move(idx));
                    e = std::move(a);
                } else {
                    return unexpected("an attribute name");
                }
                next();
            } else if (is_op("[")) {
                EMBER_ASSIGN_OR_RETURN(e, subscript(std::move(e)));
            } else if (is_op("(")) {
                EMBER_ASSIGN_OR_RETURN(e, call(std::move(e)));
            } else {
                return e;
            }
        }
    }

    Result<ExprPtr> subscript(ExprPtr obj) {
        int line = cur().line;
        next();  // [
        ExprPtr parts[3];
        int colons = 0;
        while (true) {
            if (is_op("]")) break;
            if (is_op(":")) {
                if (++colons > 2) return unexpected("']'");
                next();
                continue;
            }
            if (parts[colons]) return unexpected("':' or ']'");
            EMBER_ASSIGN_OR_RETURN(parts[colons], expression(true));
        }
        next();
        if (colons == 0) {
            if (!parts[0]) return fail("empty subscript '[]'", line);
            auto e = node(Expr::Kind::Item, line);
            e->kids.push_back(std::move(obj));
            e->kids.push_back(std::move(parts[0]));
            return e;
        }
        auto e = node(Expr::Kind::Slice, line);
        e->kids.push_back(std::move(obj));
        for (auto& p : parts) e->kids.push_back(std::move(p));
        return e;
    }

    Status call_args(Expr& e) {
        EMBER_TRY(expect_op("("));
        bool first = true;
        while (!is_op(")")) {
            if (!first) {
                EMBER_TRY(expect_op(","));
                if (is_op(")")) break;
            }
            first = false;
            if (is_op("*") || is_op("**")) return fail("*args and **kwargs are not supported");
            if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
                std::string n = cur().text;
                next();
                next();
                EMBER_ASSIGN_OR_RETURN(ExprPtr v, expression(true));
                e.kwargs.emplace_back(std::move(n), std::move(v));
            } else {
                if (!e.kwargs.empty()) return fail("positional argument after keyword argument");
                EMBER_ASSIGN_OR_RETURN(ExprPtr v, expression(true));
                e.kids.push_back(std::move(v));
            }
        }
        next();
        return {};
    }

    Result<ExprPtr> call(ExprPtr fn) {
        auto e = node(Expr::Kind::Call, cur().line);
        e->kids.push_back(std::move(fn));
        EMBER_TRY(call_args(*e));
        return e;
    }

    // One or more "| name(args)" applied to e (null: the filter block's content).
    Result<ExprPtr> filter_chain(ExprPtr e) {
        bool first = true;
        Guard g(m_depth);
        while (first || is_op("|")) {
            if (!first) next();
            first = false;
            ++m_depth, ++g.n;
            EMBER_TRY(depth_check());
            auto f = node(Expr::Kind::Filter, cur().line);
            EMBER_ASSIGN_OR_RETURN(f->name, expect_name());
            while (is_op(".")) {
                next();
                EMBER_ASSIGN_OR_RETURN(std::string part, expect_name());
                f->name += "." + part;
            }
            f->kids.push_back(std::move(e));
            if (is_op("(")) EMBER_TRY(call_args(*f));
            e = std::move(f);
        }
        return e;
    }

    // Filters, tests and calls after a unary expression.
    Result<ExprPtr> filters(ExprPtr e) {
        Guard g(m_depth);
        while (true) {
            ++m_depth, ++g.n;
            EMBER_TRY(depth_check());
            if (is_op("|")) {
                next();
                EMBER_ASSIGN_OR_RETURN(e, filter_chain(std::move(e)));
            } else if (is_name("is")) {
                EMBER_ASSIGN_OR_RETURN(e, test(std::move(e)));
            } else if (is_op("(")) {
                EMBER_ASSIGN_OR_RETURN(e, call(std::move(e)));
            } else {
                return e;
            }
        }
    }

    Result<ExprPtr> test(ExprPtr e) {
        auto t = node(Expr::Kind::Test, cur().line);
        next();  // is
        if (is_name("not")) {
            t->negated = true;
            next();
        }
        EMBER_ASSIGN_OR_RETURN(t->name, expect_name());
        t->kids.push_back(std::move(e));
        if (is_op("(")) {
            EMBER_TRY(call_args(*t));
        } else if ((cur().type == Tok::Name || cur().type == Tok::String ||
                    cur().type == Tok::Int || cur().type == Tok::Float || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if")) {
            if (is_name("is")) return fail("tests cannot be chained with 'is'");
            EMBER_ASSIGN_OR_RETURN(ExprPtr arg, primary());
            EMBER_ASSIGN_OR_RETURN(arg, postfix(std::move(arg)));
            t->kids.push_back(std::move(arg));
        }
        return t;
    }
};

}  // namespace

Result<std::unique_ptr<Template>> parse_template(const std::string& source) {
    EMBER_ASSIGN_OR_RETURN(std::vector<Token> toks, lex_template(source));
    return Parser(std::move(toks)).run();
}

}  // namespace ember::jinja

// Syntax tree of a parsed Jinja2 template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/result.h"
#include "templates/jinja_value.h"

namespace ember::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Const,    // value
        Name,     // name
        List,     // kids
        Tuple,    // kids
        Dict,     // kids: key, value, key, value...
        Attr,     // kids[0].name
        Item,     // kids[0][kids[1]]
        Slice,    // kids[0][kids[1]:kids[2]:kids[3]] (null kids are omitted parts)
        Call,     // kids[0](kids[1..], kwargs)
        Filter,   // kids[0] | name(kids[1..], kwargs); kids[0] null inside a filter block
        Test,     // kids[0] is [not] name(kids[1..], kwargs)
        Neg,      // -kids[0]
        Pos,      // +kids[0]
        Not,      // not kids[0]
        Binary,   // kids[0] op kids[1]: + - * / // % ** ~
        And,      // kids[0] and kids[1]
        Or,       // kids[0] or kids[1]
        Compare,  // kids[0] ops[0] kids[1] ops[1] kids[2] ... (chained like Python)
        Cond,     // kids[0] if kids[1] else kids[2] (kids[2] may be null)
    };
    Kind kind = Kind::Const;
    int line = 0;
    Value value;
    std::string name;  // Name, Attr, Filter, Test, Binary operator
    std::vector<ExprPtr> kids;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;  // Compare
    bool negated = false;          // Test: "is not"
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind {
        Text,         // text
        Print,        // {{ expr }}
        If,           // branches (cond, body); else_body
        For,          // for target in expr [if cond]: body; else_body
        Set,          // set target = expr
        SetBlock,     // set target [| filter]: body
        Macro,        // macro name(params = defaults): body
        CallBlock,    // call[(params)] expr: body
        FilterBlock,  // filter expr: body
        Break,
        Continue,
        With,   // with targets = values: body
        Scope,  // a body rendered in place (generation, block)
    };
    Kind kind = Kind::Text;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr target;
    ExprPtr cond;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body else_body;
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;                     // per param, null when none
    std::vector<std::pair<ExprPtr, ExprPtr>> assigns;  // With
};

struct Template {
    Body body;
};

Result<std::unique_ptr<Template>> parse_template(const std::string& source);

}  // namespace ember::jinja

// Unit tests of the Jinja2 interpreter: reference renderings from Python jinja2, hand-written
// checks of whitespace control, scoping, macros, and errors.
#include <gtest/gtest.h>

#include <string>

#include "jinja_reference_cases.h"
#include "templates/chat_template.h"

namespace {

using ember::ChatTemplateInputs;
using ember::Result;

Result<std::string> render(const std::string& tmpl, const std::string& extra_json = "") {
    ChatTemplateInputs in;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.extra_context_json = extra_json;
    return ember::render_chat_template(tmpl, in);
}

std::string render_ok(const std::string& tmpl, const std::string& extra_json = "") {
    auto r = render(tmpl, extra_json);
    if (!r.ok()) return "ERROR " + r.error().code + ": " + r.error().message;
    return *r;
}

TEST(JinjaReference, Expressions) {
    for (const auto& c : kExpressionCases) {
        SCOPED_TRACE(c.tmpl);
        EXPECT_EQ(render_ok(c.tmpl), c.expected);
    }
}

TEST(JinjaReference, ExpressionErrors) {
    for (const char* t : kExpressionCases_errors) {
        auto r = render(t);
        ASSERT_FALSE(r.ok()) << t << " rendered as " << *r;
        EXPECT_EQ(r.error().code, "template.render") << t;
        EXPECT_NE(r.error().message.find("line 1"), std::string::npos) << r.error().message;
    }
}

TEST(JinjaReference, Statements) {
    for (const auto& c : kStatementCases) {
        SCOPED_TRACE(c.tmpl);
        EXPECT_EQ(render_ok(c.tmpl, kStatementContext), c.expected);
    }
}

TEST(JinjaReference, StatementErrors) {
    for (const char* t : kStatementCases_errors) {
        auto r = render(t, kStatementContext);
        EXPECT_FALSE(r.ok()) << t << " rendered as " << *r;
    }
}

TEST(Jinja, ContextVariables) {
    ChatTemplateInputs in;
    in.messages = {{"user", "a"}, {"assistant", "b"}};
    in.add_generation_prompt = false;
    in.bos_token = "B";
    in.eos_token = "E";
    auto r = ember::render_chat_template(
        "{{ bos_token }}{{ messages|length }}{{ messages[1].role }}{{ add_generation_prompt }}"
        "{{ eos_token }}{{ tools is none }}{{ documents is defined }}",
        in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, "B2assistantFalseETrueFalse");
}

TEST(Jinja, StrftimeNowIsPinnable) {
    ChatTemplateInputs in;
    in.now_unix = 1699963200;  // 2023-11-14 12:00 UTC: the same day in every common time zone
    auto r = ember::render_chat_template("{{ strftime_now('%d %b %Y') }}", in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, "14 Nov 2023");
    in.now_unix = -1;
    r = ember::render_chat_template("{{ strftime_now('%Y')|int > 2023 }}", in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, "True");
}

TEST(Jinja, ExtraVariablesFromJson) {
    EXPECT_EQ(render_ok("{{ toolList|length }}:{{ toolList[0].name }}:{{ n + 1 }}:{{ f }}:{{ z }}",
                        R"({"toolList": [{"name": "calc"}], "n": 41, "f": 1.5, "z": null})"),
              "1:calc:42:1.5:None");
    auto r = render("{{ 1 }}", "[1, 2]");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.extra_json");
    r = render("{{ 1 }}", "{\"a\": ");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.extra_json");
}

TEST(Jinja, WhitespaceControl) {
    // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
    EXPECT_EQ(render_ok("<\n  {% if true %}\n  x\n  {% endif %}\n>"), "<\n  x\n>");
    // Expressions are not lstripped; '-' strips every whitespace character, newlines included.
    EXPECT_EQ(render_ok("a\n  {{ 'x' }}\n  {{- 'y' -}}\n  b"), "a\n  xyb");
    // '+' keeps the indentation lstrip_blocks would remove.
    EXPECT_EQ(render_ok("  {%+ if true %}x{% endif %}"), "  x");
    // One trailing newline of the template is dropped, as Jinja2 does by default.
    EXPECT_EQ(render_ok("x\n"), "x");
    EXPECT_EQ(render_ok("x\n\n"), "x\n");
    EXPECT_EQ(render_ok("a{# note #}b"), "ab");
    EXPECT_EQ(render_ok("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(Jinja, LoopScopingAndNamespace) {
    // A set inside a loop neither leaks out nor survives to the next iteration.
    EXPECT_EQ(render_ok("{% set x = 0 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}"
                        "{% endfor %}|{{ x }}"),
              "012|0");
    EXPECT_EQ(render_ok("{% set ns = namespace(n=0) %}{% for i in range(4) %}"
                        "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
              "6");
    auto r = render("{% set d = {} %}{% set d.x = 1 %}");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("namespace"), std::string::npos);
}

TEST(Jinja, Macros) {
    EXPECT_EQ(render_ok("{% macro tag(name, cls='c') -%}\n<{{ name }} class={{ cls }}>\n"
                        "{%- endmacro %}{{ tag('p') }}{{ tag('b', cls='x') }}"),
              "<p class=c><b class=x>");
    // Runaway recursion is an error, not a crash.
    auto r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.render");
}

TEST(Jinja, SlicingAndUnicode) {
    EXPECT_EQ(render_ok("{{ 'héllo wörld'[1:4] }}|{{ 'héllo'[::-1] }}|{{ 'é'|length }}"),
              "éll|olléh|1");
    EXPECT_EQ(render_ok("{{ [0,1,2,3,4,5][-3:] }}{{ [0,1,2,3,4,5][::-2] }}"), "[3, 4, 5][5, 3, 1]");
}

TEST(Jinja, RegexReplace) {
    EXPECT_EQ(
        render_ok("{{ 'a<think>x\ny</think>b'|regex_replace('^[\\\\s\\\\S]*</think>', '') }}"),
        "b");
    EXPECT_EQ(render_ok("{{ 'a1b22'|regex_replace('([0-9]+)', '<\\\\1>') }}"), "a<1>b<22>");
    EXPECT_EQ(render_ok("{{ 'aaa'|regex_replace('a', 'b', count=2) }}"), "bba");
    auto r = render("{{ 'x'|regex_replace('(', '') }}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.render");
}

struct ErrorCase {
    const char* tmpl;
    const char* code;
    int line;
};

TEST(Jinja, MalformedTemplatesNameTheLine) {
    const ErrorCase cases[] = {
        {"a\n{% if x %}\nb", "template.syntax", 3},               // unclosed if
        {"{% for x in y %}\n{% endif %}", "template.syntax", 2},  // wrong end tag
        {"\n\n{% frobnicate %}", "template.syntax", 3},           // unknown tag
        {"x\n{{ 1 + }}", "template.syntax", 2},                   // bad expression
        {"{{ 'unterminated }}", "template.syntax", 1},
        {"\n{{ x", "template.syntax", 2},  // unclosed tag
        {"{# never closed", "template.syntax", 1},
        {"{% raw %}x", "template.syntax", 1},
        {"{{ (1, 2 }}", "template.syntax", 1},
        {"{{ x | }}", "template.syntax", 1},
        {"{{ a @ b }}", "template.syntax", 1},
        {"{% set %}", "template.syntax", 1},
        {"{% endfor %}", "template.syntax", 1},
        {"{% for %}{% endfor %}", "template.syntax", 1},
        {"\n{{ 99999999999999999999999 + 1 }}", "template.render", 2},  // big int arithmetic
        {"{{ x.99999999999999999999 }}", "template.syntax", 1},         // index beyond int64
        {"\n\n{{ 'x'|nosuchfilter }}", "template.render", 3},
        {"{{ 'x' is nosuchtest }}", "template.render", 1},
        {"\n{{ 'x'|trim(1, 2, 3) }}", "template.render", 2},
        {"{{ [1]|join(x=1) }}", "template.render", 1},
        {"{{ 1 / 0 }}", "template.render", 1},
        {"{{ 1 // 0 }}", "template.render", 1},
        {"{{ 'a' + 1 }}", "template.render", 1},
        {"{{ 1 < 'a' }}", "template.render", 1},
        {"{{ 9223372036854775807 + 1 }}", "template.render", 1},
        {"{% for x in 5 %}{% endfor %}", "template.render", 1},
        {"{{ none() }}", "template.render", 1},
        {"{% set a, b = [1] %}", "template.render", 1},
        {"x\n\n\n{{ raise_exception('nope') }}", "template.raise", 4},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.tmpl);
        auto r = render(c.tmpl);
        ASSERT_FALSE(r.ok()) << "rendered: " << *r;
        EXPECT_EQ(r.error().code, c.code) << r.error().message;
        std::string want = "line " + std::to_string(c.line);
        EXPECT_NE(r.error().message.find(want), std::string::npos)
            << r.error().message << " (expected " << want << ")";
    }
    auto r = render("{{ raise_exception('Conversation roles must alternate') }}");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("Conversation roles must alternate"), std::string::npos);
}

TEST(Jinja, HostileTemplatesAreBounded) {
    const char* hostile[] = {
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(100) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        "{{ 'x' * 100000000 }}",
        "{{ [1] * 100000000 }}",
        "{{ range(100000000)|length }}",
        "{% for i in range(1000000) %}{{ 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' }}{% endfor "
        "%}",
        "{% macro f() %}{{ f() }}{{ f() }}{% endmacro %}{{ f() }}",
        "{% set l = [] %}{% set _ = l.append(l) %}{{ l }}{{ l == l }}",
        "{{ 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'|regex_replace('(a+)+$', '') }}",
    };
    for (const char* t : hostile) {
        SCOPED_TRACE(t);
        auto r = render(t);
        if (r.ok()) {
            EXPECT_LE(r->size(), 16u << 20);
        }
    }
    // Python raises on an empty separator; a naive loop never advances (found by fuzzing).
    for (const char* t : {"{{ 'abc'.split('') }}", "{{ 'abc'.rsplit('', 1) }}"}) {
        auto r = render(t);
        ASSERT_FALSE(r.ok()) << t;
        EXPECT_NE(r.error().message.find("empty separator"), std::string::npos) << t;
    }
    // A replacement that would grow past the string limit fails before building the result.
    for (const char* t :
         {"{{ ('x' * 1000000).replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
          "{{ ('x' * 1000000)|replace('', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
          "{{ ('a ' * 4000000).split()|length }}"}) {
        auto r = render(t);
        ASSERT_FALSE(r.ok()) << t;
        EXPECT_EQ(r.error().code, "template.render") << t;
    }
    EXPECT_EQ(*render("{{ 'aXbXc'.replace('X', '--', 1) }}"), "a--bXc");
    // Macros recursing through nested blocks hit the depth limit, not the end of the stack.
    std::string ifs, endifs;
    for (int i = 0; i < 40; ++i) ifs += "{% if true %}", endifs += "{% endif %}";
    auto deep_macro =
        render("{% macro f(n) %}" + ifs + "{{ f(n + 1) }}" + endifs + "{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(deep_macro.ok());
    EXPECT_EQ(deep_macro.error().code, "template.render");
    // Deep nesting is a syntax error rather than a stack overflow.
    std::string deep(5000, '(');
    auto r = render("{{ " + deep + "1" + std::string(5000, ')') + " }}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.syntax");
    std::string chain = "{{ 1";
    for (int i = 0; i < 20000; ++i) chain += " + 1";
    r = render(chain + " }}");
    EXPECT_FALSE(r.ok());
    std::string nested;
    for (int i = 0; i < 2000; ++i) nested += "{% if true %}";
    r = render(nested);
    EXPECT_FALSE(r.ok());
}

// dictsort, splitlines and rsplit with a limit, as Python's Jinja2 renders them.
TEST(Jinja, DictsortSplitlinesRsplitMatchPython) {
    const std::string d = R"({"d": {"b": 1, "a": 2, "C": 0}, "s": "a\nb\r\nc\r\rd\n"})";
    const struct {
        const char* tmpl;
        const char* want;
    } cases[] = {
        {"{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}", "a=2;b=1;C=0;"},
        {"{% for k, v in d|dictsort(true) %}{{ k }}={{ v }};{% endfor %}", "C=0;a=2;b=1;"},
        {"{% for k, v in d|dictsort(by='value') %}{{ k }}={{ v }};{% endfor %}", "C=0;b=1;a=2;"},
        {"{% for k, v in d|dictsort(reverse=true) %}{{ k }}={{ v }};{% endfor %}", "C=0;b=1;a=2;"},
        {"{{ s.splitlines()|join('|') }}", "a|b|c||d"},
        {"{{ 'a b c d'.rsplit(' ', 2)|join('|') }}", "a b|c|d"},
        {"{{ 'a b'.rsplit(' ', 5)|join('|') }}", "a|b"},
        {"{{ 'a b c'.rsplit(none, 1)|join('|') }}", "a b|c"},
    };
    for (const auto& c : cases) EXPECT_EQ(render_ok(c.tmpl, d), c.want) << c.tmpl;
}

}  // namespace

// Jinja2 / Python behaviour that templates rely on (issue 47): filters on none, Unicode case
// mapping, integers beyond 64 bits, slice, random and tojson's indent. Every expected string was
// rendered with Python 3.12 jinja2 3.1.6 in transformers' chat template environment.
#include <gtest/gtest.h>

#include <string>

#include "templates/chat_template.h"

namespace {

struct Case {
    const char* tmpl;
    const char* expected;
};

std::string render(const std::string& tmpl) {
    ember::ChatTemplateInputs in;
    auto r = ember::render_chat_template(tmpl, in);
    if (!r.ok()) return "ERROR " + r.error().code + ": " + r.error().message;
    return *r;
}

void expect_cases(const Case* begin, const Case* end) {
    for (const Case* c = begin; c != end; ++c) EXPECT_EQ(render(c->tmpl), c->expected) << c->tmpl;
}

// Jinja2 iterates only `if value:`; functionary-medium-v3.1 filters `tools` that may be none.
const Case kNone[] = {
    {"{{ none | select | list }}", "[]"},
    {"{{ none | reject('none') | list }}", "[]"},
    {"{{ none | selectattr('type', 'equalto', 'function') | list }}", "[]"},
    {"{{ none | rejectattr('x') | list }}", "[]"},
    {"{{ none | map(attribute='name') | list }}", "[]"},
    {"{{ undefined_var | map('upper') | list }}", "[]"},
    {"{{ (none | selectattr('a') | list | length) == 0 }}", "True"},
    {"{{ '' | select | list }}", "[]"},
    {"{% for t in tools | selectattr('type', 'equalto', 'code_interpreter') %}x{% endfor %}.", "."},
};

TEST(JinjaPython, SelectRejectAndMapOnNoneAreEmpty) {
    expect_cases(std::begin(kNone), std::end(kNone));
}

const Case kCase[] = {
    {"{{ \"hello wörld\"|title }}", "Hello Wörld"},
    {"{{ \"ǆemal ßtraße\"|title }}", "Ǆemal SStraße"},
    {"{{ \"HELLO WÖRLD ΟΔΟΣ\"|lower }}", "hello wörld οδος"},
    {"{{ \"straße ǆ ŉ\"|upper }}", "STRASSE Ǆ ʼN"},
    {"{{ \"éCOLE ΣΑΣ\"|capitalize }}", "École σας"},
    {"{{ \"ßa\"|capitalize }}", "Ssa"},
    {"{{ \"hello-wörld (ünïcode) [ärger]\"|title }}", "Hello-Wörld (Ünïcode) [Ärger]"},
    {"{{ \"ΑΣ ΑΣ.\"|lower }}", "ας ας."},
    {"{{ \"ΣΑ\"|title }}", "Σα"},
    {"{{ \"ǆa ßb-éc 3d\".title() }}", "ǅa Ssb-Éc 3D"},
    {"{{ \"straße\".upper() }}", "STRASSE"},
    {"{{ \"ÉCOLE\".lower() }}", "école"},
    {"{{ \"ǆx\".capitalize() }}", "ǅx"},
    {"{{ \"ÉCOLE\" is upper }} {{ \"école\" is lower }} {{ \"ǅ\" is upper }} {{ \"1\" is lower }}",
     "True True False False"},
    {"{{ \"é\".isalpha() }} {{ \"٣\".isdigit() }} {{ \"x²\".isalnum() }} "
     "{{ \"\u00a0\u2003\".isspace() }} {{ \"É\".isupper() }} {{ \"ß\".islower() }}",
     "True True True True True True"},
    {"{{ \"\u00a0 x \u3000\".strip() }}|{{ \"\u2003y\"|trim }}", "x|y"},
    // Bytes that are not UTF-8 pass through.
    {"{{ \"a\xff\xc3z\"|upper }}", "A\xff\xc3Z"},
};

TEST(JinjaPython, CaseMappingCoversUnicode) {
    expect_cases(std::begin(kCase), std::end(kCase));
}

const Case kBig[] = {
    {"{{ 18446744073709551615 }}", "18446744073709551615"},
    {"{{ -18446744073709551616 }}", "-18446744073709551616"},
    {"{{ 9223372036854775808 }}", "9223372036854775808"},
    {"{{ -9223372036854775808 }}", "-9223372036854775808"},
    {"{{ 123456789012345678901234567890 > 5 }} {{ 5 < 123456789012345678901234567890 }} "
     "{{ -99999999999999999999 < -9223372036854775808 }}",
     "True True True"},
    {"{{ 99999999999999999999 == 99999999999999999999 }} {{ 99999999999999999999 == 1 }} "
     "{{ 99999999999999999998 < 99999999999999999999 }} "
     "{{ -99999999999999999999 < -99999999999999999998 }}",
     "True False True True"},
    {"{{ [18446744073709551615] | tojson }} {{ 18446744073709551615 is integer }} "
     "{{ 18446744073709551615 / 2 }} {{ 18446744073709551615 > 1.5 }}",
     "[18446744073709551615] True 9.223372036854776e+18 True"},
    {"{{ '99999999999999999999' | int }} {{ 99999999999999999999 | string }} "
     "{{ {'a': 99999999999999999999} }}",
     "99999999999999999999 99999999999999999999 {'a': 99999999999999999999}"},
};

TEST(JinjaPython, IntegersBeyond64BitsParsePrintAndCompare) {
    expect_cases(std::begin(kBig), std::end(kBig));
    // Arithmetic on them is a clear error rather than a wrong number.
    for (const char* t : {"{{ 99999999999999999999 + 1 }}", "{{ 2 * -99999999999999999999 }}"}) {
        std::string r = render(t);
        EXPECT_NE(r.find("beyond 64 bits"), std::string::npos) << t << ": " << r;
    }
    ember::ChatTemplateInputs in;
    in.vars_json["n"] = "123456789012345678901234567890";
    auto r = ember::render_chat_template("{{ n }} {{ n > 1 }}", in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, "123456789012345678901234567890 True");
}

const Case kSlice[] = {
    {"{{ [1,2,3,4,5,6,7] | slice(3) | list }}", "[[1, 2, 3], [4, 5], [6, 7]]"},
    {"{{ [1,2,3,4,5,6,7] | slice(3, 0) | list }}", "[[1, 2, 3], [4, 5, 0], [6, 7, 0]]"},
    {"{{ [1,2] | slice(4) | list }}", "[[1], [2], [], []]"},
    {"{{ 'abcde' | slice(2) | list }}", "[['a', 'b', 'c'], ['d', 'e']]"},
    {"{% for col in [1,2,3,4,5]|slice(2) %}[{{ col|join(',') }}]{% endfor %}", "[1,2,3][4,5]"},
};

TEST(JinjaPython, SliceFilter) {
    expect_cases(std::begin(kSlice), std::end(kSlice));
}

TEST(JinjaPython, RandomFilterPicksAnItemTheSameWayEachRender) {
    EXPECT_EQ(render("{{ [5] | random }} {{ 'x' | random }}"), "5 x");
    EXPECT_EQ(render("{{ [] | random is undefined }}"), "True");
    const std::string t = "{% for k in range(20) %}{{ ['a', 'b', 'c', 'd'] | random }}{% endfor %}";
    const std::string first = render(t);
    ASSERT_EQ(first.size(), 20u) << first;
    EXPECT_EQ(render(t), first);        // deterministic per render
    for (char c : std::string("abcd"))  // and not always the same item
        EXPECT_NE(first.find(c), std::string::npos) << first;
}

TEST(JinjaPython, TojsonIndentIsNotCapped) {
    const std::string i80(80, ' ');
    EXPECT_EQ(render("{{ {'a': [1, {'b': 2}]} | tojson(indent=80) }}"),
              "{\n" + i80 + "\"a\": [\n" + i80 + i80 + "1,\n" + i80 + i80 + "{\n" + i80 + i80 +
                  i80 + "\"b\": 2\n" + i80 + i80 + "}\n" + i80 + "]\n}");
    EXPECT_EQ(render("{{ [1, [2]] | tojson(indent=-1) }}"), "[\n1,\n[\n2\n]\n]");
    EXPECT_EQ(render("{{ [1] | tojson(indent=0) }}"), "[\n1\n]");
    EXPECT_EQ(render("{{ {'a': [1]} | tojson(indent='\t') }}"), "{\n\t\"a\": [\n\t\t1\n\t]\n}");
    // A result past the output limit is an error, not an allocation of that size.
    std::string r = render("{{ [[1]] | tojson(indent=100000000000) }}");
    EXPECT_EQ(r.rfind("ERROR", 0), 0u) << r.substr(0, 100);
}

}  // namespace

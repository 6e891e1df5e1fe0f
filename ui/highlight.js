.pragma library
// Syntax highlighting of a code block for display: keywords, strings, comments and numbers
// of the common languages, as rich text (HTML) in the colours given. A small lexer, not a
// parser: it never changes the text, only wraps pieces of it in colours.

var KEYWORDS = {};
("alignas alignof and as assert async auto await bool break case catch char class const " +
 "constexpr continue crate def default del delete do double elif else enum except export extern " +
 "false final finally float fn for from func function go goto if impl import in inline instanceof " +
 "int interface is lambda let long loop match mod module mut namespace new nil none None not " +
 "null nullptr or package pass private protected pub public raise ref return self Self short " +
 "signed sizeof static struct super switch template this throw True true try type typedef " +
 "typename typeof union unsigned use using var virtual void volatile where while with yield " +
 "fi then esac done echo local readonly select from where").split(" ").forEach(function (k) {
    KEYWORDS[k] = true;
});

// Languages whose comments start with '#'.
var HASH_COMMENTS = { python: 1, py: 1, sh: 1, bash: 1, shell: 1, zsh: 1, ruby: 1, rb: 1,
                      perl: 1, yaml: 1, yml: 1, toml: 1, r: 1, make: 1, makefile: 1,
                      dockerfile: 1, cmake: 1, ini: 1, conf: 1, powershell: 1, ps1: 1 };

function escapeHtml(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// [{text, kind}] with kind "keyword", "string", "comment", "number" or "" (plain); joined, the
// texts are the code unchanged.
function tokens(code, language) {
    var hash = !!HASH_COMMENTS[(language || "").toLowerCase()];
    var parts = [
        "(\\/\\*[\\s\\S]*?(?:\\*\\/|$)|\\/\\/[^\\n]*" + (hash ? "|#[^\\n]*" : "") + ")",  // comment
        "(\"(?:\\\\.|[^\"\\\\\\n])*\"?|'(?:\\\\.|[^'\\\\\\n])*'?|`(?:\\\\.|[^`\\\\])*`?)",   // string
        "(\\b0[xX][0-9a-fA-F]+\\b|\\b\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\b)",             // number
        "([A-Za-z_][A-Za-z0-9_]*)"                                                        // word
    ];
    var re = new RegExp(parts.join("|"), "g");
    var out = [];
    var last = 0;
    var m;
    while ((m = re.exec(code)) !== null) {
        if (m[0].length === 0) { re.lastIndex++; continue; }
        if (m.index > last) out.push({ text: code.slice(last, m.index), kind: "" });
        var kind = m[1] !== undefined ? "comment" : m[2] !== undefined ? "string"
                 : m[3] !== undefined ? "number" : (KEYWORDS[m[4]] ? "keyword" : "");
        out.push({ text: m[0], kind: kind });
        last = m.index + m[0].length;
    }
    if (last < code.length) out.push({ text: code.slice(last), kind: "" });
    return out;
}

// The code as rich text; colours: {text, keyword, string, comment, number} (CSS colour names).
function toHtml(code, language, colours) {
    var html = tokens(code || "", language).map(function (t) {
        var text = escapeHtml(t.text);
        return t.kind ? "<span style=\"color:" + colours[t.kind] + "\">" + text + "</span>" : text;
    }).join("");
    return "<pre style=\"white-space: pre-wrap; margin: 0\">" + html + "</pre>";
}

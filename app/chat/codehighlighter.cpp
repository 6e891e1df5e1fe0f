#include "codehighlighter.h"

#include <QHash>

namespace {

enum State {
    Normal = 0,
    InBlockComment = 1,
    InTripleDouble = 2,
    InTripleSingle = 3,
    InBacktick = 4
};

struct Language {
    const char* keywords;
    const char* types;
    const char* lineComment;
    bool blockComments, tripleStrings, backtickStrings;
};

const QHash<QString, Language>& languages() {
    static const QHash<QString, Language> table{
        {"cpp",
         {"alignas alignof asm auto break case catch class co_await co_return co_yield const "
          "consteval constexpr constinit const_cast continue decltype default delete do "
          "dynamic_cast else enum explicit export extern false final for friend goto if inline "
          "mutable namespace new noexcept nullptr operator override private protected public "
          "register reinterpret_cast requires return sizeof static static_assert static_cast "
          "struct switch template this thread_local throw true try typedef typeid typename union "
          "using virtual volatile while NULL #include #define #if #ifdef #ifndef #endif #else "
          "#pragma",
          "bool char char8_t char16_t char32_t double float int long short signed unsigned void "
          "wchar_t size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t "
          "std string vector",
          "//", true, false, false}},
        {"python",
         {"and as assert async await break class continue def del elif else except False "
          "finally for from global if import in is lambda None nonlocal not or pass raise return "
          "True try while with yield match case self",
          "int float str bool list dict set tuple bytes object type", "#", false, true, false}},
        {"javascript",
         {"async await break case catch class const continue debugger default delete do else "
          "export extends false finally for from function if import in instanceof let new null "
          "of return static super switch this throw true try typeof undefined var void while "
          "with yield interface type enum implements private public protected readonly as "
          "namespace declare abstract keyof",
          "string number boolean any unknown never object Array Promise Map Set", "//", true, false,
          true}},
        {"json", {"true false null", "", "", false, false, false}},
        {"bash",
         {"if then else elif fi for while until do done case esac in function return exit "
          "local export readonly declare set unset shift source echo cd break continue",
          "", "#", false, false, false}},
        {"rust",
         {"as async await break const continue crate dyn else enum extern false fn for if impl "
          "in let loop match mod move mut pub ref return self Self static struct super trait "
          "true type unsafe use where while Some None Ok Err",
          "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec "
          "Option Result Box",
          "//", true, false, false}},
        {"go",
         {"break case chan const continue default defer else fallthrough for func go goto if "
          "import interface map package range return select struct switch type var true false "
          "nil iota",
          "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
          "string uint uint8 uint16 uint32 uint64 uintptr",
          "//", true, false, true}},
        {"java",
         {"abstract assert break case catch class const continue default do else enum extends "
          "final finally for goto if implements import instanceof interface native new package "
          "private protected public return static super switch synchronized this throw throws "
          "try volatile while true false null var record using namespace get set async await",
          "boolean byte char double float int long short void String Object", "//", true, false,
          false}},
        {"sql",
         {"select from where insert into values update set delete create table drop alter add "
          "index join left right inner outer on group by order having limit as and or not null "
          "is in like primary key references distinct union all case when then else end",
          "integer int text varchar real blob boolean date", "--", true, false, false}},
        {"yaml", {"true false null yes no", "", "#", false, false, false}},
    };
    return table;
}

QSet<QString> words(const char* list) {
    QSet<QString> out;
    for (const QString& w : QString::fromLatin1(list).split(' ', Qt::SkipEmptyParts)) out.insert(w);
    return out;
}

bool isWordStart(QChar c) {
    return c.isLetter() || c == '_' || c == '#';
}

bool isWordChar(QChar c) {
    return c.isLetterOrNumber() || c == '_';
}

}  // namespace

CodeHighlighter::CodeHighlighter(QTextDocument* document, const QString& language,
                                 const Colours& colours)
    : QSyntaxHighlighter(document), m_language(canonicalLanguage(language)), m_colours(colours) {
    const Language& l = languages().value(m_language, Language{"", "", "", false, false, false});
    m_keywords = words(l.keywords);
    m_types = words(l.types);
    m_lineComment = QString::fromLatin1(l.lineComment);
    m_blockComments = l.blockComments;
    m_tripleStrings = l.tripleStrings;
    m_backtickStrings = l.backtickStrings;
    if (m_language == "sql") {
        // SQL is written in either case.
        for (const QString& k : QSet<QString>(m_keywords)) m_keywords.insert(k.toUpper());
        for (const QString& k : QSet<QString>(m_types)) m_types.insert(k.toUpper());
    }
}

QString CodeHighlighter::canonicalLanguage(const QString& fenceInfo) {
    static const QHash<QString, QString> aliases{
        {"c", "cpp"},          {"h", "cpp"},
        {"cpp", "cpp"},        {"c++", "cpp"},
        {"cc", "cpp"},         {"cxx", "cpp"},
        {"hpp", "cpp"},        {"objc", "cpp"},
        {"glsl", "cpp"},       {"hlsl", "cpp"},
        {"cuda", "cpp"},       {"python", "python"},
        {"py", "python"},      {"python3", "python"},
        {"js", "javascript"},  {"javascript", "javascript"},
        {"jsx", "javascript"}, {"ts", "javascript"},
        {"tsx", "javascript"}, {"typescript", "javascript"},
        {"mjs", "javascript"}, {"qml", "javascript"},
        {"json", "json"},      {"jsonc", "json"},
        {"bash", "bash"},      {"sh", "bash"},
        {"shell", "bash"},     {"zsh", "bash"},
        {"console", "bash"},   {"rust", "rust"},
        {"rs", "rust"},        {"go", "go"},
        {"golang", "go"},      {"java", "java"},
        {"kotlin", "java"},    {"kt", "java"},
        {"cs", "java"},        {"csharp", "java"},
        {"c#", "java"},        {"swift", "java"},
        {"sql", "sql"},        {"sqlite", "sql"},
        {"yaml", "yaml"},      {"yml", "yaml"},
        {"toml", "yaml"},      {"ini", "yaml"},
    };
    return aliases.value(fenceInfo.trimmed().toLower());
}

QTextCharFormat CodeHighlighter::format(Kind kind) const {
    QTextCharFormat f;
    switch (kind) {
        case Kind::Keyword:
            f.setForeground(m_colours.keyword);
            break;
        case Kind::Type:
            f.setForeground(m_colours.type);
            break;
        case Kind::String:
            f.setForeground(m_colours.string);
            break;
        case Kind::Comment:
            f.setForeground(m_colours.comment);
            f.setFontItalic(true);
            break;
        case Kind::Number:
            f.setForeground(m_colours.number);
            break;
        case Kind::Plain:
            break;
    }
    return f;
}

QList<CodeHighlighter::Span> CodeHighlighter::lex(const QString& text, int state,
                                                  int* nextState) const {
    QList<Span> spans;
    const int n = static_cast<int>(text.size());
    int i = 0;
    // Ends a construct that carries over lines: from `start`, find `close`; else to line end.
    auto carry = [&](int start, const QString& close, Kind kind, int openState) {
        const int end = static_cast<int>(text.indexOf(close, start));
        if (end < 0) {
            spans.append({start, n - start, kind});
            *nextState = openState;
            i = n;
            return;
        }
        spans.append({start, end + static_cast<int>(close.size()) - start, kind});
        i = end + static_cast<int>(close.size());
    };
    *nextState = Normal;
    if (state == InBlockComment)
        carry(0, "*/", Kind::Comment, InBlockComment);
    else if (state == InTripleDouble)
        carry(0, "\"\"\"", Kind::String, InTripleDouble);
    else if (state == InTripleSingle)
        carry(0, "'''", Kind::String, InTripleSingle);
    else if (state == InBacktick)
        carry(0, "`", Kind::String, InBacktick);
    if (m_language.isEmpty()) return spans;  // an unknown language stays plain
    while (i < n) {
        const QChar c = text[i];
        const QStringView rest = QStringView(text).mid(i);
        if (!m_lineComment.isEmpty() && rest.startsWith(m_lineComment)) {
            spans.append({i, n - i, Kind::Comment});
            break;
        }
        if (m_blockComments && rest.startsWith(u"/*")) {
            carry(i, "*/", Kind::Comment, InBlockComment);
            continue;
        }
        if (m_tripleStrings && (rest.startsWith(u"\"\"\"") || rest.startsWith(u"'''"))) {
            const bool dbl = c == '"';
            carry(i + 3, dbl ? "\"\"\"" : "'''", Kind::String,
                  dbl ? InTripleDouble : InTripleSingle);
            spans.last().start = spans.last().start - 3;
            spans.last().length += 3;
            continue;
        }
        if (m_backtickStrings && c == '`') {
            carry(i + 1, "`", Kind::String, InBacktick);
            --spans.last().start;
            ++spans.last().length;
            continue;
        }
        if (c == '"' || c == '\'') {
            // Rust lifetimes ('a) and char literals look alike; a quote with no closing one on
            // the line is left plain.
            int j = i + 1;
            while (j < n && text[j] != c) j += (text[j] == '\\') ? 2 : 1;
            if (j < n) {
                spans.append({i, j + 1 - i, Kind::String});
                i = j + 1;
                continue;
            }
            ++i;
            continue;
        }
        if (c.isDigit() && (i == 0 || !isWordChar(text[i - 1]))) {
            int j = i + 1;
            while (j < n && (text[j].isLetterOrNumber() || text[j] == '.' || text[j] == '_' ||
                             ((text[j] == '+' || text[j] == '-') &&
                              (text[j - 1] == 'e' || text[j - 1] == 'E'))))
                ++j;
            spans.append({i, j - i, Kind::Number});
            i = j;
            continue;
        }
        if (isWordStart(c) && (i == 0 || !isWordChar(text[i - 1]))) {
            int j = i + 1;
            while (j < n && isWordChar(text[j])) ++j;
            const QString word = text.mid(i, j - i);
            if (m_keywords.contains(word))
                spans.append({i, j - i, Kind::Keyword});
            else if (m_types.contains(word))
                spans.append({i, j - i, Kind::Type});
            i = j;
            continue;
        }
        ++i;
    }
    return spans;
}

void CodeHighlighter::highlightBlock(const QString& text) {
    int next = Normal;
    const QList<Span> spans =
        lex(text, previousBlockState() < 0 ? Normal : previousBlockState(), &next);
    for (const Span& s : spans) setFormat(s.start, s.length, format(s.kind));
    setCurrentBlockState(next);
}

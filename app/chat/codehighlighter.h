// Syntax highlighting of a code block: keywords, types, strings, comments and numbers of the
// common languages (C/C++, Python, JavaScript/TypeScript, JSON, shell, Rust, Go, Java, C#, SQL,
// YAML/TOML), in colours the theme gives. A small lexer per line, not a parser: the text is
// never changed, only coloured; block comments and multi-line strings carry over lines.
#pragma once

#include <QColor>
#include <QSet>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

class CodeHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    struct Colours {
        QColor keyword, type, string, comment, number;
    };
    // What a piece of code was lexed as, for tests and tools.
    enum class Kind { Plain, Keyword, Type, String, Comment, Number };

    CodeHighlighter(QTextDocument* document, const QString& language, const Colours& colours);

    // The language name a fence gives ("c++", "py", "ts", "sh", ...) in its canonical form
    // ("cpp", "python", "javascript", "bash", ...), or "" when it is not one this knows.
    static QString canonicalLanguage(const QString& fenceInfo);
    QString language() const { return m_language; }

protected:
    void highlightBlock(const QString& text) override;

private:
    struct Span {
        int start, length;
        Kind kind;
    };
    // The spans of one line and the state the next line starts in.
    QList<Span> lex(const QString& text, int state, int* nextState) const;
    QTextCharFormat format(Kind kind) const;

    QString m_language;
    QSet<QString> m_keywords, m_types;
    QString m_lineComment;   // "//", "#", "--" or empty
    bool m_blockComments;    // /* ... */
    bool m_tripleStrings;    // Python's """ and '''
    bool m_backtickStrings;  // JS template literals, Go raw strings
    Colours m_colours;
};

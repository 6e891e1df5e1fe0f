// Markdown in C++: rendering a block (md4c), splitting a streamed reply into blocks with only
// the last one parsed again, reasoning blocks, and the code highlighter.
#include <QSignalSpy>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QtTest>

#include "codehighlighter.h"
#include "markdownhtml.h"
#include "markdownstream.h"
#include "messageblocks.h"
#include "reasoning.h"

using markdown::Block;

namespace {

QString plainText(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText();
}

QStringList kinds(const markdown::Stream& s) {
    QStringList out;
    for (const Block& b : s.blocks())
        out << (b.kind == Block::Kind::Code ? "code:" + b.language + ":" + b.code
                                            : "prose:" + plainText(b.html));
    return out;
}

}  // namespace

class TestMarkdown : public QObject {
    Q_OBJECT
private slots:
    void hardBreaksKeepLines() {
        const QString html = markdown::toHtml(u"Roses are red\nViolets are blue");
        QVERIFY2(html.contains("red<br/>Violets"), qPrintable(html));
        QCOMPARE(plainText(html), QString("Roses are red\nViolets are blue"));
        markdown::HtmlOptions plain;
        plain.hardBreaks = false;
        QVERIFY(markdown::toHtml(u"a\nb", plain).contains("a b"));
    }

    void inlineFormattingAndEscaping() {
        const QString html =
            markdown::toHtml(u"**b** *i* ~~s~~ `x<y` <script>alert(1)</script> a & b");
        QVERIFY2(
            html.contains("<b>b</b>") && html.contains("<i>i</i>") && html.contains("<s>s</s>"),
            qPrintable(html));
        QVERIFY2(html.contains("<code>x&lt;y</code>"), qPrintable(html));
        QVERIFY2(!html.contains("<script>") && html.contains("&lt;script&gt;"), qPrintable(html));
        QVERIFY(html.contains("a &amp; b"));
    }

    void linksTakeTheColourAndImagesBecomeLinks() {
        markdown::HtmlOptions o;
        o.linkColour = "#8ab4f8";
        const QString html = markdown::toHtml(
            u"See [the docs](https://x.org/a?b=1&c=2), https://y.org and ![chart](c.png)", o);
        QVERIFY2(
            html.contains(
                "<a href=\"https://x.org/a?b=1&amp;c=2\" style=\"color:#8ab4f8\">the docs</a>"),
            qPrintable(html));
        QVERIFY2(
            html.contains("<a href=\"https://y.org\" style=\"color:#8ab4f8\">https://y.org</a>"),
            qPrintable(html));
        QVERIFY2(html.contains("<a href=\"c.png\" style=\"color:#8ab4f8\">chart</a>"),
                 qPrintable(html));
        QVERIFY(!html.contains("<img"));
    }

    void tablesArePaddedAndAligned() {
        const QString html = markdown::toHtml(u"| Model | Size |\n|---|--:|\n| **tiny** | 260K |");
        QVERIFY2(html.contains("cellpadding=\"6\""), qPrintable(html));
        QVERIFY2(html.contains("<th align=\"right\">Size</th>"), qPrintable(html));
        QVERIFY(html.contains("<b>tiny</b>"));
        QVERIFY(!plainText(html).contains('|'));
    }

    void listsHeadingsQuotes() {
        const QString html = markdown::toHtml(u"## Steps\n3. three\n4. four\n- [x] done\n> quoted");
        QVERIFY2(html.contains("<h2 style=\"margin-top:0; margin-bottom:4px\">Steps</h2>"),
                 qPrintable(html));
        QVERIFY2(html.contains("<ol start=\"3\""), qPrintable(html));
        QVERIFY2(html.contains(QString::fromUtf8("\u2611 done")), qPrintable(html));
        QVERIFY(html.contains("<blockquote"));
    }

    void splitsProseAndFences() {
        markdown::Stream s;
        s.setText("Intro\n```python\nx = 1\n\ny = 2\n```\nOutro\n\nLast **one**");
        QCOMPARE(kinds(s), QStringList({"prose:Intro", "code:python:x = 1\n\ny = 2", "prose:Outro",
                                        "prose:Last one"}));
        s.setText("~~~\na\n```\nstill code\n~~~\n````md\n```inner```\n````");
        QCOMPARE(kinds(s), QStringList({"code::a\n```\nstill code", "code:md:```inner```"}));
        s.setText("Use `ls` and ``` inline ``` here");
        QCOMPARE(kinds(s), QStringList({"prose:Use ls and inline here"}));
        s.setText("1. Run:\n   ```bash\n   make -j2\n   ```");
        QCOMPARE(kinds(s), QStringList({"prose:Run:", "code:bash:make -j2"}));
        s.setText("");
        QVERIFY(s.blocks().isEmpty());
        s.setText("\n  \n");
        QVERIFY(s.blocks().isEmpty());
    }

    // A growing text: blocks before the last are never parsed again and the result is the same
    // as parsing the whole text at once, whatever the batches.
    void streamingParsesOnlyTheTail() {
        const QString text =
            "# Plan\n\nFirst a paragraph\nwith two lines.\n\n```cpp\nint main() {\n  return 0;\n}\n"
            "```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n\nEnd.";
        markdown::Stream whole;
        whole.setText(text);
        for (int step : {1, 3, 7, 40}) {
            markdown::Stream s;
            int lastFirst = 0;
            for (int n = step; n < text.size() + step; n += step) {
                const int blocksBefore = static_cast<int>(s.blocks().size());
                const int first = s.setText(text.left(std::min<qsizetype>(n, text.size())));
                QVERIFY(first >= 0);
                QVERIFY2(first >= blocksBefore - 1, "only the last block is parsed again");
                QVERIFY(first >= lastFirst);
                lastFirst = first;
            }
            QCOMPARE(kinds(s), kinds(whole));
        }
        QCOMPARE(whole.setText(text), -1);
        // Not an extension (an edit): parsed from the start.
        QCOMPARE(whole.setText("Other"), 0);
        QCOMPARE(kinds(whole), QStringList({"prose:Other"}));
    }

    void reasoningParts() {
        auto p = reasoning::split(u"<think>\nHmm.\n</think>\n\nAnswer");
        QVERIFY(p.present && p.closed);
        QCOMPARE(p.reasoning.toString(), QString("\nHmm.\n"));
        QCOMPARE(p.answer.toString(), QString("Answer"));
        p = reasoning::split(u"<think>Still going</thi");
        QVERIFY(p.present && !p.closed);
        QCOMPARE(p.reasoning.toString(), QString("Still going"));
        QVERIFY(p.answer.isEmpty());
        p = reasoning::split(u"<thi");
        QVERIFY(!p.present && p.answer.isEmpty());
        // Opened by the template and stored without the tag.
        p = reasoning::split(u"Thinking...</think>Done");
        QVERIFY(p.present && p.closed);
        QCOMPARE(p.answer.toString(), QString("Done"));
        p = reasoning::split(u"No reasoning, <think> later");
        QVERIFY(!p.present);
        QCOMPARE(reasoning::withoutReasoning("<think>a</think>\n\nb"), QString("b"));
        QCOMPARE(reasoning::withoutReasoning("plain"), QString("plain"));
        QCOMPARE(reasoning::withoutReasoning("<think>cut short"), QString());
    }

    // A streamed batch changes only the last row (or adds one): the view re-lays out one block.
    void blocksSignalOnlyTheLastRow() {
        MessageBlocks b;
        QSignalSpy changed(&b, &QAbstractItemModel::dataChanged);
        QSignalSpy inserted(&b, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&b, &QAbstractItemModel::modelReset);
        QString text;
        const QString reply =
            "<think>\nPlan it.\n\nCheck it.\n</think>\n\nPara one.\n\nPara two "
            "grows\nand grows.\n\n```go\nfunc f() {}\n```\n\nBye.";
        for (qsizetype i = 0; i < reply.size(); i += 2) {
            text = reply.left(i + 2);
            changed.clear();
            b.setText(text);
            for (const auto& args : changed) {
                const int top = args[0].toModelIndex().row(), bottom = args[1].toModelIndex().row();
                QVERIFY2(
                    top == bottom && top >= b.rowCount() - 2,
                    qPrintable(QString("rows %1-%2 of %3").arg(top).arg(bottom).arg(b.rowCount())));
            }
        }
        QCOMPARE(reset.count(), 0);
        QCOMPARE(b.rowCount(), 6);
        QVERIFY(b.hasReasoning() && !b.thinking());
        QCOMPARE(b.index(0).data(MessageBlocks::ReasoningRole).toBool(), true);
        QCOMPARE(b.index(1).data(MessageBlocks::ReasoningRole).toBool(), true);
        QCOMPARE(b.index(2).data(MessageBlocks::ReasoningRole).toBool(), false);
        QCOMPARE(b.index(4).data(MessageBlocks::KindRole).toString(), QString("code"));
        QCOMPARE(b.index(4).data(MessageBlocks::LanguageRole).toString(), QString("go"));
    }

    void highlighterColoursTheCommonLanguages() {
        const CodeHighlighter::Colours c{QColor("#000001"), QColor("#000002"), QColor("#000003"),
                                         QColor("#000004"), QColor("#000005")};
        struct Case {
            const char* language;
            QString code;
            QStringList expected;  // "k:word" for keyword, t type, s string, c comment, n number
        };
        const QList<Case> cases{
            {"c++",
             "int main() { // hi\n  return 0x1F; /* a\n b */ }",
             {"t:int", "c:// hi", "k:return", "n:0x1F", "c:/* a", "c: b */"}},
            {"py",
             "def f(x):\n    \"\"\"doc\n    more\"\"\"\n    return 'a' # note",
             {"k:def", "s:\"\"\"doc", "s:    more\"\"\"", "k:return", "s:'a'", "c:# note"}},
            {"ts",
             "const s: string = `a ${b}`; let n = 2.5e3;",
             {"k:const", "t:string", "s:`a ${b}`", "k:let", "n:2.5e3"}},
            {"json", "{\"a\": [1, true, null]}", {"s:\"a\"", "n:1", "k:true", "k:null"}},
            {"bash",
             "if [ -f x ]; then echo \"hi\"; fi # done",
             {"k:if", "k:then", "k:echo", "s:\"hi\"", "k:fi", "c:# done"}},
            {"rust",
             "fn main() -> i32 { let s = \"x\"; 42 }",
             {"k:fn", "t:i32", "k:let", "s:\"x\"", "n:42"}},
            {"go",
             "func f() error { return nil } // x",
             {"k:func", "t:error", "k:return", "k:nil", "c:// x"}},
            {"unknown-lang", "if x return 1", {}},
        };
        for (const Case& k : cases) {
            QTextDocument doc;
            doc.setPlainText(k.code);
            CodeHighlighter h(&doc, k.language, c);
            h.rehighlight();
            QStringList found;
            for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
                for (const QTextLayout::FormatRange& r : block.layout()->formats()) {
                    const QColor fg = r.format.foreground().color();
                    const char kind = fg == c.keyword   ? 'k'
                                      : fg == c.type    ? 't'
                                      : fg == c.string  ? 's'
                                      : fg == c.comment ? 'c'
                                      : fg == c.number  ? 'n'
                                                        : '?';
                    found << QString("%1:%2").arg(kind).arg(block.text().mid(r.start, r.length));
                }
            }
            QCOMPARE(found, k.expected);
            QCOMPARE(doc.toPlainText(), k.code);  // never changes the text
        }
        QCOMPARE(CodeHighlighter::canonicalLanguage("C++"), QString("cpp"));
        QCOMPARE(CodeHighlighter::canonicalLanguage("Python3"), QString("python"));
        QCOMPARE(CodeHighlighter::canonicalLanguage("brainfuck"), QString());
    }
};

QTEST_MAIN(TestMarkdown)
#include "tst_markdown.moc"

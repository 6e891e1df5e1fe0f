#include "markdownstream.h"

#include <QRegularExpression>

namespace markdown {
namespace {

// A fence that opens a code block: up to any indentation (models indent fences inside list
// items), three or more backticks or tildes, an info word.
const QRegularExpression& openFence() {
    static const QRegularExpression re(
        QStringLiteral(R"(^([ \t]*)(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$)"));
    return re;
}

bool isBlank(QStringView line) {
    return line.trimmed().isEmpty();
}

// Whether `line` closes a fence opened by `fence` (same character, at least as long).
bool closesFence(QStringView line, QStringView fence) {
    const QStringView t = line.trimmed();
    if (t.size() < fence.size()) return false;
    for (const QChar c : t)
        if (c != fence[0]) return false;
    return true;
}

// The line without up to `indent` leading spaces (the fence's own indentation).
QStringView unindent(QStringView line, qsizetype indent) {
    qsizetype i = 0;
    while (i < indent && i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    return line.mid(i);
}

}  // namespace

int Stream::setText(const QString& text) {
    if (text == m_text) return -1;
    const bool extends = !m_blocks.isEmpty() && text.startsWith(m_text);
    m_text = text;
    if (!extends) {
        m_blocks.clear();
        splitFrom(0);
        return 0;
    }
    // Everything up to the last block is final: a blank line or a closed fence ended it.
    const int first = static_cast<int>(m_blocks.size()) - 1;
    const qsizetype from = m_blocks.last().start;
    m_blocks.removeLast();
    splitFrom(from);
    return first;
}

void Stream::splitFrom(qsizetype from) {
    const QStringView all(m_text);
    QStringList prose;  // lines of the prose block being gathered
    qsizetype proseStart = 0;
    auto flushProse = [&] {
        if (prose.isEmpty()) return;
        Block b;
        b.kind = Block::Kind::Prose;
        b.start = proseStart;
        b.html = toHtml(prose.join('\n'), m_options);
        m_blocks.append(std::move(b));
        prose.clear();
    };
    bool inCode = false;
    Block code;
    QString fence;
    qsizetype fenceIndent = 0;
    QStringList codeLines;
    qsizetype pos = from;
    while (pos < all.size()) {
        qsizetype end = all.indexOf('\n', pos);
        if (end < 0) end = all.size();
        const QStringView line = all.mid(pos, end - pos);
        const qsizetype lineStart = pos;
        pos = end + 1;
        if (inCode) {
            if (closesFence(line, fence)) {
                code.code = codeLines.join('\n');
                m_blocks.append(std::move(code));
                code = {};
                codeLines.clear();
                inCode = false;
            } else {
                codeLines.append(unindent(line, fenceIndent).toString());
            }
            continue;
        }
        if (const auto m = openFence().match(line); m.hasMatch()) {
            flushProse();
            inCode = true;
            fence = m.captured(2);
            fenceIndent = m.capturedLength(1);
            code.kind = Block::Kind::Code;
            code.start = lineStart;
            code.language = m.captured(3);
            continue;
        }
        if (isBlank(line)) {
            flushProse();
            continue;
        }
        if (prose.isEmpty()) proseStart = lineStart;
        prose.append(line.toString());
    }
    flushProse();
    // A fence still open (streaming) runs to the end of the text.
    if (inCode) {
        code.code = codeLines.join('\n');
        m_blocks.append(std::move(code));
    }
}

}  // namespace markdown

// A Markdown text that grows (a reply being streamed) split into top-level blocks: prose runs
// between blank lines, and fenced code blocks. Only the last block can still change, so each
// append re-parses that block alone: the cost of a batch stays the same however long the reply.
#pragma once

#include <QList>
#include <QString>

#include "markdownhtml.h"

namespace markdown {

struct Block {
    enum class Kind { Prose, Code };
    Kind kind = Kind::Prose;
    QString html;  // prose: the block as rich text
    QString code;  // code: the text between the fences, exactly (indentation of the fence removed)
    QString language;     // code: the fence's info word ("python"), may be empty
    qsizetype start = 0;  // offset of the block's first line in the text
    bool operator==(const Block& o) const {
        return kind == o.kind && html == o.html && code == o.code && language == o.language;
    }
};

class Stream {
public:
    explicit Stream(HtmlOptions options = {}) : m_options(std::move(options)) {}

    // The whole text so far. When it extends the previous text only the last block and what
    // follows are parsed again; otherwise everything is. Returns the index of the first block
    // that may differ from before (blocks() before it are unchanged), or -1 when the text did
    // not change.
    int setText(const QString& text);
    const QList<Block>& blocks() const { return m_blocks; }
    const QString& text() const { return m_text; }

private:
    // Splits m_text from `from` (a line start) into blocks appended to m_blocks.
    void splitFrom(qsizetype from);

    HtmlOptions m_options;
    QString m_text;
    QList<Block> m_blocks;
};

}  // namespace markdown

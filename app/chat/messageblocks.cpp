#include "messageblocks.h"

#include <QQuickTextDocument>

#include "codehighlighter.h"
#include "reasoning.h"

MessageBlocks::MessageBlocks(QObject* parent) : QAbstractListModel(parent) {}

int MessageBlocks::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

QVariant MessageBlocks::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size()) return {};
    const Row& r = m_rows[index.row()];
    switch (role) {
        case KindRole:
            return r.block.kind == markdown::Block::Kind::Code ? QStringLiteral("code")
                                                               : QStringLiteral("prose");
        case HtmlRole:
            return r.block.html;
        case CodeRole:
            return r.block.code;
        case LanguageRole:
            return r.block.language;
        case ReasoningRole:
            return r.reasoning;
    }
    return {};
}

QHash<int, QByteArray> MessageBlocks::roleNames() const {
    return {{KindRole, "kind"},
            {HtmlRole, "html"},
            {CodeRole, "code"},
            {LanguageRole, "language"},
            {ReasoningRole, "reasoning"}};
}

QList<MessageBlocks::Row> MessageBlocks::rowsOf(const markdown::Stream& s, int from,
                                                bool reasoning) const {
    QList<Row> rows;
    for (qsizetype i = from; i < s.blocks().size(); ++i) rows.append({s.blocks()[i], reasoning});
    return rows;
}

void MessageBlocks::setText(const QString& text) {
    const reasoning::Parts parts = reasoning::split(text);
    const int reasoningRows = static_cast<int>(m_reasoning.blocks().size());
    // The reasoning's rows come first, then the answer's.
    if (const int first = m_reasoning.setText(parts.reasoning.toString()); first >= 0) {
        // The reasoning changed: its tail and every answer row are laid out again.
        m_answer.setText(parts.answer.toString());
        QList<Row> rows = rowsOf(m_reasoning, first, true);
        rows += rowsOf(m_answer, 0, false);
        update(first, rows);
    } else if (const int a = m_answer.setText(parts.answer.toString()); a >= 0) {
        update(reasoningRows + a, rowsOf(m_answer, a, false));
    }
    const bool thinking = parts.present && !parts.closed;
    if (parts.present != m_hasReasoning || thinking != m_thinking) {
        m_hasReasoning = parts.present;
        m_thinking = thinking;
        emit reasoningChanged();
    }
}

void MessageBlocks::update(int first, const QList<Row>& rows) {
    const int oldCount = static_cast<int>(m_rows.size());
    const int newCount = first + static_cast<int>(rows.size());
    // Rows present before and after: changed in place where they differ.
    const int common = std::min(oldCount, newCount);
    int changedFrom = -1, changedTo = -1;
    for (int i = first; i < common; ++i) {
        const Row& n = rows[i - first];
        if (m_rows[i].block == n.block && m_rows[i].reasoning == n.reasoning) continue;
        m_rows[i] = n;
        if (changedFrom < 0) changedFrom = i;
        changedTo = i;
    }
    if (changedFrom >= 0) emit dataChanged(index(changedFrom), index(changedTo));
    if (newCount > oldCount) {
        beginInsertRows({}, oldCount, newCount - 1);
        for (int i = oldCount; i < newCount; ++i) m_rows.append(rows[i - first]);
        endInsertRows();
    } else if (newCount < oldCount) {
        beginRemoveRows({}, newCount, oldCount - 1);
        m_rows.resize(newCount);
        endRemoveRows();
    }
}

void MessageBlocks::highlight(QQuickTextDocument* document, const QString& language,
                              const QVariantMap& colours) {
    if (!document || !document->textDocument()) return;
    QTextDocument* doc = document->textDocument();
    for (auto* old : doc->findChildren<CodeHighlighter*>(Qt::FindDirectChildrenOnly)) delete old;
    auto colour = [&](const char* key) { return QColor(colours.value(key).toString()); };
    new CodeHighlighter(
        doc, language,
        {colour("keyword"), colour("type"), colour("string"), colour("comment"), colour("number")});
}

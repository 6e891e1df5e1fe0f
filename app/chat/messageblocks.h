// One message as the chat view shows it: its reasoning (if any) and its answer, each split into
// Markdown blocks that are rendered in C++ (prose as rich text, code as plain text to highlight).
// As a reply streams in, only the last block is parsed again and only its row changes, so a
// batch costs the same at the end of a long reply as at its start.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QQuickTextDocument>  // complete for QML: highlight() takes one
#include <QVariantMap>

#include "markdownstream.h"

class MessageBlocks : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("a message's blocks role")
    // The message starts with a reasoning block (<think>).
    Q_PROPERTY(bool hasReasoning READ hasReasoning NOTIFY reasoningChanged)
    // Its reasoning has not ended yet (no </think> so far).
    Q_PROPERTY(bool thinking READ thinking NOTIFY reasoningChanged)
public:
    enum Role { KindRole = Qt::UserRole + 1, HtmlRole, CodeRole, LanguageRole, ReasoningRole };

    explicit MessageBlocks(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // The message's whole text so far.
    void setText(const QString& text);
    bool hasReasoning() const { return m_hasReasoning; }
    bool thinking() const { return m_thinking; }

    // Highlights a code block's text item as `language`, in `colours` (keyword, type, string,
    // comment, number: colour names); a highlighter already there is replaced.
    Q_INVOKABLE void highlight(QQuickTextDocument* document, const QString& language,
                               const QVariantMap& colours);

signals:
    void reasoningChanged();

private:
    struct Row {
        markdown::Block block;
        bool reasoning = false;
    };
    // Replaces rows [first, end) with `rows`, signalling only the rows that differ.
    void update(int first, const QList<Row>& rows);
    QList<Row> rowsOf(const markdown::Stream& s, int from, bool reasoning) const;

    markdown::Stream m_reasoning, m_answer;
    QList<Row> m_rows;
    bool m_hasReasoning = false;
    bool m_thinking = false;
};

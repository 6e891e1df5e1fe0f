// The sidebar's list of conversations, newest first, filtered by a search text.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>

#include "conversationstore.h"

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ChatController.conversations")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Role { IdRole = Qt::UserRole + 1, TitleRole, UpdatedRole };

    explicit ConversationListModel(ConversationStore* store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    int count() const { return static_cast<int>(m_rows.size()); }

    void refresh(const QString& search);
    Q_INVOKABLE int indexOf(qint64 id) const;

signals:
    void countChanged();

private:
    ConversationStore* m_store;
    QList<ConversationSummary> m_rows;
};

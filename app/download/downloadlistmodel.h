// The downloads in progress, paused or failed, as a list model for the dialog. Owns the tasks.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QList>

#include "downloadtask.h"

class DownloadListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ModelLibrary.downloads")
    Q_PROPERTY(int count READ count NOTIFY countChanged)

public:
    enum Role { TaskRole = Qt::UserRole + 1, KeyRole, NameRole, StateRole };
    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return int(m_tasks.size()); }
    // Takes ownership.
    void add(DownloadTask* task);
    // Removes and deletes the task (later: it may be in the middle of emitting).
    void remove(DownloadTask* task);
    DownloadTask* find(const QString& key) const;
    DownloadTask* findByDestination(const QString& path) const;
    // Deletes every task now (their .part files stay for a later resume).
    void clear();
    const QList<DownloadTask*>& tasks() const { return m_tasks; }

signals:
    void countChanged();
    // A task was added, removed, or changed state.
    void tasksChanged(const QString& key);

private:
    QList<DownloadTask*> m_tasks;
};

#include "downloadlistmodel.h"

#include <utility>

int DownloadListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_tasks.size());
}

QVariant DownloadListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_tasks.size()) return {};
    DownloadTask* t = m_tasks.at(index.row());
    switch (role) {
        case TaskRole:
            return QVariant::fromValue<QObject*>(t);
        case KeyRole:
            return t->key();
        case NameRole:
        case Qt::DisplayRole:
            return t->name();
        case StateRole:
            return t->state();
    }
    return {};
}

QHash<int, QByteArray> DownloadListModel::roleNames() const {
    return {{TaskRole, "task"}, {KeyRole, "key"}, {NameRole, "name"}, {StateRole, "state"}};
}

void DownloadListModel::add(DownloadTask* task) {
    task->setParent(this);
    beginInsertRows({}, int(m_tasks.size()), int(m_tasks.size()));
    m_tasks.append(task);
    endInsertRows();
    QString lastState = task->state();
    connect(task, &DownloadTask::changed, this, [this, task, lastState]() mutable {
        const int row = int(m_tasks.indexOf(task));
        if (row < 0 || task->state() == lastState) return;
        lastState = task->state();
        emit dataChanged(index(row), index(row), {StateRole});
        emit tasksChanged(task->key());
    });
    emit countChanged();
    emit tasksChanged(task->key());
}

void DownloadListModel::remove(DownloadTask* task) {
    const int row = int(m_tasks.indexOf(task));
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    m_tasks.removeAt(row);
    endRemoveRows();
    task->disconnect(this);
    task->deleteLater();
    emit countChanged();
    emit tasksChanged(task->key());
}

void DownloadListModel::clear() {
    if (m_tasks.isEmpty()) return;
    beginResetModel();
    const QList<DownloadTask*> tasks = std::exchange(m_tasks, {});
    endResetModel();
    for (DownloadTask* task : tasks) {
        task->disconnect(this);
        delete task;
    }
    emit countChanged();
}

DownloadTask* DownloadListModel::find(const QString& key) const {
    for (DownloadTask* t : m_tasks)
        if (t->key() == key) return t;
    return nullptr;
}

DownloadTask* DownloadListModel::findByDestination(const QString& path) const {
    for (DownloadTask* t : m_tasks)
        if (t->destination() == path) return t;
    return nullptr;
}

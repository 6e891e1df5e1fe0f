#include "modelfiltermodel.h"

ModelFilterModel::ModelFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setDynamicSortFilter(true);
    sort(0);
    for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved})
        connect(this, signal, this, &ModelFilterModel::countChanged);
    connect(this, &QAbstractItemModel::modelReset, this, &ModelFilterModel::countChanged);
    connect(this, &QAbstractItemModel::layoutChanged, this, &ModelFilterModel::countChanged);
}

void ModelFilterModel::setSearchText(const QString& text) {
    if (text == m_search) return;
    m_search = text;
    m_words = text.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    refilter();
    emit searchTextChanged();
}

void ModelFilterModel::setMaxSize(double bytes) {
    if (bytes == m_maxSize) return;
    m_maxSize = bytes;
    refilter();
    emit maxSizeChanged();
}

void ModelFilterModel::setFitsGpuOnly(bool on) {
    if (on == m_fitsGpuOnly) return;
    m_fitsGpuOnly = on;
    refilter();
    emit fitsGpuOnlyChanged();
}

void ModelFilterModel::refilter() {
    invalidateFilter();
    emit countChanged();
}

int ModelFilterModel::role(const char* name) const {
    if (!sourceModel()) return -1;
    return sourceModel()->roleNames().key(name, -1);
}

QVariantMap ModelFilterModel::get(int row) const {
    QVariantMap map;
    if (row < 0 || row >= rowCount()) return map;
    const QModelIndex i = index(row, 0);
    const auto names = roleNames();
    for (auto it = names.begin(); it != names.end(); ++it)
        map.insert(QString::fromUtf8(it.value()), data(i, it.key()));
    return map;
}

bool ModelFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex i = sourceModel()->index(sourceRow, 0, sourceParent);
    if (!m_words.isEmpty()) {
        int textRole = role("searchText");
        if (textRole < 0) textRole = role("name");
        const QString text = i.data(textRole).toString().toLower();
        for (const QString& w : m_words)
            if (!text.contains(w)) return false;
    }
    if (m_maxSize > 0 && i.data(role("size")).toDouble() > m_maxSize) return false;
    if (m_fitsGpuOnly && i.data(role("fitVerdict")).toString() != QLatin1String("gpu"))
        return false;
    return true;
}

bool ModelFilterModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
    const int supported = role("supported");
    if (supported >= 0) {
        const bool l = left.data(supported).toBool(), r = right.data(supported).toBool();
        if (l != r) return l;
    }
    return left.row() < right.row();
}

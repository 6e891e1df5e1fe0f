#include "installedmodelmodel.h"

#include <QDateTime>
#include <QFileInfo>

#include "downloader.h"

int InstalledModelModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QString InstalledModelModel::formatParameters(qint64 count) {
    if (count <= 0) return {};
    if (count >= 1000000000) return QStringLiteral("%1 B").arg(double(count) / 1e9, 0, 'f', 1);
    if (count >= 1000000) return QStringLiteral("%1 M").arg(double(count) / 1e6, 0, 'f', 1);
    if (count >= 1000) return QStringLiteral("%1 K").arg(double(count) / 1e3, 0, 'f', 0);
    return QString::number(count);
}

QVariant InstalledModelModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size()) return {};
    const Row& r = m_rows.at(index.row());
    const ModelDetails& d = r.details;
    switch (role) {
        case Qt::DisplayRole:
        case NameRole:
            return QFileInfo(r.path).completeBaseName();
        case PathRole:
            return r.path;
        case FileNameRole:
            return QFileInfo(r.path).fileName();
        case SizeRole:
            return double(r.size);
        case SizeTextRole:
            return Downloader::formatBytes(r.size);
        case ReadyRole:
            return r.ready;
        case ErrorRole:  // the row already names the file
            return QString(d.error).replace(r.path, QFileInfo(r.path).fileName());
        case ErrorSummaryRole:
            if (d.error.isEmpty()) return QString();
            if (d.errorSummary.isEmpty()) return tr("the file cannot be read as a model");
            return QString(d.errorSummary).replace(r.path, QFileInfo(r.path).fileName());
        case ArchitectureRole:
            return d.architecture;
        case ParametersRole:
            return formatParameters(d.parameters);
        case QuantizationRole:
            return d.quantization;
        case QuantizationMixRole:
            return d.quantizationMix;
        case ContextLengthRole:
            return d.contextLength;
        case ProblemRole:
            return d.problem;
        case FitVerdictRole:
            return r.fit.verdictName();
        case FitTextRole:
            return d.error.isEmpty() ? r.fit.label() : QString();
        case FitDetailRole:
            return r.fit.detail;
        case SearchTextRole:
            return (QFileInfo(r.path).fileName() + ' ' + d.name + ' ' + d.architecture + ' ' +
                    d.quantization)
                .toLower();
    }
    return {};
}

QHash<int, QByteArray> InstalledModelModel::roleNames() const {
    return {{NameRole, "name"},
            {PathRole, "path"},
            {FileNameRole, "fileName"},
            {SizeRole, "size"},
            {SizeTextRole, "sizeText"},
            {ReadyRole, "ready"},
            {ErrorRole, "error"},
            {ErrorSummaryRole, "errorSummary"},
            {ArchitectureRole, "architecture"},
            {ParametersRole, "parameters"},
            {QuantizationRole, "quantization"},
            {QuantizationMixRole, "quantizationMix"},
            {ContextLengthRole, "contextLength"},
            {ProblemRole, "problem"},
            {FitVerdictRole, "fitVerdict"},
            {FitTextRole, "fitText"},
            {FitDetailRole, "fitDetail"},
            {SearchTextRole, "searchText"}};
}

bool InstalledModelModel::inspecting() const {
    for (const Row& r : m_rows)
        if (!r.ready) return true;
    return false;
}

int InstalledModelModel::rowOf(const QString& path) const {
    for (int i = 0; i < m_rows.size(); i++)
        if (m_rows.at(i).path == path) return i;
    return -1;
}

QStringList InstalledModelModel::setFiles(const QStringList& paths) {
    const bool wasInspecting = inspecting();
    QList<Row> rows;
    QStringList todo;
    for (const QString& path : paths) {
        const QFileInfo fi(path);
        Row row;
        const int old = rowOf(path);
        const qint64 modified = fi.lastModified().toMSecsSinceEpoch();
        if (old >= 0 && m_rows.at(old).size == fi.size() && m_rows.at(old).modified == modified) {
            row = m_rows.at(old);
        } else {
            row.path = path;
            row.size = fi.size();
            row.modified = modified;
        }
        if (!row.ready) todo << path;
        rows << row;
    }
    beginResetModel();
    m_rows = rows;
    endResetModel();
    emit countChanged();
    if (wasInspecting != inspecting()) emit inspectingChanged();
    return todo;
}

QStringList InstalledModelModel::invalidateFits() {
    const bool wasInspecting = inspecting();
    for (Row& r : m_rows) {
        r.ready = false;
        r.fit = {};
    }
    if (!m_rows.isEmpty()) emit dataChanged(index(0), index(int(m_rows.size()) - 1));
    if (wasInspecting != inspecting()) emit inspectingChanged();
    return paths();
}

void InstalledModelModel::setInspected(const QString& path, const ModelDetails& details,
                                       const FitInfo& fit) {
    const int row = rowOf(path);
    if (row < 0) return;
    const bool wasInspecting = inspecting();
    Row& r = m_rows[row];
    r.details = details;
    r.fit = fit;
    r.ready = true;
    emit dataChanged(index(row), index(row));
    if (wasInspecting != inspecting()) emit inspectingChanged();
}

QStringList InstalledModelModel::paths() const {
    QStringList list;
    for (const Row& r : m_rows) list << r.path;
    return list;
}

QVariantMap InstalledModelModel::get(int row) const {
    QVariantMap map;
    if (row < 0 || row >= m_rows.size()) return map;
    const auto names = roleNames();
    for (auto it = names.begin(); it != names.end(); ++it)
        map.insert(QString::fromUtf8(it.value()), data(index(row), it.key()));
    return map;
}

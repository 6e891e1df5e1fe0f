#include "catalogmodel.h"

int CatalogModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_entries.size());
}

QVariant CatalogModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_entries.size()) return {};
    const CatalogEntry& e = m_entries.at(index.row());
    const FitInfo fit = m_fits.value(e.id);
    switch (role) {
        case IdRole:
            return e.id;
        case Qt::DisplayRole:
        case NameRole:
            return e.name;
        case DescriptionRole:
            return e.description;
        case FileNameRole:
            return e.filename;
        case SizeRole:
            return double(e.displaySize());
        case SizeTextRole:  // "~" where only an approximate size is known
            return (e.size > 0 ? QString() : QStringLiteral("~")) +
                   Downloader::formatBytes(e.displaySize());
        case ParametersRole:
            return e.parameters;
        case QuantizationRole:
            return e.quantization;
        case ArchitectureRole:
            return e.architecture;
        case FamilyRole:
            return e.family;
        case LicenseRole:
            return e.license;
        case ContextLengthRole:
            return e.contextLength;
        case SupportedRole:
            return e.supported;
        case ReasonRole:
            return e.reason;
        case InstalledRole:
            return m_installed.contains(e.filename);
        case FitVerdictRole:
            return e.supported ? fit.verdictName() : QString();
        case FitTextRole:
            return e.supported ? fit.label() : QString();
        case FitDetailRole:
            return fit.detail;
        case DownloadRole:
            return QVariant::fromValue<QObject*>(m_downloads.value(e.id).data());
        case SearchTextRole:
            // Not the architecture: Mistral files say "llama", which a search for Llama would
            // not expect to find.
            return QStringList{e.name,       e.description,  e.family,
                               e.parameters, e.quantization, e.filename}
                .join(' ')
                .toLower();
    }
    return {};
}

QHash<int, QByteArray> CatalogModel::roleNames() const {
    return {{IdRole, "modelId"},
            {NameRole, "name"},
            {DescriptionRole, "description"},
            {FileNameRole, "fileName"},
            {SizeRole, "size"},
            {SizeTextRole, "sizeText"},
            {ParametersRole, "parameters"},
            {QuantizationRole, "quantization"},
            {ArchitectureRole, "architecture"},
            {FamilyRole, "family"},
            {LicenseRole, "license"},
            {ContextLengthRole, "contextLength"},
            {SupportedRole, "supported"},
            {ReasonRole, "reason"},
            {InstalledRole, "installed"},
            {FitVerdictRole, "fitVerdict"},
            {FitTextRole, "fitText"},
            {FitDetailRole, "fitDetail"},
            {DownloadRole, "download"},
            {SearchTextRole, "searchText"}};
}

void CatalogModel::setEntries(const QList<CatalogEntry>& entries) {
    beginResetModel();
    m_entries = entries;
    m_fits.clear();
    endResetModel();
    emit countChanged();
}

const CatalogEntry* CatalogModel::entry(const QString& id) const {
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_entries.at(row);
}

const CatalogEntry* CatalogModel::entryForFile(const QString& fileName) const {
    for (const CatalogEntry& e : m_entries)
        if (e.filename == fileName) return &e;
    return nullptr;
}

int CatalogModel::rowOf(const QString& id) const {
    for (int i = 0; i < m_entries.size(); i++)
        if (m_entries.at(i).id == id) return i;
    return -1;
}

void CatalogModel::setFit(const QString& id, const FitInfo& fit) {
    const int row = rowOf(id);
    if (row < 0) return;
    m_fits.insert(id, fit);
    emit dataChanged(index(row), index(row), {FitVerdictRole, FitTextRole, FitDetailRole});
}

void CatalogModel::clearFits() {
    m_fits.clear();
    if (!m_entries.isEmpty())
        emit dataChanged(index(0), index(int(m_entries.size()) - 1),
                         {FitVerdictRole, FitTextRole, FitDetailRole});
}

void CatalogModel::setInstalledFiles(const QSet<QString>& fileNames) {
    if (fileNames == m_installed) return;
    m_installed = fileNames;
    if (!m_entries.isEmpty())
        emit dataChanged(index(0), index(int(m_entries.size()) - 1), {InstalledRole});
}

void CatalogModel::setDownload(const QString& id, DownloadTask* task) {
    const int row = rowOf(id);
    if (row < 0 || m_downloads.value(id) == task) return;
    if (task)
        m_downloads.insert(id, task);
    else
        m_downloads.remove(id);
    emit dataChanged(index(row), index(row), {DownloadRole});
}

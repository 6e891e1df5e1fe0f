// The model catalog as a list model: each entry with its fit estimate, whether its file is
// installed, and its download task if one exists. ModelLibrary keeps those up to date;
// ModelFilterModel filters it for the dialog.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QHash>
#include <QList>
#include <QPointer>
#include <QSet>

#include "catalog.h"
#include "downloadtask.h"
#include "modelinspector.h"

class CatalogModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ModelLibrary.catalog's source")
    Q_PROPERTY(int count READ count NOTIFY countChanged)

public:
    enum Role {
        IdRole = Qt::UserRole + 1,
        NameRole,
        DescriptionRole,
        FileNameRole,
        SizeRole,  // bytes, as a double (QML numbers)
        SizeTextRole,
        ParametersRole,
        QuantizationRole,
        ArchitectureRole,
        FamilyRole,
        LicenseRole,
        ContextLengthRole,
        SupportedRole,
        ReasonRole,
        InstalledRole,
        FitVerdictRole,  // FitInfo::verdictName()
        FitTextRole,     // FitInfo::label()
        FitDetailRole,
        DownloadRole,   // the DownloadTask, or null
        SearchTextRole  // what the search box matches, lower case
    };
    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return int(m_entries.size()); }
    void setEntries(const QList<CatalogEntry>& entries);
    const QList<CatalogEntry>& entries() const { return m_entries; }
    const CatalogEntry* entry(const QString& id) const;
    const CatalogEntry* entryForFile(const QString& fileName) const;

    void setFit(const QString& id, const FitInfo& fit);
    void clearFits();
    // File names present in the models folder.
    void setInstalledFiles(const QSet<QString>& fileNames);
    void setDownload(const QString& id, DownloadTask* task);

signals:
    void countChanged();

private:
    int rowOf(const QString& id) const;

    QList<CatalogEntry> m_entries;
    QHash<QString, FitInfo> m_fits;
    QHash<QString, QPointer<DownloadTask>> m_downloads;
    QSet<QString> m_installed;
};

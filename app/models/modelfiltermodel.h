// Filters a model list for the dialog: search words, a size limit and "fits my GPU". Works on
// any source model with the roles "searchText" (or "name"), "size", "fitVerdict" and
// "supported"; keeps the source order, with unsupported entries last.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QSortFilterProxyModel>
#include <QStringList>

class ModelFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ModelLibrary.catalog")
    Q_PROPERTY(QString searchText READ searchText WRITE setSearchText NOTIFY searchTextChanged)
    Q_PROPERTY(double maxSize READ maxSize WRITE setMaxSize NOTIFY maxSizeChanged)
    Q_PROPERTY(bool fitsGpuOnly READ fitsGpuOnly WRITE setFitsGpuOnly NOTIFY fitsGpuOnlyChanged)
    Q_PROPERTY(int count READ count NOTIFY countChanged)

public:
    explicit ModelFilterModel(QObject* parent = nullptr);

    QString searchText() const { return m_search; }
    void setSearchText(const QString& text);
    double maxSize() const { return m_maxSize; }  // bytes; 0 = any size
    void setMaxSize(double bytes);
    bool fitsGpuOnly() const { return m_fitsGpuOnly; }
    void setFitsGpuOnly(bool on);
    int count() const { return rowCount(); }

    // The source row of a row of this model (tests, QML).
    Q_INVOKABLE QVariantMap get(int row) const;

signals:
    void searchTextChanged();
    void maxSizeChanged();
    void fitsGpuOnlyChanged();
    void countChanged();

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    int role(const char* name) const;
    void refilter();

    QString m_search;
    QStringList m_words;
    double m_maxSize = 0;
    bool m_fitsGpuOnly = false;
};

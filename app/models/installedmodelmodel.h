// The GGUF files of the models folder with what their headers say and their fit estimates.
// ModelLibrary lists the folder and fills in details as ModelInspectorWorker answers.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QList>
#include <QStringList>

#include "modelinspector.h"

class InstalledModelModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ModelLibrary.installed")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
    Q_PROPERTY(bool inspecting READ inspecting NOTIFY inspectingChanged)

public:
    enum Role {
        NameRole = Qt::UserRole + 1,
        PathRole,
        FileNameRole,
        SizeRole,  // bytes, as a double
        SizeTextRole,
        ReadyRole,         // the header has been read (successfully or not)
        ErrorRole,         // the reader's message
        ErrorSummaryRole,  // what is wrong, in plain words (empty when the file is readable)
        ArchitectureRole,
        ParametersRole,  // "1.2 B"
        QuantizationRole,
        QuantizationMixRole,
        ContextLengthRole,
        ProblemRole,
        FitVerdictRole,
        FitTextRole,
        FitDetailRole,
        SearchTextRole
    };
    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return int(m_rows.size()); }
    bool inspecting() const;
    // Replaces the list with these files (absolute paths, sorted); keeps what is known of files
    // that stay, unless their size or time changed. Returns the paths that need inspecting.
    QStringList setFiles(const QStringList& paths);
    // Forgets all fit estimates (settings changed); the files need inspecting again.
    QStringList invalidateFits();
    void setInspected(const QString& path, const ModelDetails& details, const FitInfo& fit);
    QStringList paths() const;
    Q_INVOKABLE QVariantMap get(int row) const;

    static QString formatParameters(qint64 count);

signals:
    void countChanged();
    void inspectingChanged();

private:
    struct Row {
        QString path;
        qint64 size = 0;
        qint64 modified = 0;
        bool ready = false;
        ModelDetails details;
        FitInfo fit;
    };
    int rowOf(const QString& path) const;

    QList<Row> m_rows;
};

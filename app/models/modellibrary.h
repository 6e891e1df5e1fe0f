// Behind the model dialog: the catalog, the installed models and the downloads, with a fit
// estimate for each model at the context length and device of the settings (computed on a
// worker thread). Also adds local files and links, and deletes models, in the models folder
// (the one the model menu lists: InferenceController::modelsDirectory()).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QFileSystemWatcher>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <functional>
#include <memory>

#include "catalogmodel.h"
#include "downloadlistmodel.h"
#include "installedmodelmodel.h"
#include "modelfiltermodel.h"
#include "modelinspector.h"

class ModelInspectorWorker;
class Settings;

class ModelLibrary : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by main.cpp")
    Q_PROPERTY(ModelFilterModel* catalog READ catalog CONSTANT)
    Q_PROPERTY(InstalledModelModel* installed READ installed CONSTANT)
    Q_PROPERTY(DownloadListModel* downloads READ downloads CONSTANT)
    Q_PROPERTY(QString modelsDirectory READ modelsDirectory CONSTANT)
    Q_PROPERTY(int contextLength READ contextLength NOTIFY estimateSettingsChanged)
    Q_PROPERTY(QString deviceLabel READ deviceLabel NOTIFY estimateSettingsChanged)
    Q_PROPERTY(QString errorMessage READ errorMessage NOTIFY errorMessageChanged)
    Q_PROPERTY(QString infoMessage READ infoMessage NOTIFY infoMessageChanged)
    Q_PROPERTY(bool copying READ copying NOTIFY copyingChanged)
    // Why no model can run on a GPU here ("" while one can, or the device setting is the CPU):
    // "Fits my GPU" then says this rather than showing an empty list.
    Q_PROPERTY(QString gpuProblem READ gpuProblem NOTIFY gpuProblemChanged)

public:
    // settings may be null (tests): 2048 tokens on the best GPU. Loads the built-in catalog,
    // lists the folder and offers to resume the downloads whose .part files it finds there.
    ModelLibrary(std::unique_ptr<ModelInspector> inspector, Settings* settings,
                 const QString& modelsDirectory, QObject* parent = nullptr);
    ~ModelLibrary() override;

    ModelFilterModel* catalog() { return &m_catalogFilter; }
    CatalogModel* catalogModel() { return &m_catalog; }
    InstalledModelModel* installed() { return &m_installed; }
    DownloadListModel* downloads() { return &m_downloads; }
    QString modelsDirectory() const { return m_dir; }
    int contextLength() const;
    QString deviceLabel() const;
    QString errorMessage() const { return m_error; }
    QString infoMessage() const { return m_info; }
    bool copying() const { return m_copyThread != nullptr; }
    QString gpuProblem() const { return m_gpuProblem; }

    // Replaces the catalog (tests) and estimates its entries.
    void setCatalog(const QList<CatalogEntry>& entries);
    // Tells which model file is loaded now (empty: none); deleteModel refuses that one.
    void setModelInUse(std::function<QString()> inUse) { m_inUse = std::move(inUse); }
    // Configures each new download before it starts (tests: small retries, free-space hook).
    void setDownloadSetup(std::function<void(Downloader*)> setup) { m_setup = std::move(setup); }

    Q_INVOKABLE bool download(const QString& catalogId);
    Q_INVOKABLE bool addFromUrl(const QString& url, const QString& sha256 = {});
    // Validates the header, then hard-links the file into the folder, or copies it (on a
    // thread) when the folder is on another file system.
    Q_INVOKABLE bool addLocalFile(const QUrl& file);
    Q_INVOKABLE bool deleteModel(const QString& path);
    // Cancels the download (removing its .part) and drops it from the list.
    Q_INVOKABLE void removeDownload(const QString& key);
    Q_INVOKABLE void refresh();
    Q_INVOKABLE void refreshEstimates();
    Q_INVOKABLE void dismissError();
    Q_INVOKABLE void dismissInfo();

signals:
    void estimateSettingsChanged();
    void errorMessageChanged();
    void infoMessageChanged();
    void copyingChanged();
    void gpuProblemChanged();
    // Model files appeared or disappeared: the model menu's list is stale.
    void modelsChanged();

private:
    QString estimateDevice() const;  // "", a GPU index, or "cpu"
    void estimateCatalog();
    void inspect(const QStringList& paths);
    void resumePartialDownloads();
    DownloadTask* addTask(const QString& key, const QString& name);
    void onTaskFinished(DownloadTask* task, const QString& path);
    void onTaskGone(DownloadTask* task);
    void finishCopy(const QString& name, const QString& note, const QString& error);
    void setError(const QString& message);
    void setInfo(const QString& message);
    void noteFit(const FitInfo& fit);

    QString m_dir;
    Settings* m_settings;
    ModelInspector* m_inspector;  // owned by the worker; stateless, so also used here
    QThread m_thread;
    QPointer<ModelInspectorWorker> m_worker;
    quint64 m_generation = 1;
    QNetworkAccessManager m_nam;  // before the downloads: their Downloaders use it
    CatalogModel m_catalog;
    ModelFilterModel m_catalogFilter;
    InstalledModelModel m_installed;
    DownloadListModel m_downloads;
    QFileSystemWatcher m_watcher;
    QTimer m_rescan;
    QThread* m_copyThread = nullptr;
    std::function<void(Downloader*)> m_setup;
    std::function<QString()> m_inUse;
    QString m_error, m_info, m_gpuProblem;
};

#include "modellibrary.h"

#include <unistd.h>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <cerrno>
#include <cstring>

#include "downloadstate.h"
#include "modelinspectorworker.h"
#include "settings.h"

ModelLibrary::ModelLibrary(std::unique_ptr<ModelInspector> inspector, Settings* settings,
                           const QString& modelsDirectory, QObject* parent)
    : QObject(parent),
      m_dir(QDir(modelsDirectory).absolutePath()),
      m_settings(settings),
      m_inspector(inspector.get()) {
    qRegisterMetaType<ModelDetails>();
    qRegisterMetaType<FitInfo>();
    qRegisterMetaType<CatalogShape>();
    QDir().mkpath(m_dir);

    auto* worker = new ModelInspectorWorker(std::move(inspector));
    worker->moveToThread(&m_thread);
    m_worker = worker;
    connect(&m_thread, &QThread::finished, worker, &QObject::deleteLater);
    connect(worker, &ModelInspectorWorker::fileInspected, this,
            [this](quint64 generation, const QString& path, const ModelDetails& details,
                   const FitInfo& fit) {
                if (generation != m_generation) return;
                m_installed.setInspected(path, details, fit);
                noteFit(fit);
            });
    connect(worker, &ModelInspectorWorker::entryEstimated, this,
            [this](quint64 generation, const QString& id, const FitInfo& fit) {
                if (generation != m_generation) return;
                m_catalog.setFit(id, fit);
                noteFit(fit);
            });
    m_thread.setObjectName("ember-models");
    m_thread.start();

    m_catalogFilter.setSourceModel(&m_catalog);
    connect(&m_downloads, &DownloadListModel::tasksChanged, this,
            [this](const QString& key) { m_catalog.setDownload(key, m_downloads.find(key)); });

    if (m_settings) {
        connect(m_settings, &Settings::deviceChanged, this, &ModelLibrary::refreshEstimates);
        connect(m_settings, &Settings::contextLengthChanged, this, &ModelLibrary::refreshEstimates);
        m_inspector->setGpuReserve(m_settings->loadOptions({}).gpuMemReserve);
        connect(m_settings, &Settings::gpuReserveGiBChanged, this, [this] {
            m_inspector->setGpuReserve(m_settings->loadOptions({}).gpuMemReserve);
            refreshEstimates();
        });
    }
    // Files copied in by hand show up too (debounced: a copy changes the folder many times).
    m_rescan.setSingleShot(true);
    m_rescan.setInterval(300);
    connect(&m_rescan, &QTimer::timeout, this, &ModelLibrary::refresh);
    m_watcher.addPath(m_dir);
    connect(&m_watcher, &QFileSystemWatcher::directoryChanged, &m_rescan,
            qOverload<>(&QTimer::start));

    QString why;
    if (auto builtin = Catalog::builtin(&why))
        setCatalog(builtin->entries());
    else
        setError(tr("The model catalog could not be read: %1").arg(why));
    refresh();
    resumePartialDownloads();
}

ModelLibrary::~ModelLibrary() {
    // Before the inspector goes with its thread: a download may be checking its file with it.
    m_downloads.clear();
    if (m_copyThread) m_copyThread->wait();
    m_thread.quit();
    m_thread.wait();
}

int ModelLibrary::contextLength() const {
    return m_settings ? m_settings->loadOptions({}).contextLength : 2048;
}

QString ModelLibrary::estimateDevice() const {
    const QString device =
        m_settings ? QString::fromStdString(m_settings->loadOptions({}).device) : QString();
    return device == QLatin1String("auto") ? QString() : device;
}

QString ModelLibrary::deviceLabel() const {
    const QString device = estimateDevice();
    if (device.isEmpty()) return tr("the best GPU");
    if (device == QLatin1String("cpu")) return tr("the CPU");
    bool isIndex = false;
    device.toInt(&isIndex);
    return isIndex ? tr("GPU %1").arg(device) : device;
}

void ModelLibrary::setCatalog(const QList<CatalogEntry>& entries) {
    ++m_generation;  // drop answers about the previous entries
    m_catalog.setEntries(entries);
    refresh();
    estimateCatalog();
}

void ModelLibrary::estimateCatalog() {
    const int ctx = contextLength();
    const QString device = estimateDevice();
    const quint64 generation = m_generation;
    for (const CatalogEntry& e : m_catalog.entries()) {
        if (!e.supported) continue;
        QMetaObject::invokeMethod(
            m_worker,
            [w = m_worker, generation, e, ctx, device] {
                w->estimateEntry(generation, e, ctx, device);
            },
            Qt::QueuedConnection);
    }
}

void ModelLibrary::inspect(const QStringList& paths) {
    const int ctx = contextLength();
    const QString device = estimateDevice();
    const quint64 generation = m_generation;
    for (const QString& path : paths) {
        QMetaObject::invokeMethod(
            m_worker,
            [w = m_worker, generation, path, ctx, device] {
                w->inspectFile(generation, path, ctx, device);
            },
            Qt::QueuedConnection);
    }
}

void ModelLibrary::noteFit(const FitInfo& fit) {
    if (!fit.noGpu || !m_gpuProblem.isEmpty()) return;
    m_gpuProblem = tr("No usable GPU was found, so models run on the CPU (%1).").arg(fit.cpuReason);
    emit gpuProblemChanged();
}

void ModelLibrary::refreshEstimates() {
    ++m_generation;  // answers still on their way are for the old settings
    if (!m_gpuProblem.isEmpty()) {
        m_gpuProblem.clear();
        emit gpuProblemChanged();
    }
    emit estimateSettingsChanged();
    m_catalog.clearFits();
    estimateCatalog();
    inspect(m_installed.invalidateFits());
}

void ModelLibrary::refresh() {
    QStringList paths;
    QSet<QString> names;
    for (const QFileInfo& fi :
         QDir(m_dir).entryInfoList({"*.gguf"}, QDir::Files | QDir::Readable, QDir::Name)) {
        paths << fi.absoluteFilePath();
        names.insert(fi.fileName());
    }
    const QStringList before = m_installed.paths();
    inspect(m_installed.setFiles(paths));
    m_catalog.setInstalledFiles(names);
    if (before != paths) emit modelsChanged();
}

void ModelLibrary::resumePartialDownloads() {
    for (const QFileInfo& fi : QDir(m_dir).entryInfoList({"*.gguf.part.json"}, QDir::Files)) {
        const QString destination = fi.absoluteFilePath().chopped(int(strlen(".part.json")));
        const std::optional<DownloadState> state = DownloadState::load(fi.absoluteFilePath());
        if (!state || !QFileInfo::exists(Downloader::partPath(destination)) ||
            m_downloads.findByDestination(destination))
            continue;
        const QString fileName = QFileInfo(destination).fileName();
        const CatalogEntry* entry = m_catalog.entryForFile(fileName);
        DownloadTask* task = nullptr;
        if (entry && entry->url == state->url) {
            task = addTask(entry->id, entry->name);
            entry->configure(task->downloader(), m_dir);
        } else {
            task = addTask(fileName, QFileInfo(fileName).completeBaseName());
            // The checksum comes from the state file when the download resumes.
            task->downloader()->setUrl(state->url);
            task->downloader()->setDestination(destination);
            task->downloader()->setExpectedSize(state->expectedSize);
        }
        emit task->changed();  // it shows as paused, at the size of its .part
    }
}

DownloadTask* ModelLibrary::addTask(const QString& key, const QString& name) {
    auto* task = new DownloadTask(key, name, &m_nam);
    // Only a readable GGUF model gets its final name (runs on the download's worker thread;
    // inspectors are stateless).
    ModelInspector* inspector = m_inspector;
    task->downloader()->setContentCheck(tr("GGUF header"), [inspector](const QString& path) {
        return inspector->inspect(path).error;
    });
    if (m_setup) m_setup(task->downloader());
    connect(task, &DownloadTask::finished, this,
            [this, task](const QString& path) { onTaskFinished(task, path); });
    connect(task, &DownloadTask::cancelled, this, [this, task] { onTaskGone(task); });
    m_downloads.add(task);
    return task;
}

bool ModelLibrary::download(const QString& catalogId) {
    const CatalogEntry* entry = m_catalog.entry(catalogId);
    if (!entry) {
        setError(tr("There is no model %1 in the catalog.").arg(catalogId));
        return false;
    }
    if (!entry->supported) {
        setError(tr("%1 cannot be downloaded: %2").arg(entry->name, entry->reason));
        return false;
    }
    if (DownloadTask* existing = m_downloads.find(catalogId)) {
        existing->resume();
        return true;
    }
    if (QFileInfo::exists(QDir(m_dir).filePath(entry->filename))) {
        setError(tr("%1 is already installed.").arg(entry->name));
        return false;
    }
    DownloadTask* task = addTask(entry->id, entry->name);
    entry->configure(task->downloader(), m_dir);
    task->start();
    return true;
}

bool ModelLibrary::addFromUrl(const QString& text, const QString& sha256) {
    const QUrl url(text.trimmed(), QUrl::StrictMode);
    if (!url.isValid() ||
        (url.scheme() != QLatin1String("https") && url.scheme() != QLatin1String("http"))) {
        setError(tr("“%1” is not an http or https link.").arg(text.trimmed()));
        return false;
    }
    const QString fileName = url.fileName();
    if (!fileName.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive) ||
        fileName.startsWith('.')) {
        setError(tr("The link must point to a .gguf file (it ends in “%1”).").arg(fileName));
        return false;
    }
    const QString destination = QDir(m_dir).filePath(fileName);
    if (QFileInfo::exists(destination)) {
        setError(tr("%1 is already in the models folder.").arg(fileName));
        return false;
    }
    if (m_downloads.findByDestination(destination) || m_downloads.find(fileName)) {
        setError(tr("%1 is already being downloaded.").arg(fileName));
        return false;
    }
    ExpectedChecksum checksum;
    if (!sha256.trimmed().isEmpty()) {
        QString why;
        checksum =
            ExpectedChecksum::parse(QStringLiteral("sha256"), sha256.trimmed().toLower(), &why);
        if (!why.isEmpty()) {
            setError(tr("The SHA-256 checksum is not valid: %1").arg(why));
            return false;
        }
    }
    DownloadTask* task = addTask(fileName, QFileInfo(fileName).completeBaseName());
    task->downloader()->setUrl(url);
    task->downloader()->setDestination(destination);
    task->downloader()->setChecksum(checksum);
    task->start();
    return true;
}

void ModelLibrary::onTaskFinished(DownloadTask* task, const QString& path) {
    setInfo(
        tr("%1 is downloaded and ready to use (checked: %2).").arg(task->name(), task->checks()));
    m_downloads.remove(task);
    refresh();
    Q_UNUSED(path);
}

void ModelLibrary::onTaskGone(DownloadTask* task) {
    m_downloads.remove(task);
}

void ModelLibrary::removeDownload(const QString& key) {
    DownloadTask* task = m_downloads.find(key);
    if (!task) return;
    task->cancel();  // removes the .part; emits cancelled() unless it had not started
    if (m_downloads.find(key) == task) {
        QFile::remove(Downloader::partPath(task->destination()));
        QFile::remove(Downloader::statePath(task->destination()));
        m_downloads.remove(task);
    }
}

bool ModelLibrary::deleteModel(const QString& path) {
    const QFileInfo fi(path);
    if (fi.absoluteDir() != QDir(m_dir) || fi.suffix() != QLatin1String("gguf")) {
        setError(tr("Only models in %1 can be deleted here.").arg(m_dir));
        return false;
    }
    // The loaded model reads its file (mapped): deleting it under the engine is refused.
    const QString inUse = m_inUse ? m_inUse() : QString();
    if (!inUse.isEmpty() && QFileInfo(inUse).absoluteFilePath() == fi.absoluteFilePath()) {
        setError(tr("%1 is the model in use; load another model before deleting it.")
                     .arg(fi.fileName()));
        return false;
    }
    QFile file(fi.absoluteFilePath());
    if (!file.remove()) {
        setError(tr("%1 could not be deleted: %2").arg(fi.fileName(), file.errorString()));
        return false;
    }
    setInfo(tr("%1 was deleted.").arg(fi.fileName()));
    refresh();
    return true;
}

bool ModelLibrary::addLocalFile(const QUrl& file) {
    const QString source = file.isLocalFile() ? file.toLocalFile() : file.toString();
    const QFileInfo fi(source);
    if (!fi.isFile()) {
        setError(tr("%1 is not a file.").arg(source));
        return false;
    }
    if (m_copyThread) {
        setError(tr("Another file is still being copied."));
        return false;
    }
    const ModelDetails details = m_inspector->inspect(fi.absoluteFilePath());
    if (!details.error.isEmpty()) {
        setError(tr("%1 is not a valid GGUF model: %2").arg(fi.fileName(), details.error));
        return false;
    }
    QString name = fi.fileName();
    if (!name.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) name += ".gguf";
    const QString destination = QDir(m_dir).filePath(name);
    if (fi.absoluteFilePath() == QFileInfo(destination).absoluteFilePath()) {
        setInfo(tr("%1 is already in the models folder.").arg(name));
        return true;
    }
    if (QFileInfo::exists(destination)) {
        setError(tr("A model named %1 is already installed.").arg(name));
        return false;
    }
    const QString note = details.problem.isEmpty()
                             ? QString()
                             : tr(" Note: Ember cannot run it yet (%1).").arg(details.problem);
    // A hard link costs no space and no time; it only works on the same file system.
    if (::link(QFile::encodeName(fi.absoluteFilePath()).constData(),
               QFile::encodeName(destination).constData()) == 0) {
        setInfo(tr("Added %1.").arg(name) + note);
        refresh();
        return true;
    }
    const QString temp = destination + ".copying";
    m_copyThread =
        QThread::create([this, src = fi.absoluteFilePath(), temp, destination, name, note] {
            QFile::remove(temp);
            QFile in(src);
            QString error;
            if (!in.copy(temp))
                error = in.errorString();
            else if (!QFile::rename(temp, destination))
                error = tr("cannot rename %1 to %2").arg(temp, destination);
            if (!error.isEmpty()) QFile::remove(temp);
            QMetaObject::invokeMethod(
                this, [this, name, note, error] { finishCopy(name, note, error); },
                Qt::QueuedConnection);
        });
    connect(m_copyThread, &QThread::finished, m_copyThread, &QObject::deleteLater);
    m_copyThread->start();
    emit copyingChanged();
    setInfo(tr("Copying %1 into the models folder…").arg(name));
    return true;
}

void ModelLibrary::finishCopy(const QString& name, const QString& note, const QString& error) {
    m_copyThread = nullptr;
    emit copyingChanged();
    if (!error.isEmpty())
        setError(tr("%1 could not be copied: %2").arg(name, error));
    else
        setInfo(tr("Added %1.").arg(name) + note);
    refresh();
}

void ModelLibrary::setError(const QString& message) {
    m_error = message;
    emit errorMessageChanged();
}

void ModelLibrary::setInfo(const QString& message) {
    m_info = message;
    emit infoMessageChanged();
}

void ModelLibrary::dismissError() {
    setError({});
}

void ModelLibrary::dismissInfo() {
    setInfo({});
}

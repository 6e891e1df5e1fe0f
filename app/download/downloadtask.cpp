#include "downloadtask.h"

#include <QFileInfo>

DownloadTask::DownloadTask(const QString& key, const QString& name, QNetworkAccessManager* nam,
                           QObject* parent)
    : QObject(parent), m_downloader(nam), m_key(key), m_name(name) {
    connect(&m_downloader, &Downloader::stateChanged, this, [this](Downloader::State s) {
        emit changed();
        if (s == Downloader::State::Finished) emit finished(m_downloader.destination());
        if (s == Downloader::State::Cancelled) emit cancelled();
    });
    connect(&m_downloader, &Downloader::progressChanged, this, &DownloadTask::changed);
    connect(&m_downloader, &Downloader::destinationChanged, this, &DownloadTask::changed);
    connect(&m_downloader, &Downloader::speedChanged, this, &DownloadTask::changed);
    connect(&m_downloader, &Downloader::errorChanged, this, &DownloadTask::changed);
}

QString DownloadTask::fileName() const {
    return QFileInfo(m_downloader.destination()).fileName();
}

QString DownloadTask::state() const {
    switch (m_downloader.state()) {
        case Downloader::State::Idle:
            // A .part left by an earlier run waits for resume().
            return QFileInfo::exists(Downloader::partPath(m_downloader.destination()))
                       ? QStringLiteral("paused")
                       : QStringLiteral("queued");
        case Downloader::State::Probing:
            return QStringLiteral("connecting");
        case Downloader::State::Downloading:
            return QStringLiteral("downloading");
        case Downloader::State::Retrying:
            return QStringLiteral("retrying");
        case Downloader::State::Paused:
            return QStringLiteral("paused");
        case Downloader::State::Verifying:
            return QStringLiteral("verifying");
        case Downloader::State::Finished:
            return QStringLiteral("finished");
        case Downloader::State::Failed:
            return QStringLiteral("failed");
        case Downloader::State::Cancelled:
            return QStringLiteral("cancelled");
    }
    return {};
}

double DownloadTask::progress() const {
    if (m_downloader.state() == Downloader::State::Idle) {
        const qint64 total = m_downloader.expectedSize();
        const qint64 have = QFileInfo(Downloader::partPath(m_downloader.destination())).size();
        return total > 0 ? double(have) / double(total) : -1;
    }
    return m_downloader.progress();
}

QString DownloadTask::errorKind() const {
    switch (m_downloader.error()) {
        case Downloader::Error::NoError:
            return {};
        case Downloader::Error::InvalidRequest:
            return QStringLiteral("invalid");
        case Downloader::Error::FileExists:
            return QStringLiteral("exists");
        case Downloader::Error::InsufficientSpace:
            return QStringLiteral("space");
        case Downloader::Error::HttpError:
            return QStringLiteral("http");
        case Downloader::Error::NetworkError:
            return QStringLiteral("network");
        case Downloader::Error::FileError:
            return QStringLiteral("file");
        case Downloader::Error::SizeMismatch:
            return QStringLiteral("size");
        case Downloader::Error::ChecksumMismatch:
            return QStringLiteral("checksum");
        case Downloader::Error::InvalidFile:
            return QStringLiteral("content");
    }
    return {};
}

QString DownloadTask::errorString() const {
    const QString why = m_downloader.errorString();
    switch (m_downloader.error()) {
        case Downloader::Error::NoError:
            return {};
        case Downloader::Error::InsufficientSpace:
            // Either refused before it started, or the disk filled up while writing ("disk
            // full: …"); the bytes received are kept either way.
            return why.startsWith(QLatin1String("disk full"))
                       ? tr("The disk is full. Free some space, then resume: %1").arg(why)
                       : tr("Not enough disk space. Free some space, then resume: %1").arg(why);
        case Downloader::Error::ChecksumMismatch:
            return tr("The downloaded file is corrupt and was deleted (checksum mismatch). "
                      "Try again: %1")
                .arg(why);
        case Downloader::Error::InvalidFile:
            return tr("The downloaded file is not a usable model and was deleted: %1").arg(why);
        case Downloader::Error::SizeMismatch:
            return tr("The server's file is not the expected one: %1").arg(why);
        case Downloader::Error::NetworkError:
            return tr("Network error: %1").arg(why);
        case Downloader::Error::HttpError:
            return tr("The server refused: %1").arg(why);
        default:
            return why;
    }
}

bool DownloadTask::canPause() const {
    const auto s = m_downloader.state();
    return s == Downloader::State::Probing || s == Downloader::State::Downloading ||
           s == Downloader::State::Retrying;
}

bool DownloadTask::canResume() const {
    const auto s = m_downloader.state();
    return s == Downloader::State::Idle || s == Downloader::State::Paused ||
           s == Downloader::State::Failed;
}

QString DownloadTask::formatEta(int seconds) {
    if (seconds < 0) return {};
    if (seconds < 60) return tr("%1 s left").arg(seconds);
    if (seconds < 3600) return tr("%1 min left").arg((seconds + 59) / 60);
    return tr("%1 h %2 min left").arg(seconds / 3600).arg((seconds % 3600) / 60);
}

QString DownloadTask::progressText() const {
    const qint64 total = m_downloader.state() == Downloader::State::Idle
                             ? m_downloader.expectedSize()
                             : m_downloader.bytesTotal();
    const qint64 have = m_downloader.state() == Downloader::State::Idle
                            ? QFileInfo(Downloader::partPath(destination())).size()
                            : m_downloader.bytesReceived();
    if (total <= 0) return Downloader::formatBytes(have);
    return tr("%1 of %2").arg(Downloader::formatBytes(have), Downloader::formatBytes(total));
}

QString DownloadTask::statusText() const {
    switch (m_downloader.state()) {
        case Downloader::State::Idle:
            return state() == QLatin1String("paused") ? tr("Paused · %1").arg(progressText())
                                                      : tr("Waiting");
        case Downloader::State::Probing:
            return tr("Connecting…");
        case Downloader::State::Downloading: {
            QStringList parts{progressText()};
            if (m_downloader.speed() > 0)
                parts << Downloader::formatBytes(qint64(m_downloader.speed())) + "/s";
            if (m_downloader.etaSeconds() >= 0) parts << formatEta(m_downloader.etaSeconds());
            return parts.join(QStringLiteral(" · "));
        }
        case Downloader::State::Retrying:
            return tr("Connection lost, retrying…");
        case Downloader::State::Paused:
            return tr("Paused · %1").arg(progressText());
        case Downloader::State::Verifying:
            return m_downloader.checksum().isSet() ? tr("Verifying the checksum and the file…")
                                                   : tr("Checking the file…");
        case Downloader::State::Finished:
            return tr("Done (checked: %1)").arg(checks());
        case Downloader::State::Failed:
            return errorString();
        case Downloader::State::Cancelled:
            return tr("Cancelled");
    }
    return {};
}

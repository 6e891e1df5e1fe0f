// One model download as the dialog shows it: a Downloader plus the texts and state names that
// QML binds to. The key is the catalog id, or the file name for a download from a URL.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QString>
#include <QUrl>

#include "downloader.h"

class QNetworkAccessManager;

class DownloadTask : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("a download's task role")
    Q_PROPERTY(QString key READ key NOTIFY changed)
    Q_PROPERTY(QString name READ name NOTIFY changed)
    Q_PROPERTY(QString fileName READ fileName NOTIFY changed)
    Q_PROPERTY(QString state READ state NOTIFY changed)
    Q_PROPERTY(double progress READ progress NOTIFY changed)
    Q_PROPERTY(QString statusText READ statusText NOTIFY changed)
    Q_PROPERTY(QString errorKind READ errorKind NOTIFY changed)
    Q_PROPERTY(QString errorString READ errorString NOTIFY changed)
    Q_PROPERTY(bool canPause READ canPause NOTIFY changed)
    Q_PROPERTY(bool canResume READ canResume NOTIFY changed)

public:
    DownloadTask(const QString& key, const QString& name, QNetworkAccessManager* nam,
                 QObject* parent = nullptr);

    // Set up before start(); resume() also starts.
    Downloader* downloader() { return &m_downloader; }

    QString key() const { return m_key; }
    QString name() const { return m_name; }
    QString fileName() const;
    QString destination() const { return m_downloader.destination(); }
    // "queued", "paused", "connecting", "downloading", "retrying", "verifying", "finished",
    // "failed", "cancelled"
    QString state() const;
    double progress() const;  // 0..1, -1 while the size is unknown
    QString statusText() const;
    // "space", "checksum", "content", "network", "http", "file", "exists", "size", "invalid",
    // or "".
    QString errorKind() const;
    QString errorString() const;
    bool canPause() const;
    bool canResume() const;
    // The checks the file went through, once verifying or finished: "size … as the server
    // announced, sha256 checksum, GGUF header".
    QString checks() const { return m_downloader.checksSummary(); }

    static QString formatEta(int seconds);

public slots:
    void start() { m_downloader.start(); }
    void pause() { m_downloader.pause(); }
    void resume() { m_downloader.resume(); }
    void cancel() { m_downloader.cancel(); }

signals:
    void changed();
    void finished(const QString& path);
    void cancelled();

private:
    QString progressText() const;

    Downloader m_downloader;
    QString m_key, m_name;
};

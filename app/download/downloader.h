// Downloads one file over HTTP(S): resumable, retried, checked for free space, and verified
// before it appears under its final name.
//
// Verification, before the rename: the size (the expected one, else the total the server
// announced in Content-Length or Content-Range); the checksum given, else the sha256 the server
// reports (Hugging Face's X-Linked-ETag, on the HEAD's or the GET's redirect); and the content
// check when one is set (the app and ember-cli check the GGUF header and tensor table).
// checksSummary() says which of these were made.
//
// Files on disk, for a destination NAME:
//   NAME.part       the bytes received so far (never a valid model: only a verified file is
//                   renamed to NAME);
//   NAME.part.json  the DownloadState (url, size, checksum, validators), so that a later
//                   Downloader for the same url and destination resumes with a Range request.
//
// What is left behind on failure:
//   - a 4xx answer (404, 403...), a size or checksum mismatch, cancel(): nothing;
//   - a file that fails the content check: nothing;
//   - network failures or 5xx answers after the last retry, too little disk space (also a disk
//     that fills up mid-download), write errors, pause() or destruction mid-download: NAME.part
//     and NAME.part.json if any byte arrived (start() or resume() later continues from the
//     bytes NAME.part holds), nothing otherwise.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QUrl>

#include <functional>

#include "checksumverifier.h"

class HeadProbe;
class QNetworkAccessManager;
class QNetworkReply;
struct RemoteFileInfo;

class Downloader : public QObject {
    Q_OBJECT
    Q_PROPERTY(QUrl url READ url WRITE setUrl NOTIFY urlChanged)
    Q_PROPERTY(QString destination READ destination WRITE setDestination NOTIFY destinationChanged)
    Q_PROPERTY(State state READ state NOTIFY stateChanged)
    Q_PROPERTY(qint64 bytesReceived READ bytesReceived NOTIFY progressChanged)
    Q_PROPERTY(qint64 bytesTotal READ bytesTotal NOTIFY progressChanged)
    Q_PROPERTY(double progress READ progress NOTIFY progressChanged)
    Q_PROPERTY(double speed READ speed NOTIFY speedChanged)
    Q_PROPERTY(int etaSeconds READ etaSeconds NOTIFY speedChanged)
    Q_PROPERTY(Error error READ error NOTIFY errorChanged)
    Q_PROPERTY(QString errorString READ errorString NOTIFY errorChanged)
    Q_PROPERTY(bool verified READ verified NOTIFY verifiedChanged)

public:
    enum class State {
        Idle,
        Probing,  // HEAD request for the size and sha256 (when not given)
        Downloading,
        Retrying,  // waiting out the backoff delay before the next attempt
        Paused,
        Verifying,  // hashing and checking the complete .part on a worker thread
        Finished,
        Failed,
        Cancelled
    };
    Q_ENUM(State)

    enum class Error {
        NoError,
        InvalidRequest,     // bad url or destination
        FileExists,         // the destination already exists
        InsufficientSpace,  // too little free space, or the disk filled up while writing
        HttpError,          // the server answered with an error status
        NetworkError,       // connection, TLS, timeout... after the retries
        FileError,          // reading or writing the local files
        SizeMismatch,       // the server's size differs from the expected one
        ChecksumMismatch,
        InvalidFile  // the content check refused the complete file (e.g. not a GGUF model)
    };
    Q_ENUM(Error)

    // Where the checksum came from.
    enum class ChecksumSource { None, Given, Server };
    Q_ENUM(ChecksumSource)

    // Free bytes available to the directory; -1 when unknown (the check is skipped).
    using FreeSpaceFunction = std::function<qint64(const QString& directory)>;

    explicit Downloader(QObject* parent = nullptr);
    // Shares nam (the app's single QNetworkAccessManager); it must outlive this object.
    explicit Downloader(QNetworkAccessManager* nam, QObject* parent = nullptr);
    ~Downloader() override;  // keeps the .part and its state, so a later Downloader resumes

    QUrl url() const { return m_url; }
    void setUrl(const QUrl& url);
    QString destination() const { return m_destination; }
    void setDestination(const QString& path);  // the final file path (e.g. models/x.gguf)

    // -1: unknown. When known, the server must agree and the result must have this size.
    void setExpectedSize(qint64 bytes) { m_expectedSize = bytes; }
    qint64 expectedSize() const { return m_expectedSize; }
    void setChecksum(const ExpectedChecksum& checksum) {
        m_checksum = checksum;
        m_checksumSource = checksum.isSet() ? ChecksumSource::Given : ChecksumSource::None;
    }
    // algorithm: "sha256" or "md5". Returns false and sets *error for a malformed checksum.
    bool setChecksum(const QString& algorithm, const QString& hex, QString* error = nullptr);
    ExpectedChecksum checksum() const { return m_checksum; }
    ChecksumSource checksumSource() const { return m_checksumSource; }
    // Run on the complete file before the rename (on a worker thread); name says what it
    // checks, for checksSummary() ("GGUF header").
    void setContentCheck(const QString& name, ContentCheck check) {
        m_contentCheckName = name;
        m_contentCheck = std::move(check);
    }

    // Tuning; the defaults suit the app, tests make them small.
    void setMaxRetries(int retries) { m_maxRetries = retries; }
    void setRetryBaseDelay(int ms) { m_retryBaseDelayMs = ms; }  // doubles after each failure
    void setTransferTimeout(int ms) {
        m_transferTimeoutMs = ms;
    }  // stall time that fails an attempt
    void setFreeSpaceMargin(qint64 bytes) { m_freeSpaceMargin = bytes; }
    void setFreeSpaceFunction(FreeSpaceFunction fn) { m_freeSpace = std::move(fn); }
    // With no checksum or no size given, ask the server first (Hugging Face X-Linked-*).
    void setProbeWithHead(bool probe) { m_probeWithHead = probe; }

    State state() const { return m_state; }
    qint64 bytesReceived() const { return m_received; }
    qint64 bytesTotal() const;                // -1 when unknown
    double progress() const;                  // 0..1, or -1 when the total is unknown
    double speed() const { return m_speed; }  // bytes per second, smoothed
    int etaSeconds() const { return m_eta; }  // -1 when unknown
    Error error() const { return m_error; }
    QString errorString() const { return m_errorString; }
    bool verified() const { return m_verified; }  // the finished file matched a checksum
    // The checks the finished (or verifying) file went through, in words: "size 2.0 MiB as the
    // server announced, sha256 reported by the server, GGUF header"; what was not checked is
    // said too ("no checksum known").
    QString checksSummary() const;

    static QString partPath(const QString& destination);
    static QString statePath(const QString& destination);
    static QString formatBytes(qint64 bytes);
    // Free bytes available to the directory (QStorageInfo), -1 when unknown: the default
    // FreeSpaceFunction, and what a full disk's message reports.
    static qint64 systemFreeSpace(const QString& directory);

public slots:
    // Starts, or continues from NAME.part when its state matches this url.
    void start();
    void pause();
    void resume();
    // Stops and removes NAME.part and its state.
    void cancel();

signals:
    void urlChanged();
    void destinationChanged();
    void stateChanged(Downloader::State state);
    void progressChanged(qint64 received, qint64 total);
    void speedChanged();
    void errorChanged();
    void verifiedChanged();
    void retrying(int attempt, int delayMs, const QString& reason);
    // The server ignored the Range request (or the file changed): starting over from byte 0.
    void restartedFromZero(const QString& reason);
    void finished(const QString& path);
    void failed(const QString& message);

private:
    enum class Cleanup { KeepPart, RemovePart, RemovePartIfEmpty };

    void adoptPartialDownload();
    void onProbeFinished(const RemoteFileInfo& info);
    void beginTransfer();
    void sendRequest(const QUrl& target = {});
    bool handleHeaders();
    void onReadyRead();
    void onReplyFinished();
    bool writeData(const QByteArray& data);
    void restartFromZero(const QString& reason);
    void scheduleRetry(const QString& reason, Error error = Error::NetworkError);
    void onRetryTimer();
    void transferComplete();
    void onVerified(bool matches, const QString& actualHex, const QString& error,
                    const QString& problem);
    bool followRedirect(int status);
    bool takeServerChecksum(const QString& sha256, qint64 size);
    void failWrite(const QString& what);
    void finalize(bool verified);
    void onTick();
    bool checkFreeSpace(bool beforeStart);
    void fail(Error error, const QString& message, Cleanup cleanup);
    void releaseReply();
    void truncatePart();
    void removePartFiles();
    void saveState();
    void setState(State state);
    void setVerified(bool verified);
    void emitProgress(bool force);
    void resetSpeed();

    QNetworkAccessManager* m_nam;
    HeadProbe* m_probe;
    ChecksumVerifier* m_verifier;
    QNetworkReply* m_reply = nullptr;
    QFile m_part;

    QUrl m_url;
    QString m_destination;
    qint64 m_expectedSize = -1;
    ExpectedChecksum m_checksum;
    ChecksumSource m_checksumSource = ChecksumSource::None;
    QString m_contentCheckName;
    ContentCheck m_contentCheck;

    int m_maxRetries = 5;
    int m_retryBaseDelayMs = 1000;
    int m_transferTimeoutMs = 30000;
    qint64 m_freeSpaceMargin = 64ll << 20;
    FreeSpaceFunction m_freeSpace;
    bool m_probeWithHead = true;

    State m_state = State::Idle;
    Error m_error = Error::NoError;
    QString m_errorString;
    bool m_verified = false;

    qint64 m_received = 0;  // bytes in the .part file
    qint64 m_total = -1;    // total size as the server reports it
    int m_hops = 0;         // redirects followed by the current attempt
    qint64 m_offset = 0;    // where the current request started
    qint64 m_receivedThisAttempt = 0;
    bool m_headersHandled = false;
    bool m_ownsPart = false;  // the .part belongs to this url (started or adopted by start())
    QString m_etag, m_lastModified;
    int m_attempt = 0;

    QTimer m_retryTimer;
    QTimer m_tickTimer;
    int m_ticks = 0;
    QElapsedTimer m_tickClock;
    QElapsedTimer m_progressClock;
    qint64 m_lastTickBytes = 0;
    double m_speed = 0;
    int m_eta = -1;
};

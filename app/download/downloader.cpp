#include "downloader.h"

#include <QDir>
#include <QFileInfo>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>

#include <algorithm>
#include <cmath>

#include "downloadstate.h"
#include "fetch_rules.h"
#include "headprobe.h"

namespace {

constexpr int kTickMs = 500;

bool retryableStatus(int status) {
    return ember::fetch::retryable_status(status);
}

// Network errors that a new attempt cannot fix.
bool fatalNetworkError(QNetworkReply::NetworkError error) {
    switch (error) {
        case QNetworkReply::SslHandshakeFailedError:
        case QNetworkReply::TooManyRedirectsError:
        case QNetworkReply::InsecureRedirectError:
        case QNetworkReply::ProtocolUnknownError:
        case QNetworkReply::ProtocolInvalidOperationError:
        case QNetworkReply::ProxyAuthenticationRequiredError:
        case QNetworkReply::AuthenticationRequiredError:
            return true;
        default:
            return false;
    }
}

}  // namespace

Downloader::Downloader(QObject* parent) : Downloader(nullptr, parent) {}

Downloader::Downloader(QNetworkAccessManager* nam, QObject* parent)
    : QObject(parent),
      m_nam(nam ? nam : new QNetworkAccessManager(this)),
      m_probe(new HeadProbe(m_nam, this)),
      m_verifier(new ChecksumVerifier(this)),
      m_freeSpace(systemFreeSpace) {
    m_retryTimer.setSingleShot(true);
    connect(&m_retryTimer, &QTimer::timeout, this, &Downloader::onRetryTimer);
    m_tickTimer.setInterval(kTickMs);
    connect(&m_tickTimer, &QTimer::timeout, this, &Downloader::onTick);
    connect(m_probe, &HeadProbe::finished, this, &Downloader::onProbeFinished);
    connect(m_verifier, &ChecksumVerifier::finished, this, &Downloader::onVerified);
}

Downloader::~Downloader() {
    // Bytes still buffered in the reply are dropped: the .part's size is what a resume trusts.
    releaseReply();
    m_probe->abort();
    if (m_part.isOpen()) {
        m_part.flush();
        m_part.close();
    }
    if (m_state == State::Downloading || m_state == State::Retrying) saveState();
}

void Downloader::setUrl(const QUrl& url) {
    if (url == m_url) return;
    m_url = url;
    emit urlChanged();
}

void Downloader::setDestination(const QString& path) {
    if (path == m_destination) return;
    m_destination = path;
    emit destinationChanged();
}

bool Downloader::setChecksum(const QString& algorithm, const QString& hex, QString* error) {
    ExpectedChecksum c = ExpectedChecksum::parse(algorithm, hex, error);
    if (!c.isSet()) return false;
    setChecksum(c);
    return true;
}

qint64 Downloader::bytesTotal() const {
    return m_expectedSize >= 0 ? m_expectedSize : m_total;
}

double Downloader::progress() const {
    const qint64 total = bytesTotal();
    if (total < 0) return -1;
    if (total == 0) return 1;
    return double(m_received) / double(total);
}

QString Downloader::partPath(const QString& destination) {
    return QString::fromStdString(ember::fetch::part_path(destination.toStdString()));
}

QString Downloader::statePath(const QString& destination) {
    return QString::fromStdString(ember::fetch::state_path(destination.toStdString()));
}

QString Downloader::formatBytes(qint64 bytes) {
    return QString::fromStdString(ember::fetch::format_bytes(bytes));
}

// ---- starting ------------------------------------------------------------------------------

void Downloader::start() {
    if (m_state == State::Probing || m_state == State::Downloading || m_state == State::Retrying ||
        m_state == State::Verifying)
        return;
    m_attempt = 0;
    m_total = -1;
    m_received = 0;
    m_ownsPart = false;
    if (m_error != Error::NoError) {
        m_error = Error::NoError;
        m_errorString.clear();
        emit errorChanged();
    }
    setVerified(false);
    resetSpeed();

    if (!m_url.isValid() ||
        (m_url.scheme() != QLatin1String("https") && m_url.scheme() != QLatin1String("http"))) {
        fail(Error::InvalidRequest,
             QStringLiteral("'%1' is not an http or https URL").arg(m_url.toString()),
             Cleanup::KeepPart);
        return;
    }
    if (m_destination.isEmpty()) {
        fail(Error::InvalidRequest, QStringLiteral("no destination file given"), Cleanup::KeepPart);
        return;
    }
    const QString dir = QFileInfo(m_destination).absolutePath();
    if (!QDir().mkpath(dir)) {
        fail(Error::FileError, QStringLiteral("cannot create the folder %1").arg(dir),
             Cleanup::KeepPart);
        return;
    }
    if (QFileInfo::exists(m_destination)) {
        fail(Error::FileExists, QStringLiteral("%1 already exists").arg(m_destination),
             Cleanup::KeepPart);
        return;
    }
    adoptPartialDownload();
    emitProgress(true);

    if (m_probeWithHead && (!m_checksum.isSet() || m_expectedSize < 0)) {
        setState(State::Probing);
        m_probe->start(m_url, m_transferTimeoutMs);
        return;
    }
    beginTransfer();
}

// Continues from NAME.part only when its state says it is the same file; anything else is a
// leftover that could corrupt the result, so it goes.
void Downloader::adoptPartialDownload() {
    const QString part = partPath(m_destination), state = statePath(m_destination);
    m_etag.clear();
    m_lastModified.clear();
    m_received = 0;
    m_ownsPart = true;
    if (!QFileInfo::exists(part)) {
        QFile::remove(state);
        return;
    }
    const std::optional<DownloadState> saved = DownloadState::load(state);
    const auto rules = ember::fetch::load_state(state.toStdString());
    const qint64 size = QFileInfo(part).size();
    ember::fetch::Checksum given;
    if (auto c = ember::fetch::parse_checksum(m_checksum.algorithmName().toStdString(),
                                              m_checksum.hex.toStdString());
        m_checksum.isSet() && c)
        given = *c;
    const bool same =
        saved && rules &&
        ember::fetch::resumable(*rules, m_url.toString(QUrl::FullyEncoded).toStdString(), given,
                                m_expectedSize, size);
    if (!same) {
        removePartFiles();
        return;
    }
    if (!m_checksum.isSet() && !saved->checksum.isEmpty()) {
        m_checksum = ExpectedChecksum::parse(saved->checksumAlgorithm, saved->checksum, nullptr);
        m_checksumSource = !m_checksum.isSet() ? ChecksumSource::None
                           : saved->checksumSource == QLatin1String("server")
                               ? ChecksumSource::Server
                               : ChecksumSource::Given;
    }
    if (m_expectedSize < 0) m_expectedSize = saved->expectedSize;
    m_etag = saved->etag;
    m_lastModified = saved->lastModified;
    m_received = size;
}

void Downloader::onProbeFinished(const RemoteFileInfo& info) {
    if (m_state != State::Probing) return;
    if (!info.ok && info.fatal) {
        fail(Error::HttpError, info.error, Cleanup::RemovePart);
        return;
    }
    if (info.ok) {
        if (!takeServerChecksum(info.sha256, info.size)) return;
    }
    // A probe that failed for a passing reason is not fatal: the GET retries on its own.
    beginTransfer();
}

void Downloader::beginTransfer() {
    if (m_expectedSize >= 0 && m_received > m_expectedSize) truncatePart();
    if (!checkFreeSpace(true)) return;
    m_part.setFileName(partPath(m_destination));
    // Unbuffered: every write reaches the file at once, so a full disk fails the write that
    // hit it (with its errno) and the .part's size is always what was received and kept.
    if (!m_part.open(QIODevice::ReadWrite | QIODevice::Unbuffered)) {
        fail(Error::FileError,
             QStringLiteral("cannot open %1 for writing: %2")
                 .arg(m_part.fileName(), m_part.errorString()),
             Cleanup::KeepPart);
        return;
    }
    if (m_part.size() != m_received && !m_part.resize(m_received)) {
        fail(Error::FileError,
             QStringLiteral("cannot resize %1: %2").arg(m_part.fileName(), m_part.errorString()),
             Cleanup::KeepPart);
        return;
    }
    m_part.seek(m_received);
    saveState();
    sendRequest();
}

void Downloader::sendRequest(const QUrl& target) {
    if (target.isEmpty()) m_hops = 0;  // a new attempt starts from the original url
    m_offset = m_received;
    m_receivedThisAttempt = 0;
    m_headersHandled = false;
    QNetworkRequest request(target.isEmpty() ? m_url : target);
    // Redirects are followed by hand: Hugging Face puts the file's sha256 on the redirect.
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::ManualRedirectPolicy);
    request.setTransferTimeout(m_transferTimeoutMs);
    // Byte ranges refer to the stored representation: no transparent decompression.
    request.setRawHeader("Accept-Encoding", "identity");
    request.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Ember"));
    if (m_offset > 0) {
        request.setRawHeader("Range", "bytes=" + QByteArray::number(m_offset) + "-");
        // If-Range makes a changed file come back whole (200) rather than spliced. Weak ETags
        // are not allowed there.
        if (!m_etag.isEmpty() && !m_etag.startsWith(QLatin1String("W/")))
            request.setRawHeader("If-Range", m_etag.toLatin1());
        else if (!m_lastModified.isEmpty())
            request.setRawHeader("If-Range", m_lastModified.toLatin1());
    }
    m_reply = m_nam->get(request);
    m_reply->setReadBufferSize(8 << 20);
    connect(m_reply, &QNetworkReply::readyRead, this, &Downloader::onReadyRead);
    connect(m_reply, &QNetworkReply::finished, this, &Downloader::onReplyFinished);
    setState(State::Downloading);
    m_tickClock.restart();
    m_lastTickBytes = m_received;
    if (!m_tickTimer.isActive()) m_tickTimer.start();
}

// ---- receiving -----------------------------------------------------------------------------

// Checks the answer once its headers are in. Returns false when it has taken over (failed or
// restarted), in which case the reply is gone.
bool Downloader::handleHeaders() {
    m_headersHandled = true;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (followRedirect(status)) return false;
    const QVariant length = m_reply->header(QNetworkRequest::ContentLengthHeader);
    if (status == 206) {
        const auto range =
            ember::fetch::parse_content_range(m_reply->rawHeader("Content-Range").toStdString());
        if (!range || range->first != m_offset) {
            restartFromZero(QStringLiteral("the server sent the range '%1' for 'bytes=%2-'")
                                .arg(QString::fromLatin1(m_reply->rawHeader("Content-Range")))
                                .arg(m_offset));
            return false;
        }
        if (range->total >= 0)
            m_total = range->total;
        else if (length.isValid())
            m_total = m_offset + length.toLongLong();
    } else if (status == 200) {
        if (m_offset > 0) {
            // Range ignored, or If-Range saw a changed file: the body is the whole file.
            truncatePart();
            m_offset = 0;
            emit restartedFromZero(
                QStringLiteral("the server ignored the range request and sent the whole file"));
            emitProgress(true);
        }
        m_total = length.isValid() ? length.toLongLong() : -1;
    } else {
        return true;  // an error status: onReplyFinished reports it
    }
    const QByteArray etag = m_reply->rawHeader("ETag"),
                     modified = m_reply->rawHeader("Last-Modified");
    if (status == 200 || !etag.isEmpty()) m_etag = QString::fromLatin1(etag);
    if (status == 200 || !modified.isEmpty()) m_lastModified = QString::fromLatin1(modified);

    if (m_expectedSize >= 0 && m_total >= 0 && m_total != m_expectedSize) {
        fail(Error::SizeMismatch,
             QStringLiteral("%1 is %2 bytes on the server, expected %3")
                 .arg(m_url.toString())
                 .arg(m_total)
                 .arg(m_expectedSize),
             Cleanup::RemovePart);
        return false;
    }
    if (m_expectedSize < 0 && m_total >= 0 && !checkFreeSpace(true)) return false;
    saveState();
    return true;
}

void Downloader::onReadyRead() {
    if (!m_headersHandled && !handleHeaders()) return;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QByteArray data = m_reply->readAll();
    if (status == 200 || status == 206) writeData(data);  // error bodies are dropped
}

bool Downloader::writeData(const QByteArray& data) {
    if (data.isEmpty()) return true;
    if (m_total >= 0 && m_received + data.size() > m_total) {
        fail(Error::SizeMismatch,
             QStringLiteral("%1 sent more than the %2 bytes it announced")
                 .arg(m_url.toString())
                 .arg(m_total),
             Cleanup::RemovePart);
        return false;
    }
    // A short write (the disk filled up) keeps what went in; the next write then fails with
    // the reason.
    for (qint64 done = 0; done < data.size();) {
        const qint64 n = m_part.write(data.constData() + done, data.size() - done);
        if (n <= 0) {
            failWrite(m_part.errorString());
            return false;
        }
        done += n;
        m_received += n;
        m_receivedThisAttempt += n;
    }
    emitProgress(false);
    return true;
}

void Downloader::onReplyFinished() {
    if (!m_headersHandled && !handleHeaders()) return;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QNetworkReply::NetworkError error = m_reply->error();
    const QString errorText = m_reply->errorString();
    const QString reason =
        m_reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString();
    const QByteArray rangeHeader = m_reply->rawHeader("Content-Range");
    if ((status == 200 || status == 206) && !writeData(m_reply->readAll())) return;
    releaseReply();
    if (!m_part.flush()) {
        fail(Error::FileError,
             QStringLiteral("cannot write %1: %2").arg(m_part.fileName(), m_part.errorString()),
             Cleanup::KeepPart);
        return;
    }

    if (error == QNetworkReply::NoError && (status == 200 || status == 206)) {
        if (m_total >= 0 && m_received < m_total) {
            scheduleRetry(QStringLiteral("the connection closed after %1 of %2 bytes")
                              .arg(m_received)
                              .arg(m_total));
            return;
        }
        transferComplete();
        return;
    }
    if (status == 416) {
        // Nothing left to send: either the .part is already whole or it does not fit the file.
        if (const auto range = ember::fetch::parse_content_range(rangeHeader.toStdString());
            range && range->first < 0)
            m_total = range->total;
        if (m_expectedSize >= 0 && m_received == m_expectedSize) {
            transferComplete();
            return;
        }
        truncatePart();
        scheduleRetry(QStringLiteral("the server rejected the range; starting over"));
        return;
    }
    if (status >= 400) {
        const QString message =
            QStringLiteral("HTTP %1 %2 for %3").arg(status).arg(reason, m_url.toString());
        if (retryableStatus(status))
            scheduleRetry(message, Error::HttpError);
        else
            fail(Error::HttpError, message, Cleanup::RemovePart);
        return;
    }
    const QString message = QStringLiteral("%1 (%2)").arg(errorText, m_url.toString());
    if (error == QNetworkReply::NoError || fatalNetworkError(error))
        fail(Error::NetworkError, message, Cleanup::RemovePartIfEmpty);
    else
        scheduleRetry(message);
}

void Downloader::restartFromZero(const QString& reason) {
    releaseReply();
    truncatePart();
    emit restartedFromZero(reason);
    emitProgress(true);
    m_etag.clear();
    m_lastModified.clear();
    sendRequest();
}

void Downloader::scheduleRetry(const QString& reason, Error error) {
    // A failure after progress is a fresh streak: only failures in a row count.
    if (m_receivedThisAttempt > 0) m_attempt = 0;
    if (++m_attempt > m_maxRetries) {
        fail(error, QStringLiteral("%1; gave up after %2 retries").arg(reason).arg(m_maxRetries),
             Cleanup::RemovePartIfEmpty);
        return;
    }
    const qint64 delay = ember::fetch::retry_delay_ms(m_attempt, m_retryBaseDelayMs);
    saveState();
    resetSpeed();
    setState(State::Retrying);
    emit retrying(m_attempt, int(delay), reason);
    m_retryTimer.start(int(delay));
}

void Downloader::onRetryTimer() {
    if (m_state != State::Retrying) return;
    if (!checkFreeSpace(false)) return;
    sendRequest();
}

// ---- control -------------------------------------------------------------------------------

void Downloader::pause() {
    if (m_state == State::Downloading) {
        if (m_reply && m_headersHandled) {
            const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            if ((status == 200 || status == 206) && !writeData(m_reply->readAll())) return;
        }
        releaseReply();
    } else if (m_state == State::Retrying) {
        m_retryTimer.stop();
    } else if (m_state == State::Probing) {
        m_probe->abort();
    } else {
        return;
    }
    m_tickTimer.stop();
    if (m_part.isOpen()) {
        m_part.flush();
        m_part.close();
    }
    saveState();
    resetSpeed();
    setState(State::Paused);
}

void Downloader::resume() {
    if (m_state == State::Paused || m_state == State::Failed || m_state == State::Idle) start();
}

void Downloader::cancel() {
    if (m_state == State::Finished) return;
    releaseReply();
    m_probe->abort();
    m_verifier->cancel();
    m_retryTimer.stop();
    m_tickTimer.stop();
    m_part.close();
    if (!m_destination.isEmpty()) removePartFiles();
    m_ownsPart = false;
    resetSpeed();
    emitProgress(true);
    setState(State::Cancelled);
}

void Downloader::fail(Error error, const QString& message, Cleanup cleanup) {
    releaseReply();
    m_probe->abort();
    m_verifier->cancel();
    m_retryTimer.stop();
    m_tickTimer.stop();
    if (m_part.isOpen()) {
        m_part.flush();
        m_part.close();
    }
    const QString part = partPath(m_destination);
    if (!m_destination.isEmpty() && QFileInfo::exists(part)) {
        if (cleanup == Cleanup::RemovePart ||
            (cleanup == Cleanup::RemovePartIfEmpty && QFileInfo(part).size() == 0))
            removePartFiles();
        else
            saveState();
    }
    resetSpeed();
    m_error = error;
    m_errorString = message;
    emit errorChanged();
    setState(State::Failed);
    emit failed(message);
}

void Downloader::releaseReply() {
    if (!m_reply) return;
    QNetworkReply* reply = m_reply;
    m_reply = nullptr;
    reply->disconnect(this);
    if (reply->isRunning()) reply->abort();
    reply->deleteLater();
}

void Downloader::truncatePart() {
    if (m_part.isOpen()) {
        m_part.resize(0);
        m_part.seek(0);
    } else {
        QFile::resize(partPath(m_destination), 0);
    }
    m_received = 0;
}

void Downloader::removePartFiles() {
    QFile::remove(partPath(m_destination));
    QFile::remove(statePath(m_destination));
    m_received = 0;
}

void Downloader::saveState() {
    // Only for a .part this object started or adopted, never for someone else's leftover.
    if (!m_ownsPart || !QFileInfo::exists(partPath(m_destination))) return;
    DownloadState s;
    s.url = m_url;
    s.expectedSize = m_expectedSize >= 0 ? m_expectedSize : m_total;
    s.checksumAlgorithm = m_checksum.algorithmName();
    s.checksum = m_checksum.hex;
    s.checksumSource = m_checksumSource == ChecksumSource::Server  ? QStringLiteral("server")
                       : m_checksumSource == ChecksumSource::Given ? QStringLiteral("given")
                                                                   : QString();
    s.bytesDone = m_received;
    s.etag = m_etag;
    s.lastModified = m_lastModified;
    QString error;
    // A lost state only costs a restart from zero later, so it is not worth failing over.
    if (!s.save(statePath(m_destination), &error))
        qWarning("ember download: %s", qPrintable(error));
}

// ---- bookkeeping ---------------------------------------------------------------------------

void Downloader::onTick() {
    if (m_state != State::Downloading) return;
    const qint64 elapsed = std::max<qint64>(1, m_tickClock.restart());
    const double now = double(m_received - m_lastTickBytes) * 1000.0 / double(elapsed);
    m_lastTickBytes = m_received;
    m_speed = m_speed <= 0 ? now : 0.7 * m_speed + 0.3 * now;
    const qint64 total = bytesTotal();
    m_eta = (total >= 0 && m_speed > 1) ? int(std::ceil(double(total - m_received) / m_speed)) : -1;
    emit speedChanged();
    emitProgress(true);
    // Every second: keep the .part and its state current for a restart, and watch the disk.
    if (++m_ticks % 2 == 0) {
        m_part.flush();
        saveState();
        checkFreeSpace(false);
    }
}

void Downloader::setState(State state) {
    if (state == m_state) return;
    m_state = state;
    emit stateChanged(state);
}

void Downloader::setVerified(bool verified) {
    if (verified == m_verified) return;
    m_verified = verified;
    emit verifiedChanged();
}

void Downloader::emitProgress(bool force) {
    if (!force && m_progressClock.isValid() && m_progressClock.elapsed() < 100) return;
    m_progressClock.restart();
    emit progressChanged(m_received, bytesTotal());
}

void Downloader::resetSpeed() {
    const bool changed = m_speed != 0 || m_eta != -1;
    m_speed = 0;
    m_eta = -1;
    if (changed) emit speedChanged();
}

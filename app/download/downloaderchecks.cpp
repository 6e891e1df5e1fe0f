// What Downloader checks: what the server says about the file (a redirect's sha256 and size),
// the finished file (size, checksum, content) before it gets its final name, and the disk (free
// space before and while downloading, a write that finds the disk full).
#include <QFileInfo>
#include <QNetworkReply>
#include <QStorageInfo>

#include <algorithm>

#include "downloader.h"
#include "fetch_rules.h"
#include "headprobe.h"

namespace {

constexpr int kMaxRedirects = ember::fetch::kMaxRedirects;
// A write that fails with less than this free is a full disk, whatever errno said.
constexpr qint64 kFullDiskSlack = 1 << 20;

bool isRedirect(int status) {
    return ember::fetch::redirect_status(status);
}

}  // namespace

qint64 Downloader::systemFreeSpace(const QString& directory) {
    QStorageInfo info(directory);
    if (!info.isValid() || !info.isReady()) return -1;
    return info.bytesAvailable();
}

QString Downloader::checksSummary() const {
    ember::fetch::Checksum checksum;
    if (auto c = ember::fetch::parse_checksum(m_checksum.algorithmName().toStdString(),
                                              m_checksum.hex.toStdString()))
        checksum = *c;
    const char* source = m_checksumSource == ChecksumSource::Given    ? "given"
                         : m_checksumSource == ChecksumSource::Server ? "server"
                                                                      : "";
    return QString::fromStdString(ember::fetch::checks_summary(
        m_total, m_expectedSize, checksum, source,
        m_contentCheck ? m_contentCheckName.toStdString() : std::string()));
}

// A redirect of the GET: takes the sha256 and size it may carry (X-Linked-Etag, X-Linked-Size)
// and sends the request on, never from https to http. Returns false when it is no redirect.
bool Downloader::followRedirect(int status) {
    if (!isRedirect(status) || !m_reply->hasRawHeader("Location")) return false;
    const QUrl from = m_reply->url();
    const QUrl next = from.resolved(QUrl::fromEncoded(m_reply->rawHeader("Location")));
    QString sha256;
    if (m_reply->hasRawHeader("X-Linked-Etag"))
        sha256 = HeadProbe::sha256FromEtag(m_reply->rawHeader("X-Linked-Etag"));
    qint64 size = -1;
    if (m_reply->hasRawHeader("X-Linked-Size")) {
        bool ok = false;
        size = m_reply->rawHeader("X-Linked-Size").trimmed().toLongLong(&ok);
        if (!ok || size < 0) size = -1;
    }
    if (!takeServerChecksum(sha256, size)) return true;
    QString refused;
    if (next.scheme() != QLatin1String("https") &&
        (next.scheme() != QLatin1String("http") || from.scheme() == QLatin1String("https")))
        refused = QStringLiteral("%1 redirects to the less safe %2")
                      .arg(from.toString(), next.toString());
    else if (++m_hops > kMaxRedirects)
        refused =
            QStringLiteral("%1: more than %2 redirects").arg(m_url.toString()).arg(kMaxRedirects);
    if (!refused.isEmpty()) {
        fail(Error::NetworkError, refused, Cleanup::RemovePartIfEmpty);
        return true;
    }
    releaseReply();
    sendRequest(next);
    return true;
}

// What the server says about the file (HEAD or redirect): its sha256 becomes the checksum when
// none was given, and must equal a given one; its size must equal the expected one. Returns
// false when it failed the download.
bool Downloader::takeServerChecksum(const QString& sha256, qint64 size) {
    if (!sha256.isEmpty()) {
        if (!m_checksum.isSet()) {
            m_checksum = ExpectedChecksum::parse(QStringLiteral("sha256"), sha256, nullptr);
            m_checksumSource = ChecksumSource::Server;
        } else if (m_checksum.algorithm == ExpectedChecksum::Algorithm::Sha256 &&
                   m_checksum.hex != sha256) {
            fail(Error::ChecksumMismatch,
                 QStringLiteral("the server reports sha256 %1 for %2, expected %3 (the download "
                                "was removed)")
                     .arg(sha256, m_url.toString(), m_checksum.hex),
                 Cleanup::RemovePart);
            return false;
        }
    }
    if (size >= 0) {
        if (m_expectedSize >= 0 && size != m_expectedSize) {
            fail(Error::SizeMismatch,
                 QStringLiteral("%1 is %2 bytes on the server, expected %3")
                     .arg(m_url.toString())
                     .arg(size)
                     .arg(m_expectedSize),
                 Cleanup::RemovePart);
            return false;
        }
        m_expectedSize = size;
    }
    return true;
}

// A failed write of the .part: a full disk says so with the space left; the bytes written so far
// stay for a resume.
void Downloader::failWrite(const QString& what) {
    const QString dir = QFileInfo(m_destination).absolutePath();
    const qint64 free = systemFreeSpace(dir);
    const bool full =
        m_part.error() == QFileDevice::ResourceError || (free >= 0 && free < kFullDiskSlack);
    if (!full) {
        fail(Error::FileError, QStringLiteral("cannot write %1: %2").arg(m_part.fileName(), what),
             Cleanup::KeepPart);
        return;
    }
    const qint64 total = bytesTotal();
    fail(Error::InsufficientSpace,
         QStringLiteral("disk full: cannot write %1 (%2); %3 free in %4%5; the %6 received so far "
                        "are kept")
             .arg(m_part.fileName(), what, free >= 0 ? formatBytes(free) : QStringLiteral("?"), dir,
                  total >= 0 ? QStringLiteral(", %1 still to download")
                                   .arg(formatBytes(std::max<qint64>(0, total - m_received)))
                             : QString(),
                  formatBytes(m_received)),
         Cleanup::KeepPart);
}

void Downloader::transferComplete() {
    m_tickTimer.stop();
    m_part.close();
    resetSpeed();
    emitProgress(true);
    // The size the caller expects and the one the server announced (they agreed already).
    for (const qint64 expected : {m_expectedSize, m_total}) {
        if (expected >= 0 && m_received != expected) {
            fail(Error::SizeMismatch,
                 QStringLiteral("%1 has %2 bytes, expected %3 (the download was removed)")
                     .arg(partPath(m_destination))
                     .arg(m_received)
                     .arg(expected),
                 Cleanup::RemovePart);
            return;
        }
    }
    saveState();
    if (!m_checksum.isSet() && !m_contentCheck) {
        finalize(false);
        return;
    }
    setState(State::Verifying);
    m_verifier->start(partPath(m_destination), m_checksum, m_contentCheck);
}

void Downloader::onVerified(bool matches, const QString& actualHex, const QString& error,
                            const QString& problem) {
    if (m_state != State::Verifying) return;
    if (!error.isEmpty()) {
        fail(Error::FileError, error, Cleanup::KeepPart);
    } else if (!matches) {
        fail(Error::ChecksumMismatch,
             QStringLiteral("%1 checksum mismatch for %2: expected %3%4, got %5 (the download was "
                            "removed)")
                 .arg(m_checksum.algorithmName(), m_destination, m_checksum.hex,
                      m_checksumSource == ChecksumSource::Server
                          ? QStringLiteral(" (as the server reports)")
                          : QString(),
                      actualHex),
             Cleanup::RemovePart);
    } else if (!problem.isEmpty()) {
        fail(Error::InvalidFile,
             QStringLiteral("%1 failed the %2 check and was removed: %3")
                 .arg(m_destination, m_contentCheckName, problem),
             Cleanup::RemovePart);
    } else {
        finalize(m_checksum.isSet());
    }
}

void Downloader::finalize(bool verified) {
    const QString part = partPath(m_destination);
    if (QFileInfo::exists(m_destination)) {
        fail(Error::FileExists, QStringLiteral("%1 already exists").arg(m_destination),
             Cleanup::KeepPart);
        return;
    }
    QFile file(part);
    if (!file.rename(m_destination)) {
        fail(Error::FileError,
             QStringLiteral("cannot rename %1 to %2: %3")
                 .arg(part, m_destination, file.errorString()),
             Cleanup::KeepPart);
        return;
    }
    QFile::remove(statePath(m_destination));
    setVerified(verified);
    setState(State::Finished);
    emit finished(m_destination);
}

bool Downloader::checkFreeSpace(bool beforeStart) {
    if (!m_freeSpace) return true;
    const QString dir = QFileInfo(m_destination).absolutePath();
    const qint64 free = m_freeSpace(dir);
    if (free < 0) return true;
    const qint64 total = bytesTotal();
    const qint64 remaining = total >= 0 ? std::max<qint64>(0, total - m_received) : 0;
    // Before starting, keep a margin so the disk is not left full; once running, only what is
    // left of the file has to fit.
    const qint64 needed = remaining + (beforeStart ? m_freeSpaceMargin : 0);
    if (free >= needed) return true;
    fail(Error::InsufficientSpace,
         QStringLiteral("not enough disk space in %1: %2 free, %3 needed (%4 still to download%5)")
             .arg(dir, formatBytes(free), formatBytes(needed), formatBytes(remaining),
                  beforeStart ? QStringLiteral(" + %1 margin").arg(formatBytes(m_freeSpaceMargin))
                              : QString()),
         Cleanup::KeepPart);
    return false;
}

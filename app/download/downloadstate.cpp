#include "downloadstate.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

// Writes bytes to path through path.tmp-PID: write all, fsync, close, rename. QSaveFile is not
// used: a failed final flush (a full disk) still let it rename an empty file over the state.
bool writeAtomically(const QString& path, const QByteArray& bytes, QString* error) {
    const QByteArray target = QFile::encodeName(path);
    const QByteArray temp = target + ".tmp-" + QByteArray::number(qint64(::getpid()));
    auto failWith = [&](const char* what, int code, int fd) {
        if (fd >= 0) ::close(fd);
        ::unlink(temp.constData());
        if (error)
            *error = QStringLiteral("cannot %1 %2: %3")
                         .arg(QLatin1String(what), path, QString::fromLocal8Bit(strerror(code)));
        return false;
    };
    const int fd = ::open(temp.constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return failWith("create a temporary file for", errno, -1);
    for (qint64 done = 0; done < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.constData() + done, size_t(bytes.size() - done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return failWith("write", n < 0 ? errno : ENOSPC, fd);
        done += n;
    }
    if (::fsync(fd) != 0) return failWith("sync", errno, fd);
    if (::close(fd) != 0) return failWith("close", errno, -1);
    if (::rename(temp.constData(), target.constData()) != 0) return failWith("replace", errno, -1);
    return true;
}

}  // namespace

bool DownloadState::save(const QString& path, QString* error) const {
    QJsonObject o;
    o[QStringLiteral("version")] = 1;
    o[QStringLiteral("url")] = url.toString(QUrl::FullyEncoded);
    o[QStringLiteral("expected_size")] = double(expectedSize);
    o[QStringLiteral("checksum_algorithm")] = checksumAlgorithm;
    o[QStringLiteral("checksum")] = checksum;
    o[QStringLiteral("checksum_source")] = checksumSource;
    o[QStringLiteral("bytes_done")] = double(bytesDone);
    o[QStringLiteral("etag")] = etag;
    o[QStringLiteral("last_modified")] = lastModified;
    return writeAtomically(path, QJsonDocument(o).toJson(QJsonDocument::Indented), error);
}

std::optional<DownloadState> DownloadState::load(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return std::nullopt;
    const QJsonDocument doc = QJsonDocument::fromJson(file.read(1 << 20));
    if (!doc.isObject()) return std::nullopt;
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("version")).toInt() != 1) return std::nullopt;
    DownloadState s;
    s.url = QUrl(o.value(QStringLiteral("url")).toString(), QUrl::StrictMode);
    if (!s.url.isValid()) return std::nullopt;
    s.expectedSize = qint64(o.value(QStringLiteral("expected_size")).toDouble(-1));
    s.checksumAlgorithm = o.value(QStringLiteral("checksum_algorithm")).toString();
    s.checksum = o.value(QStringLiteral("checksum")).toString();
    s.checksumSource = o.value(QStringLiteral("checksum_source")).toString();
    s.bytesDone = qint64(o.value(QStringLiteral("bytes_done")).toDouble(0));
    s.etag = o.value(QStringLiteral("etag")).toString();
    s.lastModified = o.value(QStringLiteral("last_modified")).toString();
    return s;
}

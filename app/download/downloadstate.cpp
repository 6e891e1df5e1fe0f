#include "downloadstate.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

bool DownloadState::save(const QString& path, QString* error) const {
    QJsonObject o;
    o[QStringLiteral("version")] = 1;
    o[QStringLiteral("url")] = url.toString(QUrl::FullyEncoded);
    o[QStringLiteral("expected_size")] = double(expectedSize);
    o[QStringLiteral("checksum_algorithm")] = checksumAlgorithm;
    o[QStringLiteral("checksum")] = checksum;
    o[QStringLiteral("bytes_done")] = double(bytesDone);
    o[QStringLiteral("etag")] = etag;
    o[QStringLiteral("last_modified")] = lastModified;
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(QJsonDocument(o).toJson(QJsonDocument::Indented)) < 0 || !file.commit()) {
        if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
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
    s.bytesDone = qint64(o.value(QStringLiteral("bytes_done")).toDouble(0));
    s.etag = o.value(QStringLiteral("etag")).toString();
    s.lastModified = o.value(QStringLiteral("last_modified")).toString();
    return s;
}

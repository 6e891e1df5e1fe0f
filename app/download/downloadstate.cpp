#include "downloadstate.h"

#include "fetch_rules.h"

// The file's format and its atomic write are fetch_rules' (ember-cli pull reads and writes the
// same files).
bool DownloadState::save(const QString& path, QString* error) const {
    ember::fetch::State s;
    s.url = url.toString(QUrl::FullyEncoded).toStdString();
    s.expected_size = expectedSize;
    s.checksum_algorithm = checksumAlgorithm.toStdString();
    s.checksum = checksum.toStdString();
    s.checksum_source = checksumSource.toStdString();
    s.bytes_done = bytesDone;
    s.etag = etag.toStdString();
    s.last_modified = lastModified.toStdString();
    const ember::Status st = ember::fetch::save_state(path.toStdString(), s);
    if (!st && error) *error = QString::fromStdString(st.error().message);
    return bool(st);
}

std::optional<DownloadState> DownloadState::load(const QString& path) {
    const auto saved = ember::fetch::load_state(path.toStdString());
    if (!saved) return std::nullopt;
    DownloadState s;
    s.url = QUrl(QString::fromStdString(saved->url), QUrl::StrictMode);
    if (!s.url.isValid()) return std::nullopt;
    s.expectedSize = saved->expected_size;
    s.checksumAlgorithm = QString::fromStdString(saved->checksum_algorithm);
    s.checksum = QString::fromStdString(saved->checksum);
    s.checksumSource = QString::fromStdString(saved->checksum_source);
    s.bytesDone = saved->bytes_done;
    s.etag = QString::fromStdString(saved->etag);
    s.lastModified = QString::fromStdString(saved->last_modified);
    return s;
}

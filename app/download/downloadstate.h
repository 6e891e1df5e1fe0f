// The small JSON file kept beside NAME.part (NAME.part.json): what is being downloaded and how far
// it got, so that a later Downloader (after a crash or restart) can resume with a Range request.
#pragma once

#include <QString>
#include <QUrl>

#include <optional>

class DownloadState {
public:
    QUrl url;
    qint64 expectedSize = -1;   // -1: unknown
    QString checksumAlgorithm;  // "sha256", "md5" or empty
    QString checksum;           // lower-case hex
    QString checksumSource;     // "given" (caller, catalog) or "server" (X-Linked-ETag)
    qint64 bytesDone = 0;       // informative; the .part file's size is what counts
    QString etag;               // validators of the response that served the bytes (If-Range)
    QString lastModified;

    // Written atomically (a temporary file, fsync, rename over the old one), so that neither a
    // crash nor a full disk leaves a half-written or empty state: on failure the previous state
    // stays as it was.
    bool save(const QString& path, QString* error) const;
    // nullopt when the file is missing or is not a state file.
    static std::optional<DownloadState> load(const QString& path);
};

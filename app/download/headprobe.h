// A HEAD request that learns a remote file's size and, on Hugging Face, its sha256.
//
// Hugging Face answers a HEAD on a .../resolve/... URL with a redirect to its CDN that carries
// X-Linked-Size (the file size) and X-Linked-Etag (the quoted sha256 of an LFS file). Those
// headers sit on the redirect itself, so redirects are followed by hand, never downgrading from
// https to http.
#pragma once

#include <QNetworkReply>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QUrl>

class QNetworkAccessManager;

struct RemoteFileInfo {
    bool ok = false;
    bool fatal = false;  // the server answered with an error that a retry will not fix (4xx)
    int httpStatus = 0;
    QString error;
    qint64 size = -1;  // -1: unknown
    QString sha256;    // lower-case hex, empty when the server did not say
    QUrl finalUrl;
};

class HeadProbe : public QObject {
    Q_OBJECT
public:
    explicit HeadProbe(QNetworkAccessManager* nam, QObject* parent = nullptr);
    ~HeadProbe() override;

    void start(const QUrl& url, int timeoutMs);
    void abort();

    // A 64-digit sha256 from an ETag-like header value ("\"abc...\"", W/"..."), else empty.
    static QString sha256FromEtag(const QByteArray& value);

signals:
    void finished(const RemoteFileInfo& info);

private:
    void send(const QUrl& url);
    void onReplyFinished();

    QNetworkAccessManager* m_nam;
    QPointer<QNetworkReply> m_reply;  // owned by the manager, which may go first
    RemoteFileInfo m_info;
    int m_hops = 0;
    int m_timeoutMs = 30000;
};

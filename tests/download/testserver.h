// A small HTTP/1.1 server for the downloader tests, on 127.0.0.1 and an ephemeral port.
//
// Paths:
//   /model.gguf       the data (HEAD, GET, Range: bytes=N-, If-Range against the ETag)
//   /hf/model.gguf    302 to /cdn/model.gguf with X-Linked-Etag (sha256) and X-Linked-Size, as
//                     Hugging Face's resolve URLs do; /cdn/model.gguf serves the data
//   anything else     404
// Behaviours (switchable): cut the connection after N body bytes, stall after N body bytes,
// ignore Range, refuse HEAD, report another sha256 on the redirect, run a hook before a body.
#pragma once

#include <QByteArray>
#include <QList>
#include <QMap>
#include <QObject>
#include <QTcpServer>
#include <QUrl>

#include <functional>

class QTcpSocket;

class TestServer : public QObject {
    Q_OBJECT
public:
    struct Request {
        QByteArray method, path;
        QMap<QByteArray, QByteArray> headers;  // lower-case names
    };

    explicit TestServer(QByteArray data, QObject* parent = nullptr);

    bool listen();
    quint16 port() const { return m_server.serverPort(); }
    QUrl url(const QString& path) const;

    // The next `times` GET responses carrying data close the connection after `bytes` body bytes.
    void setCutAfter(qint64 bytes, int times = 1) {
        m_cutAfter = bytes;
        m_cutsLeft = times;
    }
    void setIgnoreRange(bool ignore) { m_ignoreRange = ignore; }
    // The next `times` requests for the data get this error status (e.g. 503).
    void setFailWith(int status, int times = 1) {
        m_failStatus = status;
        m_failsLeft = times;
    }
    // GET responses stop sending after `bytes` body bytes and keep the connection open.
    void setStallAfter(qint64 bytes) { m_stallAfter = bytes; }
    // HEAD requests get this status (e.g. 405, as some servers do); 0: answered normally.
    void setHeadStatus(int status) { m_headStatus = status; }
    // The sha256 the /hf/ redirect reports in X-Linked-Etag (default: the data's).
    void setLinkedSha256(const QString& hex) { m_linkedSha256 = hex; }
    // Called just before a GET response with data is written (e.g. to fill the disk).
    void setBeforeBody(std::function<void()> hook) { m_beforeBody = std::move(hook); }

    const QByteArray& data() const { return m_data; }
    QString sha256Hex() const;
    QString md5Hex() const;
    const QList<Request>& requests() const { return m_requests; }
    QList<Request> gets() const;
    void clearRequests() { m_requests.clear(); }

    static QByteArray randomData(int bytes, quint32 seed);

private:
    void onNewConnection();
    void onReadyRead(QTcpSocket* socket);
    void respond(QTcpSocket* socket, const Request& request);

    QTcpServer m_server;
    QByteArray m_data;
    QByteArray m_etag = "\"ember-test-v1\"";
    QList<Request> m_requests;
    qint64 m_cutAfter = -1;
    int m_cutsLeft = 0;
    qint64 m_stallAfter = -1;
    int m_failStatus = 0;
    int m_failsLeft = 0;
    bool m_ignoreRange = false;
    int m_headStatus = 0;
    QString m_linkedSha256;
    std::function<void()> m_beforeBody;
};

#include "testserver.h"

#include <QCryptographicHash>
#include <QHostAddress>
#include <QRandomGenerator>
#include <QTcpSocket>

TestServer::TestServer(QByteArray data, QObject* parent)
    : QObject(parent), m_data(std::move(data)) {
    connect(&m_server, &QTcpServer::newConnection, this, &TestServer::onNewConnection);
}

bool TestServer::listen() {
    return m_server.listen(QHostAddress::LocalHost, 0);
}

QUrl TestServer::url(const QString& path) const {
    return QUrl(QStringLiteral("http://127.0.0.1:%1%2").arg(port()).arg(path));
}

QString TestServer::sha256Hex() const {
    return QString::fromLatin1(
        QCryptographicHash::hash(m_data, QCryptographicHash::Sha256).toHex());
}

QString TestServer::md5Hex() const {
    return QString::fromLatin1(QCryptographicHash::hash(m_data, QCryptographicHash::Md5).toHex());
}

QList<TestServer::Request> TestServer::gets() const {
    QList<Request> out;
    for (const auto& r : m_requests)
        if (r.method == "GET") out.push_back(r);
    return out;
}

QByteArray TestServer::randomData(int bytes, quint32 seed) {
    QRandomGenerator rng(seed);
    QByteArray out(bytes, Qt::Uninitialized);
    rng.fillRange(reinterpret_cast<quint32*>(out.data()), bytes / 4);
    for (int i = bytes / 4 * 4; i < bytes; i++) out[i] = char(rng.generate());
    return out;
}

void TestServer::onNewConnection() {
    while (QTcpSocket* socket = m_server.nextPendingConnection()) {
        connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    }
}

void TestServer::onReadyRead(QTcpSocket* socket) {
    QByteArray buffer = socket->property("buffer").toByteArray() + socket->readAll();
    const int end = buffer.indexOf("\r\n\r\n");
    if (end < 0) {
        socket->setProperty("buffer", buffer);
        return;
    }
    socket->setProperty("buffer", QByteArray());
    const QList<QByteArray> lines = buffer.left(end).split('\n');
    const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
    Request request;
    request.method = first.value(0);
    request.path = first.value(1);
    for (int i = 1; i < lines.size(); i++) {
        const int colon = lines[i].indexOf(':');
        if (colon > 0)
            request.headers[lines[i].left(colon).trimmed().toLower()] =
                lines[i].mid(colon + 1).trimmed();
    }
    m_requests.push_back(request);
    respond(socket, request);
}

void TestServer::respond(QTcpSocket* socket, const Request& request) {
    auto reply = [socket](const QByteArray& statusLine, const QByteArray& headers,
                          const QByteArray& body) {
        socket->write("HTTP/1.1 " + statusLine + "\r\n" + headers + "Content-Length: " +
                      QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        socket->disconnectFromHost();
    };
    if (request.method == "HEAD" && m_headStatus != 0) {
        reply(QByteArray::number(m_headStatus) + " Refused", QByteArray(), QByteArray());
        return;
    }
    if (request.path.startsWith("/hf/")) {
        reply("302 Found",
              "Location: /cdn/" + request.path.mid(4) + "\r\nX-Linked-Etag: \"" +
                  (m_linkedSha256.isEmpty() ? sha256Hex() : m_linkedSha256).toLatin1() +
                  "\"\r\nX-Linked-Size: " + QByteArray::number(m_data.size()) + "\r\n",
              QByteArray());
        return;
    }
    if (request.path != "/model.gguf" && request.path != "/cdn/model.gguf") {
        reply("404 Not Found", "Content-Type: text/plain\r\n", "no such file\n");
        return;
    }
    if (m_failsLeft > 0) {
        m_failsLeft--;
        reply(QByteArray::number(m_failStatus) + " Test Failure", QByteArray(), "try later\n");
        return;
    }
    const QByteArray common =
        "ETag: " + m_etag + "\r\n" +
        (m_ignoreRange ? QByteArray() : QByteArray("Accept-Ranges: bytes\r\n"));
    if (request.method == "HEAD") {
        socket->write("HTTP/1.1 200 OK\r\n" + common + "Content-Length: " +
                      QByteArray::number(m_data.size()) + "\r\nConnection: close\r\n\r\n");
        socket->disconnectFromHost();
        return;
    }
    qint64 start = 0;
    const QByteArray range = request.headers.value("range");
    const QByteArray ifRange = request.headers.value("if-range");
    if (!range.isEmpty() && !m_ignoreRange && (ifRange.isEmpty() || ifRange == m_etag)) {
        if (!range.startsWith("bytes=") || !range.endsWith("-")) {
            reply("400 Bad Request", QByteArray(), "unsupported range\n");
            return;
        }
        start = range.mid(6, range.size() - 7).toLongLong();
        if (start >= m_data.size()) {
            reply("416 Range Not Satisfiable",
                  "Content-Range: bytes */" + QByteArray::number(m_data.size()) + "\r\n",
                  QByteArray());
            return;
        }
    }
    QByteArray body = m_data.mid(start);
    QByteArray head =
        start > 0 ? QByteArray("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ") +
                        QByteArray::number(start) + "-" + QByteArray::number(m_data.size() - 1) +
                        "/" + QByteArray::number(m_data.size()) + "\r\n"
                  : QByteArray("HTTP/1.1 200 OK\r\n");
    head += common + "Content-Length: " + QByteArray::number(body.size()) +
            "\r\nConnection: close\r\n\r\n";
    if (m_cutsLeft > 0 && m_cutAfter >= 0 && m_cutAfter < body.size()) {
        m_cutsLeft--;
        body = body.left(m_cutAfter);  // the announced length stays: the client sees a cut
    }
    if (m_beforeBody) m_beforeBody();
    socket->write(head);
    if (m_stallAfter >= 0 && m_stallAfter < body.size()) {
        socket->write(body.left(m_stallAfter));
        return;  // never finishes: the client's own timers have to act
    }
    socket->write(body);
    socket->disconnectFromHost();  // after the buffered body has gone out
}

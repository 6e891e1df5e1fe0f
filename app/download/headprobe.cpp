#include "headprobe.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>

#include "fetch_rules.h"

namespace {
constexpr int kMaxRedirects = ember::fetch::kMaxRedirects;
}

HeadProbe::HeadProbe(QNetworkAccessManager* nam, QObject* parent) : QObject(parent), m_nam(nam) {}

HeadProbe::~HeadProbe() {
    abort();
}

QString HeadProbe::sha256FromEtag(const QByteArray& value) {
    return QString::fromStdString(ember::fetch::sha256_from_etag(value.toStdString()));
}

void HeadProbe::start(const QUrl& url, int timeoutMs) {
    abort();
    m_info = RemoteFileInfo();
    m_hops = 0;
    m_timeoutMs = timeoutMs;
    send(url);
}

void HeadProbe::abort() {
    if (!m_reply) return;
    QNetworkReply* reply = m_reply.data();
    m_reply = nullptr;
    reply->disconnect(this);
    reply->abort();
    reply->deleteLater();
}

void HeadProbe::send(const QUrl& url) {
    QNetworkRequest request(url);
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::ManualRedirectPolicy);
    request.setTransferTimeout(m_timeoutMs);
    request.setRawHeader("Accept-Encoding", "identity");
    m_info.finalUrl = url;
    m_reply = m_nam->head(request);
    connect(m_reply, &QNetworkReply::finished, this, &HeadProbe::onReplyFinished);
}

void HeadProbe::onReplyFinished() {
    QNetworkReply* reply = m_reply.data();
    m_reply = nullptr;
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    m_info.httpStatus = status;

    // The first answer that names the linked file wins: later hops are the CDN's own headers.
    if (m_info.sha256.isEmpty()) m_info.sha256 = sha256FromEtag(reply->rawHeader("X-Linked-Etag"));
    if (m_info.size < 0 && reply->hasRawHeader("X-Linked-Size")) {
        bool ok = false;
        const qint64 size = reply->rawHeader("X-Linked-Size").trimmed().toLongLong(&ok);
        if (ok && size >= 0) m_info.size = size;
    }

    if (status >= 300 && status < 400 && reply->hasRawHeader("Location")) {
        const QUrl next = reply->url().resolved(QUrl::fromEncoded(reply->rawHeader("Location")));
        if (reply->url().scheme() == QLatin1String("https") &&
            next.scheme() != QLatin1String("https")) {
            m_info.error = QStringLiteral("HEAD %1 redirects to the less safe %2")
                               .arg(reply->url().toString(), next.toString());
            m_info.fatal = true;
            emit finished(m_info);
            return;
        }
        if (++m_hops > kMaxRedirects) {
            m_info.error = QStringLiteral("HEAD %1: more than %2 redirects")
                               .arg(reply->url().toString())
                               .arg(kMaxRedirects);
            emit finished(m_info);
            return;
        }
        send(next);
        return;
    }
    if (status >= 200 && status < 300) {
        if (m_info.size < 0) {
            const QVariant length = reply->header(QNetworkRequest::ContentLengthHeader);
            if (length.isValid()) m_info.size = length.toLongLong();
        }
        m_info.ok = true;
    } else if (status != 0) {
        // Only answers that say the file is not there for us; a server that merely dislikes
        // HEAD (405, 501) still gets the GET.
        m_info.fatal = status == 401 || status == 403 || status == 404 || status == 410;
        m_info.error =
            QStringLiteral("HEAD %1: HTTP %2 %3")
                .arg(reply->url().toString())
                .arg(status)
                .arg(reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString());
    } else {
        m_info.error =
            QStringLiteral("HEAD %1: %2").arg(reply->url().toString(), reply->errorString());
    }
    emit finished(m_info);
}

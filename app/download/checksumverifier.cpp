#include "checksumverifier.h"

#include <QCryptographicHash>
#include <QFile>
#include <QMetaObject>

#include "fetch_rules.h"

QString ExpectedChecksum::algorithmName() const {
    switch (algorithm) {
        case Algorithm::Sha256:
            return QStringLiteral("sha256");
        case Algorithm::Md5:
            return QStringLiteral("md5");
        case Algorithm::None:
            break;
    }
    return QString();
}

// The rules (algorithms, digits, the message) are fetch_rules', which ember-cli pull uses too.
ExpectedChecksum ExpectedChecksum::parse(const QString& algorithm, const QString& hex,
                                         QString* error) {
    const auto parsed = ember::fetch::parse_checksum(algorithm.toStdString(), hex.toStdString());
    if (!parsed) {
        if (error) *error = QString::fromStdString(parsed.error().message);
        return {};
    }
    ExpectedChecksum c;
    c.algorithm = parsed->algorithm == ember::fetch::Checksum::Algorithm::Sha256 ? Algorithm::Sha256
                                                                                 : Algorithm::Md5;
    c.hex = QString::fromStdString(parsed->hex);
    return c;
}

ChecksumVerifier::ChecksumVerifier(QObject* parent) : QObject(parent) {}

ChecksumVerifier::~ChecksumVerifier() {
    cancel();
    join();
}

void ChecksumVerifier::cancel() {
    if (m_cancel) m_cancel->store(true);
    ++m_generation;
    m_done = true;
}

void ChecksumVerifier::join() {
    if (m_thread.joinable()) m_thread.join();
}

void ChecksumVerifier::start(const QString& path, const ExpectedChecksum& expected,
                             const ContentCheck& check) {
    cancel();
    join();
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_done = false;
    ChecksumVerifier* owner = this;
    auto cancelFlag = m_cancel;
    const quint64 generation = ++m_generation;
    m_thread = std::thread([owner, cancelFlag, generation, path, expected, check] {
        QString error, actual, problem;
        if (expected.isSet()) {
            QFile file(path);
            if (!file.open(QIODevice::ReadOnly)) {
                error =
                    QStringLiteral("cannot read %1 to verify it: %2").arg(path, file.errorString());
            } else {
                QCryptographicHash hash(expected.algorithm == ExpectedChecksum::Algorithm::Md5
                                            ? QCryptographicHash::Md5
                                            : QCryptographicHash::Sha256);
                QByteArray buffer(4 << 20, Qt::Uninitialized);
                while (!cancelFlag->load()) {
                    const qint64 n = file.read(buffer.data(), buffer.size());
                    if (n < 0) {
                        error =
                            QStringLiteral("error reading %1: %2").arg(path, file.errorString());
                        break;
                    }
                    if (n == 0) break;
                    hash.addData(QByteArrayView(buffer.constData(), n));
                }
                actual = QString::fromLatin1(hash.result().toHex());
            }
        }
        const bool matches = error.isEmpty() && (!expected.isSet() || actual == expected.hex);
        if (matches && check && !cancelFlag->load()) problem = check(path);
        if (cancelFlag->load()) return;  // the owner no longer wants an answer
        // The owner joins this thread before it dies, so it is alive while we post; a posted
        // call is dropped with its receiver if the owner dies before it is delivered.
        QMetaObject::invokeMethod(
            owner,
            [owner, generation, matches, actual, error, problem] {
                if (generation != owner->m_generation) return;  // answer to a cancelled run
                owner->m_done = true;
                emit owner->finished(matches, actual, error, problem);
            },
            Qt::QueuedConnection);
    });
}

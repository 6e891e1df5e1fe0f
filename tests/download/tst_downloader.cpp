// Downloader against a local HTTP server: verification, resume, restart, retries, pause,
// cancel, free space, a disk that fills up, errors.
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

#include "downloader.h"
#include "downloadstate.h"
#include "headprobe.h"
#include "smalldisk.h"
#include "testserver.h"

namespace {
constexpr int kDataSize = 3 * 1024 * 1024 + 123;  // not a multiple of any chunk size
constexpr int kTimeoutMs = 20000;

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool done(const Downloader& d) {
    return d.state() == Downloader::State::Finished || d.state() == Downloader::State::Failed;
}

// Writes zeros to path until the disk is full.
void fillDisk(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) return;
    const QByteArray block(4096, '\0');
    while (f.write(block) > 0) {
    }
}
}  // namespace

class TestDownloader : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<TestServer> m_server;
    QByteArray m_data;

    QString dest() const { return m_dir->filePath(QStringLiteral("model.gguf")); }
    QStringList files() const { return QDir(m_dir->path()).entryList(QDir::Files); }

    std::unique_ptr<Downloader> make(const QString& path = QStringLiteral("/model.gguf")) {
        auto d = std::make_unique<Downloader>();
        d->setUrl(m_server->url(path));
        d->setDestination(dest());
        d->setRetryBaseDelay(10);
        d->setMaxRetries(3);
        d->setTransferTimeout(10000);
        return d;
    }
    void expectSha256(Downloader& d) {
        QVERIFY(d.setChecksum(QStringLiteral("sha256"), m_server->sha256Hex()));
        d.setExpectedSize(m_data.size());
    }
    void waitDone(Downloader& d) { QTRY_VERIFY_WITH_TIMEOUT(done(d), kTimeoutMs); }
    // A .part left by an earlier run for path, holding the first `bytes` of the data with the
    // byte at `flip` changed, and its state (no checksum, no size).
    void writeTamperedPart(const QString& path, qint64 bytes, qint64 flip) {
        QByteArray part = m_data.left(bytes);
        part[flip] = char(part[flip] ^ 0x5a);
        QFile f(Downloader::partPath(dest()));
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(part), bytes);
        f.close();
        DownloadState state;
        state.url = m_server->url(path);
        state.bytesDone = bytes;
        QVERIFY(state.save(Downloader::statePath(dest()), nullptr));
    }
    void expectInstalled(const Downloader& d) {
        QCOMPARE(d.state(), Downloader::State::Finished);
        QVERIFY(readAll(dest()) == m_data);
        QCOMPARE(files(), QStringList{QStringLiteral("model.gguf")});  // no .part, no state
    }

private slots:
    void initTestCase() { m_data = TestServer::randomData(kDataSize, 1234); }
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_server = std::make_unique<TestServer>(m_data);
        QVERIFY(m_server->listen());
    }
    void cleanup() {
        m_server.reset();
        m_dir.reset();
    }

    void fullDownloadSha256() {
        auto d = make();
        expectSha256(*d);
        QSignalSpy progress(d.get(), &Downloader::progressChanged);
        QSignalSpy finished(d.get(), &Downloader::finished);
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(d->verified());
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished[0][0].toString(), dest());
        QVERIFY(!progress.isEmpty());
        QCOMPARE(progress.last()[0].toLongLong(), qint64(m_data.size()));
        QCOMPARE(progress.last()[1].toLongLong(), qint64(m_data.size()));
        QCOMPARE(m_server->gets().size(), 1);
        QVERIFY(!m_server->gets()[0].headers.contains("range"));
        QCOMPARE(m_server->gets()[0].headers.value("accept-encoding"), QByteArray("identity"));
    }

    void fullDownloadMd5() {
        auto d = make();
        QVERIFY(d->setChecksum(QStringLiteral("md5"), m_server->md5Hex().toUpper()));
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(d->verified());
        QCOMPARE(d->checksum().algorithmName(), QStringLiteral("md5"));
    }

    void malformedChecksumIsRejected() {
        auto d = make();
        QString error;
        QVERIFY(!d->setChecksum(QStringLiteral("sha256"), QStringLiteral("abc"), &error));
        QVERIFY(error.contains(QStringLiteral("64 hex digits")));
        QVERIFY(!d->setChecksum(QStringLiteral("sha1"), m_server->sha256Hex(), &error));
    }

    void cutTransferResumesWithRange() {
        const qint64 cut = 1000 * 1000;
        m_server->setCutAfter(cut);
        auto d = make();
        expectSha256(*d);
        QSignalSpy retrying(d.get(), &Downloader::retrying);
        QSignalSpy restarted(d.get(), &Downloader::restartedFromZero);
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QCOMPARE(retrying.count(), 1);
        QCOMPARE(restarted.count(), 0);
        const auto gets = m_server->gets();
        QCOMPARE(gets.size(), 2);
        QCOMPARE(gets[1].headers.value("range"), "bytes=" + QByteArray::number(cut) + "-");
        QCOMPARE(gets[1].headers.value("if-range"), QByteArray("\"ember-test-v1\""));
    }

    void serverIgnoringRangeRestartsCleanly() {
        m_server->setCutAfter(1000 * 1000);
        m_server->setIgnoreRange(true);
        auto d = make();
        expectSha256(*d);
        QSignalSpy restarted(d.get(), &Downloader::restartedFromZero);
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QCOMPARE(restarted.count(), 1);
        const auto gets = m_server->gets();
        QCOMPARE(gets.size(), 2);
        QVERIFY(gets[1].headers.contains("range"));  // asked, and got the whole file (200)
    }

    void wrongChecksumRemovesTheFile() {
        auto d = make();
        QVERIFY(d->setChecksum(QStringLiteral("sha256"), QString(64, QChar('0'))));
        QSignalSpy failed(d.get(), &Downloader::failed);
        d->start();
        waitDone(*d);
        QCOMPARE(d->state(), Downloader::State::Failed);
        QCOMPARE(d->error(), Downloader::Error::ChecksumMismatch);
        QVERIFY2(d->errorString().contains(QStringLiteral("checksum mismatch")),
                 qPrintable(d->errorString()));
        QVERIFY(d->errorString().contains(m_server->sha256Hex()));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(files(), QStringList());
    }

    void notFoundLeavesNothing_data() {
        QTest::addColumn<bool>("probe");
        QTest::newRow("GET") << false;
        QTest::newRow("HEAD first") << true;
    }
    void notFoundLeavesNothing() {
        QFETCH(bool, probe);
        auto d = make(QStringLiteral("/missing.gguf"));
        if (!probe) expectSha256(*d);
        d->start();
        waitDone(*d);
        QCOMPARE(d->state(), Downloader::State::Failed);
        QCOMPARE(d->error(), Downloader::Error::HttpError);
        QVERIFY2(d->errorString().contains(QStringLiteral("404")), qPrintable(d->errorString()));
        QVERIFY(d->errorString().contains(QStringLiteral("/missing.gguf")));
        QCOMPARE(m_server->requests().size(), 1);  // not retried
        QCOMPARE(m_server->requests()[0].method, probe ? QByteArray("HEAD") : QByteArray("GET"));
        QCOMPARE(files(), QStringList());
    }

    void refusedConnectionRetriesThenFails() {
        QTcpServer closed;
        QVERIFY(closed.listen(QHostAddress::LocalHost, 0));
        const quint16 port = closed.serverPort();
        closed.close();  // nothing listens there now
        auto d = make();
        d->setUrl(QUrl(QStringLiteral("http://127.0.0.1:%1/model.gguf").arg(port)));
        expectSha256(*d);
        d->setMaxRetries(2);
        QSignalSpy retrying(d.get(), &Downloader::retrying);
        d->start();
        waitDone(*d);
        QCOMPARE(d->state(), Downloader::State::Failed);
        QCOMPARE(d->error(), Downloader::Error::NetworkError);
        QVERIFY2(d->errorString().contains(QStringLiteral("refused"), Qt::CaseInsensitive),
                 qPrintable(d->errorString()));
        QCOMPARE(retrying.count(), 2);
        QCOMPARE(retrying[0][1].toInt(), 10);  // exponential backoff from the base delay
        QCOMPARE(retrying[1][1].toInt(), 20);
        QCOMPARE(files(), QStringList());  // nothing arrived, so nothing is kept
    }

    void serverErrorsAreRetried() {
        m_server->setFailWith(503, 2);
        auto d = make();
        expectSha256(*d);
        QSignalSpy retrying(d.get(), &Downloader::retrying);
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QCOMPARE(retrying.count(), 2);
        QVERIFY(retrying[0][2].toString().contains(QStringLiteral("HTTP 503")));

        QFile::remove(dest());
        m_server->setFailWith(500, 100);  // never recovers
        auto again = make();
        expectSha256(*again);
        again->start();
        waitDone(*again);
        QCOMPARE(again->error(), Downloader::Error::HttpError);
        QVERIFY2(again->errorString().contains(QStringLiteral("HTTP 500")) &&
                     again->errorString().contains(QStringLiteral("gave up after 3 retries")),
                 qPrintable(again->errorString()));
        QCOMPARE(files(), QStringList());
    }

    void pauseThenResume() {
        m_server->setStallAfter(700 * 1000);  // stands still until paused
        auto d = make();
        expectSha256(*d);
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->bytesReceived(), qint64(700 * 1000), kTimeoutMs);
        m_server->setStallAfter(-1);
        d->pause();
        QCOMPARE(d->state(), Downloader::State::Paused);
        const qint64 paused = d->bytesReceived();
        QVERIFY(paused < m_data.size());
        QCOMPARE(QFileInfo(Downloader::partPath(dest())).size(), paused);
        QVERIFY(QFileInfo::exists(Downloader::statePath(dest())));
        QVERIFY(!QFileInfo::exists(dest()));
        QTest::qWait(100);
        QCOMPARE(d->bytesReceived(), paused);
        QCOMPARE(QFileInfo(Downloader::partPath(dest())).size(), paused);

        d->resume();
        waitDone(*d);
        expectInstalled(*d);
        const auto gets = m_server->gets();
        QCOMPARE(gets.size(), 2);
        QCOMPARE(gets[1].headers.value("range"), "bytes=" + QByteArray::number(paused) + "-");
    }

    void newDownloaderResumesFromPart() {
        m_server->setStallAfter(1100 * 1000);
        auto first = make();
        expectSha256(*first);
        first->start();
        QTRY_COMPARE_WITH_TIMEOUT(first->bytesReceived(), qint64(1100 * 1000), kTimeoutMs);
        first.reset();  // the app quits mid-download
        const qint64 kept = QFileInfo(Downloader::partPath(dest())).size();
        QVERIFY(kept > 0 && kept < m_data.size());
        const auto state = DownloadState::load(Downloader::statePath(dest()));
        QVERIFY(state.has_value());
        QCOMPARE(state->url, m_server->url(QStringLiteral("/model.gguf")));
        QCOMPARE(state->checksum, m_server->sha256Hex());

        m_server->setStallAfter(-1);
        auto second = make();  // no checksum or size given: both come from the state file
        second->setProbeWithHead(false);
        second->start();
        waitDone(*second);
        expectInstalled(*second);
        QVERIFY(second->verified());
        const auto gets = m_server->gets();
        QCOMPARE(gets.size(), 2);
        QCOMPARE(gets[1].headers.value("range"), "bytes=" + QByteArray::number(kept) + "-");
    }

    void leftoverOfAnotherUrlIsDiscarded() {
        QFile part(Downloader::partPath(dest()));
        QVERIFY(part.open(QIODevice::WriteOnly));
        part.write(QByteArray(1000, 'x'));
        part.close();
        DownloadState other;
        other.url = QUrl(QStringLiteral("http://example.invalid/other.gguf"));
        QVERIFY(other.save(Downloader::statePath(dest()), nullptr));
        auto d = make();
        expectSha256(*d);
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(!m_server->gets()[0].headers.contains("range"));
    }

    void reportsSpeedAndEta() {
        m_server->setStallAfter(512 * 1024);  // in the middle long enough for a speed sample
        auto d = make();
        expectSha256(*d);
        d->setTransferTimeout(1500);  // then the stall times out and a retry finishes the file
        connect(d.get(), &Downloader::retrying, this, [this] { m_server->setStallAfter(-1); });
        QSignalSpy speed(d.get(), &Downloader::speedChanged);
        d->start();
        QTRY_VERIFY_WITH_TIMEOUT(d->speed() > 0 || done(*d), kTimeoutMs);
        QVERIFY(d->speed() > 0);
        QVERIFY(d->etaSeconds() >= 0);
        QVERIFY(d->progress() > 0 && d->progress() < 1);
        QVERIFY(!speed.isEmpty());
        waitDone(*d);
        expectInstalled(*d);
        QCOMPARE(d->speed(), 0.0);  // idle once finished
        QCOMPARE(d->progress(), 1.0);
    }

    void cancelRemovesPart() {
        m_server->setStallAfter(256 * 1024);
        auto d = make();
        expectSha256(*d);
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->bytesReceived(), qint64(256 * 1024), kTimeoutMs);
        d->cancel();
        QCOMPARE(d->state(), Downloader::State::Cancelled);
        QCOMPARE(files(), QStringList());
        QTest::qWait(50);
        QCOMPARE(files(), QStringList());
    }

    void insufficientSpaceIsRefusedBeforeStarting() {
        auto d = make();
        expectSha256(*d);
        QString askedFor;
        d->setFreeSpaceFunction([&](const QString& dir) {
            askedFor = dir;
            return qint64(m_data.size());  // the file fits, the margin does not
        });
        d->setFreeSpaceMargin(1 << 20);
        d->start();
        QCOMPARE(d->state(), Downloader::State::Failed);
        QCOMPARE(d->error(), Downloader::Error::InsufficientSpace);
        QVERIFY2(d->errorString().contains(QStringLiteral("not enough disk space")),
                 qPrintable(d->errorString()));
        QCOMPARE(QDir(askedFor).absolutePath(), QDir(m_dir->path()).absolutePath());
        QTest::qWait(50);
        QCOMPARE(m_server->requests().size(), 0);
        QCOMPARE(files(), QStringList());
    }

    void runningOutOfSpaceStopsAndKeepsPart() {
        m_server->setStallAfter(256 * 1024);  // the transfer cannot end before the check runs
        auto d = make();
        expectSha256(*d);
        bool full = false;
        d->setFreeSpaceFunction(
            [&](const QString&) { return full ? qint64(1000) : qint64(1) << 40; });
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->bytesReceived(), qint64(256 * 1024), kTimeoutMs);
        full = true;  // the periodic check (every second) notices
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::InsufficientSpace);
        QCOMPARE(QFileInfo(Downloader::partPath(dest())).size(), qint64(256 * 1024));  // resumable
        QVERIFY(QFileInfo::exists(Downloader::statePath(dest())));
        QVERIFY(!QFileInfo::exists(dest()));
    }

    void stalledTransferTimesOutAndResumes() {
        m_server->setStallAfter(300 * 1000);
        auto d = make();
        expectSha256(*d);
        d->setTransferTimeout(300);
        QSignalSpy retrying(d.get(), &Downloader::retrying);
        // The retry goes out after this signal, to a server that no longer stalls.
        connect(d.get(), &Downloader::retrying, this, [this] { m_server->setStallAfter(-1); });
        d->start();
        waitDone(*d);
        QCOMPARE(retrying.count(), 1);
        expectInstalled(*d);
        QCOMPARE(m_server->gets().last().headers.value("range"), QByteArray("bytes=300000-"));
    }

    void huggingFaceHeadGivesSizeAndSha256() {
        auto d = make(QStringLiteral("/hf/model.gguf"));
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(d->verified());
        QCOMPARE(d->checksum().hex, m_server->sha256Hex());
        QCOMPARE(d->expectedSize(), qint64(m_data.size()));
        const auto& requests = m_server->requests();
        QVERIFY(requests.size() >= 3);
        QCOMPARE(requests[0].method, QByteArray("HEAD"));
        QCOMPARE(requests[0].path, QByteArray("/hf/model.gguf"));
        QCOMPARE(m_server->gets().last().path, QByteArray("/cdn/model.gguf"));  // redirect followed
    }

    void huggingFaceSizeDisagreementIsRefused() {
        // X-Linked-Size on the redirect disagrees with the catalog: refused before any GET.
        auto d = make(QStringLiteral("/hf/model.gguf"));
        d->setExpectedSize(m_data.size() + 1);
        d->start();
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::SizeMismatch);
        QCOMPARE(m_server->gets().size(), 0);
        QCOMPARE(files(), QStringList());
    }

    void sha256OnTheGetRedirectIsVerified() {
        // The server refuses HEAD: the sha256 comes from the GET's own redirect.
        m_server->setHeadStatus(405);
        auto d = make(QStringLiteral("/hf/model.gguf"));
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(d->verified());
        QCOMPARE(d->checksumSource(), Downloader::ChecksumSource::Server);
        QCOMPARE(d->checksum().hex, m_server->sha256Hex());
        QCOMPARE(d->checksSummary(),
                 QStringLiteral("size %1 bytes as the server announced, sha256 checksum reported "
                                "by the server")
                     .arg(m_data.size()));
        QCOMPARE(m_server->gets().last().path, QByteArray("/cdn/model.gguf"));
    }

    void tamperedPartFailsTheServersSha256() {
        // Resumed without a checksum of its own: the server's sha256 (on the GET's redirect)
        // finds the changed byte, and nothing reaches the final name.
        const qint64 kept = 1000 * 1000;
        writeTamperedPart(QStringLiteral("/hf/model.gguf"), kept, 12345);
        m_server->setHeadStatus(405);
        auto d = make(QStringLiteral("/hf/model.gguf"));
        d->start();
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::ChecksumMismatch);
        QVERIFY2(d->errorString().contains(QStringLiteral("as the server reports")),
                 qPrintable(d->errorString()));
        QCOMPARE(files(), QStringList());
        QCOMPARE(m_server->gets().last().headers.value("range"),
                 "bytes=" + QByteArray::number(kept) + "-");  // it was resumed
    }

    void givenSha256DisagreeingWithTheServersIsRefused() {
        m_server->setLinkedSha256(QString(64, QChar('0')));
        auto d = make(QStringLiteral("/hf/model.gguf"));
        expectSha256(*d);  // size and checksum known: no HEAD, the GET's redirect tells
        d->start();
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::ChecksumMismatch);
        QVERIFY2(d->errorString().contains(QStringLiteral("the server reports sha256")),
                 qPrintable(d->errorString()));
        QCOMPARE(m_server->gets().size(), 1);  // the redirect only: no byte was fetched
        QCOMPARE(files(), QStringList());
    }

    void tamperedPartFailsTheContentCheck() {
        // No checksum anywhere: the content check (the app's is the GGUF header) refuses it.
        writeTamperedPart(QStringLiteral("/model.gguf"), 1000 * 1000, 2);
        auto d = make();
        const QByteArray head = m_data.left(16);
        d->setContentCheck(QStringLiteral("test header"), [head](const QString& path) {
            QFile f(path);
            if (!f.open(QIODevice::ReadOnly)) return f.errorString();
            return f.read(16) == head ? QString() : QStringLiteral("the header is wrong");
        });
        d->start();
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::InvalidFile);
        QVERIFY2(d->errorString().contains(QStringLiteral("failed the test header check")) &&
                     d->errorString().contains(QStringLiteral("the header is wrong")),
                 qPrintable(d->errorString()));
        QCOMPARE(files(), QStringList());
    }

    void checksSummarySaysWhatWasChecked() {
        auto d = make();
        d->setContentCheck(QStringLiteral("GGUF header"), [](const QString&) { return QString(); });
        d->start();
        waitDone(*d);
        expectInstalled(*d);
        QVERIFY(!d->verified());
        QCOMPARE(d->checksSummary(),
                 QStringLiteral("size %1 bytes as the server announced, no checksum known, GGUF "
                                "header")
                     .arg(m_data.size()));
    }

    void diskFullKeepsTheBytesAndTheStateAndResumes() {
        SmallDisk disk;
        const QString why = disk.mount(m_dir->path(), "1m");
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        auto d = make();
        expectSha256(*d);
        // The disk fills up unseen (its free space is unknown), so a write hits the full disk.
        d->setFreeSpaceFunction([](const QString&) { return qint64(-1); });
        d->start();
        waitDone(*d);
        QCOMPARE(d->error(), Downloader::Error::InsufficientSpace);
        QVERIFY2(d->errorString().startsWith(QStringLiteral("disk full: ")) &&
                     d->errorString().contains(QStringLiteral("0 B free in ")) &&
                     !d->errorString().contains(QStringLiteral("Unknown error")),
                 qPrintable(d->errorString()));
        const qint64 kept = QFileInfo(Downloader::partPath(dest())).size();
        QVERIFY2(kept > 500 * 1000 && kept < m_data.size(), qPrintable(QString::number(kept)));
        QCOMPARE(d->bytesReceived(), kept);
        const auto state = DownloadState::load(Downloader::statePath(dest()));
        QVERIFY(state.has_value());
        QCOMPARE(state->url, m_server->url(QStringLiteral("/model.gguf")));
        QCOMPARE(state->checksum, m_server->sha256Hex());
        d.reset();

        // Space again: a new run continues from the bytes on disk.
        QVERIFY(disk.resize("8m"));
        auto again = make();  // checksum and size from the state
        again->setFreeSpaceMargin(0);
        again->start();
        waitDone(*again);
        expectInstalled(*again);
        QVERIFY(again->verified());
        QCOMPARE(m_server->gets().last().headers.value("range"),
                 "bytes=" + QByteArray::number(kept) + "-");
    }

    void stateIsNotEmptiedByAFullDisk() {
        SmallDisk disk;
        const QString why = disk.mount(m_dir->path(), "64k");
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        const QString path = Downloader::statePath(dest());
        DownloadState s;
        s.url = m_server->url(QStringLiteral("/model.gguf"));
        s.bytesDone = 1;
        QVERIFY(s.save(path, nullptr));
        fillDisk(m_dir->filePath(QStringLiteral("filler")));
        s.bytesDone = 2;
        QString error;
        QVERIFY(!s.save(path, &error));
        QVERIFY2(error.contains(QStringLiteral("No space left")), qPrintable(error));
        const auto kept = DownloadState::load(path);
        QVERIFY(kept.has_value());  // the previous state, whole
        QCOMPARE(kept->bytesDone, qint64(1));
        QCOMPARE(files(),
                 (QStringList{QStringLiteral("filler"), QStringLiteral("model.gguf.part.json")}));
    }

    void existingDestinationIsNotOverwritten() {
        QFile f(dest());
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("mine");
        f.close();
        auto d = make();
        expectSha256(*d);
        d->start();
        QCOMPARE(d->error(), Downloader::Error::FileExists);
        QCOMPARE(readAll(dest()), QByteArray("mine"));
        QCOMPARE(m_server->requests().size(), 0);
    }

    void etagParsing() {
        const QString sha = m_server->sha256Hex();
        QCOMPARE(HeadProbe::sha256FromEtag(("\"" + sha + "\"").toLatin1()), sha);
        QCOMPARE(HeadProbe::sha256FromEtag(("W/\"" + sha.toUpper() + "\"").toLatin1()), sha);
        QCOMPARE(HeadProbe::sha256FromEtag("\"0123abcd\""),
                 QString());  // a git sha1-sized etag is no sha256
    }
};

QTEST_GUILESS_MAIN(TestDownloader)
#include "tst_downloader.moc"

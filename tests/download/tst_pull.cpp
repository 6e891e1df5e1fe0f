// ember-cli pull (a separate process) against this test's HTTP server, serving the tiny
// stories260K model (pull checks the GGUF header of what it downloads).
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "downloader.h"
#include "downloadstate.h"
#include "smalldisk.h"
#include "testserver.h"

namespace {

QString storiesModel() {
    const QByteArray env = qgetenv("EMBER_SHARED_DIR");
    return (env.isEmpty() ? QString(EMBER_SHARED_DIR) : QString::fromLocal8Bit(env)) +
           "/models/stories260K.gguf";
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestPull : public QObject {
    Q_OBJECT

private:
    struct Run {
        int exitCode = -1;
        QString out, err;
    };

    // Runs ember-cli while this process's event loop keeps serving.
    Run pull(const QStringList& args) {
        QProcess p;
        p.setProgram(QStringLiteral(EMBER_CLI_PATH));
        p.setArguments(QStringList{QStringLiteral("pull")} + args);
        QSignalSpy finished(&p, &QProcess::finished);
        p.start();
        if (!p.waitForStarted(10000)) return {};
        if (!finished.wait(60000)) {
            p.kill();
            p.waitForFinished();
            return {};
        }
        Run r;
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = QString::fromUtf8(p.readAllStandardOutput());
        r.err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }

    QByteArray m_data;

private slots:
    void initTestCase() {
        m_data = readAll(storiesModel());
        QVERIFY2(m_data.size() > 1000 * 1000, qPrintable(storiesModel()));
    }

    // A .part from an earlier run of the first `bytes` of the model, with `change` written at
    // `at`, and its state (no checksum).
    void writeEarlierPart(const TestServer& server, const QString& path, const QString& dest,
                          qint64 bytes, qint64 at, const QByteArray& change) {
        QByteArray part = m_data.left(bytes);
        part.replace(at, change.size(), change);
        QFile f(Downloader::partPath(dest));
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(part), bytes);
        f.close();
        DownloadState state;
        state.url = server.url(path);
        state.bytesDone = bytes;
        QVERIFY(state.save(Downloader::statePath(dest), nullptr));
    }

    void success() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const Run r =
            pull({server.url(QStringLiteral("/model.gguf")).toString(), QStringLiteral("--sha256"),
                  server.sha256Hex(), QStringLiteral("--dir"), dir.path()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString path = dir.filePath(QStringLiteral("model.gguf"));
        QCOMPARE(r.out.trimmed(), path);
        QVERIFY(r.err.contains(QStringLiteral("sha256 verified")));
        QVERIFY2(r.err.contains(QStringLiteral("checked: size %1 bytes as the server announced, "
                                               "sha256 checksum, GGUF header\n")
                                    .arg(m_data.size())),
                 qPrintable(r.err));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll() == m_data);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files),
                 QStringList{QStringLiteral("model.gguf")});
    }

    void successWithMd5AfterACut() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        server.setCutAfter(700 * 1000);
        QTemporaryDir dir;
        const Run r =
            pull({server.url(QStringLiteral("/model.gguf")).toString(), QStringLiteral("--md5"),
                  server.md5Hex(), QStringLiteral("--dir"), dir.path()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("retry 1")), qPrintable(r.err));
        QFile f(dir.filePath(QStringLiteral("model.gguf")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll() == m_data);
        QCOMPARE(server.gets().last().headers.value("range"), QByteArray("bytes=700000-"));
    }

    void wrongSha256() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const Run r =
            pull({server.url(QStringLiteral("/model.gguf")).toString(), QStringLiteral("--sha256"),
                  QString(64, QChar('1')), QStringLiteral("--dir"), dir.path()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("checksum mismatch")), qPrintable(r.err));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
    }

    void withoutChecksumSaysWhatWasChecked() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const Run r = pull({server.url(QStringLiteral("/model.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("checked: size %1 bytes as the server announced, "
                                               "no checksum known, GGUF header\n")
                                    .arg(m_data.size())) &&
                     r.err.contains(QStringLiteral("no checksum is known")),
                 qPrintable(r.err));
        QCOMPARE(readAll(dir.filePath(QStringLiteral("model.gguf"))), m_data);
    }

    void usesTheSha256OnTheServersRedirect() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        server.setHeadStatus(405);  // only the GET's redirect says it
        QTemporaryDir dir;
        const Run r = pull({server.url(QStringLiteral("/hf/model.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("sha256 checksum reported by the server")),
                 qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("sha256 verified")), qPrintable(r.err));
    }

    void tamperedPartIsNotInstalled() {
        // An earlier run's .part whose header was changed: resumed, then refused by the GGUF
        // check (there is no checksum to compare), and removed.
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const QString dest = dir.filePath(QStringLiteral("model.gguf"));
        writeEarlierPart(server, QStringLiteral("/model.gguf"), dest, 600 * 1000, 0, "GGUX");
        const Run r = pull({server.url(QStringLiteral("/model.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("failed the GGUF header check")) &&
                     r.err.contains(QStringLiteral("not a GGUF file")),
                 qPrintable(r.err));
        QCOMPARE(server.gets().last().headers.value("range"), QByteArray("bytes=600000-"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
    }

    void tamperedPartFailsTheServersSha256() {
        // A change in the tensor data passes the header check; the server's sha256 catches it.
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const QString dest = dir.filePath(QStringLiteral("model.gguf"));
        writeEarlierPart(server, QStringLiteral("/hf/model.gguf"), dest, 600 * 1000, 500 * 1000,
                         "tampered");
        const Run r = pull({server.url(QStringLiteral("/hf/model.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("checksum mismatch")), qPrintable(r.err));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
    }

    void notAModelIsNotInstalled() {
        TestServer server(TestServer::randomData(300 * 1000, 7));
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const Run r = pull({server.url(QStringLiteral("/model.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("not a GGUF file")), qPrintable(r.err));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
    }

    void diskFullThenTheSameCommandResumes() {
        QTemporaryDir dir;
        SmallDisk disk;
        const QString why = disk.mount(dir.path(), "70m");  // the 64 MiB margin + the model
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        TestServer server(m_data);
        QVERIFY(server.listen());
        // Once the transfer starts, something else fills the disk up to 300 KB short.
        const QString filler = dir.filePath(QStringLiteral("filler"));
        server.setBeforeBody([filler] {
            QFile f(filler);
            if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) return;
            const QByteArray block(64 * 1024, '\0');
            while (f.write(block) > 0) {
            }
            f.resize(std::max<qint64>(0, f.size() - 300 * 1000));
        });
        const QStringList args{server.url(QStringLiteral("/model.gguf")).toString(),
                               QStringLiteral("--dir"), dir.path()};
        const Run full = pull(args);
        QCOMPARE(full.exitCode, 1);
        // The write that hit the full disk, or the check of the free space each second.
        QVERIFY2((full.err.contains(QStringLiteral("disk full: ")) ||
                  full.err.contains(QStringLiteral("not enough disk space"))) &&
                     full.err.contains(QStringLiteral(" free")) &&
                     full.err.contains(QStringLiteral("run the same command again to resume")) &&
                     !full.err.contains(QStringLiteral("Unknown error")),
                 qPrintable(full.err));
        const QString part = Downloader::partPath(dir.filePath(QStringLiteral("model.gguf")));
        const qint64 kept = QFileInfo(part).size();
        QVERIFY2(kept > 0 && kept < m_data.size(), qPrintable(QString::number(kept)));
        QVERIFY(DownloadState::load(Downloader::statePath(dir.filePath("model.gguf"))));

        server.setBeforeBody({});
        QVERIFY(QFile::remove(filler));
        const Run again = pull(args);
        QVERIFY2(again.exitCode == 0, qPrintable(again.err));
        QCOMPARE(server.gets().last().headers.value("range"),
                 "bytes=" + QByteArray::number(kept) + "-");
        QCOMPARE(readAll(dir.filePath(QStringLiteral("model.gguf"))), m_data);
    }

    void notFound() {
        TestServer server(m_data);
        QVERIFY(server.listen());
        QTemporaryDir dir;
        const Run r = pull({server.url(QStringLiteral("/missing.gguf")).toString(),
                            QStringLiteral("--dir"), dir.path()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("HTTP 404")), qPrintable(r.err));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
    }

    void badArguments() {
        QCOMPARE(pull({}).exitCode, 1);
        QCOMPARE(pull({QStringLiteral("https://example.org/x.gguf"), QStringLiteral("--sha256"),
                       QStringLiteral("xyz")})
                     .exitCode,
                 1);
        const Run unknown = pull({QStringLiteral("no-such-model")});
        QCOMPARE(unknown.exitCode, 1);
        QVERIFY(unknown.err.contains(QStringLiteral("catalog")));
        const Run list = pull({QStringLiteral("--list")});
        QCOMPARE(list.exitCode, 0);
        QVERIFY(list.out.contains(QStringLiteral("llama-3.2-1b-instruct")));
        // Every catalog entry runs (Qwen 2 included): none is listed as unsupported.
        QVERIFY(list.out.contains(QStringLiteral("qwen2-1.5b-instruct")));
        QVERIFY2(!list.out.contains(QStringLiteral("unsupported")), qPrintable(list.out));
    }
};

QTEST_GUILESS_MAIN(TestPull)
#include "tst_pull.moc"

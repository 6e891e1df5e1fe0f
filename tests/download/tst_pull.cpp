// ember-cli pull (a separate process) against this test's HTTP server.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "testserver.h"

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
    void initTestCase() { m_data = TestServer::randomData(2 * 1024 * 1024 + 7, 99); }

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
        const Run unsupported = pull({QStringLiteral("qwen2-1.5b-instruct")});
        QCOMPARE(unsupported.exitCode, 1);
        QVERIFY2(unsupported.err.contains(QStringLiteral("architecture qwen2")),
                 qPrintable(unsupported.err));
        const Run list = pull({QStringLiteral("--list")});
        QCOMPARE(list.exitCode, 0);
        QVERIFY(list.out.contains(QStringLiteral("llama-3.2-1b-instruct")));
    }
};

QTEST_GUILESS_MAIN(TestPull)
#include "tst_pull.moc"

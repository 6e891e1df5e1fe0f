// ModelLibrary over the real engine: GGUF headers of installed models read with the engine's
// reader, fit estimates from ember::estimate_fit, and downloads from a local HTTP server
// (progress, checksum and disk-space errors, a file that is no model, a disk that fills up, pause,
// and resuming a .part at the next start).
#include <QCryptographicHash>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ember/ember.h"
#include "embermodelinspector.h"
#include "gguf/writer.h"
#include "modellibrary.h"
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

int rowOf(InstalledModelModel* m, const QString& fileName) {
    for (int i = 0; i < m->count(); i++)
        if (m->get(i).value("fileName").toString() == fileName) return i;
    return -1;
}

}  // namespace

class TestModelLibrary : public QObject {
    Q_OBJECT
    std::unique_ptr<QTemporaryDir> m_dir;

    std::unique_ptr<ModelLibrary> makeLibrary() {
        auto lib = std::make_unique<ModelLibrary>(std::make_unique<EmberModelInspector>(), nullptr,
                                                  m_dir->path());
        lib->setDownloadSetup([](Downloader* d) {
            d->setMaxRetries(0);
            d->setTransferTimeout(5000);
        });
        return lib;
    }

private slots:
    void initTestCase() { QVERIFY2(QFileInfo::exists(storiesModel()), qPrintable(storiesModel())); }
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
    }

    // The quantization label is the engine's (ember::inspect: the 2-D weights), not one counted
    // again over all tensors: here a large 1-D F32 tensor outweighs the Q8_0 matrix.
    void quantizationLabelIsTheEngines() {
        ember::gguf::Writer w;
        w.set_string("general.architecture", "llama");
        w.add_zeros("blk.0.attn_q.weight", ember::GgmlType::Q8_0, {64, 64});
        w.add_zeros("blk.0.attn_norm.weight", ember::GgmlType::F32, {4096});
        const QString path = m_dir->filePath("mixed.gguf");
        QVERIFY(bool(w.write(path.toStdString())));
        const ModelDetails d = EmberModelInspector().inspect(path);
        QCOMPARE(d.error, QString());
        QCOMPARE(d.quantization, QStringLiteral("Q8_0"));
        QCOMPARE(d.quantization,
                 QString::fromStdString(ember::inspect(path.toStdString())->quantization));
        QCOMPARE(d.quantizationMix, QStringLiteral("F32 79% · Q8_0 21%"));
    }

    void scansTheFolderWithTheGgufReader() {
        QVERIFY(QFile::copy(storiesModel(), m_dir->filePath("stories260K.gguf")));
        // A truncated copy and a file that is no GGUF at all.
        const QByteArray bytes = readAll(storiesModel());
        QFile cut(m_dir->filePath("truncated.gguf"));
        QVERIFY(cut.open(QIODevice::WriteOnly));
        cut.write(bytes.left(bytes.size() / 3));
        cut.close();
        QFile junk(m_dir->filePath("junk.gguf"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("this is not a model\n");
        junk.close();

        auto lib = makeLibrary();
        InstalledModelModel* m = lib->installed();
        QCOMPARE(m->count(), 3);
        QTRY_VERIFY_WITH_TIMEOUT(!m->inspecting(), 30000);

        const QVariantMap s = m->get(rowOf(m, "stories260K.gguf"));
        QCOMPARE(s.value("error").toString(), QString());
        QCOMPARE(s.value("architecture").toString(), QString("llama"));
        QCOMPARE(s.value("quantization").toString(), QString("F32"));
        QCOMPARE(s.value("quantizationMix").toString(), QString("F32 100%"));
        QCOMPARE(s.value("problem").toString(), QString());
        QVERIFY(s.value("contextLength").toInt() > 0);
        // About 260 thousand parameters.
        QVERIFY2(s.value("parameters").toString().endsWith(" K"),
                 qPrintable(s.value("parameters").toString()));
        const int thousands = s.value("parameters").toString().chopped(2).toInt();
        QVERIFY2(thousands > 200 && thousands < 320, qPrintable(s.value("parameters").toString()));
        QCOMPARE(qint64(s.value("size").toDouble()), QFileInfo(storiesModel()).size());
        // Some verdict, phrased as the dialog shows it.
        const QString verdict = s.value("fitVerdict").toString();
        QVERIFY2(verdict == "gpu" || verdict == "cpu" || verdict == "nofit", qPrintable(verdict));
        if (verdict == "cpu") QCOMPARE(s.value("fitText").toString(), QString("CPU only"));
        if (verdict == "gpu") QCOMPARE(s.value("fitText").toString(), QString("fits on GPU"));

        for (const char* name : {"truncated.gguf", "junk.gguf"}) {
            const QVariantMap b = m->get(rowOf(m, name));
            QVERIFY2(!b.value("error").toString().isEmpty(), name);
            QCOMPARE(b.value("fitText").toString(), QString());
            QCOMPARE(b.value("ready").toBool(), true);
        }
        // What the model menu says of them, in plain words (the reader's message is the error).
        QCOMPARE(s.value("errorSummary").toString(), QString());
        QCOMPARE(m->get(rowOf(m, "junk.gguf")).value("errorSummary").toString(),
                 QString("this is not a GGUF model file"));
        // "the file is incomplete: 385.9 KiB of at least 404.3 KiB; download it again"
        const QString summary = m->get(rowOf(m, "truncated.gguf")).value("errorSummary").toString();
        QVERIFY2(summary.startsWith("the file is incomplete: ") &&
                     summary.endsWith("; download it again"),
                 qPrintable(summary));
    }

    void catalogEntriesAreEstimatedFromTheirShape() {
        auto lib = makeLibrary();
        const CatalogModel* c = lib->catalogModel();
        QVERIFY(c->count() > 10);  // the built-in catalog
        for (const CatalogEntry& e : c->entries()) {
            if (!e.supported) continue;
            QVERIFY2(e.shape.isKnown(), qPrintable(e.id));
            QCOMPARE(e.shape.nEmbd % e.shape.nHead, 0u);
            QCOMPARE(e.shape.nHead % e.shape.nHeadKv, 0u);
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            [c] {
                for (int i = 0; i < c->rowCount(); i++) {
                    const QModelIndex idx = c->index(i);
                    if (idx.data(CatalogModel::SupportedRole).toBool() &&
                        idx.data(CatalogModel::FitVerdictRole).toString().isEmpty())
                        return false;
                }
                return true;
            }(),
            30000);
        for (int i = 0; i < c->rowCount(); i++) {
            const QModelIndex idx = c->index(i);
            if (!idx.data(CatalogModel::SupportedRole).toBool()) continue;
            // Known shapes give a real estimate, never "the shape is unknown".
            QVERIFY2(!idx.data(CatalogModel::FitDetailRole).toString().contains("unknown"),
                     qPrintable(idx.data(CatalogModel::FitDetailRole).toString()));
        }
    }

    void downloadsFromAUrlIntoTheFolder() {
        const QByteArray bytes = readAll(storiesModel());
        TestServer server(bytes);
        QVERIFY(server.listen());
        auto lib = makeLibrary();
        QSignalSpy modelsChanged(lib.get(), &ModelLibrary::modelsChanged);
        QVERIFY(lib->addFromUrl(server.url("/model.gguf").toString(), server.sha256Hex()));
        QCOMPARE(lib->downloads()->count(), 1);
        auto* task = lib->downloads()->find("model.gguf");
        QVERIFY(task);
        QTRY_COMPARE_WITH_TIMEOUT(lib->installed()->count(), 1, 30000);
        QCOMPARE(lib->downloads()->count(), 0);
        QVERIFY(lib->infoMessage().contains("downloaded"));
        QVERIFY2(lib->infoMessage().contains(QString("(checked: size %1 bytes as the server "
                                                     "announced, sha256 checksum, GGUF header)")
                                                 .arg(bytes.size())),
                 qPrintable(lib->infoMessage()));
        QVERIFY(!modelsChanged.isEmpty());
        QCOMPARE(readAll(m_dir->filePath("model.gguf")), bytes);
        QTRY_VERIFY_WITH_TIMEOUT(!lib->installed()->inspecting(), 30000);
        QCOMPARE(lib->installed()->get(0).value("architecture").toString(), QString("llama"));
    }

    void checksumMismatchIsReportedAndNothingKept() {
        TestServer server(readAll(storiesModel()));
        QVERIFY(server.listen());
        auto lib = makeLibrary();
        QVERIFY(lib->addFromUrl(server.url("/model.gguf").toString(), QString(64, 'a')));
        auto* task = lib->downloads()->find("model.gguf");
        QVERIFY(task);
        QTRY_COMPARE_WITH_TIMEOUT(task->state(), QString("failed"), 30000);
        QCOMPARE(task->errorKind(), QString("checksum"));
        QVERIFY2(task->statusText().contains("corrupt"), qPrintable(task->statusText()));
        QVERIFY(!QFileInfo::exists(m_dir->filePath("model.gguf")));
        QVERIFY(!QFileInfo::exists(m_dir->filePath("model.gguf.part")));
        QCOMPARE(lib->installed()->count(), 0);
        lib->removeDownload("model.gguf");
        QCOMPARE(lib->downloads()->count(), 0);
    }

    void notAModelIsNeverAnnounced() {
        // No checksum, and the server sends something that is not a GGUF model.
        TestServer server(TestServer::randomData(200 * 1000, 5));
        QVERIFY(server.listen());
        auto lib = makeLibrary();
        QVERIFY(lib->addFromUrl(server.url("/model.gguf").toString()));
        auto* task = lib->downloads()->find("model.gguf");
        QVERIFY(task);
        QTRY_COMPARE_WITH_TIMEOUT(task->state(), QString("failed"), 30000);
        QCOMPARE(task->errorKind(), QString("content"));
        QVERIFY2(task->statusText().startsWith("The downloaded file is not a usable model") &&
                     task->statusText().contains("not a GGUF file"),
                 qPrintable(task->statusText()));
        QVERIFY2(!lib->infoMessage().contains("ready"), qPrintable(lib->infoMessage()));
        QCOMPARE(QDir(m_dir->path()).entryList(QDir::Files), QStringList());
        QCOMPARE(lib->installed()->count(), 0);
    }

    void diskFillingUpIsReportedAndRetryResumes() {
        SmallDisk disk;
        const QString why = disk.mount(m_dir->path(), "1m");  // smaller than the model
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        const QByteArray bytes = readAll(storiesModel());
        TestServer server(bytes);
        QVERIFY(server.listen());
        auto lib = makeLibrary();
        lib->setDownloadSetup([](Downloader* d) {
            d->setMaxRetries(0);
            // Free space unknown before the start: the disk fills up while writing.
            d->setFreeSpaceFunction([](const QString&) { return qint64(-1); });
        });
        QVERIFY(lib->addFromUrl(server.url("/model.gguf").toString(), server.sha256Hex()));
        auto* task = lib->downloads()->find("model.gguf");
        QVERIFY(task);
        QTRY_COMPARE_WITH_TIMEOUT(task->state(), QString("failed"), 30000);
        QCOMPARE(task->errorKind(), QString("space"));
        QVERIFY2(task->statusText().startsWith("The disk is full. Free some space, then resume") &&
                     task->statusText().contains("0 B free in"),
                 qPrintable(task->statusText()));
        QVERIFY(task->canResume());
        const qint64 kept = QFileInfo(m_dir->filePath("model.gguf.part")).size();
        QVERIFY2(kept > 0 && kept < bytes.size(), qPrintable(QString::number(kept)));

        QVERIFY(disk.resize("8m"));
        task->resume();  // the Retry button
        QTRY_COMPARE_WITH_TIMEOUT(lib->installed()->count(), 1, 30000);
        QCOMPARE(readAll(m_dir->filePath("model.gguf")), bytes);
        QCOMPARE(server.gets().last().headers.value("range"),
                 "bytes=" + QByteArray::number(kept) + "-");
        lib.reset();
    }

    void tooLittleDiskSpaceIsReported() {
        TestServer server(readAll(storiesModel()));
        QVERIFY(server.listen());
        auto lib = makeLibrary();
        lib->setDownloadSetup([](Downloader* d) {
            d->setMaxRetries(0);
            d->setFreeSpaceFunction([](const QString&) { return qint64(1024); });
        });
        QVERIFY(lib->addFromUrl(server.url("/model.gguf").toString(), server.sha256Hex()));
        auto* task = lib->downloads()->find("model.gguf");
        QTRY_COMPARE_WITH_TIMEOUT(task->state(), QString("failed"), 30000);
        QCOMPARE(task->errorKind(), QString("space"));
        QVERIFY2(task->errorString().startsWith("Not enough disk space"),
                 qPrintable(task->errorString()));
        QVERIFY(task->canResume());
    }

    void catalogDownloadPausesAndResumesAfterARestart() {
        const QByteArray bytes = readAll(storiesModel());
        TestServer server(bytes);
        QVERIFY(server.listen());
        server.setStallAfter(bytes.size() / 2);
        CatalogEntry e;
        e.id = "stories";
        e.name = "Stories 260K";
        e.filename = "stories.gguf";
        e.url = server.url("/model.gguf");
        e.size = bytes.size();
        e.checksum = ExpectedChecksum::parse("sha256", server.sha256Hex(), nullptr);
        e.supported = true;
        e.architecture = "llama";
        {
            auto lib = makeLibrary();
            lib->setCatalog({e});
            QVERIFY(lib->download("stories"));
            auto* task = lib->downloads()->find("stories");
            QVERIFY(task);
            // The catalog row shows the task while it runs.
            QCOMPARE(
                lib->catalogModel()->index(0).data(CatalogModel::DownloadRole).value<QObject*>(),
                task);
            QTRY_VERIFY_WITH_TIMEOUT(task->progress() >= 0.49, 30000);
            QVERIFY(task->canPause());
            QVERIFY(task->statusText().contains(" of "));
            task->pause();
            QCOMPARE(task->state(), QString("paused"));
            QVERIFY(task->statusText().startsWith("Paused"));
        }
        QVERIFY(QFileInfo::exists(m_dir->filePath("stories.gguf.part")));

        // The next start finds the .part and offers to resume it.
        server.setStallAfter(-1);
        auto lib2 = makeLibrary();
        QCOMPARE(lib2->downloads()->count(), 1);
        auto* task = lib2->downloads()->tasks().first();
        QCOMPARE(task->state(), QString("paused"));
        QVERIFY(task->progress() > 0.4 && task->progress() < 0.6);
        QVERIFY(task->canResume());
        task->resume();
        QTRY_COMPARE_WITH_TIMEOUT(lib2->installed()->count(), 1, 30000);
        QCOMPARE(readAll(m_dir->filePath("stories.gguf")), bytes);
        // Only the second half was requested again.
        const auto gets = server.gets();
        QVERIFY(gets.last().headers.value("range").startsWith("bytes="));
    }
};

QTEST_GUILESS_MAIN(TestModelLibrary)
#include "tst_modellibrary.moc"

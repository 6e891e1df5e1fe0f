// The model dialog's models with a fake inspector: catalog filtering and sorting, fit estimates
// following the settings, the models folder's listing, adding and deleting files.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "fakeinspector.h"
#include "modellibrary.h"
#include "settings.h"

namespace {

CatalogEntry entry(const QString& id, const QString& name, qint64 gib, bool supported = true) {
    CatalogEntry e;
    e.id = id;
    e.name = name;
    e.filename = id + ".gguf";
    e.url = QUrl("https://example.invalid/" + e.filename);
    e.size = gib << 30;
    e.quantization = "Q4_0";
    e.architecture = supported ? "llama" : "qwen2";
    e.description = "A model called " + name;
    e.supported = supported;
    if (!supported) e.reason = "architecture qwen2 is not supported yet";
    e.shape = {16, 2048, 32, 8, 8192, 128256};
    return e;
}

QList<CatalogEntry> testCatalog() {
    return {entry("llama-1b", "Llama 3.2 1B Instruct", 1),
            entry("qwen-2b", "Qwen2 1.5B Instruct", 2, false),
            entry("mistral-7b", "Mistral 7B Instruct", 4),
            entry("llama-8b", "Llama 3 8B Instruct", 5)};
}

QStringList ids(ModelFilterModel* m) {
    QStringList list;
    for (int i = 0; i < m->rowCount(); i++) list << m->get(i).value("modelId").toString();
    return list;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

}  // namespace

class TestModelModels : public QObject {
    Q_OBJECT
    std::shared_ptr<FakeInspector::Log> m_log;
    std::unique_ptr<QTemporaryDir> m_dir;

    std::unique_ptr<ModelLibrary> makeLibrary(Settings* settings = nullptr) {
        auto lib = std::make_unique<ModelLibrary>(std::make_unique<FakeInspector>(m_log), settings,
                                                  m_dir->path());
        lib->setCatalog(testCatalog());
        return lib;
    }
    // Waits until every supported catalog entry has a verdict.
    static bool estimated(ModelLibrary* lib) {
        return QTest::qWaitFor(
            [lib] {
                const CatalogModel* m = lib->catalogModel();
                for (int i = 0; i < m->rowCount(); i++) {
                    const QModelIndex idx = m->index(i);
                    if (idx.data(CatalogModel::SupportedRole).toBool() &&
                        idx.data(CatalogModel::FitVerdictRole).toString().isEmpty())
                        return false;
                }
                return true;
            },
            10000);
    }

private slots:
    void initTestCase() { QCoreApplication::setApplicationName("ember-dialog-test"); }
    void init() {
        m_log = std::make_shared<FakeInspector::Log>();
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
    }

    void estimatesArriveAndUnsupportedHaveNone() {
        auto lib = makeLibrary();
        QVERIFY(estimated(lib.get()));
        ModelFilterModel* c = lib->catalog();
        // The source order, unsupported entries last.
        QCOMPARE(ids(c), QStringList({"llama-1b", "mistral-7b", "llama-8b", "qwen-2b"}));
        QCOMPARE(c->get(0).value("fitVerdict").toString(), QString("gpu"));
        QCOMPARE(c->get(0).value("fitText").toString(), QString("fits on GPU"));
        QCOMPARE(c->get(1).value("fitVerdict").toString(), QString("nofit"));
        QCOMPARE(c->get(1).value("fitText").toString(),
                 QString("does not fit: needs 4.0 GiB, 3.0 GiB free"));
        QCOMPARE(c->get(3).value("supported").toBool(), false);
        QCOMPARE(c->get(3).value("fitVerdict").toString(), QString());
        QCOMPARE(c->get(3).value("reason").toString(),
                 QString("architecture qwen2 is not supported yet"));
        // Unsupported entries are not estimated.
        QVERIFY(!m_log->shapes().contains(2ll << 30));
        QVERIFY(m_log->shapes().contains(4ll << 30));
        QCOMPARE(m_log->lastContext.load(), 2048);
    }

    void searchMatchesEveryWord() {
        auto lib = makeLibrary();
        ModelFilterModel* c = lib->catalog();
        QSignalSpy count(c, &ModelFilterModel::countChanged);
        c->setSearchText("llama");
        QCOMPARE(ids(c), QStringList({"llama-1b", "llama-8b"}));
        QVERIFY(!count.isEmpty());
        c->setSearchText("  LLAMA   8b ");
        QCOMPARE(ids(c), QStringList({"llama-8b"}));
        c->setSearchText("q4_0 instruct");  // quantization and description
        QCOMPARE(c->count(), 4);
        c->setSearchText("gemma");
        QCOMPARE(c->count(), 0);
        c->setSearchText("");
        QCOMPARE(c->count(), 4);
    }

    void sizeAndFitFilters() {
        auto lib = makeLibrary();
        QVERIFY(estimated(lib.get()));
        ModelFilterModel* c = lib->catalog();
        c->setMaxSize(double(4ll << 30));
        QCOMPARE(ids(c), QStringList({"llama-1b", "mistral-7b", "qwen-2b"}));
        c->setMaxSize(0);
        c->setFitsGpuOnly(true);
        QCOMPARE(ids(c), QStringList({"llama-1b"}));
        c->setSearchText("mistral");
        QCOMPARE(c->count(), 0);
        c->setFitsGpuOnly(false);
        QCOMPARE(ids(c), QStringList({"mistral-7b"}));
    }

    void settingsChangesReestimate() {
        Settings settings;
        settings.resetToDefaults();
        auto lib = makeLibrary(&settings);
        QVERIFY(estimated(lib.get()));
        QCOMPARE(lib->deviceLabel(), QString("the best GPU"));
        QSignalSpy changed(lib.get(), &ModelLibrary::estimateSettingsChanged);
        // Every estimate is made again with the new context length.
        settings.setContextLength(8192);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(lib->contextLength(), 8192);
        QVERIFY(estimated(lib.get()));
        QTRY_COMPARE(m_log->lastContext.load(), 8192);

        // CPU chosen: every supported entry says CPU only (the inspector checks the RAM).
        const int before = m_log->estimates.load();
        settings.setDevice("cpu");
        QCOMPARE(lib->deviceLabel(), QString("the CPU"));
        QVERIFY(estimated(lib.get()));
        ModelFilterModel* c = lib->catalog();
        for (int i = 0; i < 3; i++) {
            QCOMPARE(c->get(i).value("fitVerdict").toString(), QString("cpu"));
            QCOMPARE(c->get(i).value("fitText").toString(), QString("CPU only"));
        }
        QVERIFY(m_log->estimates.load() > before);
        c->setFitsGpuOnly(true);
        QCOMPARE(c->count(), 0);
        settings.setDevice("1");
        QCOMPARE(lib->deviceLabel(), QString("GPU 1"));
        settings.resetToDefaults();
    }

    // "Leave N GiB for other programs": the estimates keep it free, from the saved setting on and
    // again when it changes, as the loads do (EngineLoadOptions::gpuMemReserve).
    void gpuReserveSettingReachesTheEstimates() {
        Settings settings;
        settings.resetToDefaults();
        auto verdictOf = [](ModelFilterModel* c, const QString& id) {
            const int i = int(ids(c).indexOf(id));
            return i < 0 ? QString() : c->get(i).value("fitVerdict").toString();
        };
        {
            auto lib = makeLibrary(&settings);
            QVERIFY(estimated(lib.get()));
            QCOMPARE(verdictOf(lib->catalog(), "llama-1b"), QString("gpu"));
            QSignalSpy changed(lib.get(), &ModelLibrary::estimateSettingsChanged);
            settings.setGpuReserveGiB(2);  // of the fake's 3 GiB: a 1 GiB model no longer fits
            QCOMPARE(changed.count(), 1);
            QCOMPARE(m_log->gpuReserve.load(), quint64(2) << 30);
            QCOMPARE(settings.loadOptions("m.gguf").gpuMemReserve, uint64_t(2) << 30);
            QVERIFY(estimated(lib.get()));
            QCOMPARE(verdictOf(lib->catalog(), "llama-1b"), QString("nofit"));
        }
        // Saved: a library made later starts from it.
        m_log->gpuReserve = 0;
        Settings later;
        QCOMPARE(later.gpuReserveGiB(), 2);
        auto lib = makeLibrary(&later);
        QCOMPARE(m_log->gpuReserve.load(), quint64(2) << 30);
        settings.resetToDefaults();
        QCOMPARE(later.gpuReserveGiB(), 0);
    }

    // No usable GPU: the library says why, for "Fits my GPU" to show instead of an empty list;
    // new estimates that find one clear it.
    void saysWhenThereIsNoGpu() {
        m_log->noGpu = true;
        auto lib = makeLibrary();
        QVERIFY(estimated(lib.get()));
        QTRY_COMPARE(lib->gpuProblem(),
                     QString("No usable GPU was found, so models run on the CPU (the Vulkan "
                             "loader found no device)."));
        lib->catalog()->setFitsGpuOnly(true);
        QCOMPARE(lib->catalog()->count(), 0);
        m_log->noGpu = false;
        QSignalSpy changed(lib.get(), &ModelLibrary::gpuProblemChanged);
        lib->refreshEstimates();
        QVERIFY(estimated(lib.get()));
        QCOMPARE(lib->gpuProblem(), QString());
        QVERIFY(changed.count() >= 1);
        QVERIFY(lib->catalog()->count() > 0);
    }

    void listsTheFolderAndMarksInstalledEntries() {
        writeFile(m_dir->filePath("llama-1b.gguf"), "GGUF....");
        writeFile(m_dir->filePath("broken.gguf"), "not a model");
        writeFile(m_dir->filePath("notes.txt"), "GGUF");
        writeFile(m_dir->filePath("partial.gguf.part"), "GGUF");
        auto lib = makeLibrary();
        InstalledModelModel* m = lib->installed();
        QCOMPARE(m->count(), 2);
        QTRY_VERIFY(!m->inspecting());
        QCOMPARE(m->get(0).value("fileName").toString(), QString("broken.gguf"));
        QVERIFY(m->get(0).value("error").toString().contains("not a GGUF file"));
        QCOMPARE(m->get(0).value("fitText").toString(), QString());
        QCOMPARE(m->get(1).value("fileName").toString(), QString("llama-1b.gguf"));
        QCOMPARE(m->get(1).value("error").toString(), QString());
        QCOMPARE(m->get(1).value("architecture").toString(), QString("llama"));
        QCOMPARE(m->get(1).value("fitVerdict").toString(), QString("gpu"));
        const CatalogModel* c = lib->catalogModel();
        QVERIFY(c->index(0).data(CatalogModel::InstalledRole).toBool());
        QVERIFY(!c->index(2).data(CatalogModel::InstalledRole).toBool());
        // An installed entry is not downloaded again.
        QVERIFY(!lib->download("llama-1b"));
        QVERIFY(lib->errorMessage().contains("already installed"));
    }

    void addLocalFileValidatesTheHeader() {
        auto lib = makeLibrary();
        QTemporaryDir outside;
        const QString good = outside.filePath("tiny.gguf"), bad = outside.filePath("bad.gguf");
        writeFile(good, "GGUF model bytes");
        writeFile(bad, "<html>404</html>");
        QSignalSpy modelsChanged(lib.get(), &ModelLibrary::modelsChanged);

        QVERIFY(!lib->addLocalFile(QUrl::fromLocalFile(bad)));
        QVERIFY2(lib->errorMessage().contains("bad.gguf is not a valid GGUF model"),
                 qPrintable(lib->errorMessage()));
        QVERIFY(!QFileInfo::exists(m_dir->filePath("bad.gguf")));
        QVERIFY(!lib->addLocalFile(QUrl::fromLocalFile(outside.filePath("missing.gguf"))));
        QVERIFY(lib->errorMessage().contains("is not a file"));

        lib->dismissError();
        QVERIFY(lib->addLocalFile(QUrl::fromLocalFile(good)));
        QTRY_VERIFY(QFileInfo::exists(m_dir->filePath("tiny.gguf")));
        QTRY_COMPARE(lib->installed()->count(), 1);
        QTRY_VERIFY(lib->infoMessage().startsWith("Added tiny.gguf"));
        QVERIFY(!modelsChanged.isEmpty());
        QCOMPARE(lib->errorMessage(), QString());
        QVERIFY(QFileInfo::exists(good));  // the original stays
        // The same name again is refused.
        QVERIFY(!lib->addLocalFile(QUrl::fromLocalFile(good)));
        QVERIFY(lib->errorMessage().contains("already installed"));
    }

    void deleteOnlyInsideTheFolder() {
        writeFile(m_dir->filePath("a.gguf"), "GGUF");
        auto lib = makeLibrary();
        QCOMPARE(lib->installed()->count(), 1);
        QTemporaryDir outside;
        writeFile(outside.filePath("b.gguf"), "GGUF");
        QVERIFY(!lib->deleteModel(outside.filePath("b.gguf")));
        QVERIFY(QFileInfo::exists(outside.filePath("b.gguf")));
        QVERIFY(!lib->deleteModel(m_dir->filePath("../a.gguf.txt")));
        // The model in use is not deleted under the engine.
        lib->setModelInUse([this] { return m_dir->filePath("a.gguf"); });
        QVERIFY(!lib->deleteModel(m_dir->filePath("a.gguf")));
        QVERIFY(QFileInfo::exists(m_dir->filePath("a.gguf")));
        QVERIFY2(lib->errorMessage().contains("in use"), qPrintable(lib->errorMessage()));
        lib->setModelInUse([] { return QString(); });
        QSignalSpy modelsChanged(lib.get(), &ModelLibrary::modelsChanged);
        QVERIFY(lib->deleteModel(m_dir->filePath("a.gguf")));
        QVERIFY(!QFileInfo::exists(m_dir->filePath("a.gguf")));
        QCOMPARE(lib->installed()->count(), 0);
        QCOMPARE(modelsChanged.count(), 1);
    }

    void addFromUrlChecksItsInput() {
        auto lib = makeLibrary();
        QVERIFY(!lib->addFromUrl("ftp://example.invalid/x.gguf"));
        QVERIFY(lib->errorMessage().contains("not an http or https link"));
        QVERIFY(!lib->addFromUrl("https://example.invalid/readme.html"));
        QVERIFY(lib->errorMessage().contains("must point to a .gguf file"));
        QVERIFY(!lib->addFromUrl("https://example.invalid/x.gguf", "abc123"));
        QVERIFY(lib->errorMessage().contains("SHA-256"));
        QVERIFY(!lib->download("qwen-2b"));
        QVERIFY(lib->errorMessage().contains("not supported yet"));
        QCOMPARE(lib->downloads()->count(), 0);
    }
};

QTEST_GUILESS_MAIN(TestModelModels)
#include "tst_modelmodels.moc"

// resources/catalog.json: loads, built in, agrees with the GPT4All source facts, and offers only
// what the engine runs (every entry: nothing greyed out).
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QTest>

#include "catalog.h"
#include "downloader.h"

class TestCatalog : public QObject {
    Q_OBJECT

private:
    static QString catalogPath() {
        return QStringLiteral(EMBER_SOURCE_DIR "/resources/catalog.json");
    }

    // A one-model catalog: a valid entry with `extra` fields on top.
    static QByteArray minimalEntry(const QJsonObject& extra) {
        QJsonObject e{{"id", "x"},
                      {"name", "X"},
                      {"filename", "x.gguf"},
                      {"url", "https://example.org/x.gguf"},
                      {"size", 10},
                      {"sha256", QString(64, QChar('a'))}};
        for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
        return QJsonDocument(QJsonObject{{"version", 1}, {"models", QJsonArray{e}}}).toJson();
    }

private slots:
    void loadsAndMatchesBuiltin() {
        QString error;
        auto file = Catalog::load(catalogPath(), &error);
        QVERIFY2(file.has_value(), qPrintable(error));
        auto builtin = Catalog::builtin(&error);
        QVERIFY2(builtin.has_value(), qPrintable(error));
        QCOMPARE(builtin->entries().size(), file->entries().size());
        QVERIFY(file->entries().size() >= 10);
        int supported = 0;
        for (const auto& e : file->entries()) {
            if (e.supported) supported++;
            QVERIFY(builtin->find(e.id) != nullptr);
        }
        QVERIFY(supported >= 5);
    }

    void supportedOnlyWhatTheEngineRuns() {
        auto catalog = Catalog::load(catalogPath(), nullptr);
        QVERIFY(catalog.has_value());
        for (const auto& e : catalog->entries()) {
            const bool runs = Catalog::architectureSupported(e.architecture) &&
                              Catalog::quantizationSupported(e.quantization);
            // Every entry runs: nothing in the catalog is greyed out.
            QVERIFY2(runs && e.supported, qPrintable(e.id + ": " + e.architecture));
            QVERIFY2(e.checksum.isSet(), qPrintable(e.id));  // every source entry has md5 or sha256
            QVERIFY(!e.description.isEmpty());
        }
    }

    // Every fact that the source gives is copied exactly, and every source model is listed.
    void agreesWithGpt4allSource() {
        QFile f(QStringLiteral(EMBER_SHARED_DIR "/catalog/gpt4all-models3-subset.json"));
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
        const QJsonArray models = QJsonDocument::fromJson(f.readAll()).object()["models"].toArray();
        QVERIFY(!models.isEmpty());
        auto catalog = Catalog::load(catalogPath(), nullptr);
        QVERIFY(catalog.has_value());
        // The source's files of architectures the engine does not run are left out.
        const QMap<QString, QString> notRun = {{"replit-code-v1_5-3b-newbpe-q4_0.gguf", "mpt"},
                                               {"mpt-7b-chat.gguf4.Q4_0.gguf", "mpt"},
                                               {"mpt-7b-chat-newbpe-q4_0.gguf", "mpt"},
                                               {"gpt4all-falcon-newbpe-q4_0.gguf", "falcon"},
                                               {"starcoder-newbpe-q4_0.gguf", "starcoder"}};
        int listed = 0;
        for (const auto& value : models) {
            const QJsonObject m = value.toObject();
            const CatalogEntry* e = nullptr;
            for (const auto& c : catalog->entries())
                if (c.filename == m["filename"].toString()) e = &c;
            if (notRun.contains(m["filename"].toString())) {
                QVERIFY(!Catalog::architectureSupported(notRun[m["filename"].toString()]));
                QVERIFY2(!e, qPrintable(m["filename"].toString()));
                continue;
            }
            listed++;
            QVERIFY2(e, qPrintable(m["filename"].toString()));
            QCOMPARE(e->name, m["name"].toString());
            QCOMPARE(e->url.toString(), m["url"].toString());
            QCOMPARE(QString::number(e->size), m["filesize"].toString());
            if (m.contains("sha256sum")) {
                QCOMPARE(e->checksum.algorithmName(), QStringLiteral("sha256"));
                QCOMPARE(e->checksum.hex, m["sha256sum"].toString());
            } else {
                QCOMPARE(e->checksum.algorithmName(), QStringLiteral("md5"));
                QCOMPARE(e->checksum.hex, m["md5sum"].toString());
            }
            QCOMPARE(e->quantization, m["quant"].toString().toUpper());
            QCOMPARE(e->parameters, m["parameters"].toString());
            QCOMPARE(e->chatTemplate, m["chatTemplate"].toString());
        }
        QCOMPARE(listed, int(models.size()) - int(notRun.size()));
    }

    void rejectsBadEntries() {
        QString error;
        const QJsonObject llama{
            {"architecture", "llama"}, {"quantization", "Q4_0"}, {"supported", true}};
        QVERIFY2(Catalog::fromJson(minimalEntry(llama), &error).has_value(), qPrintable(error));
        QJsonObject e = llama;
        e["architecture"] = "mpt";  // the engine does not run it
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        QVERIFY(error.contains(QStringLiteral("mpt")));
        e = llama;
        e["quantization"] = "IQ2_XS";
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        e = QJsonObject{{"architecture", "qwen2"}, {"supported", false}};  // no reason
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        QVERIFY(error.contains(QStringLiteral("reason")));
        e = llama;
        e["url"] = "http://example.org/x.gguf";
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        e = llama;
        e["sha256"] = "abc";
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        e = llama;
        e["filename"] = "../x.gguf";
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
        QVERIFY(!Catalog::fromJson("[]", &error).has_value());
    }

    void configuresADownloader() {
        auto catalog = Catalog::load(catalogPath(), nullptr);
        QVERIFY(catalog.has_value());
        const CatalogEntry* e = catalog->find(QStringLiteral("llama-3.2-1b-instruct"));
        QVERIFY(e);
        Downloader d;
        e->configure(&d, QStringLiteral("/models"));
        QCOMPARE(d.url(), e->url);
        QCOMPARE(d.destination(), QStringLiteral("/models/Llama-3.2-1B-Instruct-Q4_0.gguf"));
        QCOMPARE(d.expectedSize(), e->size);
        QCOMPARE(d.checksum().hex, e->checksum.hex);
    }
};

QTEST_GUILESS_MAIN(TestCatalog)
#include "tst_catalog.moc"

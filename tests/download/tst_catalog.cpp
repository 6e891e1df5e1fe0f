// resources/catalog.json: loads, built in, agrees with the GPT4All source facts, and offers only
// what the engine runs (every entry: nothing greyed out).
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QTest>

#include <algorithm>

#include "catalog.h"
#include "downloader.h"
#include "ember/ember.h"
#ifdef EMBER_HAVE_FETCH
#include "fetch_catalog.h"
#endif
#include "quant/types.h"

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

#ifdef EMBER_HAVE_FETCH
    // ember-cli pull reads the same catalog without Qt (fetch_catalog.h): both offer the same
    // files from the same urls with the same sizes and checksums, and the same support.
    void cliCatalogAgrees() {
        QString error;
        auto app = Catalog::builtin(&error);
        QVERIFY2(app.has_value(), qPrintable(error));
        auto cli = ember::fetch::parse_catalog(ember::fetch::builtin_catalog_json());
        QVERIFY2(cli.ok(), cli.ok() ? "" : cli.error().message.c_str());
        QCOMPARE(qsizetype(cli->size()), app->entries().size());
        for (const ember::fetch::CatalogItem& c : *cli) {
            const CatalogEntry* e = app->find(QString::fromStdString(c.id));
            QVERIFY2(e, c.id.c_str());
            QCOMPARE(QString::fromStdString(c.filename), e->filename);
            QCOMPARE(QString::fromStdString(c.url), e->url.toString());
            QCOMPARE(c.size, e->size);
            QCOMPARE(c.display_size(), e->displaySize());
            QCOMPARE(QString::fromStdString(c.checksum.hex), e->checksum.hex);
            QCOMPARE(QString::fromStdString(c.checksum.algorithm_name()),
                     e->checksum.algorithmName());
            QCOMPARE(c.supported, e->supported);
        }
    }
#endif

    void supportedOnlyWhatTheEngineRuns() {
        auto catalog = Catalog::load(catalogPath(), nullptr);
        QVERIFY(catalog.has_value());
        for (const auto& e : catalog->entries()) {
            const bool runs = Catalog::architectureSupported(e.architecture) &&
                              Catalog::quantizationSupported(e.quantization);
            // Every entry runs: nothing in the catalog is greyed out.
            QVERIFY2(runs && e.supported, qPrintable(e.id + ": " + e.architecture));
            // A checksum and exact size, or a server that reports both for the download.
            QVERIFY2((e.checksum.isSet() && e.size > 0) || Catalog::serverReportsChecksum(e.url),
                     qPrintable(e.id));
            QVERIFY(e.displaySize() > 0);
            QVERIFY(!e.description.isEmpty());
        }
    }

    // The current models people download, in the Q4_K_M files of bartowski's repositories,
    // each with its shape (for the fit estimate) and a size shown as approximate.
    // The tensor types come from the engine: a type it does not compute with (IQ2_XS, Q2_K) is
    // refused, and every type it does is accepted, as are llama-quantize's mixes of them.
    void quantizationSupportIsTheEngines() {
        const std::vector<std::string> engine = ember::supported_tensor_types();
        QVERIFY(!engine.empty());
        for (uint32_t id = 0; id < 64; id++) {
            const auto traits = ember::type_traits(id);
            if (!traits) continue;
            const bool runs =
                std::find(engine.begin(), engine.end(), std::string(traits->name)) != engine.end();
            QVERIFY2(Catalog::quantizationSupported(QString::fromUtf8(
                         traits->name.data(), qsizetype(traits->name.size()))) == runs,
                     traits->name.data());
        }
        QVERIFY(!Catalog::quantizationSupported(QStringLiteral("IQ2_XS")));
        QVERIFY(Catalog::quantizationSupported(QStringLiteral("Q4_K_M")));
    }

    void offersCurrentModels() {
        auto catalog = Catalog::load(catalogPath(), nullptr);
        QVERIFY(catalog.has_value());
        const QMap<QString, QString> wanted = {{"qwen3-4b", "qwen3"},
                                               {"qwen3-8b", "qwen3"},
                                               {"qwen2.5-7b-instruct", "qwen2"},
                                               {"qwen2.5-coder-7b-instruct-q4_k_m", "qwen2"},
                                               {"deepseek-r1-distill-qwen-7b-q4_k_m", "qwen2"},
                                               {"gemma-3-4b-it", "gemma3"},
                                               {"gemma-3-12b-it", "gemma3"},
                                               {"phi-3.5-mini-instruct", "phi3"},
                                               {"mistral-nemo-instruct-2407", "llama"},
                                               {"llama-3.2-3b-instruct-q4_k_m", "llama"},
                                               {"llama-3.1-8b-instruct", "llama"}};
        for (auto it = wanted.begin(); it != wanted.end(); ++it) {
            const CatalogEntry* e = catalog->find(it.key());
            QVERIFY2(e, qPrintable(it.key()));
            QCOMPARE(e->architecture, it.value());
            QCOMPARE(e->quantization, QStringLiteral("Q4_K_M"));
            QVERIFY2(e->filename.endsWith(QLatin1String("Q4_K_M.gguf")), qPrintable(e->filename));
            QVERIFY2(
                e->url.toString().startsWith(QLatin1String("https://huggingface.co/bartowski/")) &&
                    e->url.toString().endsWith("/resolve/main/" + e->filename),
                qPrintable(e->url.toString()));
            QVERIFY2(e->shape.isKnown(), qPrintable(it.key()));
            // No checksum is invented: the downloader takes the server's (X-Linked-ETag).
            QVERIFY(!e->checksum.isSet());
            QCOMPARE(e->size, qint64(0));
            QVERIFY(e->approxSize > 1'000'000'000);
            QVERIFY(!e->license.isEmpty());
            QVERIFY(e->contextLength > 0);
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
        // A file type of llama-quantize runs when its types do; one with IQ types does not.
        e = llama;
        e["quantization"] = "Q4_K_M";
        QVERIFY2(Catalog::fromJson(minimalEntry(e), &error).has_value(), qPrintable(error));
        e["quantization"] = "IQ4_XS";
        QVERIFY(!Catalog::fromJson(minimalEntry(e), &error).has_value());
    }

    // Without an exact size or checksum, only a Hugging Face resolve URL will do: the downloader
    // then checks the size and sha256 its server reports, and says so.
    void acceptsAnEntryTheServerVerifies() {
        QJsonObject e{{"architecture", "qwen3"},
                      {"quantization", "Q4_K_M"},
                      {"supported", true},
                      {"url", "https://huggingface.co/o/r/resolve/main/x.gguf"}};
        QJsonObject entry = QJsonDocument::fromJson(minimalEntry(e))["models"][0].toObject();
        entry.remove("size");
        entry.remove("sha256");
        entry["approx_size"] = 2'500'000'000.0;
        auto json = [](const QJsonObject& o) {
            return QJsonDocument(QJsonObject{{"version", 1}, {"models", QJsonArray{o}}}).toJson();
        };
        QString error;
        auto catalog = Catalog::fromJson(json(entry), &error);
        QVERIFY2(catalog.has_value(), qPrintable(error));
        const CatalogEntry& c = catalog->entries().front();
        QCOMPARE(c.size, qint64(0));
        QCOMPARE(c.displaySize(), qint64(2'500'000'000));
        Downloader d;
        c.configure(&d, QStringLiteral("/models"));
        QCOMPARE(d.expectedSize(), qint64(-1));  // the server's size is taken instead
        QVERIFY(!d.checksum().isSet());          // and its sha256
        QCOMPARE(d.checksumSource(), Downloader::ChecksumSource::None);

        QJsonObject bad = entry;
        bad.remove("approx_size");  // no size at all
        QVERIFY(!Catalog::fromJson(json(bad), &error).has_value());
        QVERIFY2(error.contains("approx_size"), qPrintable(error));
        bad = entry;
        bad["url"] = "https://example.org/x.gguf";  // a server that reports nothing
        QVERIFY(!Catalog::fromJson(json(bad), &error).has_value());
        QVERIFY2(error.contains("X-Linked-ETag"), qPrintable(error));
        bad["size"] = 10;  // an exact size, still no checksum
        QVERIFY(!Catalog::fromJson(json(bad), &error).has_value());
        bad["sha256"] = QString(64, QChar('a'));  // both: any https server will do
        QVERIFY2(Catalog::fromJson(json(bad), &error).has_value(), qPrintable(error));
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

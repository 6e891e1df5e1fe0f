// The model dialog's QML (the compiled Ember module) against a real ModelLibrary: a fake inspector
// (no engine), a models folder of the test's own with two model files and a broken one, and a
// catalog whose first entry downloads from a local server that stalls after a quarter of the file.
// `fixture` makes the library and reports on its folder.
#include <QDir>
#include <QFile>
#include <QQmlContext>
#include <QQmlEngine>
#include <QTemporaryDir>
#include <QtQml/QQmlExtensionPlugin>
#include <QtQuickTest>
#include <memory>

#include "fakeinspector.h"
#include "modellibrary.h"
#include "testserver.h"

Q_IMPORT_QML_PLUGIN(EmberPlugin)

namespace {

CatalogEntry entry(const QString& id, const QString& name, qint64 size, bool supported = true) {
    CatalogEntry e;
    e.id = id;
    e.name = name;
    e.filename = id + ".gguf";
    e.url = QUrl("https://example.invalid/" + e.filename);  // never fetched by the test
    e.size = size;
    e.parameters = "3 billion";
    e.quantization = "Q4_0";
    e.contextLength = 8192;
    e.architecture = supported ? "llama" : "qwen2";
    e.description = "A model";
    e.supported = supported;
    if (!supported) e.reason = "architecture qwen2 is not supported yet";
    return e;
}

}  // namespace

class DialogFixture : public QObject {
    Q_OBJECT
public:
    explicit DialogFixture(QObject* parent) : QObject(parent) {}

    // The library over the test's folder and catalog (made once).
    Q_INVOKABLE ModelLibrary* library() {
        if (m_library) return m_library;
        QDir dir(m_dir.path());
        write(dir.filePath("stories260K.gguf"), "GGUF" + QByteArray(1020, '\0'));
        write(dir.filePath("orca-mini.gguf"), "GGUF" + QByteArray(60, '\0'));
        write(dir.filePath("broken.gguf"), "this is not a model");
        m_server.listen();
        m_server.setStallAfter(m_server.data().size() / 4);
        CatalogEntry served = entry("llama-3b", "Llama 3.2 3B Instruct", m_server.data().size());
        served.url = m_server.url("/model.gguf");
        m_library =
            new ModelLibrary(std::make_unique<FakeInspector>(m_log), nullptr, m_dir.path(), this);
        m_library->setCatalog({served, entry("llama-1b", "Llama 3.2 1B Instruct", 1ll << 30),
                               entry("mistral-7b", "Mistral 7B Instruct", 4ll << 30),
                               entry("orca-mini", "Mini Orca", 2ll << 30),
                               entry("qwen2", "Qwen2 1.5B Instruct", 1ll << 29, false)});
        QQmlEngine::setObjectOwnership(m_library, QQmlEngine::CppOwnership);
        return m_library;
    }
    // No usable GPU (every estimate: CPU only), or the fake 3 GiB one again.
    Q_INVOKABLE void setNoGpu(bool noGpu) {
        m_log->noGpu = noGpu;
        m_library->refreshEstimates();
    }
    Q_INVOKABLE bool exists(const QString& fileName) const {
        return QFileInfo::exists(QDir(m_dir.path()).filePath(fileName));
    }
    Q_INVOKABLE QString path(const QString& fileName) const {
        return QDir(m_dir.path()).filePath(fileName);
    }

private:
    static void write(const QString& path, const QByteArray& bytes) {
        QFile f(path);
        if (f.open(QIODevice::WriteOnly)) f.write(bytes);
    }

    QTemporaryDir m_dir;
    TestServer m_server{TestServer::randomData(4 << 20, 7)};
    std::shared_ptr<FakeInspector::Log> m_log = std::make_shared<FakeInspector::Log>();
    ModelLibrary* m_library = nullptr;
};

class Setup : public QObject {
    Q_OBJECT
public slots:
    void qmlEngineAvailable(QQmlEngine* engine) {
        engine->addImportPath(QStringLiteral("qrc:/"));  // the compiled Ember module
        engine->rootContext()->setContextProperty("fixture", new DialogFixture(engine));
    }
};

QUICK_TEST_MAIN_WITH_SETUP(modeldialog_qml, Setup)

#include "main.moc"

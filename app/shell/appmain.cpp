// The ember desktop app's start-up: wires settings, conversation store, engine and QML together.
#include "appmain.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QQmlApplicationEngine>
#include <QQuickStyle>
#include <QQuickWindow>
#include <QStandardPaths>
#include <QtQml/QQmlExtensionPlugin>
#include <algorithm>
#include <cstdio>
#include <memory>

#include "apiserverstatus.h"
#include "chatcontroller.h"
#include "conversationstore.h"
#include "ember/ember.h"
#include "emberchatengine.h"
#include "embermodelinspector.h"
#include "inferencecontroller.h"
#include "modellibrary.h"
#include "perfmonitor.h"
#include "settings.h"
#ifdef EMBER_HAVE_SERVE
#include "apiserver.h"
#include "apiservercontrol.h"
#endif

Q_IMPORT_QML_PLUGIN(EmberPlugin)

namespace {

// --version is answered before a QGuiApplication exists, so it needs no display.
bool printedVersion(int argc, char* argv[]) {
    for (int i = 1; i < argc; ++i) {
        if (qstrcmp(argv[i], "--version") == 0 || qstrcmp(argv[i], "-v") == 0) {
            std::printf("ember %s (engine %s)\n", EMBER_APP_VERSION, ember::version());
            return true;
        }
    }
    return false;
}

struct CommandLine {
    const QCommandLineOption version{{"v", "version"}, "Show the version and exit."};  // above
    const QCommandLineOption model{"model", "Load the GGUF model at <path>.", "path"};
    const QCommandLineOption device{
        "device", "Run on <device> this time: auto, cpu, a GPU index or a GPU name substring.",
        "device"};
    const QCommandLineOption overlay{"overlay", "Show the performance overlay."};
    const QCommandLineOption modelDialog{
        "show-model-dialog", "Open the model dialog on <tab>: catalog, installed or downloads.",
        "tab"};
    const QCommandLineOption theme{"theme", "Use the <theme>: system, light or dark.", "theme"};
    const QCommandLineOption settings{"show-settings", "Open the settings dialog."};
    const QCommandLineOption serverControl{
        "api-server-control", "Test hook: drive the local API server with commands on stdin."};

    void addTo(QCommandLineParser& parser) const {
        parser.setApplicationDescription("Chat with local language models.");
        parser.addHelpOption();
        parser.addOptions(
            {version, model, device, overlay, modelDialog, theme, settings, serverControl});
    }
};

// The model to load at start: --model, else the last one used, else the first installed.
QString startupModel(const QCommandLineParser& parser, const CommandLine& cl,
                     const Settings& settings, ModelLibrary& models) {
    QString model = parser.value(cl.model);
    if (model.isEmpty() && QFileInfo::exists(settings.lastModelPath()))
        model = settings.lastModelPath();
    if (model.isEmpty() && models.installed()->count() > 0)
        model = models.installed()->paths().first();
    return model;
}

// --show-model-dialog: open the dialog on the named tab (the catalog if unknown).
void openModelDialog(QQuickWindow* window, const QString& tabName) {
    const int tab = QStringList{"catalog", "installed", "downloads"}.indexOf(tabName);
    if (auto* dialog = window->findChild<QObject*>("modelDialog")) {
        dialog->setProperty("currentTab", std::max(tab, 0));
        QMetaObject::invokeMethod(dialog, "open");
    }
}

}  // namespace

int runEmber(int argc, char* argv[], const AppHooks& hooks) {
    if (printedVersion(argc, argv)) return 0;
    QGuiApplication app(argc, argv);
    QGuiApplication::setApplicationName("ember");
    QGuiApplication::setApplicationDisplayName("Ember");
    QGuiApplication::setApplicationVersion(EMBER_APP_VERSION);

    // The command line, with the test hooks' options.
    QCommandLineParser parser;
    const CommandLine cl;
    cl.addTo(parser);
    if (hooks.addOptions) hooks.addOptions(parser);
    parser.process(app);

    // Settings, conversations, the engine's worker and what the QML shows of them.
    QQuickStyle::setStyle("Material");
    Settings settings;
    if (parser.isSet(cl.device)) settings.setDeviceOverride(parser.value(cl.device));
    if (parser.isSet(cl.overlay)) settings.setPerfOverlay(true);
    if (parser.isSet(cl.theme)) settings.setTheme(parser.value(cl.theme));
    ConversationStore store;
    InferenceController inference([] { return std::make_unique<EmberChatEngine>(); });
    const QString dataDir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dataDir + "/models");
    const bool storeOk = store.open(dataDir + "/conversations.sqlite");
    ChatController chat(&store, &inference, &settings);
    PerfMonitor perf(&inference);
    ModelLibrary models(std::make_unique<EmberModelInspector>(), &settings,
                        inference.modelsDirectory());
    models.setModelInUse(
        [&inference] { return inference.modelLoaded() ? inference.modelPath() : QString(); });
    if (!storeOk) chat.setError(store.lastError());
    // Keep what a response has produced so far when the app closes mid-generation.
    QObject::connect(&app, &QCoreApplication::aboutToQuit, &chat, &ChatController::saveInterrupted);
    const QString model = startupModel(parser, cl, settings, models);

#ifdef EMBER_HAVE_SERVE
    ApiServer apiServer(&settings, &inference);
    ApiServerStatus* apiServerObject = &apiServer;
#else
    ApiServerStatus* apiServerObject = nullptr;
#endif

    // The window.
    QQmlApplicationEngine engine;
    engine.setInitialProperties({{"apiServer", QVariant::fromValue(apiServerObject)},
                                 {"chat", QVariant::fromValue(&chat)},
                                 {"inference", QVariant::fromValue(&inference)},
                                 {"settings", QVariant::fromValue(&settings)},
                                 {"perf", QVariant::fromValue(&perf)},
                                 {"models", QVariant::fromValue(&models)},
                                 {"askForModel", model.isEmpty()},
                                 {"showSettings", parser.isSet(cl.settings)}});
    engine.load(QUrl("qrc:/Ember/Main.qml"));
    if (engine.rootObjects().isEmpty()) return 1;
    auto* window = qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    if (parser.isSet(cl.modelDialog)) openModelDialog(window, parser.value(cl.modelDialog));

#ifdef EMBER_HAVE_SERVE
    std::unique_ptr<ApiServerControl> serverControl;
    if (parser.isSet(cl.serverControl))
        serverControl =
            std::make_unique<ApiServerControl>(&apiServer, &settings, &chat, &inference, window);
#endif

    if (hooks.started) hooks.started({&parser, &chat, &inference, &perf, window});
    if (!model.isEmpty()) chat.loadModel(QUrl::fromLocalFile(QFileInfo(model).absoluteFilePath()));
    return app.exec();
}

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

int runEmber(int argc, char* argv[], const AppHooks& hooks) {
    // Answer --version without a display.
    for (int i = 1; i < argc; ++i) {
        if (qstrcmp(argv[i], "--version") == 0 || qstrcmp(argv[i], "-v") == 0) {
            std::printf("ember %s (engine %s)\n", EMBER_APP_VERSION, ember::version());
            return 0;
        }
    }
    QGuiApplication app(argc, argv);
    QGuiApplication::setApplicationName("ember");
    QGuiApplication::setApplicationDisplayName("Ember");
    QGuiApplication::setApplicationVersion(EMBER_APP_VERSION);

    QCommandLineParser parser;
    parser.setApplicationDescription("Chat with local language models.");
    parser.addHelpOption();
    const QCommandLineOption versionOption({"v", "version"},
                                           "Show the version and exit.");  // above
    const QCommandLineOption modelOption("model", "Load the GGUF model at <path>.", "path");
    const QCommandLineOption deviceOption(
        "device", "Run on <device> this time: auto, cpu, a GPU index or a GPU name substring.",
        "device");
    const QCommandLineOption overlayOption("overlay", "Show the performance overlay.");
    const QCommandLineOption modelDialogOption(
        "show-model-dialog", "Open the model dialog on <tab>: catalog, installed or downloads.",
        "tab");
    const QCommandLineOption themeOption("theme", "Use the <theme>: system, light or dark.",
                                         "theme");
    const QCommandLineOption settingsOption("show-settings", "Open the settings dialog.");
    const QCommandLineOption serverControlOption(
        "api-server-control", "Test hook: drive the local API server with commands on stdin.");
    parser.addOptions({versionOption, modelOption, deviceOption, overlayOption, modelDialogOption,
                       themeOption, settingsOption, serverControlOption});
    if (hooks.addOptions) hooks.addOptions(parser);
    parser.process(app);

    QQuickStyle::setStyle("Material");
    Settings settings;
    if (parser.isSet(deviceOption)) settings.setDeviceOverride(parser.value(deviceOption));
    if (parser.isSet(overlayOption)) settings.setPerfOverlay(true);
    if (parser.isSet(themeOption)) settings.setTheme(parser.value(themeOption));
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

    QString model = parser.value(modelOption);
    if (model.isEmpty() && QFileInfo::exists(settings.lastModelPath()))
        model = settings.lastModelPath();
    if (model.isEmpty() && models.installed()->count() > 0)
        model = models.installed()->paths().first();

#ifdef EMBER_HAVE_SERVE
    ApiServer apiServer(&settings, &inference);
    ApiServerStatus* apiServerObject = &apiServer;
#else
    ApiServerStatus* apiServerObject = nullptr;
#endif

    QQmlApplicationEngine engine;
    engine.setInitialProperties({{"apiServer", QVariant::fromValue(apiServerObject)},
                                 {"chat", QVariant::fromValue(&chat)},
                                 {"inference", QVariant::fromValue(&inference)},
                                 {"settings", QVariant::fromValue(&settings)},
                                 {"perf", QVariant::fromValue(&perf)},
                                 {"models", QVariant::fromValue(&models)},
                                 {"askForModel", model.isEmpty()},
                                 {"showSettings", parser.isSet(settingsOption)}});
    engine.load(QUrl("qrc:/Ember/Main.qml"));
    if (engine.rootObjects().isEmpty()) return 1;
    auto* window = qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    if (parser.isSet(modelDialogOption)) {
        const int tab = QStringList{"catalog", "installed", "downloads"}.indexOf(
            parser.value(modelDialogOption));
        if (auto* dialog = window->findChild<QObject*>("modelDialog")) {
            dialog->setProperty("currentTab", std::max(tab, 0));
            QMetaObject::invokeMethod(dialog, "open");
        }
    }

#ifdef EMBER_HAVE_SERVE
    std::unique_ptr<ApiServerControl> serverControl;
    if (parser.isSet(serverControlOption))
        serverControl =
            std::make_unique<ApiServerControl>(&apiServer, &settings, &chat, &inference, window);
#endif

    if (hooks.started) hooks.started({&parser, &chat, &inference, &perf, window});
    if (!model.isEmpty()) chat.loadModel(QUrl::fromLocalFile(QFileInfo(model).absoluteFilePath()));
    return app.exec();
}

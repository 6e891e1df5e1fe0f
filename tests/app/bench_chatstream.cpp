// Benchmark (not a test): the UI thread's time per streamed batch while a long reply with
// Markdown and code streams into the chat view, from the first batch to the last. The real
// ChatView and MessageDelegate (the Ember QML module) over the real ChatController and its
// MessageModel, answering a stored message (the fake engine's reply is held back); each batch is
// appended to the streaming reply as the worker hands it over, then one frame is produced
// (polish, layout, sync, render) as the window would, and the time of both is recorded.
//
//   bench_app_chat_stream [--tokens 4000] [--per-batch 4] [--csv FILE] [--ui DIR]
// Prints the median and 90th percentile per tenth of the batches: flat is the aim.
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QGuiApplication>
#include <QQmlComponent>
#include <QQmlContext>
#include <QQmlEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtQml/QQmlExtensionPlugin>
#include <algorithm>
#include <cstdio>
#include <ctime>

#include "chatcontroller.h"
#include "conversationstore.h"
#include "fakechatengine.h"
#include "inferencecontroller.h"
#include "messagemodel.h"
#include "settings.h"

Q_IMPORT_QML_PLUGIN(EmberPlugin)

namespace {

// A reply as models write them: sections with a heading, prose with inline formatting and
// links, a list, a table and a code block, repeated until it has `tokens` pieces of about four
// characters (a token's usual length in English and code).
QStringList replyTokens(int tokens) {
    const QString section = QStringLiteral(
        "## Step %1: build the parser\n\n"
        "First we **split** the input into *tokens*, then we parse them. See "
        "[the docs](https://example.org/docs/%1) for `parse_%1()` and its options.\n"
        "Each line is kept as it is.\n\n"
        "- read the file\n- split it into lines\n- parse each line\n\n"
        "| name | value | note |\n|---|---:|---|\n| alpha | %1 | first |\n| beta | 2.5 | second "
        "|\n\n"
        "```cpp\n#include <string>\n#include <vector>\n\n"
        "// Splits `text` at each separator.\n"
        "std::vector<std::string> split_%1(const std::string& text, char sep) {\n"
        "    std::vector<std::string> out;\n    std::string cur;\n"
        "    for (char c : text) {\n        if (c == sep) {\n            out.push_back(cur);\n"
        "            cur.clear();\n        } else {\n            cur += c;\n        }\n    }\n"
        "    out.push_back(cur);\n    return out;\n}\n```\n\n"
        "```python\ndef parse(line: str) -> dict:\n    \"\"\"One record.\"\"\"\n"
        "    key, _, value = line.partition('=')\n    return {key.strip(): value.strip()}\n"
        "```\n\n");
    QStringList out;
    for (int s = 1; out.size() < tokens; ++s) {
        const QString text = section.arg(s);
        for (qsizetype i = 0; i < text.size() && out.size() < tokens; i += 4) out << text.mid(i, 4);
    }
    return out;
}

// CPU time of this thread: what the UI thread spends, not what other processes on a busy
// machine take from it.
double threadMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p * (v.size() - 1))];
}

void report(const char* what, const std::vector<double>& ms) {
    std::printf("\n%s\ntenth  batches      median  p90\n", what);
    const size_t tenth = std::max<size_t>(1, ms.size() / 10);
    for (size_t t = 0; t < 10 && t * tenth < ms.size(); ++t) {
        std::vector<double> part(ms.begin() + t * tenth,
                                 ms.begin() + std::min(ms.size(), (t + 1) * tenth));
        std::printf("%5zu  %4zu-%-4zu  %6.2f  %6.2f\n", t + 1, t * tenth + 1,
                    t * tenth + part.size(), percentile(part, 0.5), percentile(part, 0.9));
    }
}

// Each batch's milliseconds: UI thread CPU for the update and frame, and the parts of it.
struct BatchTimes {
    std::vector<double> ms, update, model, wall;
};

// Streams the reply's pieces into the chat in batches of perBatch, one frame after each.
BatchTimes streamReply(ChatController& controller, QQuickWindow& window, const QStringList& pieces,
                       int perBatch) {
    BatchTimes t;
    QElapsedTimer timer;
    for (qsizetype i = 0; i < pieces.size(); i += perBatch) {
        QString batch;
        for (qsizetype k = i; k < std::min(pieces.size(), i + perBatch); ++k) batch += pieces[k];
        timer.start();
        const double start = threadMs();
        controller.messages()->appendText(batch);  // what ChatController does per batch
        t.model.push_back(threadMs() - start);
        QCoreApplication::processEvents();  // bindings, Qt.callLater, layout
        t.update.push_back(threadMs() - start);
        window.grabWindow();  // polish, sync and render one frame
        t.ms.push_back(threadMs() - start);
        t.wall.push_back(timer.nsecsElapsed() / 1e6);
    }
    return t;
}

void writeCsv(const QString& path, const std::vector<double>& ms) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return;
    for (double v : ms) f.write(QByteArray::number(v, 'f', 3) + "\n");
}

// The ChatView under test: the Ember module's, or the one in --ui's folder.
QQuickItem* createChatView(QQmlEngine& engine, QQmlComponent& component, const QString& uiDir) {
    engine.addImportPath(QStringLiteral("qrc:/"));  // where the Ember module lives
    const QString import = !uiDir.isEmpty()
                               ? "import \"" + QUrl::fromLocalFile(uiDir).toString() + "\""
                               : QStringLiteral("import Ember");
    component.setData(("import QtQuick\nimport QtQuick.Controls\n" + import +
                       "\nChatView { width: 900; height: 1000; controller: benchController }")
                          .toUtf8(),
                      QUrl("bench.qml"));
    return qobject_cast<QQuickItem*>(component.create());
}

}  // namespace

int main(int argc, char* argv[]) {
    qputenv("QT_QPA_PLATFORM",
            qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
    // Frames are made on this thread, so that their cost is counted.
    qputenv("QSG_RENDER_LOOP", "basic");
    QGuiApplication app(argc, argv);
    QCommandLineParser args;
    args.addOptions({{"tokens", "Tokens in the reply.", "n", "4000"},
                     {"per-batch", "Tokens per batch.", "n", "4"},
                     {"csv", "Write each batch's milliseconds to <file>.", "file"},
                     {"ui",
                      "Load ChatView from the QML files in <dir> (another version of app/chat/, "
                      "to compare) instead of the Ember module.",
                      "dir"}});
    args.addHelpOption();
    args.process(app);
    const int tokens = args.value("tokens").toInt();
    const int perBatch = std::max(1, args.value("per-batch").toInt());

    // The chat, its store and settings in a scratch folder; an engine that holds its reply back
    // until stopped, so that the chat is generating throughout, as while a reply streams in.
    QTemporaryDir dir;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
    QCoreApplication::setApplicationName(QStringLiteral("ember-bench"));
    ConversationStore store;
    if (!store.open(dir.filePath("chat.sqlite"))) {
        std::fprintf(stderr, "bench: %s\n", qPrintable(store.lastError()));
        return 1;
    }
    Settings settings;
    std::atomic<bool> hold{true};
    InferenceController inference([&hold] {
        FakeScript script;
        script.hold = &hold;
        return std::make_unique<FakeChatEngine>(script);
    });
    QSignalSpy loaded(&inference, &InferenceController::modelChanged);
    EngineLoadOptions load;
    load.path = "bench.gguf";
    inference.loadModel(load);
    ChatController controller(&store, &inference, &settings);
    if (!loaded.wait(10000)) {
        std::fprintf(stderr, "bench: the fake model did not load\n");
        return 1;
    }
    const qint64 conversation = store.createConversation("Bench");
    store.appendMessage(conversation, "user", "Write a parser, step by step.");
    controller.selectConversation(conversation);

    QQmlEngine engine;
    engine.rootContext()->setContextProperty("benchController", &controller);
    QQmlComponent component(&engine);
    QQuickWindow window;
    window.resize(900, 1000);
    auto* view = createChatView(engine, component, args.isSet("ui") ? args.value("ui") : QString());
    if (!view) {
        std::fprintf(stderr, "bench: %s\n", qPrintable(component.errorString()));
        return 1;
    }
    view->setParentItem(window.contentItem());
    window.show();

    controller.regenerate();  // the stored message is answered: a streaming reply row
    if (!controller.generating() || controller.messages()->count() != 2) {
        std::fprintf(stderr, "bench: the reply did not start\n");
        return 1;
    }
    window.grabWindow();  // the first frame, untimed

    const QStringList pieces = replyTokens(tokens);
    const BatchTimes t = streamReply(controller, window, pieces, perBatch);
    if (args.isSet("csv")) writeCsv(args.value("csv"), t.ms);
    std::printf("reply: %d tokens, %lld characters, %zu batches of %d tokens\n", tokens,
                static_cast<long long>(pieces.join(QString()).size()), t.ms.size(), perBatch);
    report("UI thread CPU ms per batch (update + frame)", t.ms);
    report("of which the model and QML update", t.update);
    report("of which the model (parsing)", t.model);
    report("wall-clock ms per batch (includes waiting for a busy CPU)", t.wall);
    delete view;
    controller.stop();
    return 0;
}

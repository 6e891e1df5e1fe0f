#include "apiservercontrol.h"

#include <unistd.h>
#include <QCoreApplication>
#include <QMetaObject>
#include <cstdio>

#include "apiserver.h"
#include "chatcontroller.h"
#include "inferencecontroller.h"
#include "inferenceworker.h"
#include "settings.h"

namespace {
void chatEvent(const char* what) {
    std::fprintf(stderr, "EMBER_CHAT: %s\n", what);
    std::fflush(stderr);
}
}  // namespace

ApiServerControl::ApiServerControl(ApiServer* server, Settings* settings, ChatController* chat,
                                   InferenceController* inference, QObject* root, QObject* parent)
    : QObject(parent),
      m_server(server),
      m_settings(settings),
      m_chat(chat),
      m_root(root),
      m_stdin(STDIN_FILENO, QSocketNotifier::Read) {
    connect(&m_stdin, &QSocketNotifier::activated, this, &ApiServerControl::readCommand);
    connect(server, &ApiServer::runningChanged, this, [this] {
        say(m_server->running() ? "running " + m_server->address() : QStringLiteral("stopped"));
    });
    connect(server, &ApiServer::errorChanged, this, [this] {
        if (!m_server->error().isEmpty()) say("error " + m_server->error());
    });
    connect(server, &ApiServer::modelIdChanged, this, [this] {
        if (!m_server->modelId().isEmpty()) say("serving " + m_server->modelId());
    });
    connect(server, &ApiServer::requestsServedChanged, this,
            [this] { say(QStringLiteral("served %1").arg(m_server->requestsServed())); });
    // Direct: these run on the worker's thread, as the generations do.
    if (InferenceWorker* worker = inference->worker()) {
        connect(
            worker, &InferenceWorker::promptReady, worker, [] { chatEvent("started"); },
            Qt::DirectConnection);
        connect(
            worker, &InferenceWorker::generationFinished, worker, [] { chatEvent("finished"); },
            Qt::DirectConnection);
        connect(
            worker, &InferenceWorker::generationFailed, worker, [] { chatEvent("failed"); },
            Qt::DirectConnection);
    }
    say("ready");
}

void ApiServerControl::readCommand() {
    char chunk[4096];
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n <= 0) {  // stdin closed: the test is gone
        m_stdin.setEnabled(false);
        QCoreApplication::quit();
        return;
    }
    m_buffer.append(chunk, int(n));
    int end;
    while ((end = m_buffer.indexOf('\n')) >= 0) {
        const QString line = QString::fromUtf8(m_buffer.left(end)).trimmed();
        m_buffer.remove(0, end + 1);
        if (!line.isEmpty()) run(line);
    }
}

void ApiServerControl::run(const QString& command) {
    const QString verb = command.section(' ', 0, 0);
    const QString arg = command.section(' ', 1);
    if (verb == "port")
        m_settings->setApiServerPort(arg.toInt());
    else if (verb == "key")
        m_settings->setApiServerKey(arg);
    else if (verb == "on" || verb == "off")
        setEnabled(verb == "on");
    else if (verb == "chat")
        say(m_chat->send(arg) ? QStringLiteral("chat sent") : QStringLiteral("chat refused"));
    else if (verb == "quit")
        QCoreApplication::quit();
    else
        say("unknown command " + command);
}

void ApiServerControl::setEnabled(bool on) {
    QObject* sw = m_root ? m_root->findChild<QObject*>("apiServerSwitch") : nullptr;
    if (!sw) {
        say("no settings dialog: setting it directly");
        m_settings->setApiServerEnabled(on);
        return;
    }
    // What a click does: the switch flips, then reports the toggle to its handler.
    if (sw->property("checked").toBool() != on) {
        QMetaObject::invokeMethod(sw, "toggle");
        QMetaObject::invokeMethod(sw, "toggled");
    }
    say(QStringLiteral("switch %1").arg(sw->property("checked").toBool() ? "on" : "off"));
}

void ApiServerControl::say(const QString& line) {
    std::printf("EMBER_API_SERVER: %s\n", line.toUtf8().constData());
    std::fflush(stdout);
}

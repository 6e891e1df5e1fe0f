// Test hook (--api-server-control): drives the local API server through the settings, one
// command per line on stdin, and prints its state on stdout ("EMBER_API_SERVER: ..."), so that
// a client test can switch it on and off as a user would.
//   port N | key TEXT | on | off | chat TEXT | quit
// "on" and "off" flip the switch of the settings dialog when it exists (the way a click does),
// else the setting itself. "chat" sends TEXT as the user would; when the worker starts and ends
// the app's own generations, "EMBER_CHAT: started|finished" goes to stderr from the worker's
// thread, so that it is in order with the server's log there.
#pragma once

#include <QObject>
#include <QPointer>
#include <QSocketNotifier>

class ApiServer;
class ChatController;
class InferenceController;
class Settings;

class ApiServerControl : public QObject {
    Q_OBJECT
public:
    ApiServerControl(ApiServer* server, Settings* settings, ChatController* chat,
                     InferenceController* inference, QObject* root, QObject* parent = nullptr);

private:
    void readCommand();
    void run(const QString& command);
    void setEnabled(bool on);
    void say(const QString& line);

    ApiServer* m_server;
    Settings* m_settings;
    ChatController* m_chat;
    QPointer<QObject> m_root;
    QSocketNotifier m_stdin;
    QByteArray m_buffer;
};

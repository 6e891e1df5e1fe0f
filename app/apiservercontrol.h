// Test hook (--api-server-control): drives the local API server through the settings, one
// command per line on stdin, and prints its state on stdout ("EMBER_API_SERVER: ..."), so that
// a client test can switch it on and off as a user would.
//   port N | key TEXT | on | off | quit
// "on" and "off" flip the switch of the settings dialog when it exists (the way a click does),
// else the setting itself.
#pragma once

#include <QObject>
#include <QPointer>
#include <QSocketNotifier>

class ApiServer;
class Settings;

class ApiServerControl : public QObject {
    Q_OBJECT
public:
    ApiServerControl(ApiServer* server, Settings* settings, QObject* root,
                     QObject* parent = nullptr);

private:
    void readCommand();
    void run(const QString& command);
    void setEnabled(bool on);
    void say(const QString& line);

    ApiServer* m_server;
    Settings* m_settings;
    QPointer<QObject> m_root;
    QSocketNotifier m_stdin;
    QByteArray m_buffer;
};

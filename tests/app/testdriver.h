// Drives the app for the end-to-end test (--send, --screenshot): sends a prompt once the model
// is loaded, prints the reply to stdout, grabs the window and quits.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

class ChatController;
class InferenceController;
class PerfMonitor;
class QQuickWindow;

class TestDriver : public QObject {
    Q_OBJECT
public:
    TestDriver(ChatController* chat, InferenceController* inference, QQuickWindow* window,
               const QString& prompt, const QString& screenshotPath, QObject* parent = nullptr);
    void start(int timeoutMs);
    // Also prints the performance overlay's numbers (EMBER_PERF) when it grabs the window,
    // with the largest context it showed while the reply was being generated (live_context).
    void setPerf(PerfMonitor* perf);

private:
    void finish(int exitCode, const QString& message);
    void grabAndQuit();

    ChatController* m_chat;
    InferenceController* m_inference;
    QPointer<QQuickWindow> m_window;
    QPointer<PerfMonitor> m_perf;
    QString m_prompt, m_screenshot;
    bool m_sent = false, m_done = false;
    int m_liveContext = 0;
};

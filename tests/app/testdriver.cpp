#include "testdriver.h"

#include <QCoreApplication>
#include <QImage>
#include <QQuickWindow>
#include <QTimer>
#include <algorithm>
#include <cstdio>

#include "chatcontroller.h"
#include "inferencecontroller.h"
#include "perfmonitor.h"

TestDriver::TestDriver(ChatController* chat, InferenceController* inference, QQuickWindow* window,
                       const QString& prompt, const QString& screenshotPath, QObject* parent)
    : QObject(parent),
      m_chat(chat),
      m_inference(inference),
      m_window(window),
      m_prompt(prompt),
      m_screenshot(screenshotPath) {}

void TestDriver::start(int timeoutMs) {
    auto sendOnce = [this] {
        if (m_sent || !m_inference->modelLoaded() || m_prompt.isEmpty()) return;
        m_sent = true;
        // A scripted prompt starts its own conversation, not the one reopened from last time.
        m_chat->newConversation();
        m_chat->send(m_prompt);
    };
    connect(m_inference, &InferenceController::modelChanged, this, sendOnce);
    connect(m_inference, &InferenceController::loadFailed, this,
            [this](const QString& message) { finish(1, "load failed: " + message); });
    connect(m_chat, &ChatController::responseFailed, this,
            [this](const QString& message) { finish(1, "generation failed: " + message); });
    connect(m_chat, &ChatController::responseFinished, this, [this](const QString& text) {
        std::printf("EMBER_REPLY: %s\n", qPrintable(QString(text).replace('\n', "\\n")));
        std::fflush(stdout);
        // Let the view lay out and render the finished message first.
        QTimer::singleShot(500, this, &TestDriver::grabAndQuit);
    });
    QTimer::singleShot(timeoutMs, this, [this] { finish(2, "timed out"); });
    sendOnce();
    if (m_prompt.isEmpty() && !m_screenshot.isEmpty())
        QTimer::singleShot(3000, this, &TestDriver::grabAndQuit);  // dialogs open and settle
}

void TestDriver::setPerf(PerfMonitor* perf) {
    m_perf = perf;
    connect(perf, &PerfMonitor::responseChanged, this, [this] {
        if (m_perf && m_perf->generating() && m_perf->generatedTokens() > 0)
            m_liveContext = std::max(m_liveContext, m_perf->contextUsed());
    });
}

void TestDriver::grabAndQuit() {
    if (m_perf) {
        std::printf(
            "EMBER_PERF: backend=%s tokens=%d tok_s=%.1f prompt_tok_s=%.1f ttft_ms=%.2f "
            "context=%d/%d live_context=%d mem_used=%.0f mem_budget=%.0f source=%s device=%s\n",
            qPrintable(m_perf->backend()), m_perf->generatedTokens(),
            m_perf->responseTokensPerSecond(), m_perf->promptTokensPerSecond(),
            m_perf->timeToFirstTokenMs(), m_perf->contextUsed(), m_perf->contextSize(),
            m_liveContext, m_perf->memoryUsed(), m_perf->memoryBudget(),
            qPrintable(m_perf->memorySource().replace(' ', '_')), qPrintable(m_perf->device()));
    }
    if (!m_screenshot.isEmpty()) {
        if (!m_window) return finish(1, "no window to grab");
        const QImage image = m_window->grabWindow();
        if (image.isNull() || !image.save(m_screenshot))
            return finish(1, "cannot save " + m_screenshot);
        std::printf("EMBER_SCREENSHOT: %s\n", qPrintable(m_screenshot));
    }
    finish(0, {});
}

void TestDriver::finish(int exitCode, const QString& message) {
    if (m_done) return;
    m_done = true;
    if (!message.isEmpty()) std::fprintf(stderr, "ember: %s\n", qPrintable(message));
    std::fflush(stdout);
    QCoreApplication::exit(exitCode);
}

// The ember app's whole start-up and event loop, shared by the ember executable and the test-only
// ember-testapp, which adds its own options and drives the window once it exists.
#pragma once

#include <functional>

class ChatController;
class InferenceController;
class PerfMonitor;
class QCommandLineParser;
class QQuickWindow;

// What the app made, for a hook that drives it.
struct AppContext {
    const QCommandLineParser* parser;
    ChatController* chat;
    InferenceController* inference;
    PerfMonitor* perf;
    QQuickWindow* window;
};

struct AppHooks {
    // Adds options before the command line is parsed (they show in --help).
    std::function<void(QCommandLineParser&)> addOptions;
    // Called once the window exists, before the model starts loading.
    std::function<void(const AppContext&)> started;
};

// Runs the app until it quits; returns its exit code.
int runEmber(int argc, char* argv[], const AppHooks& hooks = {});

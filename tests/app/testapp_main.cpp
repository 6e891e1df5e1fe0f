// ember-testapp: the ember app with the end-to-end tests' hooks (--send, --screenshot), which the
// installed app does not have. The tests (e2e.sh, kill9.sh, the model dialog's screenshot.sh)
// drive this executable; everything else is the app's own start-up (runEmber).
#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QCoreApplication>

#include "appmain.h"
#include "testdriver.h"

int main(int argc, char* argv[]) {
    const QCommandLineOption sendOption("send", "Test hook: send <text> once the model is loaded.",
                                        "text");
    const QCommandLineOption shotOption(
        "screenshot", "Test hook: save the window to <png> after the reply, then quit.", "png");
    AppHooks hooks;
    hooks.addOptions = [&](QCommandLineParser& parser) {
        parser.addOptions({sendOption, shotOption});
    };
    hooks.started = [&](const AppContext& app) {
        const QCommandLineParser& parser = *app.parser;
        if (!parser.isSet(sendOption) && !parser.isSet(shotOption)) return;
        // Owned by the application object: it goes when the app does.
        auto* driver = new TestDriver(app.chat, app.inference, app.window, parser.value(sendOption),
                                      parser.value(shotOption), QCoreApplication::instance());
        if (parser.isSet("overlay")) driver->setPerf(app.perf);
        // Only a safety net for a hung app: the test's limit is ctest's (900 s); on a busy 2-core
        // machine the overlay run of the end-to-end test took over 2 minutes.
        driver->start(400000);
    };
    return runEmber(argc, argv, hooks);
}

// pull: downloads a model with the app's downloader (resumable, retried, verified: size,
// checksum given or reported by the server, and the GGUF header read by the engine's reader).
#include "args.h"

#ifdef EMBER_HAVE_PULL
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>

#include <unistd.h>
#include <cstdio>

#include "catalog.h"
#include "downloader.h"
#include "gguf/gguf.h"
#endif

namespace ember::cli {

#ifndef EMBER_HAVE_PULL

int cmd_pull(int, char**) {
    return fail(
        "this build of ember-cli has no downloader (it was built without Qt: EMBER_BUILD_APP=OFF); "
        "fetch the file with curl or wget and check its checksum with sha256sum");
}

#else

namespace {

QString formatDuration(int seconds) {
    if (seconds < 0) return QStringLiteral("?");
    if (seconds < 60) return QStringLiteral("%1s").arg(seconds);
    if (seconds < 3600)
        return QStringLiteral("%1m%2s").arg(seconds / 60).arg(seconds % 60, 2, 10, QChar('0'));
    return QStringLiteral("%1h%2m").arg(seconds / 3600).arg((seconds / 60) % 60, 2, 10, QChar('0'));
}

// The content check of a finished download, run before it gets its final name: the engine's
// reader parses the header, the metadata and the tensor table, and checks that every tensor's
// data lies inside the file.
QString gguf_problem(const QString& path) {
    auto file = gguf::File::open(path.toStdString());
    if (!file) return QString::fromStdString(file.error().message);
    if (!(*file)->get_string("general.architecture"))
        return QStringLiteral("it has no general.architecture: not a model file");
    if ((*file)->tensors().empty()) return QStringLiteral("it holds no tensors: not a model file");
    return {};
}

int list_catalog() {
    QString error;
    auto catalog = Catalog::builtin(&error);
    if (!catalog) return fail(error.toStdString());
    for (const CatalogEntry& e : catalog->entries()) {
        std::printf(
            "%-34s %10s  %s%s\n", qPrintable(e.id),
            qPrintable((e.size > 0 ? QString() : QStringLiteral("~")) +
                       Downloader::formatBytes(e.displaySize())),
            qPrintable(e.name),
            e.supported ? "" : qPrintable(QStringLiteral("  [unsupported: %1]").arg(e.reason)));
    }
    return 0;
}

}  // namespace

int cmd_pull(int argc, char** argv) {
    Args a({"--list"}, {"--sha256", "--md5", "--dir", "--retries"}, {{"-d", "--dir"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    int qargc = 1;
    QCoreApplication app(qargc, argv);  // the downloader runs on Qt's event loop
    if (a.has("--list")) return list_catalog();
    if (a.positional().size() != 1)
        return fail(
            "usage: ember-cli pull (URL | CATALOG-ID) [--sha256 HEX | --md5 HEX] [--dir DIR] "
            "[--retries N]; --list shows the catalog");
    if (a.has("--sha256") && a.has("--md5")) return fail("give --sha256 or --md5, not both");
    auto retries = a.get_int("--retries", 5, 0, 100);
    if (!retries) return fail(retries.error());

    Downloader d;
    const QString target = QString::fromStdString(a.positional()[0]);
    const QString dir = QString::fromStdString(a.get_or("--dir", "."));
    if (target.contains(QLatin1String("://"))) {
        const QUrl url(target, QUrl::StrictMode);
        const QString name = url.fileName();
        if (!url.isValid() || name.isEmpty() || name == QLatin1String("..") ||
            name == QLatin1String("."))
            return fail("'" + target.toStdString() + "' is not a URL that ends in a file name");
        d.setUrl(url);
        d.setDestination(QDir(dir).filePath(name));
    } else {
        QString error;
        auto catalog = Catalog::builtin(&error);
        if (!catalog) return fail(error.toStdString());
        const CatalogEntry* e = catalog->find(target);
        if (!e)
            return fail("'" + target.toStdString() +
                        "' is neither a URL nor a catalog id (see ember-cli pull --list)");
        if (!e->supported)
            return fail(e->id.toStdString() + " cannot run in Ember: " + e->reason.toStdString());
        e->configure(&d, dir);
    }
    for (const char* algo : {"sha256", "md5"}) {
        if (auto hex = a.get(std::string("--") + algo)) {
            QString error;
            if (!d.setChecksum(QLatin1String(algo), QString::fromStdString(*hex), &error))
                return fail(error.toStdString());
        }
    }
    d.setMaxRetries(int(*retries));
    d.setContentCheck(QStringLiteral("GGUF header"), gguf_problem);

    const bool tty = isatty(STDERR_FILENO);
    QElapsedTimer lastPrint;
    auto printProgress = [&](bool force) {
        if (!force && lastPrint.isValid() && lastPrint.elapsed() < (tty ? 250 : 5000)) return;
        const qint64 total = d.bytesTotal();
        if (total < 0 && d.bytesReceived() == 0) return;  // nothing to say yet
        lastPrint.restart();
        QString line = total > 0 ? QStringLiteral("%1%  %2 / %3")
                                       .arg(100.0 * d.progress(), 5, 'f', 1)
                                       .arg(Downloader::formatBytes(d.bytesReceived()),
                                            Downloader::formatBytes(total))
                                 : Downloader::formatBytes(d.bytesReceived());
        if (d.speed() > 0)
            line += QStringLiteral("  %1/s  ETA %2")
                        .arg(Downloader::formatBytes(qint64(d.speed())),
                             formatDuration(d.etaSeconds()));
        std::fprintf(stderr, tty ? "\r%-70s" : "%s\n", qPrintable(line));
    };
    auto endLine = [&] {
        if (tty && lastPrint.isValid()) std::fputc('\n', stderr);
        lastPrint.invalidate();
    };

    QObject::connect(&d, &Downloader::progressChanged, [&] { printProgress(false); });
    QObject::connect(&d, &Downloader::retrying,
                     [&](int attempt, int delayMs, const QString& reason) {
                         endLine();
                         std::fprintf(stderr, "ember-cli: %s; retry %d in %.1f s\n",
                                      qPrintable(reason), attempt, delayMs / 1000.0);
                     });
    QObject::connect(&d, &Downloader::restartedFromZero, [&](const QString& reason) {
        endLine();
        std::fprintf(stderr, "ember-cli: %s; starting over\n", qPrintable(reason));
    });
    QObject::connect(&d, &Downloader::stateChanged, [&](Downloader::State s) {
        if (s == Downloader::State::Verifying) {
            printProgress(true);
            endLine();
            if (d.checksum().isSet())
                std::fprintf(stderr, "verifying the %s checksum and the GGUF header...\n",
                             qPrintable(d.checksum().algorithmName()));
            else
                std::fprintf(stderr, "checking the GGUF header...\n");
        }
    });
    QObject::connect(&d, &Downloader::finished, [&](const QString& path) {
        endLine();
        std::fprintf(stderr, "saved %s (%s%s)\n", qPrintable(path),
                     qPrintable(Downloader::formatBytes(QFileInfo(path).size())),
                     d.verified() ? qPrintable(", " + d.checksum().algorithmName() + " verified")
                                  : ", no checksum to verify");
        std::fprintf(stderr, "checked: %s\n", qPrintable(d.checksSummary()));
        if (!d.verified())
            std::fprintf(stderr,
                         "note: no checksum is known for this file, so only its size and GGUF "
                         "header were checked; give --sha256 to check every byte\n");
        std::printf("%s\n", qPrintable(path));
        app.exit(0);
    });
    QObject::connect(&d, &Downloader::failed, [&](const QString& message) {
        endLine();
        std::fprintf(stderr, "ember-cli: download failed: %s\n", qPrintable(message));
        const QString part = Downloader::partPath(d.destination());
        if (QFileInfo::exists(part))
            std::fprintf(stderr, "ember-cli: kept %s; run the same command again to resume\n",
                         qPrintable(part));
        app.exit(1);
    });
    std::fprintf(stderr, "downloading %s\n       to %s\n", qPrintable(d.url().toString()),
                 qPrintable(d.destination()));
    QTimer::singleShot(0, &d, &Downloader::start);
    return app.exec();
}

#endif

}  // namespace ember::cli

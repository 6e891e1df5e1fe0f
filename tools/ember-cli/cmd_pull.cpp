// pull: downloads a model with ember_fetch (fetch/: resumable, retried, verified: size,
// checksum given or reported by the server, and the GGUF header read by the engine's reader).
// No Qt: the download follows the same rules as the app's (fetch/fetch_rules.h).
#include "args.h"

#ifdef EMBER_HAVE_PULL
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ember/ember.h"
#include "fetch.h"
#include "fetch_catalog.h"
#include "gguf/gguf.h"
#endif

namespace ember::cli {

#ifndef EMBER_HAVE_PULL

int cmd_pull(int, char**) {
    return fail(
        "this build of ember-cli has no downloader (it was built without libcpp-httplib-dev and "
        "libssl-dev); fetch the file with curl or wget and check its checksum with sha256sum");
}

#else

namespace {

std::string format_duration(int64_t seconds) {
    char buf[32];
    if (seconds < 0) return "?";
    if (seconds < 60)
        std::snprintf(buf, sizeof buf, "%llds", (long long)seconds);
    else if (seconds < 3600)
        std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)seconds / 60,
                      (long long)seconds % 60);
    else
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)seconds / 3600,
                      (long long)(seconds / 60) % 60);
    return buf;
}

// The content check of a finished download, run before it gets its final name: the engine's
// reader parses the header, the metadata and the tensor table, and checks that every tensor's
// data lies inside the file.
std::string gguf_problem(const std::string& path) {
    auto file = gguf::File::open(path);
    if (!file) return file.error().message;
    if (!(*file)->get_string("general.architecture"))
        return "it has no general.architecture: not a model file";
    if ((*file)->tensors().empty()) return "it holds no tensors: not a model file";
    return {};
}

// The built-in catalog, each entry's support confirmed by the engine.
Result<std::vector<fetch::CatalogItem> > catalog() {
    auto items = fetch::parse_catalog(fetch::builtin_catalog_json());
    if (!items) return items.take_error();
    const std::vector<std::string> archs = supported_architectures();
    for (fetch::CatalogItem& e : *items) {
        if (e.supported && std::find(archs.begin(), archs.end(), e.architecture) == archs.end()) {
            e.supported = false;
            e.reason = "the engine does not run " + e.architecture;
        }
    }
    return items;
}

int list_catalog() {
    auto items = catalog();
    if (!items) return fail(items.error());
    for (const fetch::CatalogItem& e : *items) {
        std::printf("%-34s %10s  %s%s\n", e.id.c_str(),
                    ((e.size > 0 ? "" : "~") + fetch::format_bytes(e.display_size())).c_str(),
                    e.name.c_str(),
                    e.supported ? "" : ("  [unsupported: " + e.reason + "]").c_str());
    }
    return 0;
}

// Where the download goes and what it must match, from the command line.
Result<fetch::Request> make_request(const Args& a) {
    fetch::Request r;
    const std::string target = a.positional()[0];
    std::string dir = a.get_or("--dir", ".");
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty()) dir = ".";
    if (dir == "/") dir.clear();
    if (target.find("://") != std::string::npos) {
        const std::string name = fetch::file_name_from_url(target);
        if (name.empty())
            return make_error("pull.url", "'" + target + "' is not a URL that ends in a file name");
        r.url = target;
        r.destination = dir + "/" + name;
    } else {
        auto items = catalog();
        if (!items) return items.take_error();
        auto e = std::find_if(items->begin(), items->end(),
                              [&](const fetch::CatalogItem& i) { return i.id == target; });
        if (e == items->end())
            return make_error("pull.unknown", "'" + target +
                                                  "' is neither a URL nor a catalog id (see "
                                                  "ember-cli pull --list)");
        if (!e->supported)
            return make_error("pull.unsupported", e->id + " cannot run in Ember: " + e->reason);
        r.url = e->url;
        r.destination = dir + "/" + e->filename;
        r.expected_size = e->size > 0 ? e->size : -1;
        r.checksum = e->checksum;
    }
    for (const char* algo : {"sha256", "md5"}) {
        if (auto hex = a.get(std::string("--") + algo)) {
            auto c = fetch::parse_checksum(algo, *hex);
            if (!c) return c.take_error();
            r.checksum = *c;
        }
    }
    r.content_check_name = "GGUF header";
    r.content_check = gguf_problem;
    return r;
}

}  // namespace

int cmd_pull(int argc, char** argv) {
    Args a({"--list"}, {"--sha256", "--md5", "--dir", "--retries"}, {{"-d", "--dir"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    if (a.has("--list")) return list_catalog();
    if (a.positional().size() != 1)
        return fail(
            "usage: ember-cli pull (URL | CATALOG-ID) [--sha256 HEX | --md5 HEX] [--dir DIR] "
            "[--retries N]; --list shows the catalog");
    if (a.has("--sha256") && a.has("--md5")) return fail("give --sha256 or --md5, not both");
    auto retries = a.get_int("--retries", 5, 0, 100);
    if (!retries) return fail(retries.error());
    auto request = make_request(a);
    if (!request) return fail(request.error());
    request->max_retries = int(*retries);

    using Clock = std::chrono::steady_clock;
    const bool tty = isatty(STDERR_FILENO);
    Clock::time_point last_print{};
    bool printed = false;
    int64_t received = 0, total = -1;
    double speed = 0;
    auto print_progress = [&](bool force) {
        const auto now = Clock::now();
        if (!force && printed && now - last_print < std::chrono::milliseconds(tty ? 250 : 5000))
            return;
        if (total < 0 && received == 0) return;  // nothing to say yet
        last_print = now;
        printed = true;
        char line[160];
        if (total > 0)
            std::snprintf(line, sizeof line, "%5.1f%%  %s / %s", 100.0 * double(received) / total,
                          fetch::format_bytes(received).c_str(),
                          fetch::format_bytes(total).c_str());
        else
            std::snprintf(line, sizeof line, "%s", fetch::format_bytes(received).c_str());
        std::string text = line;
        if (speed > 0)
            text += "  " + fetch::format_bytes(int64_t(speed)) + "/s  ETA " +
                    format_duration(total > 0 ? int64_t(double(total - received) / speed) : -1);
        std::fprintf(stderr, tty ? "\r%-70s" : "%s\n", text.c_str());
    };
    auto end_line = [&] {
        if (tty && printed) std::fputc('\n', stderr);
        printed = false;
    };

    fetch::Events events;
    events.progress = [&](int64_t r, int64_t t, double s) {
        received = r;
        total = t;
        speed = s;
        print_progress(false);
    };
    events.retrying = [&](int attempt, int64_t delay_ms, const std::string& reason) {
        end_line();
        std::fprintf(stderr, "ember-cli: %s; retry %d in %.1f s\n", reason.c_str(), attempt,
                     double(delay_ms) / 1000.0);
    };
    events.restarted_from_zero = [&](const std::string& reason) {
        end_line();
        std::fprintf(stderr, "ember-cli: %s; starting over\n", reason.c_str());
    };
    events.verifying = [&](const fetch::Checksum& checksum) {
        print_progress(true);
        end_line();
        if (checksum.is_set())
            std::fprintf(stderr, "verifying the %s checksum and the GGUF header...\n",
                         checksum.algorithm_name().c_str());
        else
            std::fprintf(stderr, "checking the GGUF header...\n");
    };

    std::fprintf(stderr, "downloading %s\n       to %s\n", request->url.c_str(),
                 request->destination.c_str());
    const fetch::Outcome out = fetch::download(*request, events);
    end_line();
    if (!out.ok()) {
        std::fprintf(stderr, "ember-cli: download failed: %s\n", out.message.c_str());
        const std::string part = fetch::part_path(request->destination);
        if (access(part.c_str(), F_OK) == 0)
            std::fprintf(stderr, "ember-cli: kept %s; run the same command again to resume\n",
                         part.c_str());
        return 1;
    }
    std::fprintf(stderr, "saved %s (%s%s)\n", request->destination.c_str(),
                 fetch::format_bytes(out.size).c_str(),
                 out.verified ? (", " + out.checksum.algorithm_name() + " verified").c_str()
                              : ", no checksum to verify");
    std::fprintf(stderr, "checked: %s\n", out.checks.c_str());
    if (!out.verified)
        std::fprintf(stderr,
                     "note: no checksum is known for this file, so only its size and GGUF header "
                     "were checked; give --sha256 to check every byte\n");
    std::printf("%s\n", request->destination.c_str());
    return 0;
}

#endif

}  // namespace ember::cli

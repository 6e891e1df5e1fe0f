// serve: the OpenAI-compatible API server (server/, docs/api.md).
#include "args.h"

#include <cstdio>
#include <cstring>

#ifdef EMBER_HAVE_SERVE
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common.h"
#include "http_server.h"
#include "service.h"
#endif

namespace ember::cli {

namespace {

// Every option serve takes (docs/api.md has the same table).
const char* kServeUsage = R"(usage: ember-cli serve -m MODEL [options]

An OpenAI-compatible API server for MODEL (docs/api.md): /v1/chat/completions, /v1/completions,
/v1/models and /health. Stops on Ctrl+C or SIGTERM.

options:
  -m, --model FILE         the GGUF model; its file name without .gguf is the model's id
  --host ADDRESS           where to listen (default 127.0.0.1; 0.0.0.0 lets other computers in)
  --port N                 the port (default 8080; 0 picks a free one, the log says which)
  --api-key KEY            require "Authorization: Bearer KEY" on /v1/* (default: the
                           EMBER_API_KEY environment variable, else none)
  -c, --ctx N              context of each request in tokens (default 2048, or the model's
                           training context if shorter; longer than the model runs: refused)
  --parallel N             requests generated at once, 1 to 64 (default 1); the others wait in
                           arrival order
  --timeout S              seconds a client may take to send its request, and a write may
                           stall (default 30)
  --max-body BYTES         larger request bodies get a 413 (default 8388608)
  --max-connections N      connections served at once, 1 to 4096 (default 64); more wait
  --backend cpu|vulkan|auto  as for generate (default auto)
  --device N|NAME          the GPU to use (as for generate)
  -t, --threads N          CPU threads (default: all cores)
  --gpu-mem-limit SIZE     use at most SIZE of GPU memory (6G, 512M); a model that does not fit
                           runs its first layers on the CPU and the rest on the GPU
  --gpu-mem-free SIZE      leave SIZE of the GPU's free memory to other programs
  --gpu-layers N           at most N layers on the GPU (0: the CPU alone; default: all that fit)
  -h, --help               this text
)";

}  // namespace

#ifndef EMBER_HAVE_SERVE

int cmd_serve(int argc, char** argv) {
    for (int i = 2; i < argc; i++)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::fputs(kServeUsage, stdout);
            return 0;
        }
    return fail(
        "this build of ember-cli has no server (built with EMBER_SERVER=OFF or without "
        "libcpp-httplib-dev)");
}

#else

namespace {

// One line to stderr per event, with the time, whole lines only.
void log_line(const std::string& s) {
    static std::mutex mutex;
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&now));
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "%s serve: %s\n", stamp, s.c_str());
    std::fflush(stderr);
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    for (int i = 2; i < argc; i++)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::fputs(kServeUsage, stdout);
            return 0;
        }
    std::set<std::string> valued = {"--host",    "--port",     "--api-key",        "--parallel",
                                    "--timeout", "--max-body", "--max-connections"};
    valued.insert(kLoadOptions.begin(), kLoadOptions.end());
    Args a({}, valued, {{"-m", "--model"}, {"-c", "--ctx"}, {"-t", "--threads"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    auto path = a.require("--model");
    if (!path) return fail(path.error());
    auto load = load_params(a);
    if (!load) return fail(load.error());
    auto port = a.get_int("--port", 8080, 0, 65535);
    auto parallel = a.get_int("--parallel", 1, 1, 64);
    auto timeout = a.get_int("--timeout", 30, 1, 24 * 3600);
    auto max_body = a.get_int("--max-body", 8 << 20, 1024, 1LL << 32);
    auto max_conn = a.get_int("--max-connections", 64, 1, 4096);
    for (auto* r : {&port, &parallel, &timeout, &max_body, &max_conn})
        if (!*r) return fail(r->error());

    server::HttpConfig hc;
    hc.host = a.get_or("--host", "127.0.0.1");
    hc.port = int(*port);
    hc.timeout_s = int(*timeout);
    hc.max_body_bytes = size_t(*max_body);
    hc.max_connections = int(*max_conn);
    if (auto key = a.get("--api-key"))
        hc.api_key = *key;
    else if (const char* env = std::getenv("EMBER_API_KEY"))
        hc.api_key = env;

    // SIGINT and SIGTERM are waited for below; no other thread takes them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    server::Service service(log_line);
    server::HttpServer http(service, hc, log_line);
    auto bound = http.bind();
    if (!bound) return fail(bound.error());
    std::thread listener([&] { http.run(); });
    // The address first, so that a script can connect while the model loads (/health says 503).
    log_line("listening on http://" + hc.host + ":" + std::to_string(*bound) +
             (hc.api_key.empty() ? "" : " (API key required)"));
    auto stop = [&] {
        http.stop();  // no new connections; those open end with the requests they carry
        service.cancel_all("the server is stopping");
        listener.join();
        service.detach();
    };

    auto model = Model::load(*path, *load);
    if (!model) {
        stop();
        return fail(model.error());
    }
    const std::string id = std::filesystem::path(*path).stem().string();
    if (auto st = service.attach(**model, id, int(*parallel), 0); !st) {
        stop();
        return fail(st.error());
    }
    const BackendInfo& b = (*model)->backend();
    log_line("serving '" + id + "' on " + backend_name(b.kind) + " (" + b.device + "), " +
             std::to_string(*parallel) + " at a time, context " + std::to_string(service.n_ctx()));
    if (!b.split.empty()) log_line(b.split);

    int sig = 0;
    sigwait(&signals, &sig);
    log_line(std::string("stopping (") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")");
    stop();
    return 0;
}

#endif

}  // namespace ember::cli

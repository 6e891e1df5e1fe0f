// Runs ember-cli as a child under limits, for hostile files: an address-space limit (so that an
// unbounded allocation fails instead of swapping the machine) and a generous time limit after
// which the harness kills the child and reports a hang. The engine itself has no time limits.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace ember::test {

struct ChildResult {
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    bool hung = false;  // killed by the harness after the time limit
    long max_rss_kb = 0;
    double seconds = 0;
    std::string out, err;
};

// AddressSanitizer reserves terabytes of address space for its shadow memory at startup, so a
// sanitizer build of ember-cli cannot run under RLIMIT_AS; there the engine's own check against
// the machine's memory is what bounds allocations.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSpaceLimit = false;
#else
constexpr bool kAddressSpaceLimit = true;
#endif

struct ChildLimits {
    uint64_t address_space = kAddressSpaceLimit ? uint64_t(4) << 30 : 0;  // RLIMIT_AS; 0: none
    double seconds = 120;  // then SIGKILL; EMBER_HOSTILE_LIMIT_S overrides
};

inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline ChildResult run_child(const std::vector<std::string>& args, ChildLimits lim = {},
                             const std::vector<std::string>& env = {}) {
    if (const char* e = std::getenv("EMBER_HOSTILE_LIMIT_S")) lim.seconds = std::atof(e);
    const std::string base = (temp_dir() / ("child-" + std::to_string(::getpid()))).string();
    const std::string out_path = base + ".out", err_path = base + ".err";
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (lim.address_space) {
            struct rlimit rl = {rlim_t(lim.address_space), rlim_t(lim.address_space)};
            ::setrlimit(RLIMIT_AS, &rl);
        }
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0) ::_exit(126);
        ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
        for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ChildResult r;
    if (pid < 0) return r;
    int status = 0;
    struct rusage ru = {};
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    auto nap = std::chrono::microseconds(500);
    for (;;) {
        const pid_t w = ::wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return r;
        if (elapsed() > lim.seconds) {
            ::kill(pid, SIGKILL);
            ::wait4(pid, &status, 0, &ru);
            r.hung = true;
            break;
        }
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(20000));
    }
    r.seconds = elapsed();
    r.max_rss_kb = ru.ru_maxrss;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !r.hung) r.signal = WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    ::unlink(out_path.c_str());
    ::unlink(err_path.c_str());
    return r;
}

// What is wrong with a child's run, or "" when it either succeeded or refused cleanly: exit 1
// with a message on stderr. "out of memory" and "unexpected error" are ember-cli's catch-alls for
// exceptions, which hostile input must never reach (the first means an unbounded allocation).
inline std::string misbehaviour(const ChildResult& r) {
    if (r.hung) return "hung (killed after the time limit)";
    if (r.signal) return "died by signal " + std::to_string(r.signal);
    if (r.exit_code != 0 && r.exit_code != 1) return "exit status " + std::to_string(r.exit_code);
    if (r.exit_code == 1 && r.err.find_first_not_of(" \n") == std::string::npos)
        return "exit 1 with nothing on stderr";
    if (r.err.find("ember-cli: out of memory") != std::string::npos)
        return "an allocation failed (unbounded?)";
    if (r.err.find("unexpected error") != std::string::npos) return "an exception escaped";
    return "";
}

}  // namespace ember::test

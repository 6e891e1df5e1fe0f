// Runs ember-cli as a child process and captures its output (tests only).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace ember::test {

struct CliResult {
    int exit_code = -1;  // -1 if it died by a signal
    int signal = 0;
    std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
    std::string r = "'";
    for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
}

// args are quoted; stderr goes to a temp file so both streams are kept.
inline CliResult run_cli(const std::string& exe, const std::vector<std::string>& args,
                         const std::string& env = "") {
    char errpath[] = "/tmp/ember-cli-err-XXXXXX";
    int fd = mkstemp(errpath);
    if (fd >= 0) close(fd);
    std::string cmd = env + (env.empty() ? "" : " ") + shell_quote(exe);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    cmd += " 2>" + std::string(errpath) + " </dev/null";
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 65536> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int status = pclose(p);
    if (WIFEXITED(status))
        r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        r.signal = WTERMSIG(status);
    if (FILE* e = fopen(errpath, "rb")) {
        while ((n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
        fclose(e);
    }
    unlink(errpath);
    return r;
}

}  // namespace ember::test

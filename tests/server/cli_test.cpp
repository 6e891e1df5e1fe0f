// `ember-cli serve --help` lists every option serve takes, and serve takes every option it lists.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <string>

namespace {

struct CliRun {
    int status = -1;
    std::string output;  // stdout and stderr
};

CliRun cli(const std::string& args) {
    CliRun r;
    const std::string cmd = std::string(EMBER_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

}  // namespace

TEST(ServeCli, HelpListsEveryOptionAndEachIsAccepted) {
    const CliRun help = cli("serve --help");
    ASSERT_EQ(help.status, 0) << help.output;
    // Every "--name" that starts a word (not "--" inside one).
    std::set<std::string> listed;
    const std::string& h = help.output;
    for (size_t i = h.find("--"); i != std::string::npos; i = h.find("--", i + 2)) {
        if (i > 0 && h[i - 1] != ' ' && h[i - 1] != ',' && h[i - 1] != '\n') continue;
        size_t end = i + 2;
        while (end < h.size() &&
               (std::islower(static_cast<unsigned char>(h[end])) || h[end] == '-'))
            end++;
        if (end > i + 3) listed.insert(h.substr(i, end - i));
    }
    // A value each option accepts.
    const std::map<std::string, std::string> values = {
        {"--host", "127.0.0.1"},  {"--port", "0"},
        {"--api-key", "k"},       {"--ctx", "64"},
        {"--parallel", "2"},      {"--timeout", "5"},
        {"--max-body", "4096"},   {"--max-connections", "3"},
        {"--backend", "cpu"},     {"--device", "0"},
        {"--threads", "1"},       {"--gpu-mem-limit", "6G"},
        {"--gpu-mem-free", "1G"}, {"--gpu-layers", "2"}};
    std::set<std::string> expected = {"--model", "--help"};
    for (const auto& [name, value] : values) expected.insert(name);
    EXPECT_EQ(listed, expected) << help.output;

    // Each is taken (the run then stops at the missing model file, not at the option).
    const std::string missing = "/nonexistent-ember-model.gguf";
    for (const auto& [name, value] : values) {
        const std::string port = name == "--port" ? "" : " --port 0";
        const CliRun r = cli("serve -m " + missing + port + " " + name + " " + value);
        EXPECT_EQ(r.status, 1) << name << ": " << r.output;
        EXPECT_NE(r.output.find(missing), std::string::npos) << name << ": " << r.output;
        EXPECT_EQ(r.output.find("option"), std::string::npos) << name << ": " << r.output;
    }
    // A value out of range or an unknown option is refused by name.
    CliRun r = cli("serve -m " + missing + " --max-connections 0");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.output.find("--max-connections"), std::string::npos) << r.output;
    r = cli("serve -m " + missing + " --max-conections 3");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.output.find("--max-conections"), std::string::npos) << r.output;
}

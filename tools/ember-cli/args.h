// Command-line parsing shared by the ember-cli commands.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/result.h"

namespace ember::cli {

// Options are "--name value", "-x value" or flags "--name". Unknown or malformed options are
// errors, so that a typo never silently runs with defaults.
class Args {
public:
    // flags: options without a value; valued: options taking one value. Aliases map short to long.
    Args(std::set<std::string> flags, std::set<std::string> valued,
         std::map<std::string, std::string> aliases = {})
        : m_flags(std::move(flags)), m_valued(std::move(valued)), m_aliases(std::move(aliases)) {}

    Status parse(int argc, char** argv, int first);

    bool has(const std::string& name) const { return m_values.count(name) || m_set.count(name); }
    std::optional<std::string> get(const std::string& name) const;  // the last one given
    // Every value of an option that may be repeated (--var a=1 --var b=2), in order.
    std::vector<std::string> get_all(const std::string& name) const;
    std::string get_or(const std::string& name, const std::string& def) const;
    Result<std::string> require(const std::string& name) const;
    Result<long long> get_int(const std::string& name, long long def, long long lo,
                              long long hi) const;
    Result<double> get_double(const std::string& name, double def, double lo, double hi) const;
    const std::vector<std::string>& positional() const { return m_positional; }

private:
    std::set<std::string> m_flags, m_valued;
    std::map<std::string, std::string> m_aliases;
    std::map<std::string, std::string> m_values;
    std::vector<std::pair<std::string, std::string>> m_all;  // every valued option, in order
    std::set<std::string> m_set;
    std::vector<std::string> m_positional;
};

// Command entry points; each returns the process exit code.
int cmd_info(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_mkmodel(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_devices(int argc, char** argv);
// devices --plan (cmd_plan.cpp): the Vulkan plan for a model on an adapter ("" = auto).
int print_vulkan_plan(const std::string& model_path, const std::string& device);
int cmd_bench(int argc, char** argv);
int cmd_pull(int argc, char** argv);   // cmd_pull.cpp; needs EMBER_HAVE_PULL (Qt)
int cmd_serve(int argc, char** argv);  // cmd_serve.cpp; needs EMBER_HAVE_SERVE (cpp-httplib)

// Prints "ember-cli: <message>" to stderr and returns 1.
int fail(const std::string& message);
int fail(const Error& error);

}  // namespace ember::cli

#include "args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ember::cli {

Status Args::parse(int argc, char** argv, int first) {
    for (int i = first; i < argc; i++) {
        std::string a = argv[i];
        if (a.size() < 2 || a[0] != '-' || (a.size() >= 2 && a[1] >= '0' && a[1] <= '9')) {
            m_positional.push_back(a);
            continue;
        }
        std::string value;
        bool has_value = false;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
            has_value = true;
        }
        if (auto it = m_aliases.find(a); it != m_aliases.end()) a = it->second;
        if (m_flags.count(a)) {
            if (has_value) return make_error("cli.bad_option", "option " + a + " takes no value");
            m_set.insert(a);
        } else if (m_valued.count(a)) {
            if (!has_value) {
                if (i + 1 >= argc)
                    return make_error("cli.bad_option", "option " + a + " needs a value");
                value = argv[++i];
            }
            m_values[a] = value;
            m_all.emplace_back(a, value);
        } else {
            return make_error("cli.bad_option",
                              "unknown option '" + a + "' (see ember-cli --help)");
        }
    }
    return {};
}

std::optional<std::string> Args::get(const std::string& name) const {
    auto it = m_values.find(name);
    if (it == m_values.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : m_all)
        if (k == name) out.push_back(v);
    return out;
}

std::string Args::get_or(const std::string& name, const std::string& def) const {
    return get(name).value_or(def);
}

Result<std::string> Args::require(const std::string& name) const {
    if (auto v = get(name)) return *v;
    return make_error("cli.missing_option", "missing required option " + name);
}

Result<long long> Args::get_int(const std::string& name, long long def, long long lo,
                                long long hi) const {
    auto v = get(name);
    if (!v) return def;
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (errno || end == v->c_str() || *end != '\0')
        return make_error("cli.bad_value",
                          "option " + name + " expects an integer, got '" + *v + "'");
    if (x < lo || x > hi)
        return make_error("cli.bad_value", "option " + name + " must be in [" + std::to_string(lo) +
                                               ", " + std::to_string(hi) + "], got " + *v);
    return x;
}

Result<double> Args::get_double(const std::string& name, double def, double lo, double hi) const {
    auto v = get(name);
    if (!v) return def;
    errno = 0;
    char* end = nullptr;
    double x = std::strtod(v->c_str(), &end);
    if (errno || end == v->c_str() || *end != '\0' || x != x)
        return make_error("cli.bad_value",
                          "option " + name + " expects a number, got '" + *v + "'");
    if (x < lo || x > hi)
        return make_error("cli.bad_value", "option " + name + " is out of range: " + *v);
    return x;
}

int fail(const std::string& message) {
    std::fprintf(stderr, "ember-cli: %s\n", message.c_str());
    return 1;
}

int fail(const Error& error) {
    return fail(error.message);
}

}  // namespace ember::cli

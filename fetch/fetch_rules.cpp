#include "fetch_rules.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ember::fetch {

namespace {

bool all_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

// Digits only, no sign, no overflow.
std::optional<int64_t> parse_count(std::string_view s) {
    if (s.empty() || s.size() > 18) return std::nullopt;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string part_path(const std::string& destination) {
    return destination + ".part";
}

std::string state_path(const std::string& destination) {
    return destination + ".part.json";
}

std::string file_name_from_url(std::string_view url) {
    const size_t scheme = url.find("://");
    if (scheme == std::string_view::npos) return {};
    std::string_view rest = url.substr(scheme + 3);
    rest = rest.substr(0, rest.find_first_of("?#"));
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return {};
    const std::string_view raw = rest.substr(rest.rfind('/') + 1);
    std::string name;
    for (size_t i = 0; i < raw.size(); i++) {
        if (raw[i] == '%' && i + 2 < raw.size() && hex_value(raw[i + 1]) >= 0 &&
            hex_value(raw[i + 2]) >= 0) {
            name += char(hex_value(raw[i + 1]) * 16 + hex_value(raw[i + 2]));
            i += 2;
        } else {
            name += raw[i];
        }
    }
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos)
        return {};
    return name;
}

std::string Checksum::algorithm_name() const {
    switch (algorithm) {
        case Algorithm::Sha256:
            return "sha256";
        case Algorithm::Md5:
            return "md5";
        case Algorithm::None:
            break;
    }
    return {};
}

Result<Checksum> parse_checksum(std::string_view algorithm, std::string_view hex) {
    Checksum c;
    const std::string algo = lower(algorithm);
    size_t digits = 0;
    if (algo == "sha256") {
        c.algorithm = Checksum::Algorithm::Sha256;
        digits = 64;
    } else if (algo == "md5") {
        c.algorithm = Checksum::Algorithm::Md5;
        digits = 32;
    } else {
        return make_error(
            "fetch.bad_checksum",
            "unknown checksum algorithm '" + std::string(algorithm) + "' (expected sha256 or md5)");
    }
    const std::string h = trim(hex);
    if (h.size() != digits || !all_hex(h))
        return make_error("fetch.bad_checksum", algo + " checksum must be " +
                                                    std::to_string(digits) + " hex digits, got '" +
                                                    std::string(hex) + "'");
    c.hex = lower(h);
    return c;
}

std::string sha256_from_etag(std::string_view value) {
    std::string v = trim(value);
    if (v.rfind("W/", 0) == 0) v = v.substr(2);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    if (v.size() != 64 || !all_hex(v)) return {};
    return lower(v);
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
    std::string v = trim(value);
    if (v.rfind("bytes", 0) != 0) return std::nullopt;
    std::string_view s(v);
    s.remove_prefix(5);
    if (s.empty() || !std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    const size_t slash = s.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const std::string_view range = s.substr(0, slash), total = s.substr(slash + 1);
    ContentRange r;
    if (total != "*") {
        auto t = parse_count(total);
        if (!t) return std::nullopt;
        r.total = *t;
    }
    if (range == "*") return r.total >= 0 ? std::optional<ContentRange>(r) : std::nullopt;
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    auto first = parse_count(range.substr(0, dash)), last = parse_count(range.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    r.first = *first;
    r.last = *last;
    return r;
}

bool retryable_status(int status) {
    return status == 408 || status == 425 || status == 429 || status >= 500;
}

bool redirect_status(int status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

int64_t retry_delay_ms(int attempt, int base_ms) {
    const int shift = std::clamp(attempt - 1, 0, 20);
    return std::min<int64_t>(int64_t(base_ms) << shift, kMaxRetryDelayMs);
}

std::string state_to_json(const State& s) {
    nlohmann::json o = {{"version", 1},
                        {"url", s.url},
                        {"expected_size", s.expected_size},
                        {"checksum_algorithm", s.checksum_algorithm},
                        {"checksum", s.checksum},
                        {"checksum_source", s.checksum_source},
                        {"bytes_done", s.bytes_done},
                        {"etag", s.etag},
                        {"last_modified", s.last_modified}};
    return o.dump(4) + "\n";
}

std::optional<State> state_from_json(std::string_view json) {
    const nlohmann::json o = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!o.is_object() || o.value("version", nlohmann::json()) != 1) return std::nullopt;
    auto str = [&](const char* key) {
        auto it = o.find(key);
        return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto num = [&](const char* key, int64_t fallback) {
        auto it = o.find(key);
        return it != o.end() && it->is_number() ? int64_t(it->get<double>()) : fallback;
    };
    State s;
    s.url = str("url");
    if (s.url.find("://") == std::string::npos) return std::nullopt;
    s.expected_size = num("expected_size", -1);
    s.checksum_algorithm = str("checksum_algorithm");
    s.checksum = str("checksum");
    s.checksum_source = str("checksum_source");
    s.bytes_done = num("bytes_done", 0);
    s.etag = str("etag");
    s.last_modified = str("last_modified");
    return s;
}

Status save_state(const std::string& path, const State& state) {
    const std::string bytes = state_to_json(state);
    const std::string temp = path + ".tmp-" + std::to_string(int64_t(::getpid()));
    auto failed = [&](const char* what, int code, int fd) -> Status {
        if (fd >= 0) ::close(fd);
        ::unlink(temp.c_str());
        return make_error("fetch.state",
                          std::string("cannot ") + what + " " + path + ": " + std::strerror(code));
    };
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return failed("create a temporary file for", errno, -1);
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return failed("write", n < 0 ? errno : ENOSPC, fd);
        done += size_t(n);
    }
    if (::fsync(fd) != 0) return failed("sync", errno, fd);
    if (::close(fd) != 0) return failed("close", errno, -1);
    if (::rename(temp.c_str(), path.c_str()) != 0) return failed("replace", errno, -1);
    return {};
}

std::optional<State> load_state(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string text(1 << 20, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(in.gcount()));
    return state_from_json(text);
}

bool resumable(const State& saved, std::string_view url, const Checksum& given,
               int64_t expected_size, int64_t part_size) {
    if (saved.url != url) return false;
    if (given.is_set() && !saved.checksum.empty() &&
        (saved.checksum != given.hex || saved.checksum_algorithm != given.algorithm_name()))
        return false;
    if (expected_size >= 0 && saved.expected_size >= 0 && saved.expected_size != expected_size)
        return false;
    const int64_t expected = expected_size >= 0 ? expected_size : saved.expected_size;
    return !(expected >= 0 && part_size > expected);
}

std::string checks_summary(int64_t total, int64_t expected_size, const Checksum& checksum,
                           std::string_view checksum_source, std::string_view content_check) {
    std::string out;
    if (total >= 0)
        out = "size " + std::to_string(total) + " bytes as the server announced";
    else if (expected_size >= 0)
        out = "size " + std::to_string(expected_size) + " bytes as expected";
    else
        out = "size not checked (the server did not announce it)";
    if (!checksum.is_set() || checksum_source.empty())
        out += ", no checksum known";
    else if (checksum_source == "server")
        out += ", " + checksum.algorithm_name() + " checksum reported by the server";
    else
        out += ", " + checksum.algorithm_name() + " checksum";
    if (!content_check.empty()) out += ", " + std::string(content_check);
    return out;
}

std::string format_bytes(int64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (std::abs(v) >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0) return std::to_string(bytes) + " B";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace ember::fetch

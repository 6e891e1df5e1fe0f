#include "fetch.h"

#include <fcntl.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace ember::fetch {

namespace {

using Clock = std::chrono::steady_clock;
// A write that fails with less than this free is a full disk, whatever errno said.
constexpr int64_t kFullDiskSlack = int64_t(1) << 20;

// "https://host:port" and "/path?query" of an absolute http(s) URL.
struct Target {
    std::string scheme, origin, path;
};

std::optional<Target> split_url(const std::string& url) {
    const size_t colon = url.find("://");
    if (colon == std::string::npos) return std::nullopt;
    Target t;
    t.scheme = url.substr(0, colon);
    for (char& c : t.scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (t.scheme != "http" && t.scheme != "https") return std::nullopt;
    const size_t slash = url.find_first_of("/?#", colon + 3);
    const std::string host =
        url.substr(colon + 3, slash == std::string::npos ? std::string::npos : slash - colon - 3);
    if (host.empty() || host.find('@') != std::string::npos) return std::nullopt;
    t.origin = t.scheme + "://" + host;
    t.path = slash == std::string::npos ? "/" : url.substr(slash);
    if (t.path[0] != '/') t.path = "/" + t.path;
    t.path = t.path.substr(0, t.path.find('#'));
    return t;
}

// Location of a redirect, against the URL that answered.
std::string resolve(const Target& from, const std::string& location) {
    if (location.find("://") != std::string::npos) return location;
    if (location.rfind("//", 0) == 0) return from.scheme + ":" + location;
    if (!location.empty() && location[0] == '/') return from.origin + location;
    const std::string dir = from.path.substr(0, from.path.find('?'));
    return from.origin + dir.substr(0, dir.rfind('/') + 1) + location;
}

int64_t header_size(const httplib::Response& r, const char* name) {
    if (!r.has_header(name)) return -1;
    const std::string v = r.get_header_value(name);
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    return end && end != v.c_str() && *end == '\0' && n >= 0 ? int64_t(n) : -1;
}

std::unique_ptr<httplib::Client> client_for(const Target& t, int timeout_ms) {
    auto cli = std::make_unique<httplib::Client>(t.origin);
    const time_t sec = timeout_ms / 1000, usec = (timeout_ms % 1000) * 1000;
    cli->set_connection_timeout(sec, usec);
    cli->set_read_timeout(sec, usec);
    cli->set_write_timeout(sec, usec);
    cli->set_follow_location(false);  // by hand: Hugging Face puts the sha256 on the redirect
    cli->set_url_encode(false);       // URLs arrive encoded
    cli->set_decompress(false);       // byte ranges refer to the stored representation
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    cli->enable_server_certificate_verification(true);
#endif
    return cli;
}

std::string directory_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

int64_t file_size(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
}

bool make_dirs(const std::string& dir) {
    if (dir.empty() || exists(dir)) return true;
    if (!make_dirs(directory_of(dir))) return false;
    return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

enum class Cleanup { KeepPart, RemovePart, RemovePartIfEmpty };

// One download: the state the Qt downloader keeps in members, run to its end on this thread.
class Job {
public:
    Job(const Request& r, const Events& e) : m_req(r), m_ev(e), m_checksum(r.checksum) {
        m_expected = r.expected_size;
        if (m_checksum.is_set()) m_source = "given";
    }
    Outcome run();

private:
    bool prepare();
    void adopt_partial();
    bool probe();
    bool take_server_checksum(const std::string& sha256, int64_t size);
    bool open_part();
    bool transfer();  // true: the bytes are all in; false: failed (m_out says why)
    enum class Attempt { Complete, Retry, Restart, Failed };
    Attempt attempt(std::string* reason, Failure* kind);
    bool on_headers(const httplib::Response& r);
    bool on_body(const char* data, size_t n);
    bool check_free_space(bool before_start);
    void fail_write(int code);
    bool verify_and_finish();
    void truncate_part();
    void save();
    void fail(Failure f, const std::string& message, Cleanup cleanup);
    void progress(bool force);
    int64_t total() const { return m_expected >= 0 ? m_expected : m_total; }

    const Request& m_req;
    const Events& m_ev;
    Outcome m_out;
    std::string m_part, m_state_file;
    Checksum m_checksum;
    std::string m_source;  // "given", "server" or "" (none known)
    int64_t m_expected = -1, m_total = -1, m_received = 0, m_offset = 0, m_this_attempt = 0;
    std::string m_etag, m_last_modified;
    int m_fd = -1;
    // The answer of the current GET, as its headers came in.
    int m_status = 0;
    std::string m_reason, m_location, m_content_range;
    std::string m_restart;  // why the answer does not continue the .part
    bool m_body = false;    // the answer's body is being written
    Clock::time_point m_last_progress{}, m_last_space_check{}, m_speed_from{};
    int64_t m_speed_bytes = 0;
    double m_speed = 0;
};

void Job::fail(Failure f, const std::string& message, Cleanup cleanup) {
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    m_out.failure = f;
    m_out.message = message;
    m_out.checks = checks_summary(m_total, m_expected, m_checksum, m_source,
                                  m_req.content_check ? m_req.content_check_name : "");
    const bool remove = cleanup == Cleanup::RemovePart ||
                        (cleanup == Cleanup::RemovePartIfEmpty && file_size(m_part) <= 0);
    if (remove) {
        ::unlink(m_part.c_str());
        ::unlink(m_state_file.c_str());
    } else if (exists(m_part)) {
        save();
    }
}

void Job::save() {
    State s;
    s.url = m_req.url;
    s.expected_size = m_expected;
    s.checksum_algorithm = m_checksum.algorithm_name();
    s.checksum = m_checksum.hex;
    s.checksum_source = m_checksum.is_set() ? m_source : "";
    s.bytes_done = m_received;
    s.etag = m_etag;
    s.last_modified = m_last_modified;
    (void)save_state(m_state_file, s);  // a lost state only costs the resume
}

void Job::progress(bool force) {
    if (!m_ev.progress) return;
    const auto now = Clock::now();
    if (!force && now - m_last_progress < std::chrono::milliseconds(100)) return;
    m_last_progress = now;
    const double seconds = std::chrono::duration<double>(now - m_speed_from).count();
    if (seconds >= 1.0) {
        const double current = double(m_received - m_speed_bytes) / seconds;
        m_speed = m_speed > 0 ? 0.7 * m_speed + 0.3 * current : current;
        m_speed_from = now;
        m_speed_bytes = m_received;
    }
    m_ev.progress(m_received, total(), m_speed);
}

bool Job::prepare() {
    if (!split_url(m_req.url)) {
        fail(Failure::InvalidRequest, "'" + m_req.url + "' is not an http or https URL",
             Cleanup::KeepPart);
        return false;
    }
    if (m_req.destination.empty()) {
        fail(Failure::InvalidRequest, "no destination file given", Cleanup::KeepPart);
        return false;
    }
    m_part = part_path(m_req.destination);
    m_state_file = state_path(m_req.destination);
    const std::string dir = directory_of(m_req.destination);
    if (!make_dirs(dir)) {
        fail(Failure::File, "cannot create the folder " + dir + ": " + std::strerror(errno),
             Cleanup::KeepPart);
        return false;
    }
    if (exists(m_req.destination)) {
        fail(Failure::FileExists, m_req.destination + " already exists", Cleanup::KeepPart);
        return false;
    }
    adopt_partial();
    return true;
}

// Continues from NAME.part only when its state says it is the same file.
void Job::adopt_partial() {
    m_received = 0;
    if (!exists(m_part)) {
        ::unlink(m_state_file.c_str());
        return;
    }
    const std::optional<State> saved = load_state(m_state_file);
    const int64_t size = file_size(m_part);
    if (!saved || !resumable(*saved, m_req.url, m_checksum, m_expected, size)) {
        ::unlink(m_part.c_str());
        ::unlink(m_state_file.c_str());
        return;
    }
    if (!m_checksum.is_set() && !saved->checksum.empty()) {
        if (auto c = parse_checksum(saved->checksum_algorithm, saved->checksum); c.ok()) {
            m_checksum = *c;
            m_source = saved->checksum_source == "server" ? "server" : "given";
        }
    }
    if (m_expected < 0) m_expected = saved->expected_size;
    m_etag = saved->etag;
    m_last_modified = saved->last_modified;
    m_received = size;
}

// What the server says about the file (HEAD or redirect): its sha256 becomes the checksum when
// none was given and must equal a given one; its size must equal the expected one.
bool Job::take_server_checksum(const std::string& sha256, int64_t size) {
    if (!sha256.empty()) {
        if (!m_checksum.is_set()) {
            m_checksum = {Checksum::Algorithm::Sha256, sha256};
            m_source = "server";
        } else if (m_checksum.algorithm == Checksum::Algorithm::Sha256 &&
                   m_checksum.hex != sha256) {
            fail(Failure::ChecksumMismatch,
                 "the server reports sha256 " + sha256 + " for " + m_req.url + ", expected " +
                     m_checksum.hex + " (the download was removed)",
                 Cleanup::RemovePart);
            return false;
        }
    }
    if (size >= 0) {
        if (m_expected >= 0 && size != m_expected) {
            fail(Failure::SizeMismatch,
                 m_req.url + " is " + std::to_string(size) + " bytes on the server, expected " +
                     std::to_string(m_expected),
                 Cleanup::RemovePart);
            return false;
        }
        m_expected = size;
    }
    return true;
}

// A HEAD for the size and sha256 (X-Linked-Size, X-Linked-Etag on Hugging Face's redirect).
// Only an answer that says the file is not there for us fails the download; a server that
// merely dislikes HEAD (405, 501) or a passing failure leaves it to the GET.
bool Job::probe() {
    std::string url = m_req.url, sha256;
    int64_t size = -1;
    for (int hop = 0;; hop++) {
        const auto t = split_url(url);
        if (!t || hop > kMaxRedirects) return true;
        auto cli = client_for(*t, m_req.timeout_ms);
        const auto res =
            cli->Head(t->path, {{"User-Agent", "Ember"}, {"Accept-Encoding", "identity"}});
        if (!res) return true;
        // The first answer that names the linked file wins: later hops are the CDN's own.
        if (sha256.empty()) sha256 = sha256_from_etag(res->get_header_value("X-Linked-Etag"));
        if (size < 0) size = header_size(*res, "X-Linked-Size");
        const int status = res->status;
        if (status >= 300 && status < 400 && res->has_header("Location")) {
            url = resolve(*t, res->get_header_value("Location"));
            const auto next = split_url(url);
            if (t->scheme == "https" && (!next || next->scheme != "https")) {
                fail(Failure::Network, "HEAD " + m_req.url + " redirects to the less safe " + url,
                     Cleanup::RemovePart);
                return false;
            }
            continue;
        }
        if (status == 401 || status == 403 || status == 404 || status == 410) {
            fail(Failure::Http,
                 "HTTP " + std::to_string(status) + " " + res->reason + " for " + m_req.url,
                 Cleanup::RemovePart);
            return false;
        }
        if (status < 200 || status >= 300) return true;
        if (size < 0) size = header_size(*res, "Content-Length");
        return take_server_checksum(sha256, size);
    }
}

void Job::truncate_part() {
    m_received = 0;
    m_offset = 0;
    if (m_fd >= 0) {
        if (::ftruncate(m_fd, 0) == 0) ::lseek(m_fd, 0, SEEK_SET);
    } else {
        (void)::truncate(m_part.c_str(), 0);
    }
}

bool Job::check_free_space(bool before_start) {
    const std::string dir = directory_of(m_req.destination);
    const int64_t free = free_space(dir);
    if (free < 0) return true;
    const int64_t remaining = total() >= 0 ? std::max<int64_t>(0, total() - m_received) : 0;
    // Before starting, keep a margin so the disk is not left full; once running, only what is
    // left of the file has to fit.
    const int64_t needed = remaining + (before_start ? m_req.free_space_margin : 0);
    if (free >= needed) return true;
    fail(Failure::InsufficientSpace,
         "not enough disk space in " + dir + ": " + format_bytes(free) + " free, " +
             format_bytes(needed) + " needed (" + format_bytes(remaining) + " still to download" +
             (before_start ? " + " + format_bytes(m_req.free_space_margin) + " margin" : "") + ")",
         Cleanup::KeepPart);
    return false;
}

// A failed write of the .part: a full disk says so with the space left; the bytes written so far
// stay for a resume.
void Job::fail_write(int code) {
    const std::string dir = directory_of(m_req.destination);
    const int64_t free = free_space(dir);
    const std::string what = std::strerror(code);
    if (!(code == ENOSPC || code == EDQUOT || (free >= 0 && free < kFullDiskSlack))) {
        fail(Failure::File, "cannot write " + m_part + ": " + what, Cleanup::KeepPart);
        return;
    }
    fail(Failure::InsufficientSpace,
         "disk full: cannot write " + m_part + " (" + what + "); " +
             (free >= 0 ? format_bytes(free) : std::string("?")) + " free in " + dir +
             (total() >= 0 ? ", " + format_bytes(std::max<int64_t>(0, total() - m_received)) +
                                 " still to download"
                           : std::string()) +
             "; the " + format_bytes(m_received) + " received so far are kept",
         Cleanup::KeepPart);
}

bool Job::open_part() {
    if (m_expected >= 0 && m_received > m_expected) truncate_part();
    if (!check_free_space(true)) return false;
    m_fd = ::open(m_part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) {
        fail(Failure::File, "cannot open " + m_part + " for writing: " + std::strerror(errno),
             Cleanup::KeepPart);
        return false;
    }
    if ((file_size(m_part) != m_received && ::ftruncate(m_fd, m_received) != 0) ||
        ::lseek(m_fd, m_received, SEEK_SET) != m_received) {
        fail(Failure::File, "cannot resize " + m_part + ": " + std::strerror(errno),
             Cleanup::KeepPart);
        return false;
    }
    save();
    return true;
}

// The answer's headers, before its body. Returns false to stop the transfer: a redirect, an
// error status, a range that does not continue the .part (m_restart), or a failure.
bool Job::on_headers(const httplib::Response& r) {
    m_status = r.status;
    m_reason = r.reason;
    if (redirect_status(r.status) && r.has_header("Location")) {
        if (!take_server_checksum(sha256_from_etag(r.get_header_value("X-Linked-Etag")),
                                  header_size(r, "X-Linked-Size")))
            return false;
        m_location = r.get_header_value("Location");
        return false;
    }
    const int64_t length = header_size(r, "Content-Length");
    if (r.status == 206) {
        const std::string value = r.get_header_value("Content-Range");
        const auto range = parse_content_range(value);
        if (!range || range->first != m_offset) {
            m_restart = "the server sent the range '" + value +
                        "' for 'bytes=" + std::to_string(m_offset) + "-'";
            return false;
        }
        if (range->total >= 0)
            m_total = range->total;
        else if (length >= 0)
            m_total = m_offset + length;
    } else if (r.status == 200) {
        if (m_offset > 0) {
            // Range ignored, or If-Range saw a changed file: the body is the whole file.
            truncate_part();
            if (m_ev.restarted_from_zero)
                m_ev.restarted_from_zero(
                    "the server ignored the range request and sent the whole file");
            progress(true);
        }
        m_total = length;
    } else {
        m_content_range = r.get_header_value("Content-Range");
        return false;  // an error status: attempt() reports it
    }
    if (r.status == 200 || r.has_header("ETag")) m_etag = r.get_header_value("ETag");
    if (r.status == 200 || r.has_header("Last-Modified"))
        m_last_modified = r.get_header_value("Last-Modified");
    if (m_expected >= 0 && m_total >= 0 && m_total != m_expected) {
        fail(Failure::SizeMismatch,
             m_req.url + " is " + std::to_string(m_total) + " bytes on the server, expected " +
                 std::to_string(m_expected),
             Cleanup::RemovePart);
        return false;
    }
    if (m_expected < 0 && m_total >= 0 && !check_free_space(true)) return false;
    save();
    m_body = true;
    return true;
}

bool Job::on_body(const char* data, size_t n) {
    if (m_total >= 0 && m_received + int64_t(n) > m_total) {
        fail(Failure::SizeMismatch,
             m_req.url + " sent more than the " + std::to_string(m_total) + " bytes it announced",
             Cleanup::RemovePart);
        return false;
    }
    // A short write (the disk filled up) keeps what went in; the next write says why.
    for (size_t done = 0; done < n;) {
        const ssize_t w = ::write(m_fd, data + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fail_write(w < 0 ? errno : ENOSPC);
            return false;
        }
        done += size_t(w);
        m_received += w;
        m_this_attempt += w;
    }
    const auto now = Clock::now();
    if (now - m_last_space_check >= std::chrono::seconds(1)) {
        m_last_space_check = now;
        if (!check_free_space(false)) return false;
    }
    progress(false);
    return true;
}

// One GET, with the redirects it takes. *reason and *kind say why, for Retry and Restart.
Job::Attempt Job::attempt(std::string* reason, Failure* kind) {
    std::string url = m_req.url;
    m_offset = m_received;
    m_this_attempt = 0;
    for (int hops = 0;; hops++) {
        const auto t = split_url(url);
        httplib::Headers headers = {{"User-Agent", "Ember"}, {"Accept-Encoding", "identity"}};
        if (m_offset > 0) {
            headers.emplace("Range", "bytes=" + std::to_string(m_offset) + "-");
            // If-Range makes a changed file come back whole (200) rather than spliced. Weak
            // ETags are not allowed there.
            if (!m_etag.empty() && m_etag.rfind("W/", 0) != 0)
                headers.emplace("If-Range", m_etag);
            else if (!m_last_modified.empty())
                headers.emplace("If-Range", m_last_modified);
        }
        m_status = 0;
        m_reason.clear();
        m_location.clear();
        m_restart.clear();
        m_content_range.clear();
        m_body = false;
        auto cli = client_for(*t, m_req.timeout_ms);
        const auto res = cli->Get(
            t->path, headers, [this](const httplib::Response& r) { return on_headers(r); },
            [this](const char* data, size_t n) { return on_body(data, n); });
        if (m_out.failure != Failure::None) return Attempt::Failed;
        if (!m_restart.empty()) {
            *reason = m_restart;
            return Attempt::Restart;
        }
        if (!m_location.empty()) {
            const std::string next = resolve(*t, m_location);
            const auto n = split_url(next);
            std::string refused;
            if (!n || (t->scheme == "https" && n->scheme != "https"))
                refused = url + " redirects to the less safe " + next;
            else if (hops + 1 > kMaxRedirects)
                refused = m_req.url + ": more than " + std::to_string(kMaxRedirects) + " redirects";
            if (!refused.empty()) {
                fail(Failure::Network, refused, Cleanup::RemovePartIfEmpty);
                return Attempt::Failed;
            }
            url = next;
            continue;
        }
        if (m_body) {
            if (res && m_total >= 0 && m_received < m_total) {
                *reason = "the connection closed after " + std::to_string(m_received) + " of " +
                          std::to_string(m_total) + " bytes";
                return Attempt::Retry;
            }
            if (res) return Attempt::Complete;
            *reason = httplib::to_string(res.error()) + " after " + std::to_string(m_received) +
                      (m_total >= 0 ? " of " + std::to_string(m_total) : std::string()) +
                      " bytes (" + url + ")";
            return Attempt::Retry;
        }
        if (m_status == 416) {
            // Nothing left to send: either the .part is already whole or it does not fit.
            if (const auto range = parse_content_range(m_content_range)) m_total = range->total;
            if (m_expected >= 0 && m_received == m_expected) return Attempt::Complete;
            truncate_part();
            *reason = "the server rejected the range; starting over";
            return Attempt::Retry;
        }
        if (m_status >= 400) {
            const std::string message =
                "HTTP " + std::to_string(m_status) + " " + m_reason + " for " + m_req.url;
            if (!retryable_status(m_status)) {
                fail(Failure::Http, message, Cleanup::RemovePart);
                return Attempt::Failed;
            }
            *reason = message;
            *kind = Failure::Http;
            return Attempt::Retry;
        }
        const std::string message =
            (m_status ? "unexpected HTTP " + std::to_string(m_status) + " " + m_reason
                      : httplib::to_string(res.error())) +
            " (" + url + ")";
        const auto error = res.error();
        if (m_status || error == httplib::Error::SSLConnection ||
            error == httplib::Error::SSLServerVerification ||
            error == httplib::Error::UnsupportedMultipartBoundaryChars) {
            fail(Failure::Network, message, Cleanup::RemovePartIfEmpty);
            return Attempt::Failed;
        }
        *reason = message;
        return Attempt::Retry;
    }
}

// Attempts until the bytes are all in; failures in a row past max_retries give up.
bool Job::transfer() {
    int failures = 0, restarts = 0;
    for (;;) {
        std::string reason;
        Failure kind = Failure::Network;
        switch (attempt(&reason, &kind)) {
            case Attempt::Complete:
                return true;
            case Attempt::Failed:
                return false;
            case Attempt::Restart:
                if (++restarts > 3) {
                    fail(Failure::Network, reason, Cleanup::RemovePart);
                    return false;
                }
                truncate_part();
                m_etag.clear();
                m_last_modified.clear();
                if (m_ev.restarted_from_zero) m_ev.restarted_from_zero(reason);
                progress(true);
                continue;
            case Attempt::Retry:
                break;
        }
        // A failure after progress is a fresh streak: only failures in a row count.
        if (m_this_attempt > 0) failures = 0;
        if (++failures > m_req.max_retries) {
            fail(kind, reason + "; gave up after " + std::to_string(m_req.max_retries) + " retries",
                 Cleanup::RemovePartIfEmpty);
            return false;
        }
        const int64_t delay = retry_delay_ms(failures, m_req.retry_base_delay_ms);
        save();
        if (m_ev.retrying) m_ev.retrying(failures, delay, reason);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        if (!check_free_space(false)) return false;
    }
}

bool Job::verify_and_finish() {
    ::close(m_fd);
    m_fd = -1;
    progress(true);
    const std::string dest = m_req.destination;
    // The size the caller expects and the one the server announced (they agreed already).
    for (const int64_t expected : {m_expected, m_total}) {
        if (expected >= 0 && m_received != expected) {
            fail(Failure::SizeMismatch,
                 m_part + " has " + std::to_string(m_received) + " bytes, expected " +
                     std::to_string(expected) + " (the download was removed)",
                 Cleanup::RemovePart);
            return false;
        }
    }
    save();
    if ((m_checksum.is_set() || m_req.content_check) && m_ev.verifying) m_ev.verifying(m_checksum);
    if (m_checksum.is_set()) {
        auto digest = file_digest(m_part, m_checksum.algorithm);
        if (!digest.ok()) {
            fail(Failure::File, digest.error().message, Cleanup::KeepPart);
            return false;
        }
        if (*digest != m_checksum.hex) {
            fail(Failure::ChecksumMismatch,
                 m_checksum.algorithm_name() + " checksum mismatch for " + dest + ": expected " +
                     m_checksum.hex + (m_source == "server" ? " (as the server reports)" : "") +
                     ", got " + *digest + " (the download was removed)",
                 Cleanup::RemovePart);
            return false;
        }
    }
    if (m_req.content_check) {
        if (const std::string problem = m_req.content_check(m_part); !problem.empty()) {
            fail(Failure::InvalidFile,
                 dest + " failed the " + m_req.content_check_name +
                     " check and was removed: " + problem,
                 Cleanup::RemovePart);
            return false;
        }
    }
    if (exists(dest)) {
        fail(Failure::FileExists, dest + " already exists", Cleanup::KeepPart);
        return false;
    }
    if (::rename(m_part.c_str(), dest.c_str()) != 0) {
        fail(Failure::File, "cannot rename " + m_part + " to " + dest + ": " + std::strerror(errno),
             Cleanup::KeepPart);
        return false;
    }
    ::unlink(m_state_file.c_str());
    m_out.verified = m_checksum.is_set();
    return true;
}

Outcome Job::run() {
    m_speed_from = m_last_space_check = Clock::now();
    if (!prepare()) return m_out;
    m_speed_bytes = m_received;
    progress(true);
    if (m_req.probe_with_head && (!m_checksum.is_set() || m_expected < 0) && !probe()) return m_out;
    if (!open_part() || !transfer() || !verify_and_finish()) return m_out;
    m_out.checksum = m_checksum;
    m_out.size = m_received;
    m_out.checks = checks_summary(m_total, m_expected, m_checksum, m_source,
                                  m_req.content_check ? m_req.content_check_name : "");
    return m_out;
}

}  // namespace

Outcome download(const Request& request, const Events& events) {
    Job job(request, events);
    return job.run();
}

int64_t free_space(const std::string& directory) {
    struct statvfs st;
    if (::statvfs(directory.c_str(), &st) != 0) return -1;
    return int64_t(st.f_bavail) * int64_t(st.f_frsize);
}

Result<std::string> file_digest(const std::string& path, Checksum::Algorithm algorithm) {
    const EVP_MD* md = algorithm == Checksum::Algorithm::Md5 ? EVP_md5() : EVP_sha256();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return make_error("fetch.read", "cannot read " + path + ": " + std::strerror(errno));
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), md, nullptr);
    std::vector<char> buf(size_t(1) << 20);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int code = errno;
            ::close(fd);
            return make_error("fetch.read", "cannot read " + path + ": " + std::strerror(code));
        }
        if (n == 0) break;
        EVP_DigestUpdate(ctx.get(), buf.data(), size_t(n));
    }
    ::close(fd);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (unsigned i = 0; i < len; i++) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 15];
    }
    return hex;
}

}  // namespace ember::fetch

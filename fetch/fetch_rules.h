// The rules every download of Ember follows, in one place: ember-cli's downloader (fetch.h) and
// the app's Qt downloader (app/download) both use them, so that a download one of them left
// half-done is resumed by the other, and both check and report the same things.
//
// Files on disk, for a destination NAME:
//   NAME.part       the bytes received so far (never a valid model: only a verified file is
//                   renamed to NAME);
//   NAME.part.json  the State below, so that a later download of the same url and destination
//                   resumes with a Range request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ember/result.h"

namespace ember::fetch {

std::string part_path(const std::string& destination);   // NAME.part
std::string state_path(const std::string& destination);  // NAME.part.json

// The last segment of a URL's path (before any query or fragment), percent-decoded; empty when
// it has none or it is "." or "..", or holds a '/'.
std::string file_name_from_url(std::string_view url);

// A checksum a download is expected to match.
struct Checksum {
    enum class Algorithm { None, Sha256, Md5 };
    Algorithm algorithm = Algorithm::None;
    std::string hex;  // lower case

    bool is_set() const { return algorithm != Algorithm::None; }
    std::string algorithm_name() const;  // "sha256", "md5", "" for none
};

// algorithm: "sha256" or "md5"; hex: the digest, any case. Error "fetch.bad_checksum" names the
// digits expected.
Result<Checksum> parse_checksum(std::string_view algorithm, std::string_view hex);

// A 64-digit sha256 from an ETag-like header value ("\"abc...\"", W/"..."), else empty: Hugging
// Face reports an LFS file's sha256 in X-Linked-Etag on the redirect of its resolve URL.
std::string sha256_from_etag(std::string_view value);

// A header value of "Content-Range: bytes FIRST-LAST/TOTAL" (TOTAL -1 for "*"), or of a 416's
// "bytes */TOTAL" (first and last -1).
struct ContentRange {
    int64_t first = -1, last = -1, total = -1;
};
std::optional<ContentRange> parse_content_range(std::string_view value);

// Statuses worth another attempt (timeouts, too many requests, server errors).
bool retryable_status(int status);
bool redirect_status(int status);
constexpr int kMaxRedirects = 10;
constexpr int kMaxRetryDelayMs = 60000;
// The wait before retry number `attempt` (1, 2, ...): base_ms doubled each time, capped.
int64_t retry_delay_ms(int attempt, int base_ms);

// NAME.part.json.
struct State {
    std::string url;  // as requested (encoded)
    int64_t expected_size = -1;
    std::string checksum_algorithm;  // "sha256", "md5" or empty
    std::string checksum;            // lower-case hex
    std::string checksum_source;     // "given" (caller, catalog) or "server" (X-Linked-ETag)
    int64_t bytes_done = 0;          // informative; the .part file's size is what counts
    std::string etag;                // validators of the response that served the bytes (If-Range)
    std::string last_modified;
};
std::string state_to_json(const State& state);
std::optional<State> state_from_json(std::string_view json);
// Written atomically (a temporary file, fsync, rename over the old one), so that neither a crash
// nor a full disk leaves a half-written or empty state: on failure the old state stays.
Status save_state(const std::string& path, const State& state);
// nullopt when the file is missing or is not a state file.
std::optional<State> load_state(const std::string& path);

// Whether NAME.part (part_size bytes, left with `saved`) is the start of the file now asked for:
// the same url, and no disagreement with a given checksum or size. Anything else is a leftover
// that could corrupt the result and must go.
bool resumable(const State& saved, std::string_view url, const Checksum& given,
               int64_t expected_size, int64_t part_size);

// What a finished download was checked against, in words, e.g. "size 2000 bytes as the server
// announced, sha256 checksum reported by the server, GGUF header". total: the size the server
// announced (-1: none); checksum_source: "given", "server" or "" (none known); content_check:
// the name of the content check, empty when none.
std::string checks_summary(int64_t total, int64_t expected_size, const Checksum& checksum,
                           std::string_view checksum_source, std::string_view content_check);

// "1.5 MiB".
std::string format_bytes(int64_t bytes);

}  // namespace ember::fetch

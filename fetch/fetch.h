// Downloads one file over HTTP(S) without Qt (ember-cli pull): resumable, retried, checked for
// free space, and verified before it appears under its final name. It follows the rules of
// fetch_rules.h, as the app's Qt downloader does, so either resumes what the other left.
//
// Verification, before the rename: the size (the expected one, else the total the server
// announced); the checksum given, else the sha256 the server reports (Hugging Face's
// X-Linked-ETag, on the HEAD's or the GET's redirect); and the content check when one is set.
//
// What is left behind on failure: nothing after a 4xx answer, a size or checksum mismatch or a
// failed content check; NAME.part and NAME.part.json after network failures or 5xx answers past
// the last retry, too little disk space or write errors (if any byte arrived), so that the same
// call later continues with a Range request.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fetch_rules.h"

namespace ember::fetch {

enum class Failure {
    None,
    InvalidRequest,     // bad url or destination
    FileExists,         // the destination already exists
    InsufficientSpace,  // too little free space, or the disk filled up while writing
    Http,               // the server answered with an error status
    Network,            // connection, TLS, timeout... after the retries
    File,               // reading or writing the local files
    SizeMismatch,
    ChecksumMismatch,
    InvalidFile  // the content check refused the complete file (e.g. not a GGUF model)
};

struct Request {
    std::string url;          // http or https
    std::string destination;  // the final file path (e.g. models/x.gguf)
    int64_t expected_size = -1;
    Checksum checksum;  // unset: the server's sha256 when it reports one
    // Run on the complete file before the rename; returns what is wrong with it, else "".
    std::function<std::string(const std::string& path)> content_check;
    std::string content_check_name;  // for the summary: "GGUF header"
    int max_retries = 5;
    int retry_base_delay_ms = 1000;  // doubles after each failure in a row
    int timeout_ms = 30000;          // a stall this long fails an attempt
    int64_t free_space_margin = int64_t(64) << 20;
    bool probe_with_head = true;  // without checksum or size, ask the server first (HEAD)
};

struct Events {
    std::function<void(int64_t received, int64_t total, double bytes_per_second)> progress;
    std::function<void(int attempt, int64_t delay_ms, const std::string& reason)> retrying;
    std::function<void(const std::string& reason)> restarted_from_zero;
    std::function<void(const Checksum& checksum)> verifying;  // hashing / content check begin
};

struct Outcome {
    Failure failure = Failure::None;
    std::string message;    // what failed, when failure != None
    bool verified = false;  // the file matched a checksum
    Checksum checksum;      // the one it was checked against (given or the server's)
    std::string checks;     // checks_summary() of the finished (or refused) file
    int64_t size = 0;       // bytes of the finished file
    bool ok() const { return failure == Failure::None; }
};

// Blocks until the file is at request.destination or the download failed.
Outcome download(const Request& request, const Events& events = {});

// Free bytes available to the directory, -1 when unknown.
int64_t free_space(const std::string& directory);

// The lower-case hex digest of a file; error "fetch.read" when it cannot be read.
Result<std::string> file_digest(const std::string& path, Checksum::Algorithm algorithm);

}  // namespace ember::fetch

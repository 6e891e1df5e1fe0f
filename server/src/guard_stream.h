// The connection under cpp-httplib, with the limits it lacks: a deadline for the whole request
// (a stalled or slow client gets a 408), a cap on the header block's bytes and lines (a header
// flood gets a 431) and on the body's bytes, a timeout on every write, and a check for a client
// that has gone.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include <httplib.h>

namespace ember::server {

struct StreamLimits {
    std::chrono::seconds request_timeout{30};  // to receive the whole request
    std::chrono::seconds write_timeout{30};    // for one write to make progress
    size_t max_head_bytes = 64 * 1024;
    size_t max_head_lines = 100;
    size_t max_body_bytes = 8 * 1024 * 1024;
};

class GuardStream : public httplib::Stream {
public:
    GuardStream(int fd, const StreamLimits& limits);

    enum class Head { Ok, Closed, Timeout, TooLarge };
    // Reads until the end of the header block (the bytes stay buffered for httplib).
    Head read_head();

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return m_fd; }
    using httplib::Stream::write;

    // The client closed its side or the connection broke. Safe from any thread while the
    // connection is open.
    bool peer_gone() const;
    bool timed_out() const { return m_timed_out; }
    bool body_too_large() const { return m_too_large; }
    // Writes a complete response outside httplib (for requests it never saw) and closes.
    void write_raw_response(int status, const char* reason, const std::string& json_body);
    // Half-closes, reads what the client still sends for a moment (so that closing does not
    // reset a connection whose response is unread), then closes.
    void close_gracefully();

private:
    bool wait(short events, std::chrono::steady_clock::time_point until) const;

    int m_fd;
    StreamLimits m_limits;
    std::chrono::steady_clock::time_point m_deadline;
    std::string m_buf;  // read ahead of httplib
    size_t m_pos = 0;
    size_t m_body_read = 0;  // socket bytes read after the header block
    bool m_timed_out = false, m_too_large = false;
};

}  // namespace ember::server

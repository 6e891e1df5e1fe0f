#include "guard_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ember::server {
namespace {

using Clock = std::chrono::steady_clock;

void address_of(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int r = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                       : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ip.clear();
    port = 0;
    if (r != 0) return;
    char buf[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
        port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        port = ntohs(a->sin6_port);
    }
    ip = buf;
}

}  // namespace

GuardStream::GuardStream(int fd, const StreamLimits& limits)
    : m_fd(fd), m_limits(limits), m_deadline(Clock::now() + limits.request_timeout) {}

bool GuardStream::wait(short events, Clock::time_point until) const {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        pollfd p{m_fd, events, 0};
        const int r = poll(&p, 1, int(std::max<int64_t>(0, left.count())));
        if (r > 0) return true;  // ready, or an error that the next call reports
        if (r == 0) return false;
        if (errno != EINTR) return true;
    }
}

GuardStream::Head GuardStream::read_head() {
    char tmp[4096];
    for (;;) {
        const size_t end = m_buf.find("\r\n\r\n");
        const size_t head = end == std::string::npos ? m_buf.size() : end;
        if (size_t(std::count(m_buf.begin(), m_buf.begin() + long(head), '\n')) >
                m_limits.max_head_lines ||
            head > m_limits.max_head_bytes)
            return Head::TooLarge;
        if (end != std::string::npos) {
            m_body_read = m_buf.size() - (end + 4);
            return Head::Ok;
        }
        if (!wait(POLLIN, m_deadline)) {
            m_timed_out = true;
            return Head::Timeout;
        }
        const ssize_t n = recv(m_fd, tmp, sizeof tmp, 0);
        if (n <= 0) return Head::Closed;
        m_buf.append(tmp, size_t(n));
    }
}

bool GuardStream::is_readable() const {
    return m_pos < m_buf.size() || wait(POLLIN, m_deadline);
}

bool GuardStream::is_writable() const {
    return wait(POLLOUT, Clock::now() + m_limits.write_timeout) && !peer_gone();
}

ssize_t GuardStream::read(char* ptr, size_t size) {
    if (m_pos < m_buf.size()) {
        const size_t n = std::min(size, m_buf.size() - m_pos);
        std::memcpy(ptr, m_buf.data() + m_pos, n);
        m_pos += n;
        if (m_pos == m_buf.size()) {
            m_buf.clear();
            m_pos = 0;
        }
        return ssize_t(n);
    }
    if (m_body_read > m_limits.max_body_bytes) {  // stop reading what will be refused anyway
        m_too_large = true;
        return -1;
    }
    if (!wait(POLLIN, m_deadline)) {
        m_timed_out = true;
        return -1;
    }
    const ssize_t n = recv(m_fd, ptr, size, 0);
    if (n > 0) m_body_read += size_t(n);
    return n;
}

ssize_t GuardStream::write(const char* ptr, size_t size) {
    if (!wait(POLLOUT, Clock::now() + m_limits.write_timeout)) return -1;  // a stalled reader
    return send(m_fd, ptr, size, MSG_NOSIGNAL);
}

void GuardStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    address_of(m_fd, true, ip, port);
}

void GuardStream::get_local_ip_and_port(std::string& ip, int& port) const {
    address_of(m_fd, false, ip, port);
}

bool GuardStream::peer_gone() const {
    pollfd p{m_fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void GuardStream::write_raw_response(int status, const char* reason, const std::string& json_body) {
    const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                             "\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(json_body.size()) + "\r\nConnection: close\r\n\r\n";
    const std::string all = head + json_body;
    size_t off = 0;
    while (off < all.size()) {
        const ssize_t n = write(all.data() + off, all.size() - off);
        if (n <= 0) return;
        off += size_t(n);
    }
}

void GuardStream::close_gracefully() {
    shutdown(m_fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::seconds(1);
    char tmp[16384];
    size_t drained = 0;
    while (drained < (64u << 20) && wait(POLLIN, until)) {
        const ssize_t n = recv(m_fd, tmp, sizeof tmp, 0);
        if (n <= 0) break;
        drained += size_t(n);
    }
    close(m_fd);
}

}  // namespace ember::server

// Ember: a returned error value, the only way errors cross the engine's boundary.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ember {

// A machine-readable code plus a message for a person.
// The message names what failed and what was expected.
struct Error {
    std::string code;  // e.g. "gguf.truncated", "vulkan.no_suitable_device"
    std::string
        message;  // e.g. "tensor 'blk.0.attn_q.weight': offset 123 past end of file (size 100)"
};

inline Error make_error(std::string code, std::string message) {
    return Error{std::move(code), std::move(message)};
}

// std::expected is C++23; this is the subset Ember needs.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<0>(m_v);
    }
    const T& value() const& {
        assert(ok());
        return std::get<0>(m_v);
    }
    T&& value() && {
        assert(ok());
        return std::get<0>(std::move(m_v));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const {
        assert(!ok());
        return std::get<1>(m_v);
    }
    Error take_error() {
        assert(!ok());
        return std::get<1>(std::move(m_v));
    }

private:
    std::variant<T, Error> m_v;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_err(std::move(error)), m_ok(false) {}

    bool ok() const { return m_ok; }
    explicit operator bool() const { return ok(); }
    const Error& error() const {
        assert(!ok());
        return m_err;
    }
    Error take_error() {
        assert(!ok());
        return std::move(m_err);
    }

private:
    Error m_err;
    bool m_ok = true;
};

using Status = Result<void>;

}  // namespace ember

// Propagate an error from an expression returning Result<...>.
#define EMBER_TRY(expr)                                           \
    do {                                                          \
        auto ember_try_r_ = (expr);                               \
        if (!ember_try_r_.ok()) return ember_try_r_.take_error(); \
    } while (0)

#define EMBER_CONCAT_INNER_(a, b) a##b
#define EMBER_CONCAT_(a, b) EMBER_CONCAT_INNER_(a, b)
// Assign the value of a Result<T> or propagate its error.
#define EMBER_ASSIGN_OR_RETURN(lhs, expr) \
    EMBER_ASSIGN_OR_RETURN_IMPL_(EMBER_CONCAT_(ember_r_, __LINE__), lhs, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
    auto tmp = (expr);                               \
    if (!tmp.ok()) return tmp.take_error();          \
    lhs = std::move(tmp).value()

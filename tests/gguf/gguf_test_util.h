// Helpers for the GGUF tests: a raw byte builder (independent of the Writer) and an allocation
// probe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ember::test {

// Appends little-endian fields, so tests can build files the Writer would refuse to produce.
class RawGguf {
public:
    RawGguf& u8(uint8_t v) { return put(v); }
    RawGguf& u32(uint32_t v) { return put(v); }
    RawGguf& u64(uint64_t v) { return put(v); }
    RawGguf& f32(float v) { return put(v); }
    RawGguf& str(const std::string& s) {
        u64(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    RawGguf& raw(const std::string& s) {
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    // A key with a UINT32 value.
    RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
    RawGguf& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
    RawGguf& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                    uint64_t offset) {
        str(name).u32(uint32_t(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
    RawGguf& pad_to(size_t alignment) {
        while (bytes.size() % alignment) bytes.push_back(0);
        return *this;
    }
    RawGguf& zeros(size_t n) {
        bytes.resize(bytes.size() + n, 0);
        return *this;
    }

    std::vector<uint8_t> bytes;

private:
    template <class T>
    RawGguf& put(T v) {
        size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &v, sizeof(T));
        return *this;
    }
};

// Largest single operator-new request since the last reset (defined in gguf_malformed_test.cpp).
void reset_largest_allocation();
size_t largest_allocation();

}  // namespace ember::test

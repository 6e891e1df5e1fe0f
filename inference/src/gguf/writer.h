// GGUF v3 writer, for tests and `ember-cli mkmodel`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/result.h"
#include "gguf/gguf.h"

namespace ember::gguf {

class Writer {
public:
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_u64(const std::string& key, uint64_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_value(const std::string& key, Value v);  // any type, nested arrays included
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    void set_alignment(uint32_t a);  // also writes general.alignment

    // Adds a tensor whose bytes are produced at write time by fill(dst, n_bytes),
    // so that large models need not be held in memory. dims[0] is the row length.
    void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                    std::function<void(uint8_t* dst, uint64_t n_bytes)> fill);
    void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                    std::vector<uint8_t> bytes);

    // Adds a tensor of zeros that write() leaves as a hole (a sparse file where the file system
    // allows): files of a real model's size for estimates and tests that read no weights.
    void add_zeros(const std::string& name, GgmlType type, std::vector<uint64_t> dims);

    // Adds a tensor with no bytes of its own: its data starts byte_offset bytes into that of
    // `of`, an earlier tensor added with bytes. Same type, dims and offset 0 make an identical
    // alias, which readers accept; anything else overlaps, which they refuse (tests).
    void add_view(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                  const std::string& of, uint64_t byte_offset = 0);

    Status write(const std::string& path) const;
    Result<std::vector<uint8_t>> to_bytes() const;  // small files only (tests)

private:
    struct PendingTensor {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> dims;
        std::function<void(uint8_t*, uint64_t)> fill;
        std::optional<uint64_t> given_bytes;  // size of the bytes given to add_tensor, if any
        std::string view_of;                  // add_view: the tensor whose bytes it shares
        uint64_t view_offset = 0;
        bool zeros = false;  // add_zeros: no bytes are produced, the sink skips them
    };
    struct Sink;
    Status write_to(Sink& sink) const;  // not emit(): Qt code includes this header
    std::vector<KeyValue> m_kv;
    std::vector<PendingTensor> m_tensors;
    uint32_t m_alignment = 32;
};

}  // namespace ember::gguf

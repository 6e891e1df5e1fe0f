// GGUF v2/v3 reader: memory-mapped, every size checked against the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/result.h"
#include "quant/types.h"

namespace ember::gguf {

enum class ValueType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};
std::string_view value_type_name(ValueType t);

// A metadata value. Scalars live in the union; strings in str; arrays in arr (nested allowed).
struct Value {
    ValueType type = ValueType::UINT8;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        bool b;
    };
    std::string str;
    ValueType elem_type = ValueType::UINT8;  // for ARRAY
    std::vector<Value> arr;                  // for ARRAY

    Value() : u64(0) {}
    bool is_integer() const;
    bool is_number() const;
    // Integer value if this is an integer (or bool); nullopt otherwise.
    std::optional<int64_t> as_int() const;
    std::optional<double> as_number() const;
};

struct KeyValue {
    std::string key;
    Value value;
};

struct TensorInfo {
    std::string name;
    uint32_t n_dims = 0;
    uint64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the row length (contiguous)
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;  // relative to the data section
    uint64_t n_bytes = 0;
    uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class File;

// Totals over a file's tensors, as `info` and the model details report them.
struct TensorTally {
    uint64_t n_params = 0;
    uint64_t n_bytes = 0;
    std::map<std::string, uint64_t> bytes_per_type;         // "Q4_0" -> bytes, all tensors
    std::map<std::string, uint64_t> matrix_bytes_per_type;  // the same over tensors of 2+ dims
};
TensorTally tally_tensors(const File& file);

class File {
public:
    // Memory-maps and parses path. Errors name the field and the file.
    static Result<std::unique_ptr<File>> open(const std::string& path);
    // Parses a copy of bytes (tests, fuzzing). name is used in messages.
    static Result<std::unique_ptr<File>> from_bytes(std::vector<uint8_t> bytes,
                                                    std::string name = "<memory>");
    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    const std::string& path() const { return m_path; }
    uint32_t version() const { return m_version; }
    uint64_t file_size() const { return m_size; }
    uint64_t alignment() const { return m_alignment; }
    uint64_t data_offset() const { return m_data_offset; }

    const std::vector<KeyValue>& metadata() const { return m_kv; }
    const Value* find(std::string_view key) const;
    // Typed getters; nullopt when absent or of an incompatible type (integers convert when in
    // range).
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<uint32_t> get_u32(std::string_view key) const;
    std::optional<float> get_f32(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    // Array getters; nullptr/nullopt when absent or of another element type.
    const std::vector<Value>* get_array(std::string_view key) const;

    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const TensorInfo* find_tensor(std::string_view name) const;
    // Pointer to the tensor's bytes (n_bytes of them); valid while the File lives.
    const uint8_t* tensor_data(const TensorInfo& t) const {
        return m_base + m_data_offset + t.offset;
    }
    const uint8_t* base() const { return m_base; }

    // Gives back the mapping of the tensor data (after upload to a GPU); metadata stays valid.
    void release_tensor_data();

private:
    File() = default;
    Status parse();
    Status check_overlaps() const;

    std::string m_path;
    const uint8_t* m_base = nullptr;
    uint64_t m_size = 0;
    void* m_map = nullptr;  // mmap base, or nullptr for from_bytes
    std::vector<uint8_t> m_bytes;
    uint32_t m_version = 0;
    uint64_t m_alignment = 32;
    uint64_t m_data_offset = 0;
    std::vector<KeyValue> m_kv;
    std::vector<TensorInfo> m_tensors;
    // Views into m_kv / m_tensors, built once parsing is done (neither changes afterwards).
    std::unordered_map<std::string_view, size_t> m_kv_index;
    std::unordered_map<std::string_view, size_t> m_tensor_index;
};

}  // namespace ember::gguf

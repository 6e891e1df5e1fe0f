// Metadata values and the File's lookups and typed getters.
#include <limits>

#include "gguf/gguf.h"

namespace ember::gguf {

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
            return "UINT8";
        case ValueType::INT8:
            return "INT8";
        case ValueType::UINT16:
            return "UINT16";
        case ValueType::INT16:
            return "INT16";
        case ValueType::UINT32:
            return "UINT32";
        case ValueType::INT32:
            return "INT32";
        case ValueType::FLOAT32:
            return "FLOAT32";
        case ValueType::BOOL:
            return "BOOL";
        case ValueType::STRING:
            return "STRING";
        case ValueType::ARRAY:
            return "ARRAY";
        case ValueType::UINT64:
            return "UINT64";
        case ValueType::INT64:
            return "INT64";
        case ValueType::FLOAT64:
            return "FLOAT64";
    }
    return "unknown";
}

static bool is_unsigned(ValueType t) {
    return t == ValueType::UINT8 || t == ValueType::UINT16 || t == ValueType::UINT32 ||
           t == ValueType::UINT64;
}
static bool is_signed(ValueType t) {
    return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 ||
           t == ValueType::INT64;
}

bool Value::is_integer() const {
    return is_unsigned(type) || is_signed(type);
}

bool Value::is_number() const {
    return is_integer() || type == ValueType::FLOAT32 || type == ValueType::FLOAT64;
}

std::optional<int64_t> Value::as_int() const {
    if (is_signed(type)) return i64;
    if (is_unsigned(type)) {
        if (u64 > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return int64_t(u64);
    }
    if (type == ValueType::BOOL) return b ? 1 : 0;
    return std::nullopt;
}

std::optional<double> Value::as_number() const {
    if (is_signed(type)) return double(i64);
    if (is_unsigned(type)) return double(u64);
    if (type == ValueType::FLOAT32 || type == ValueType::FLOAT64) return f64;
    return std::nullopt;
}

const Value* File::find(std::string_view key) const {
    auto it = m_kv_index.find(key);
    return it == m_kv_index.end() ? nullptr : &m_kv[it->second].value;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = m_tensor_index.find(name);
    return it == m_tensor_index.end() ? nullptr : &m_tensors[it->second];
}

std::optional<std::string> File::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v || v->type != ValueType::STRING) return std::nullopt;
    return v->str;
}

std::optional<int64_t> File::get_int(std::string_view key) const {
    const Value* v = find(key);
    if (!v || !v->is_integer()) return std::nullopt;
    return v->as_int();
}

std::optional<uint32_t> File::get_u32(std::string_view key) const {
    const Value* v = find(key);
    if (!v || !v->is_integer()) return std::nullopt;
    if (is_unsigned(v->type)) {
        if (v->u64 > std::numeric_limits<uint32_t>::max()) return std::nullopt;
        return uint32_t(v->u64);
    }
    if (v->i64 < 0 || v->i64 > int64_t(std::numeric_limits<uint32_t>::max())) return std::nullopt;
    return uint32_t(v->i64);
}

std::optional<float> File::get_f32(std::string_view key) const {
    const Value* v = find(key);
    if (!v || (v->type != ValueType::FLOAT32 && v->type != ValueType::FLOAT64)) return std::nullopt;
    return float(v->f64);
}

std::optional<bool> File::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v || v->type != ValueType::BOOL) return std::nullopt;
    return v->b;
}

const std::vector<Value>* File::get_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v || v->type != ValueType::ARRAY) return nullptr;
    return &v->arr;
}

}  // namespace ember::gguf

// GGUF v3 writer. The header is built in memory; tensor bytes are produced one tensor at a time.
#include "gguf/writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

namespace ember::gguf {

// Where write_to() sends the file's bytes (a file on disk, or memory for tests).
struct Writer::Sink {
    std::function<Status(const void*, size_t)> write;
    std::function<Status(uint64_t)> skip;  // n zero bytes
};

namespace {

constexpr uint32_t kMaxArrayDepth = 8;

Error bad(const std::string& what) {
    return make_error("gguf.bad_value", "gguf writer: " + what);
}

class Buffer {
public:
    template <class T>
    void put(T v) {
        size_t at = m_b.size();
        m_b.resize(at + sizeof(T));
        std::memcpy(m_b.data() + at, &v, sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        m_b.insert(m_b.end(), s.begin(), s.end());
    }
    std::vector<uint8_t>& bytes() { return m_b; }

private:
    std::vector<uint8_t> m_b;
};

template <class T>
bool fits_unsigned(uint64_t v) {
    return v <= std::numeric_limits<T>::max();
}
template <class T>
bool fits_signed(int64_t v) {
    return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

Status encode_value(Buffer& b, const Value& v, uint32_t depth, const std::string& key) {
    auto range = [&]() {
        return bad("key '" + key + "': " + std::string(value_type_name(v.type)) +
                   " value out of range");
    };
    switch (v.type) {
        case ValueType::UINT8:
            if (!fits_unsigned<uint8_t>(v.u64)) return range();
            b.put<uint8_t>(uint8_t(v.u64));
            return {};
        case ValueType::UINT16:
            if (!fits_unsigned<uint16_t>(v.u64)) return range();
            b.put<uint16_t>(uint16_t(v.u64));
            return {};
        case ValueType::UINT32:
            if (!fits_unsigned<uint32_t>(v.u64)) return range();
            b.put<uint32_t>(uint32_t(v.u64));
            return {};
        case ValueType::UINT64:
            b.put<uint64_t>(v.u64);
            return {};
        case ValueType::INT8:
            if (!fits_signed<int8_t>(v.i64)) return range();
            b.put<int8_t>(int8_t(v.i64));
            return {};
        case ValueType::INT16:
            if (!fits_signed<int16_t>(v.i64)) return range();
            b.put<int16_t>(int16_t(v.i64));
            return {};
        case ValueType::INT32:
            if (!fits_signed<int32_t>(v.i64)) return range();
            b.put<int32_t>(int32_t(v.i64));
            return {};
        case ValueType::INT64:
            b.put<int64_t>(v.i64);
            return {};
        case ValueType::FLOAT32:
            b.put<float>(float(v.f64));
            return {};
        case ValueType::FLOAT64:
            b.put<double>(v.f64);
            return {};
        case ValueType::BOOL:
            b.put<uint8_t>(v.b ? 1 : 0);
            return {};
        case ValueType::STRING:
            b.put_string(v.str);
            return {};
        case ValueType::ARRAY:
            if (depth >= kMaxArrayDepth)
                return bad("key '" + key + "': arrays nested more than " +
                           std::to_string(kMaxArrayDepth) + " levels deep");
            if (uint32_t(v.elem_type) > uint32_t(ValueType::FLOAT64))
                return bad("key '" + key + "': bad array element type " +
                           std::to_string(uint32_t(v.elem_type)));
            b.put<uint32_t>(uint32_t(v.elem_type));
            b.put<uint64_t>(v.arr.size());
            for (const Value& e : v.arr) {
                if (e.type != v.elem_type)
                    return bad("key '" + key + "': array of " +
                               std::string(value_type_name(v.elem_type)) + " holds a " +
                               std::string(value_type_name(e.type)));
                EMBER_TRY(encode_value(b, e, depth + 1, key));
            }
            return {};
    }
    return bad("key '" + key + "': bad value type " + std::to_string(uint32_t(v.type)));
}

Value scalar(ValueType t) {
    Value v;
    v.type = t;
    return v;
}

class FileSink {
public:
    explicit FileSink(const std::string& path) : m_path(path) {}
    ~FileSink() {
        if (m_f) std::fclose(m_f);
    }
    Status open() {
        m_f = std::fopen(m_path.c_str(), "wb");
        if (!m_f) return fail("cannot create");
        return {};
    }
    Status write(const void* data, size_t n) {
        if (n && std::fwrite(data, 1, n, m_f) != n) return fail("cannot write");
        m_size += n;
        return {};
    }
    // A hole: the file's length is set at close, the bytes between read as zeros.
    Status skip(uint64_t n) {
        if (n > uint64_t(std::numeric_limits<long>::max()) ||
            std::fseek(m_f, long(n), SEEK_CUR) != 0)
            return fail("cannot seek in");
        m_size += n;
        return {};
    }
    Status close() {
        FILE* f = m_f;
        m_f = nullptr;
        bool ok = std::fflush(f) == 0;
        // Regular files only: a device such as /dev/full has no length to set.
        struct stat st;
        if (ok && ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
            uint64_t(st.st_size) < m_size)
            ok = ::ftruncate(::fileno(f), off_t(m_size)) == 0;
        int e = errno;
        ok = std::fclose(f) == 0 && ok;
        if (!ok) {
            errno = e ? e : errno;
            return fail("cannot write");
        }
        return {};
    }

private:
    Error fail(const char* what) const {
        return make_error("gguf.write_failed", "gguf writer: " + std::string(what) + " " + m_path +
                                                   ": " + std::strerror(errno));
    }
    std::string m_path;
    FILE* m_f = nullptr;
    uint64_t m_size = 0;
};

}  // namespace

void Writer::set_value(const std::string& key, Value v) {
    for (KeyValue& kv : m_kv) {
        if (kv.key == key) {
            kv.value = std::move(v);
            return;
        }
    }
    m_kv.push_back({key, std::move(v)});
}

void Writer::set_u32(const std::string& key, uint32_t x) {
    Value v = scalar(ValueType::UINT32);
    v.u64 = x;
    set_value(key, std::move(v));
}
void Writer::set_i32(const std::string& key, int32_t x) {
    Value v = scalar(ValueType::INT32);
    v.i64 = x;
    set_value(key, std::move(v));
}
void Writer::set_u64(const std::string& key, uint64_t x) {
    Value v = scalar(ValueType::UINT64);
    v.u64 = x;
    set_value(key, std::move(v));
}
void Writer::set_f32(const std::string& key, float x) {
    Value v = scalar(ValueType::FLOAT32);
    v.f64 = x;
    set_value(key, std::move(v));
}
void Writer::set_bool(const std::string& key, bool x) {
    Value v = scalar(ValueType::BOOL);
    v.b = x;
    set_value(key, std::move(v));
}
void Writer::set_string(const std::string& key, const std::string& x) {
    Value v = scalar(ValueType::STRING);
    v.str = x;
    set_value(key, std::move(v));
}
void Writer::set_string_array(const std::string& key, const std::vector<std::string>& xs) {
    Value v = scalar(ValueType::ARRAY);
    v.elem_type = ValueType::STRING;
    v.arr.reserve(xs.size());
    for (const auto& x : xs) {
        Value& e = v.arr.emplace_back(scalar(ValueType::STRING));
        e.str = x;
    }
    set_value(key, std::move(v));
}
void Writer::set_f32_array(const std::string& key, const std::vector<float>& xs) {
    Value v = scalar(ValueType::ARRAY);
    v.elem_type = ValueType::FLOAT32;
    v.arr.reserve(xs.size());
    for (float x : xs) v.arr.emplace_back(scalar(ValueType::FLOAT32)).f64 = x;
    set_value(key, std::move(v));
}
void Writer::set_i32_array(const std::string& key, const std::vector<int32_t>& xs) {
    Value v = scalar(ValueType::ARRAY);
    v.elem_type = ValueType::INT32;
    v.arr.reserve(xs.size());
    for (int32_t x : xs) v.arr.emplace_back(scalar(ValueType::INT32)).i64 = x;
    set_value(key, std::move(v));
}
void Writer::set_alignment(uint32_t a) {
    m_alignment = a;
    set_u32("general.alignment", a);
}

void Writer::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                        std::function<void(uint8_t* dst, uint64_t n_bytes)> fill) {
    m_tensors.push_back({name, type, std::move(dims), std::move(fill), std::nullopt, "", 0});
}

void Writer::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                        std::vector<uint8_t> bytes) {
    uint64_t n = bytes.size();
    auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    auto fill = [data](uint8_t* dst, uint64_t n_bytes) {
        std::memcpy(dst, data->data(), std::min<uint64_t>(n_bytes, data->size()));
    };
    m_tensors.push_back({name, type, std::move(dims), std::move(fill), n, "", 0});
}

void Writer::add_zeros(const std::string& name, GgmlType type, std::vector<uint64_t> dims) {
    PendingTensor t{name, type, std::move(dims), nullptr, std::nullopt, "", 0};
    t.zeros = true;
    m_tensors.push_back(std::move(t));
}

void Writer::add_view(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                      const std::string& of, uint64_t byte_offset) {
    m_tensors.push_back({name, type, std::move(dims), nullptr, std::nullopt, of, byte_offset});
}

Status Writer::write_to(Sink& sink) const {
    uint64_t alignment = m_alignment;
    for (const KeyValue& kv : m_kv) {
        if (kv.key != "general.alignment") continue;
        auto a = kv.value.as_int();
        if (!kv.value.is_integer() || !a) return bad("general.alignment must be an integer");
        alignment = uint64_t(*a);
    }
    if (alignment == 0 || alignment > UINT32_MAX || !std::has_single_bit(alignment))
        return bad("alignment " + std::to_string(alignment) + " is not a nonzero power of two");

    // Check everything before the first byte is written.
    std::vector<uint64_t> sizes, offsets;
    std::unordered_map<std::string, size_t> names;
    uint64_t offset = 0;
    for (const PendingTensor& t : m_tensors) {
        std::string what = "tensor '" + t.name + "': ";
        if (t.name.empty()) return bad("empty tensor name");
        if (!names.emplace(t.name, sizes.size()).second) return bad(what + "duplicate name");
        if (t.dims.empty() || t.dims.size() > 4) return bad(what + "needs 1 to 4 dimensions");
        auto tt = type_traits(t.type);
        if (!tt) return bad(what + "unknown type id " + std::to_string(uint32_t(t.type)));
        if (!t.fill && !t.zeros && t.view_of.empty()) return bad(what + "no fill function");
        uint64_t n = 1;
        bool overflow = false;
        for (uint64_t d : t.dims) {
            if (d == 0) return bad(what + "a dimension is 0");
            overflow |= __builtin_mul_overflow(n, d, &n);
        }
        if (t.dims[0] % tt->block_elems != 0)
            return bad(what + "row length " + std::to_string(t.dims[0]) +
                       " is not a multiple of the " + std::string(tt->name) + " block size " +
                       std::to_string(tt->block_elems));
        uint64_t bytes = t.dims[0] / tt->block_elems * tt->block_bytes;
        for (size_t d = 1; d < t.dims.size(); ++d)
            overflow |= __builtin_mul_overflow(bytes, t.dims[d], &bytes);
        if (overflow) return bad(what + "size overflows 64 bits");
        if (t.given_bytes && *t.given_bytes != bytes)
            return bad(what + "given " + std::to_string(*t.given_bytes) +
                       " bytes, its shape needs " + std::to_string(bytes));
        sizes.push_back(bytes);
        if (!t.view_of.empty()) {
            auto it = names.find(t.view_of);
            if (it == names.end() || !m_tensors[it->second].view_of.empty())
                return bad(what + "'" + t.view_of + "' is not an earlier tensor with bytes");
            offsets.push_back(offsets[it->second] + t.view_offset);
            continue;
        }
        offsets.push_back(offset);
        uint64_t padded = bytes + (alignment - bytes % alignment) % alignment;
        if (__builtin_add_overflow(offset, padded, &offset)) return bad(what + "offset overflows");
    }

    Buffer h;
    h.put<uint32_t>(0x46554747);  // "GGUF" read as little-endian
    h.put<uint32_t>(3);
    h.put<uint64_t>(m_tensors.size());
    h.put<uint64_t>(m_kv.size());
    for (const KeyValue& kv : m_kv) {
        if (kv.key.empty()) return bad("empty metadata key");
        h.put_string(kv.key);
        h.put<uint32_t>(uint32_t(kv.value.type));
        EMBER_TRY(encode_value(h, kv.value, 0, kv.key));
    }
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        const PendingTensor& t = m_tensors[i];
        h.put_string(t.name);
        h.put<uint32_t>(uint32_t(t.dims.size()));
        for (uint64_t d : t.dims) h.put<uint64_t>(d);
        h.put<uint32_t>(uint32_t(t.type));
        h.put<uint64_t>(offsets[i]);
    }
    h.bytes().resize(h.bytes().size() + (alignment - h.bytes().size() % alignment) % alignment);
    EMBER_TRY(sink.write(h.bytes().data(), h.bytes().size()));

    std::vector<uint8_t> zeros(alignment, 0);
    std::unique_ptr<uint8_t[]> buf;
    uint64_t buf_size = 0;
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        if (!m_tensors[i].view_of.empty()) continue;  // no bytes of its own
        uint64_t n = sizes[i];
        if (m_tensors[i].zeros) {
            EMBER_TRY(sink.skip(n + (alignment - n % alignment) % alignment));
            continue;
        }
        if (n > buf_size) {
            buf.reset();  // give back the old buffer before taking a larger one
            buf.reset(new uint8_t[n]);
            buf_size = n;
        }
        std::memset(buf.get(), 0, n);
        m_tensors[i].fill(buf.get(), n);
        EMBER_TRY(sink.write(buf.get(), n));
        EMBER_TRY(sink.write(zeros.data(), (alignment - n % alignment) % alignment));
    }
    return {};
}

Status Writer::write(const std::string& path) const {
    FileSink file(path);
    EMBER_TRY(file.open());
    Sink sink{[&](const void* p, size_t n) { return file.write(p, n); },
              [&](uint64_t n) { return file.skip(n); }};
    Status s = write_to(sink);
    if (s.ok()) s = file.close();
    // Leave no half-written model behind (but never unlink a device such as /dev/full).
    struct stat st;
    if (!s.ok() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
    return s;
}

Result<std::vector<uint8_t>> Writer::to_bytes() const {
    std::vector<uint8_t> bytes;
    Sink sink{[&](const void* p, size_t n) {
                  auto b = static_cast<const uint8_t*>(p);
                  bytes.insert(bytes.end(), b, b + n);
                  return Status{};
              },
              [&](uint64_t n) {
                  bytes.resize(bytes.size() + n, 0);
                  return Status{};
              }};
    EMBER_TRY(write_to(sink));
    return bytes;
}

}  // namespace ember::gguf

// GGUF reader. Every read is bounds-checked against the file; errors name the field.
#include "gguf/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace ember::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kMaxArrayDepth = 8;
// Bounds the memory a crafted file can make us allocate (a Value is ~80 bytes): real vocabularies
// hold about a million values in all.
constexpr uint64_t kMaxMetadataValues = uint64_t(1) << 22;
constexpr uint64_t kReserveCap = 1 << 16;
constexpr uint32_t kNumValueTypes = 13;
// Smallest possible tensor info: name length, n_dims, one dim, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Smallest possible key/value: key length, value type, one byte of value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;

uint64_t min_encoded_size(ValueType t) {
    switch (t) {
        case ValueType::UINT8:
        case ValueType::INT8:
        case ValueType::BOOL:
            return 1;
        case ValueType::UINT16:
        case ValueType::INT16:
            return 2;
        case ValueType::UINT32:
        case ValueType::INT32:
        case ValueType::FLOAT32:
            return 4;
        case ValueType::UINT64:
        case ValueType::INT64:
        case ValueType::FLOAT64:
        case ValueType::STRING:
            return 8;
        case ValueType::ARRAY:
            return 4 + 8;
    }
    return 1;
}

// Names read from a file may hold anything; keep messages printable and short.
std::string printable(std::string_view s) {
    std::string out;
    size_t n = 0;
    for (unsigned char c : s) {
        if (++n > 80) {
            out += "...";
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\'') {
            out += char(c);
        } else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

class Parser {
public:
    Parser(const uint8_t* data, uint64_t size, const std::string& path)
        : m_data(data), m_size(size), m_path(path) {}

    uint64_t pos() const { return m_pos; }
    uint64_t left() const { return m_size - m_pos; }
    void set_context(std::string ctx) {
        m_ctx = std::move(ctx);
        m_elem_path.clear();
    }

    Error fail(const char* code, const std::string& detail) const {
        std::string msg = "gguf: " + m_path + ": ";
        if (!m_ctx.empty()) {
            msg += m_ctx;
            for (uint64_t i : m_elem_path) msg += ": element " + std::to_string(i);
            msg += ": ";
        }
        msg += detail;
        return make_error(code, std::move(msg));
    }

    Status truncated(const char* field, uint64_t need) const {
        return fail("gguf.truncated", std::string(field) + ": needs " + std::to_string(need) +
                                          " bytes but only " + std::to_string(left()) +
                                          " are left (file size " + std::to_string(m_size) + ")");
    }

    template <class T>
    Status read(T& out, const char* field) {
        if (left() < sizeof(T)) return truncated(field, sizeof(T));
        std::memcpy(&out, m_data + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return {};
    }

    Status read_string(std::string& out, const char* field) {
        uint64_t len = 0;
        if (left() < 8) return truncated((std::string(field) + " length").c_str(), 8);
        std::memcpy(&len, m_data + m_pos, 8);
        m_pos += 8;
        if (len > left())
            return fail("gguf.truncated", std::string(field) + ": string length " +
                                              std::to_string(len) + " exceeds the " +
                                              std::to_string(left()) + " bytes left");
        out.assign(reinterpret_cast<const char*>(m_data + m_pos), len);
        m_pos += len;
        return {};
    }

    Status read_value_type(ValueType& t, const char* field) {
        uint32_t raw = 0;
        EMBER_TRY(read(raw, field));
        if (raw >= kNumValueTypes)
            return fail("gguf.bad_type", std::string(field) + " " + std::to_string(raw) +
                                             " is not a GGUF value type (0..12)");
        t = ValueType(raw);
        return {};
    }

    Status read_value(ValueType t, Value& v, uint32_t depth) {
        v.type = t;
        switch (t) {
            case ValueType::UINT8:
                return read_uint<uint8_t>(v);
            case ValueType::UINT16:
                return read_uint<uint16_t>(v);
            case ValueType::UINT32:
                return read_uint<uint32_t>(v);
            case ValueType::UINT64:
                return read_uint<uint64_t>(v);
            case ValueType::INT8:
                return read_int<int8_t>(v);
            case ValueType::INT16:
                return read_int<int16_t>(v);
            case ValueType::INT32:
                return read_int<int32_t>(v);
            case ValueType::INT64:
                return read_int<int64_t>(v);
            case ValueType::FLOAT32: {
                float f = 0;
                EMBER_TRY(read(f, "FLOAT32 value"));
                v.f64 = f;
                return {};
            }
            case ValueType::FLOAT64:
                return read(v.f64, "FLOAT64 value");
            case ValueType::BOOL: {
                uint8_t x = 0;
                EMBER_TRY(read(x, "BOOL value"));
                if (x > 1)
                    return fail("gguf.bad_value",
                                "BOOL value " + std::to_string(x) + " is neither 0 nor 1");
                v.u64 = 0;
                v.b = x != 0;
                return {};
            }
            case ValueType::STRING:
                return read_string(v.str, "value");
            case ValueType::ARRAY:
                return read_array(v, depth);
        }
        return fail("gguf.bad_type", "unknown value type");
    }

private:
    template <class T>
    Status read_uint(Value& v) {
        T x{};
        EMBER_TRY(read(x, "integer value"));
        v.u64 = x;
        return {};
    }
    template <class T>
    Status read_int(Value& v) {
        T x{};
        EMBER_TRY(read(x, "integer value"));
        v.i64 = x;
        return {};
    }

    Status read_array(Value& v, uint32_t depth) {
        if (depth >= kMaxArrayDepth)
            return fail("gguf.bad_value", "arrays nested more than " +
                                              std::to_string(kMaxArrayDepth) + " levels deep");
        EMBER_TRY(read_value_type(v.elem_type, "array element type"));
        uint64_t n = 0;
        EMBER_TRY(read(n, "array length"));
        uint64_t min = min_encoded_size(v.elem_type), need;
        if (__builtin_mul_overflow(n, min, &need) || need > left())
            return fail("gguf.truncated", "array length " + std::to_string(n) + " (" +
                                              std::string(value_type_name(v.elem_type)) +
                                              ", at least " + std::to_string(min) +
                                              " bytes each) exceeds the " + std::to_string(left()) +
                                              " bytes left");
        m_values += n;
        if (m_values > kMaxMetadataValues)
            return fail("gguf.too_large", "array length " + std::to_string(n) +
                                              " brings the metadata past the limit of " +
                                              std::to_string(kMaxMetadataValues) + " values");
        v.arr.clear();
        v.arr.reserve(std::min(n, kReserveCap));
        m_elem_path.push_back(0);
        for (uint64_t i = 0; i < n; ++i) {
            m_elem_path.back() = i;
            Value& e = v.arr.emplace_back();
            EMBER_TRY(read_value(v.elem_type, e, depth + 1));
        }
        m_elem_path.pop_back();
        return {};
    }

    const uint8_t* m_data;
    uint64_t m_size;
    uint64_t m_pos = 0;
    const std::string& m_path;
    std::string m_ctx;
    std::vector<uint64_t> m_elem_path;  // indices of the array elements being read
    uint64_t m_values = 0;
};

bool same_layout(const TensorInfo& a, const TensorInfo& b) {
    return a.type == b.type && std::equal(std::begin(a.ne), std::end(a.ne), std::begin(b.ne));
}

// What a non-regular path is, for the message that refuses it.
Error not_regular(const std::string& path, mode_t mode) {
    const char* kind = S_ISDIR(mode)    ? "a directory"
                       : S_ISFIFO(mode) ? "a FIFO (named pipe)"
                       : S_ISSOCK(mode) ? "a socket"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                                        : "of an unknown kind";
    return make_error("gguf.io", "gguf: " + path + " is " + kind +
                                     ", not a regular file: a model must be a regular .gguf file");
}

// The magic and a version this reader knows (2 or 3).
Status read_header(Parser& p, const uint8_t* base, uint64_t size, const std::string& path,
                   uint32_t& version) {
    char magic[4] = {};
    if (size < 4)
        return make_error("gguf.truncated", "gguf: " + path + ": file is " + std::to_string(size) +
                                                " bytes, too short for a GGUF header");
    std::memcpy(magic, base, 4);
    if (std::memcmp(magic, "GGUF", 4) != 0)
        return make_error("gguf.bad_magic", "gguf: " + path + ": not a GGUF file (magic '" +
                                                printable(std::string_view(magic, 4)) +
                                                "', expected 'GGUF')");
    EMBER_TRY(p.read(magic, "magic"));
    EMBER_TRY(p.read(version, "version"));
    if (version != 2 && version != 3) {
        std::string hint;
        if (version == 1) hint = " (GGUF v1 is obsolete; convert the model again)";
        if ((version & 0xffff) == 0 && version != 0) hint = " (a big-endian file?)";
        return make_error("gguf.bad_version", "gguf: " + path + ": unsupported GGUF version " +
                                                  std::to_string(version) + ", expected 2 or 3" +
                                                  hint);
    }
    return {};
}

// n_kv metadata keys and their values; keys are unique and not empty.
Status read_metadata(Parser& p, uint64_t n_kv, std::vector<KeyValue>& kvs) {
    uint64_t need = 0;
    if (__builtin_mul_overflow(n_kv, kMinKvBytes, &need) || need > p.left())
        return p.fail("gguf.truncated", "metadata key count " + std::to_string(n_kv) +
                                            " exceeds what the " + std::to_string(p.left()) +
                                            " bytes left can hold");
    kvs.clear();
    kvs.reserve(std::min(n_kv, kReserveCap));
    std::unordered_map<std::string, uint64_t> seen_keys;
    for (uint64_t i = 0; i < n_kv; ++i) {
        p.set_context("metadata key #" + std::to_string(i));
        KeyValue& kv = kvs.emplace_back();
        EMBER_TRY(p.read_string(kv.key, "key"));
        if (kv.key.empty()) return p.fail("gguf.bad_value", "empty key");
        p.set_context("metadata key #" + std::to_string(i) + " ('" + printable(kv.key) + "')");
        ValueType t = ValueType::UINT8;
        EMBER_TRY(p.read_value_type(t, "value type"));
        EMBER_TRY(p.read_value(t, kv.value, 0));
        auto [it, inserted] = seen_keys.emplace(kv.key, i);
        if (!inserted)
            return p.fail("gguf.duplicate", "duplicate key, first defined as metadata key #" +
                                                std::to_string(it->second));
    }
    return {};
}

// general.alignment if the metadata sets it (a 32-bit power of two), else 32.
Status read_alignment(Parser& p, const std::vector<KeyValue>& kvs, uint64_t& alignment) {
    alignment = 32;
    for (size_t i = 0; i < kvs.size(); ++i) {
        if (kvs[i].key != "general.alignment") continue;
        const Value& v = kvs[i].value;
        p.set_context("metadata key #" + std::to_string(i) + " ('general.alignment')");
        auto a = v.as_int();
        if (!v.is_integer() || !a)
            return p.fail("gguf.bad_value",
                          "expected an integer, found " + std::string(value_type_name(v.type)));
        if (*a <= 0 || *a > int64_t(UINT32_MAX) || !std::has_single_bit(uint64_t(*a)))
            return p.fail("gguf.bad_value", "alignment " + std::to_string(*a) +
                                                " is not a nonzero power of two (32-bit)");
        alignment = uint64_t(*a);
    }
    return {};
}

// One tensor's name, shape, type, byte size and aligned data offset.
Status read_tensor_info(Parser& p, uint64_t i, uint64_t alignment, TensorInfo& t) {
    p.set_context("tensor #" + std::to_string(i));
    EMBER_TRY(p.read_string(t.name, "name"));
    if (t.name.empty()) return p.fail("gguf.bad_value", "empty tensor name");
    p.set_context("tensor '" + printable(t.name) + "'");
    EMBER_TRY(p.read(t.n_dims, "n_dims"));
    if (t.n_dims < 1 || t.n_dims > 4)
        return p.fail("gguf.bad_value", "n_dims " + std::to_string(t.n_dims) + " is outside 1..4");
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
        EMBER_TRY(p.read(t.ne[d], "dimension"));
        if (t.ne[d] == 0)
            return p.fail("gguf.bad_value", "dimension " + std::to_string(d) + " is 0");
        if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements))
            return p.fail("gguf.bad_value", "element count overflows 64 bits at dimension " +
                                                std::to_string(d) + " (" + std::to_string(t.ne[d]) +
                                                ")");
    }
    uint32_t type_id = 0;
    EMBER_TRY(p.read(type_id, "type"));
    auto tt = type_traits(type_id);
    if (!tt) return p.fail("gguf.bad_type", "unknown tensor type id " + std::to_string(type_id));
    t.type = GgmlType(type_id);
    if (t.ne[0] % tt->block_elems != 0)
        return p.fail("gguf.bad_value", "row length " + std::to_string(t.ne[0]) +
                                            " is not a multiple of the " + std::string(tt->name) +
                                            " block size " + std::to_string(tt->block_elems));
    uint64_t bytes = t.ne[0] / tt->block_elems;
    bool overflow = __builtin_mul_overflow(bytes, uint64_t(tt->block_bytes), &bytes);
    for (int d = 1; d < 4; ++d) overflow |= __builtin_mul_overflow(bytes, t.ne[d], &bytes);
    if (overflow) return p.fail("gguf.bad_value", "byte size overflows 64 bits");
    t.n_bytes = bytes;
    EMBER_TRY(p.read(t.offset, "data offset"));
    if (t.offset % alignment != 0)
        return p.fail("gguf.bad_value", "data offset " + std::to_string(t.offset) +
                                            " is not a multiple of the alignment " +
                                            std::to_string(alignment));
    return {};
}

// n_tensors tensor infos; names are unique.
Status read_tensor_infos(Parser& p, uint64_t n_tensors, uint64_t alignment,
                         std::vector<TensorInfo>& tensors) {
    uint64_t need = 0;
    p.set_context("");
    if (__builtin_mul_overflow(n_tensors, kMinTensorInfoBytes, &need) || need > p.left())
        return p.fail("gguf.truncated", "tensor count " + std::to_string(n_tensors) +
                                            " exceeds what the " + std::to_string(p.left()) +
                                            " bytes left can hold");
    tensors.clear();
    tensors.reserve(std::min(n_tensors, kReserveCap));
    std::unordered_map<std::string, uint64_t> seen_tensors;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        TensorInfo& t = tensors.emplace_back();
        EMBER_TRY(read_tensor_info(p, i, alignment, t));
        auto [it, inserted] = seen_tensors.emplace(t.name, i);
        if (!inserted)
            return p.fail("gguf.duplicate", "duplicate tensor name, first defined as tensor #" +
                                                std::to_string(it->second));
    }
    return {};
}

// Every tensor's bytes lie inside the file, after the data section's start.
Status check_data_in_file(const std::vector<TensorInfo>& tensors, uint64_t data_offset,
                          uint64_t size, const std::string& path) {
    for (const TensorInfo& t : tensors) {
        uint64_t start, end;
        if (__builtin_add_overflow(data_offset, t.offset, &start) ||
            __builtin_add_overflow(start, t.n_bytes, &end) || end > size)
            return make_error(
                "gguf.truncated",
                "gguf: " + path + ": tensor '" + printable(t.name) + "': data [offset " +
                    std::to_string(t.offset) + ", " + std::to_string(t.n_bytes) +
                    " bytes) extends past the end of the file (" + std::to_string(size) +
                    " bytes, data section at " + std::to_string(data_offset) + ")");
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<File>> File::open(const std::string& path) {
    std::unique_ptr<File> f(new File());
    f->m_path = path;
    // A FIFO or a device would block open() or read() forever: look before opening, then open
    // without blocking (the path may have changed since), and check what was opened.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
        return make_error("gguf.io", "gguf: cannot open " + path + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(path, st.st_mode);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return make_error("gguf.io", "gguf: cannot open " + path + ": " + std::strerror(errno));
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return make_error("gguf.io", "gguf: cannot stat " + path + ": " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return not_regular(path, st.st_mode);
    }
    // Regular files ignore O_NONBLOCK; cleared all the same so that nothing depends on it.
    if (int fl = ::fcntl(fd, F_GETFL); fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    f->m_size = uint64_t(st.st_size);
    if (f->m_size > 0) {
        void* map = ::mmap(nullptr, f->m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        int e = errno;
        ::close(fd);
        if (map == MAP_FAILED)
            return make_error("gguf.io", "gguf: cannot map " + path + " (" +
                                             std::to_string(f->m_size) +
                                             " bytes): " + std::strerror(e));
        f->m_map = map;
        f->m_base = static_cast<const uint8_t*>(map);
    } else {
        ::close(fd);
    }
    EMBER_TRY(f->parse());
    return f;
}

Result<std::unique_ptr<File>> File::from_bytes(std::vector<uint8_t> bytes, std::string name) {
    std::unique_ptr<File> f(new File());
    f->m_path = std::move(name);
    f->m_bytes = std::move(bytes);
    f->m_base = f->m_bytes.data();
    f->m_size = f->m_bytes.size();
    EMBER_TRY(f->parse());
    return f;
}

File::~File() {
    release_tensor_data();
}

void File::release_tensor_data() {
    if (m_map) ::munmap(m_map, m_size);
    m_map = nullptr;
    m_bytes.clear();
    m_bytes.shrink_to_fit();
    m_base = nullptr;
}

Status File::parse() {
    Parser p(m_base, m_size, m_path);
    // Header, then the metadata, then the tensor infos, then the data section.
    EMBER_TRY(read_header(p, m_base, m_size, m_path, m_version));
    uint64_t n_tensors = 0, n_kv = 0;
    EMBER_TRY(p.read(n_tensors, "tensor count"));
    EMBER_TRY(p.read(n_kv, "metadata key count"));
    EMBER_TRY(read_metadata(p, n_kv, m_kv));
    EMBER_TRY(read_alignment(p, m_kv, m_alignment));
    EMBER_TRY(read_tensor_infos(p, n_tensors, m_alignment, m_tensors));

    // The data section starts at the next multiple of the alignment.
    uint64_t pad = (m_alignment - p.pos() % m_alignment) % m_alignment;
    m_data_offset = p.pos() + pad;  // cannot overflow: pos <= file size, pad < 2^32
    EMBER_TRY(check_data_in_file(m_tensors, m_data_offset, m_size, m_path));
    EMBER_TRY(check_overlaps());

    m_kv_index.clear();
    m_kv_index.reserve(m_kv.size());
    for (size_t i = 0; i < m_kv.size(); ++i) m_kv_index.emplace(m_kv[i].key, i);
    m_tensor_index.clear();
    m_tensor_index.reserve(m_tensors.size());
    for (size_t i = 0; i < m_tensors.size(); ++i) m_tensor_index.emplace(m_tensors[i].name, i);
    return {};
}

// Tensors may share bytes only as identical aliases (same offset, type and shape): any other
// overlap means the same bytes would be read as two different things, and a file of a few
// megabytes could make backends that copy each tensor allocate gigabytes.
Status File::check_overlaps() const {
    std::vector<size_t> order(m_tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // std::sort with the index as tie-break: stable_sort's temporary buffer trips the tests'
    // counting operator new/delete under ASan.
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return m_tensors[a].offset != m_tensors[b].offset
                   ? m_tensors[a].offset < m_tensors[b].offset
                   : a < b;
    });
    auto range = [](const TensorInfo& t) {
        return "[" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.n_bytes) + ")";
    };
    const TensorInfo* last = nullptr;  // the tensor whose range ends furthest so far
    for (size_t i : order) {
        const TensorInfo& t = m_tensors[i];
        if (!last || t.offset >= last->offset + last->n_bytes) {
            last = &t;
            continue;
        }
        if (t.offset == last->offset && same_layout(t, *last)) continue;  // an identical alias
        return make_error("gguf.overlap",
                          "gguf: " + m_path + ": tensor '" + printable(t.name) + "' (" +
                              std::string(type_name(t.type)) + ", data " + range(t) +
                              ") overlaps tensor '" + printable(last->name) + "' (" +
                              std::string(type_name(last->type)) + ", data " + range(*last) +
                              "); tensors may share bytes only as identical aliases (same "
                              "offset, type and shape)");
    }
    return {};
}

}  // namespace ember::gguf

// A corpus of hostile model files, generated on the fly (never committed): cuts, byte flips,
// targeted damage to every kind of header field, wrong and extreme metadata, tokenizers and
// tensors broken in many ways, aliases and overlaps, and paths that are not regular files.
// Each entry writes its file when asked, so that only one exists at a time.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <functional>
#include <limits>

#include "bad_model_util.h"

namespace ember::test {

struct HostileFile {
    std::string family, name;
    std::function<std::string(const std::string& dir)> make;  // writes the file, returns its path
    bool must_refuse = false;            // generate must exit 1 (others may also run)
    std::vector<std::string> args = {};  // more arguments for generate
};

// Where each field of a GGUF header lies, found by walking it independently of the reader.
struct HeaderMap {
    struct Kv {
        std::string key;
        size_t type_at = 0, value_at = 0;
    };
    struct Ti {
        std::string name;
        size_t name_at = 0, ndims_at = 0, dims_at = 0, type_at = 0, offset_at = 0;
    };
    std::vector<Kv> kvs;
    std::vector<Ti> tis;
    size_t data_at = 0;

    explicit HeaderMap(const std::vector<uint8_t>& b) {
        size_t p = 24;
        auto u32 = [&](size_t at) {
            uint32_t v;
            std::memcpy(&v, &b[at], 4);
            return v;
        };
        auto u64 = [&](size_t at) {
            uint64_t v;
            std::memcpy(&v, &b[at], 8);
            return v;
        };
        std::function<void(uint32_t)> skip = [&](uint32_t type) {
            static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
            if (type == 8) {
                p += 8 + u64(p);
            } else if (type == 9) {
                const uint32_t et = u32(p);
                const uint64_t n = u64(p + 4);
                p += 12;
                for (uint64_t i = 0; i < n; i++) skip(et);
            } else {
                p += sizes[type];
            }
        };
        const uint64_t n_tensors = u64(8), n_kv = u64(16);
        for (uint64_t i = 0; i < n_kv; i++) {
            Kv kv;
            kv.key.assign(reinterpret_cast<const char*>(&b[p + 8]), u64(p));
            p += 8 + kv.key.size();
            kv.type_at = p;
            kv.value_at = p + 4;
            const uint32_t t = u32(p);
            p += 4;
            skip(t);
            kvs.push_back(kv);
        }
        for (uint64_t i = 0; i < n_tensors; i++) {
            Ti t;
            t.name_at = p;
            t.name.assign(reinterpret_cast<const char*>(&b[p + 8]), u64(p));
            p += 8 + t.name.size();
            t.ndims_at = p;
            const uint32_t nd = u32(p);
            t.dims_at = p + 4;
            p += 4 + 8 * nd;
            t.type_at = p;
            t.offset_at = p + 4;
            p += 12;
            tis.push_back(t);
        }
        data_at = (p + 31) / 32 * 32;
    }
    const Kv& kv(const std::string& key) const {
        for (const auto& k : kvs)
            if (k.key == key) return k;
        throw std::runtime_error("no key " + key);
    }
    const Ti& ti(const std::string& name) const {
        for (const auto& t : tis)
            if (t.name == name) return t;
        throw std::runtime_error("no tensor " + name);
    }
};

template <class T>
void poke(std::vector<uint8_t>& b, size_t at, T v) {
    if (at + sizeof(T) <= b.size()) std::memcpy(&b[at], &v, sizeof(T));
}

inline gguf::Value value_of(gguf::ValueType t) {
    gguf::Value v;
    v.type = t;
    return v;
}
inline gguf::Value u32v(uint64_t x) {
    auto v = value_of(gguf::ValueType::UINT32);
    v.u64 = x;
    return v;
}
inline gguf::Value u64v(uint64_t x) {
    auto v = value_of(gguf::ValueType::UINT64);
    v.u64 = x;
    return v;
}
inline gguf::Value i32v(int64_t x) {
    auto v = value_of(gguf::ValueType::INT32);
    v.i64 = x;
    return v;
}
inline gguf::Value f32v(double x) {
    auto v = value_of(gguf::ValueType::FLOAT32);
    v.f64 = x;
    return v;
}
inline gguf::Value strv(std::string s) {
    auto v = value_of(gguf::ValueType::STRING);
    v.str = std::move(s);
    return v;
}
inline gguf::Value boolv(bool x) {
    auto v = value_of(gguf::ValueType::BOOL);
    v.b = x;
    return v;
}
inline gguf::Value arrv(gguf::ValueType et, std::vector<gguf::Value> xs) {
    auto v = value_of(gguf::ValueType::ARRAY);
    v.elem_type = et;
    v.arr = std::move(xs);
    return v;
}

// The model every generated file starts from: F32, 64 wide, one layer.
inline TinyModel corpus_base() {
    return TinyModel::make(GgmlType::F32, 64, 64);
}

inline std::string write_raw(const std::string& dir, const std::string& name,
                             const std::vector<uint8_t>& bytes) {
    const std::string path = dir + "/" + name + ".gguf";
    write_bytes(path, bytes);
    return path;
}
inline std::string write_model(const std::string& dir, const std::string& name,
                               const TinyModel& m) {
    const std::string path = dir + "/" + name + ".gguf";
    auto st = m.writer().write(path);
    if (!st.ok()) throw std::runtime_error(st.error().message);
    return path;
}

std::vector<HostileFile> hostile_corpus();

}  // namespace ember::test

// Malformed files must end in an error with a message: never a crash, never a big allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"
#include "test_util.h"

// Allocation probe: records the largest single operator-new request.
static std::atomic<size_t> g_largest_allocation{0};

// free() is the right partner of the malloc() below; GCC cannot see that.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
    size_t prev = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > prev && !g_largest_allocation.compare_exchange_weak(prev, n)) {
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n) {
    return operator new(n);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
    std::free(p);
}
#pragma GCC diagnostic pop

namespace ember::test {
void reset_largest_allocation() {
    g_largest_allocation = 0;
}
size_t largest_allocation() {
    return g_largest_allocation;
}
}  // namespace ember::test

using namespace ember;
using namespace ember::gguf;
using ember::test::RawGguf;

namespace {

constexpr uint64_t kHuge63 = uint64_t(1) << 63;
constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
constexpr size_t kAllocationLimit = 1 << 20;

// Parses bytes that must be rejected; returns the error after the common checks.
Error expect_error(const std::vector<uint8_t>& bytes, const std::string& code = "",
                   const std::vector<std::string>& in_message = {}) {
    std::vector<uint8_t> copy = bytes;
    test::reset_largest_allocation();
    auto r = File::from_bytes(std::move(copy), "bad.gguf");
    size_t largest = test::largest_allocation();
    EXPECT_LT(largest, kAllocationLimit)
        << "a " << bytes.size() << "-byte file made the reader allocate " << largest << " bytes";
    EXPECT_FALSE(r.ok()) << "a malformed file of " << bytes.size() << " bytes was accepted";
    if (r.ok()) return {};
    const Error& e = r.error();
    EXPECT_EQ(e.code.rfind("gguf.", 0), 0u) << e.code;
    EXPECT_NE(e.message.find("bad.gguf"), std::string::npos) << e.message;
    if (!code.empty()) {
        EXPECT_EQ(e.code, code) << e.message;
    }
    for (const std::string& s : in_message)
        EXPECT_NE(e.message.find(s), std::string::npos) << "'" << s << "' not in: " << e.message;
    return e;
}

void expect_ok(const std::vector<uint8_t>& bytes) {
    auto r = File::from_bytes(bytes, "good.gguf");
    EXPECT_TRUE(r.ok()) << r.error().message;
}

// A small valid file with a bit of everything.
std::vector<uint8_t> small_file() {
    Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 1);
    w.set_string_array("tokenizer.ggml.tokens", {"a", "bc", ""});
    w.set_f32_array("tokenizer.ggml.scores", {1.f, 2.f, 3.f});
    w.set_bool("flag", true);
    Value nested;
    nested.type = ValueType::ARRAY;
    nested.elem_type = ValueType::ARRAY;
    Value inner;
    inner.type = ValueType::ARRAY;
    inner.elem_type = ValueType::INT8;
    inner.arr.resize(2);
    for (auto& v : inner.arr) v.type = ValueType::INT8;
    nested.arr = {inner, inner};
    w.set_value("nested", nested);
    w.add_tensor("w", GgmlType::Q8_0, {32, 2},
                 [](uint8_t* d, uint64_t n) { std::memset(d, 1, n); });
    w.add_tensor("n", GgmlType::F32, {3}, [](uint8_t* d, uint64_t n) { std::memset(d, 2, n); });
    auto r = w.to_bytes();
    EXPECT_TRUE(r.ok());
    return *r;
}

std::vector<uint8_t> prefix(const std::vector<uint8_t>& b, size_t n) {
    return std::vector<uint8_t>(b.begin(), b.begin() + n);
}

TEST(GgufMalformed, AllocationProbeSeesLargeRequests) {
    test::reset_largest_allocation();
    std::vector<Value> values;
    values.reserve(kAllocationLimit / sizeof(Value) + 1);
    EXPECT_GE(test::largest_allocation(), kAllocationLimit);
}

TEST(GgufMalformed, TruncatedAtEveryByte) {
    auto full = small_file();
    auto ok = File::from_bytes(full);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    uint64_t data_end = 0;
    for (const auto& t : (*ok)->tensors())
        data_end = std::max(data_end, (*ok)->data_offset() + t.offset + t.n_bytes);
    ASSERT_GT(data_end, 100u);
    for (size_t n = 0; n < data_end; ++n) {
        SCOPED_TRACE("truncated to " + std::to_string(n) + " bytes");
        expect_error(prefix(full, n));
    }
    // Only the padding after the last tensor may be missing.
    expect_ok(prefix(full, data_end));
}

TEST(GgufMalformed, StoriesTruncated) {
    std::ifstream in(test::stories_model(), std::ios::binary);
    std::vector<uint8_t> full((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GT(full.size(), 14176u);
    // Every byte of the header, then points inside the tensor data (the last tensor ends at EOF).
    for (size_t n = 0; n < 14176; n += (n < 1024 ? 1 : 3)) {
        SCOPED_TRACE("truncated to " + std::to_string(n) + " bytes");
        expect_error(prefix(full, n));
    }
    for (size_t n = 14176; n < full.size(); n += 99991)
        expect_error(prefix(full, n), "gguf.truncated");
    expect_error(prefix(full, full.size() - 1), "gguf.truncated",
                 {"blk.4.ffn_norm.weight", "extends past the end of the file"});
}

TEST(GgufMalformed, MagicAndVersion) {
    expect_error({}, "gguf.truncated");
    expect_error({'G', 'G', 'U'}, "gguf.truncated");
    expect_error(RawGguf().raw("GGUG").u32(3).u64(0).u64(0).bytes, "gguf.bad_magic");
    expect_error(RawGguf().raw("\x89PNG").zeros(40).bytes, "gguf.bad_magic");
    expect_error(RawGguf().header(0, 0, 1).bytes, "gguf.bad_version", {"version 1"});
    expect_error(RawGguf().header(0, 0, 99).bytes, "gguf.bad_version", {"version 99"});
    expect_error(RawGguf().header(0, 0, 0).bytes, "gguf.bad_version");
    expect_error(RawGguf().header(0, 0, 0x03000000).bytes, "gguf.bad_version", {"big-endian"});
    expect_ok(RawGguf().header(0, 0, 2).bytes);
    expect_ok(RawGguf().header(0, 0, 3).bytes);
    expect_ok(RawGguf().header(0, 1, 2).kv_str("general.architecture", "llama").bytes);
}

TEST(GgufMalformed, HugeCounts) {
    for (uint64_t n : {kHuge63, kMax64, uint64_t(1) << 60, uint64_t(1000)}) {
        SCOPED_TRACE(n);
        expect_error(RawGguf().header(0, n).kv_u32("a", 1).bytes, "gguf.truncated",
                     {"metadata key count"});
        expect_error(RawGguf().header(n, 0).bytes, "gguf.truncated", {"tensor count"});
        // Array lengths: UINT8 (1 byte each), UINT64 (8: overflows at 2^61), STRING, ARRAY.
        for (uint32_t et : {0u, 10u, 8u, 9u}) {
            auto b = RawGguf().header(0, 1).str("arr").u32(9).u32(et).u64(n).zeros(16).bytes;
            expect_error(b, "gguf.truncated", {"metadata key #0 ('arr')", "array length"});
        }
    }
    expect_error(
        RawGguf().header(0, 1).str("arr").u32(9).u32(10).u64(uint64_t(1) << 61).zeros(8).bytes,
        "gguf.truncated");
}

TEST(GgufMalformed, HugeStringLengths) {
    // Just past the end: the value below has 12 bytes after its length.
    expect_error(
        RawGguf().header(0, 1).str("general.name").u32(8).u64(13).raw("twelve bytes").bytes,
        "gguf.truncated",
        {"metadata key #0 ('general.name')", "string length 13 exceeds the 12 bytes left"});
    for (uint64_t n : {kHuge63, kMax64}) {
        SCOPED_TRACE(n);
        // In a key.
        expect_error(RawGguf().header(0, 1).u64(n).raw("general.name").u32(4).u32(0).bytes,
                     "gguf.truncated", {"metadata key #0", "string length " + std::to_string(n)});
        // In a value.
        expect_error(
            RawGguf().header(0, 1).str("general.name").u32(8).u64(n).raw("twelve bytes").bytes,
            "gguf.truncated", {"'general.name'", "exceeds the 12 bytes left"});
        // In an array element.
        expect_error(
            RawGguf().header(0, 1).str("toks").u32(9).u32(8).u64(2).str("ok").u64(n).zeros(8).bytes,
            "gguf.truncated", {"'toks'", "element 1"});
        // In a tensor name.
        expect_error(
            RawGguf().header(1, 0).u64(n).raw("w").u32(1).u64(1).u32(0).u64(0).zeros(64).bytes,
            "gguf.truncated", {"tensor #0"});
    }
}

// An array nested `levels` deep around one INT32.
std::vector<uint8_t> nested_file(int levels) {
    RawGguf g;
    g.header(0, 1).str("deep").u32(9);
    for (int i = 1; i < levels; ++i) g.u32(9).u64(1);
    g.u32(5).u64(1).u32(42);
    return g.bytes;
}

TEST(GgufMalformed, NestingDepth) {
    auto ok = File::from_bytes(nested_file(8));
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    const Value* v = (*ok)->find("deep");
    for (int i = 0; i < 7; ++i) v = &v->arr.at(0);
    EXPECT_EQ(v->arr.at(0).as_int(), 42);
    expect_error(nested_file(9), "gguf.bad_value", {"nested"});
    expect_error(nested_file(1000), "gguf.bad_value");
}

TEST(GgufMalformed, BadMetadataValues) {
    expect_error(RawGguf().header(0, 1).str("k").u32(13).u32(0).bytes, "gguf.bad_type",
                 {"'k'", "13"});
    expect_error(RawGguf().header(0, 1).str("k").u32(0xffffffff).u32(0).bytes, "gguf.bad_type");
    expect_error(RawGguf().header(0, 1).str("k").u32(9).u32(77).u64(0).bytes, "gguf.bad_type",
                 {"array element type"});
    expect_error(RawGguf().header(0, 1).str("k").u32(7).u8(2).bytes, "gguf.bad_value", {"BOOL"});
    expect_error(RawGguf().header(0, 1).str("").u32(4).u32(0).bytes, "gguf.bad_value",
                 {"empty key"});
    expect_error(RawGguf().header(0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_u32("a", 3).bytes,
                 "gguf.duplicate", {"metadata key #2 ('a')", "#0"});
    // Key names with control bytes are shown escaped.
    auto e = expect_error(RawGguf().header(0, 1).str("x\ny").u32(13).bytes, "gguf.bad_type");
    EXPECT_NE(e.message.find("x\\x0ay"), std::string::npos) << e.message;
}

TEST(GgufMalformed, Alignment) {
    for (uint32_t a : {0u, 3u, 48u, 0xffffffffu}) {
        SCOPED_TRACE(a);
        expect_error(RawGguf().header(0, 1).kv_u32("general.alignment", a).bytes, "gguf.bad_value",
                     {"general.alignment", std::to_string(a)});
    }
    expect_error(
        RawGguf().header(0, 1).str("general.alignment").u32(10).u64(uint64_t(1) << 33).bytes,
        "gguf.bad_value");
    expect_error(RawGguf().header(0, 1).str("general.alignment").u32(5).u32(uint32_t(-32)).bytes,
                 "gguf.bad_value");
    expect_error(RawGguf().header(0, 1).kv_str("general.alignment", "32").bytes, "gguf.bad_value",
                 {"STRING"});
    expect_error(RawGguf().header(0, 1).str("general.alignment").u32(6).f32(32).bytes,
                 "gguf.bad_value");

    // A valid alignment of 64 moves the data section and constrains offsets.
    RawGguf g;
    g.header(1, 1).kv_u32("general.alignment", 64).tensor("t", {4}, 0, 0).pad_to(64).zeros(16);
    auto r = File::from_bytes(g.bytes);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r)->alignment(), 64u);
    EXPECT_EQ((*r)->data_offset() % 64, 0u);
    RawGguf m;
    m.header(1, 1).kv_u32("general.alignment", 64).tensor("t", {4}, 0, 32).pad_to(64).zeros(64);
    expect_error(m.bytes, "gguf.bad_value", {"tensor 't'", "not a multiple of the alignment 64"});
}

// One tensor followed by `data` bytes of data.
std::vector<uint8_t> one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset,
                                size_t data = 64, const std::string& name = "blk.0.attn_q.weight") {
    RawGguf g;
    g.header(1, 0).tensor(name, std::move(dims), type, offset).pad_to(32).zeros(data);
    return g.bytes;
}

TEST(GgufMalformed, TensorInfos) {
    expect_ok(one_tensor({16}, 0, 0));
    expect_ok(one_tensor({256}, 10, 0, 84));  // Q2_K: known, unsupported, still readable

    expect_error(one_tensor({16}, 0, 32), "gguf.truncated",
                 {"tensor 'blk.0.attn_q.weight'", "[offset 32, 64 bytes)", "past the end"});
    expect_error(one_tensor({17}, 0, 0), "gguf.truncated");
    expect_error(one_tensor({16}, 0, kMax64 & ~uint64_t(31)), "gguf.truncated");
    expect_error(one_tensor({16}, 0, 8), "gguf.bad_value", {"not a multiple of the alignment 32"});
    for (uint32_t type : {99u, 4u, 5u, 31u, 36u, 0xffffffffu})
        expect_error(one_tensor({32}, type, 0), "gguf.bad_type",
                     {"blk.0.attn_q.weight", "type id " + std::to_string(type)});
    expect_error(one_tensor({}, 0, 0), "gguf.bad_value", {"n_dims 0"});
    expect_error(one_tensor({1, 1, 1, 1, 1}, 0, 0), "gguf.bad_value", {"n_dims 5"});
    expect_error(one_tensor({4, 0}, 0, 0), "gguf.bad_value", {"dimension 1 is 0"});
    expect_error(one_tensor({uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0), "gguf.bad_value",
                 {"overflow"});
    expect_error(one_tensor({kMax64, 2}, 0, 0), "gguf.bad_value", {"overflow"});
    // Elements fit in 64 bits but bytes do not.
    expect_error(one_tensor({uint64_t(1) << 62}, 0, 0), "gguf.bad_value", {"overflow"});
    expect_error(one_tensor({uint64_t(1) << 40, uint64_t(1) << 22}, 0, 0), "gguf.bad_value",
                 {"overflow"});
    expect_error(one_tensor({33}, 2, 0), "gguf.bad_value", {"block size 32"});
    expect_error(one_tensor({100}, 12, 0), "gguf.bad_value", {"Q4_K", "256"});
    expect_error(one_tensor({16}, 0, 0, 64, ""), "gguf.bad_value", {"empty tensor name"});

    RawGguf dup;
    dup.header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad_to(32).zeros(64);
    expect_error(dup.bytes, "gguf.duplicate", {"tensor 't'", "#0"});
    // A tensor count larger than the infos present.
    RawGguf more;
    more.header(3, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 32).pad_to(32).zeros(64);
    expect_error(more.bytes, "", {"tensor #2"});
}

TEST(GgufMalformed, TooManyMetadataValues) {
    // 2^22 values is the limit over the whole file; one array past it is refused before reading.
    uint64_t limit = uint64_t(1) << 22;
    RawGguf one;
    one.header(0, 1).str("a").u32(9).u32(0).u64(limit + 1).zeros(limit + 1);
    expect_error(one.bytes, "gguf.too_large", {"'a'"});

    // Two arrays that are each fine but together too many.
    RawGguf two;
    two.header(0, 2);
    two.str("a").u32(9).u32(0).u64(limit / 2).zeros(limit / 2);
    two.str("b").u32(9).u32(0).u64(limit / 2 + 1).zeros(limit / 2 + 1);
    auto r = File::from_bytes(two.bytes, "two.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "gguf.too_large");
    EXPECT_NE(r.error().message.find("'b'"), std::string::npos) << r.error().message;

    RawGguf ok;
    ok.header(0, 1).str("a").u32(9).u32(0).u64(limit / 4).zeros(limit / 4);
    auto good = File::from_bytes(ok.bytes);
    ASSERT_TRUE(good.ok()) << good.error().message;
    EXPECT_EQ((*good)->get_array("a")->size(), limit / 4);
}

TEST(GgufMalformed, EmptyFileOnDisk) {
    auto path = test::temp_dir() / "empty.gguf";
    { std::ofstream out(path); }
    auto r = File::open(path.string());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "gguf.truncated");
    EXPECT_NE(r.error().message.find(path.string()), std::string::npos);
    std::filesystem::remove(path);
}

// Random corruption of a valid file: any outcome but a crash or a big allocation is fine.
TEST(GgufMalformed, RandomByteFlips) {
    auto full = small_file();
    uint64_t state = 12345;
    auto next = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
    };
    for (int iter = 0; iter < 20000; ++iter) {
        auto b = full;
        int flips = 1 + next() % 4;
        for (int i = 0; i < flips; ++i) {
            size_t at = next() % b.size();
            b[at] = (next() % 3 == 0) ? 0xff : uint8_t(next());
        }
        test::reset_largest_allocation();
        auto r = File::from_bytes(std::move(b), "fuzz.gguf");
        ASSERT_LT(test::largest_allocation(), kAllocationLimit);
        if (!r.ok()) {
            ASSERT_FALSE(r.error().message.empty());
        }
    }
}

}  // namespace

// Writer -> reader round trips, typed getters, and the writer's own errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "test_util.h"

using namespace ember;
using namespace ember::gguf;

namespace {

Value scalar_u(ValueType t, uint64_t v) {
    Value x;
    x.type = t;
    x.u64 = v;
    return x;
}
Value scalar_i(ValueType t, int64_t v) {
    Value x;
    x.type = t;
    x.i64 = v;
    return x;
}
Value scalar_f(ValueType t, double v) {
    Value x;
    x.type = t;
    x.f64 = v;
    return x;
}
Value boolean(bool v) {
    Value x;
    x.type = ValueType::BOOL;
    x.b = v;
    return x;
}
Value string(std::string s) {
    Value x;
    x.type = ValueType::STRING;
    x.str = std::move(s);
    return x;
}
Value array(ValueType elem, std::vector<Value> items) {
    Value x;
    x.type = ValueType::ARRAY;
    x.elem_type = elem;
    x.arr = std::move(items);
    return x;
}

// Deep comparison of two values, with a path for the failure message.
void expect_same(const Value& a, const Value& b, const std::string& where) {
    ASSERT_EQ(a.type, b.type) << where;
    switch (a.type) {
        case ValueType::UINT8:
        case ValueType::UINT16:
        case ValueType::UINT32:
        case ValueType::UINT64:
            EXPECT_EQ(a.u64, b.u64) << where;
            break;
        case ValueType::INT8:
        case ValueType::INT16:
        case ValueType::INT32:
        case ValueType::INT64:
            EXPECT_EQ(a.i64, b.i64) << where;
            break;
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            if (std::isnan(a.f64))
                EXPECT_TRUE(std::isnan(b.f64)) << where;
            else
                EXPECT_EQ(a.f64, b.f64) << where;
            break;
        case ValueType::BOOL:
            EXPECT_EQ(a.b, b.b) << where;
            break;
        case ValueType::STRING:
            EXPECT_EQ(a.str, b.str) << where;
            break;
        case ValueType::ARRAY:
            EXPECT_EQ(a.elem_type, b.elem_type) << where;
            ASSERT_EQ(a.arr.size(), b.arr.size()) << where;
            for (size_t i = 0; i < a.arr.size(); ++i)
                expect_same(a.arr[i], b.arr[i], where + "[" + std::to_string(i) + "]");
            break;
    }
}

std::vector<std::pair<std::string, Value>> every_value() {
    std::vector<std::pair<std::string, Value>> v;
    v.emplace_back("t.u8", scalar_u(ValueType::UINT8, 255));
    v.emplace_back("t.i8", scalar_i(ValueType::INT8, -128));
    v.emplace_back("t.u16", scalar_u(ValueType::UINT16, 65535));
    v.emplace_back("t.i16", scalar_i(ValueType::INT16, -32768));
    v.emplace_back("t.u32", scalar_u(ValueType::UINT32, 4000000000u));
    v.emplace_back("t.i32", scalar_i(ValueType::INT32, -2000000000));
    v.emplace_back("t.f32", scalar_f(ValueType::FLOAT32, 0.1f));
    v.emplace_back("t.f32_inf", scalar_f(ValueType::FLOAT32, -INFINITY));
    v.emplace_back("t.bool_t", boolean(true));
    v.emplace_back("t.bool_f", boolean(false));
    v.emplace_back("t.str", string("h\xc3\xa9llo"));
    v.emplace_back("t.str_empty", string(""));
    v.emplace_back("t.str_nul", string(std::string("a\0b", 3)));
    v.emplace_back("t.u64", scalar_u(ValueType::UINT64, std::numeric_limits<uint64_t>::max()));
    v.emplace_back("t.i64", scalar_i(ValueType::INT64, std::numeric_limits<int64_t>::min()));
    v.emplace_back("t.f64", scalar_f(ValueType::FLOAT64, 3.141592653589793));
    v.emplace_back("t.f64_nan", scalar_f(ValueType::FLOAT64, NAN));
    v.emplace_back("t.arr_empty", array(ValueType::INT32, {}));
    v.emplace_back("t.arr_u8", array(ValueType::UINT8, {scalar_u(ValueType::UINT8, 1),
                                                        scalar_u(ValueType::UINT8, 2)}));
    v.emplace_back("t.arr_bool", array(ValueType::BOOL, {boolean(true), boolean(false)}));
    v.emplace_back("t.arr_str", array(ValueType::STRING, {string("x"), string(""), string("yz")}));
    v.emplace_back("t.arr_f64", array(ValueType::FLOAT64, {scalar_f(ValueType::FLOAT64, -1.5)}));
    // Nested: [[["a"], []], [["b", "c"]]] and [[1, 2], [3]]
    Value inner1 = array(ValueType::ARRAY,
                         {array(ValueType::STRING, {string("a")}), array(ValueType::STRING, {})});
    Value inner2 = array(ValueType::ARRAY, {array(ValueType::STRING, {string("b"), string("c")})});
    v.emplace_back("t.nested3", array(ValueType::ARRAY, {inner1, inner2}));
    v.emplace_back("t.nested2", array(ValueType::ARRAY,
                                      {array(ValueType::INT64, {scalar_i(ValueType::INT64, 1),
                                                                scalar_i(ValueType::INT64, 2)}),
                                       array(ValueType::INT64, {scalar_i(ValueType::INT64, 3)})}));
    return v;
}

// Deterministic tensor contents that differ per tensor.
auto pattern(uint8_t seed) {
    return [seed](uint8_t* dst, uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) dst[i] = uint8_t(seed + i * 7);
    };
}

Writer make_writer() {
    Writer w;
    for (auto& [k, v] : every_value()) w.set_value(k, v);
    w.set_u32("c.u32", 7);
    w.set_i32("c.i32", -7);
    w.set_u64("c.u64", uint64_t(1) << 40);
    w.set_f32("c.f32", 2.5f);
    w.set_bool("c.bool", true);
    w.set_string("c.str", "text");
    w.set_string_array("c.strs", {"<unk>", "<s>", "</s>"});
    w.set_f32_array("c.f32s", {0.f, -1.f, 1e30f});
    w.set_i32_array("c.i32s", {1, -2, 3});
    w.add_tensor("a.f32", GgmlType::F32, {4, 3}, pattern(1));           // 48 bytes
    w.add_tensor("b.q4_0", GgmlType::Q4_0, {64, 2}, pattern(2));        // 2*2*18 = 72 bytes
    w.add_tensor("c.f16", GgmlType::F16, {5}, pattern(3));              // 10 bytes
    w.add_tensor("d.q8_0", GgmlType::Q8_0, {32, 2, 3, 2}, pattern(4));  // 12*34 bytes
    w.add_tensor("e.q2_k", GgmlType::Q2_K, {256}, pattern(5));          // known but unsupported: 84
    std::vector<uint8_t> given(3 * 4);
    for (size_t i = 0; i < given.size(); ++i) given[i] = uint8_t(100 + i);
    w.add_tensor("f.given", GgmlType::F32, {3}, given);
    return w;
}

void check_file(const File& f, uint64_t alignment) {
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    for (auto& [k, v] : every_value()) {
        const Value* got = f.find(k);
        ASSERT_NE(got, nullptr) << k;
        expect_same(v, *got, k);
    }
    EXPECT_EQ(f.get_u32("c.u32"), 7u);
    EXPECT_EQ(f.get_int("c.i32"), -7);
    EXPECT_EQ(f.get_int("c.u64"), int64_t(1) << 40);
    EXPECT_EQ(f.get_f32("c.f32"), 2.5f);
    EXPECT_EQ(f.get_bool("c.bool"), true);
    EXPECT_EQ(f.get_string("c.str"), "text");
    ASSERT_NE(f.get_array("c.strs"), nullptr);
    EXPECT_EQ(f.get_array("c.strs")->at(2).str, "</s>");
    EXPECT_EQ(f.find("c.strs")->elem_type, ValueType::STRING);
    EXPECT_EQ(f.get_array("c.f32s")->at(2).f64, double(1e30f));
    EXPECT_EQ(f.get_array("c.i32s")->at(1).as_int(), -2);

    struct Expect {
        const char* name;
        GgmlType type;
        uint32_t n_dims;
        uint64_t bytes;
        uint8_t seed;
    };
    const Expect want[] = {{"a.f32", GgmlType::F32, 2, 48, 1},
                           {"b.q4_0", GgmlType::Q4_0, 2, 72, 2},
                           {"c.f16", GgmlType::F16, 1, 10, 3},
                           {"d.q8_0", GgmlType::Q8_0, 4, 12 * 34, 4},
                           {"e.q2_k", GgmlType::Q2_K, 1, 84, 5}};
    ASSERT_EQ(f.tensors().size(), 6u);
    for (const Expect& e : want) {
        const TensorInfo* t = f.find_tensor(e.name);
        ASSERT_NE(t, nullptr) << e.name;
        EXPECT_EQ(t->type, e.type) << e.name;
        EXPECT_EQ(t->n_dims, e.n_dims) << e.name;
        EXPECT_EQ(t->n_bytes, e.bytes) << e.name;
        EXPECT_EQ(t->offset % alignment, 0u) << e.name;
        std::vector<uint8_t> expect(e.bytes);
        pattern(e.seed)(expect.data(), e.bytes);
        EXPECT_EQ(std::memcmp(f.tensor_data(*t), expect.data(), e.bytes), 0) << e.name;
    }
    const TensorInfo* d = f.find_tensor("d.q8_0");
    EXPECT_EQ(d->ne[0], 32u);
    EXPECT_EQ(d->ne[1], 2u);
    EXPECT_EQ(d->ne[2], 3u);
    EXPECT_EQ(d->ne[3], 2u);
    EXPECT_EQ(d->n_elements(), 384u);
    EXPECT_EQ(f.find_tensor("c.f16")->ne[1], 1u);
    const TensorInfo* g = f.find_tensor("f.given");
    ASSERT_NE(g, nullptr);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(f.tensor_data(*g)[i], 100 + i);
}

TEST(GgufRoundTrip, EveryTypeThroughAFile) {
    Writer w = make_writer();
    auto path = (test::temp_dir() / "roundtrip.gguf").string();
    Status s = w.write(path);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto r = File::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message;
    check_file(**r, 32);

    // to_bytes produces the same bytes as write.
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(*bytes, on_disk);
    std::filesystem::remove(path);
}

TEST(GgufRoundTrip, CustomAlignmentInMemory) {
    for (uint32_t a : {1u, 8u, 64u, 4096u}) {
        Writer w = make_writer();
        w.set_alignment(a);
        auto bytes = w.to_bytes();
        ASSERT_TRUE(bytes.ok()) << bytes.error().message;
        auto r = File::from_bytes(*bytes);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ((*r)->get_u32("general.alignment"), a);
        check_file(**r, a);
    }
}

TEST(GgufRoundTrip, MetadataOnlyAndReplacedKeys) {
    Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.architecture", "gpt2");  // replaces, does not duplicate
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());
    auto r = File::from_bytes(*bytes);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r)->metadata().size(), 1u);
    EXPECT_EQ((*r)->get_string("general.architecture"), "gpt2");
    EXPECT_TRUE((*r)->tensors().empty());

    Writer empty;
    auto eb = empty.to_bytes();
    ASSERT_TRUE(eb.ok());
    EXPECT_EQ(eb->size(), 32u);  // 24 header bytes, padded
    EXPECT_TRUE(File::from_bytes(*eb).ok());
}

TEST(GgufRoundTrip, TypedGettersConvertOnlyWhenInRange) {
    Writer w;
    w.set_value("neg", scalar_i(ValueType::INT32, -1));
    w.set_value("i8", scalar_i(ValueType::INT8, 100));
    w.set_value("big", scalar_u(ValueType::UINT64, std::numeric_limits<uint64_t>::max()));
    w.set_value("u64_small", scalar_u(ValueType::UINT64, 12));
    w.set_value("over_u32", scalar_i(ValueType::INT64, int64_t(1) << 32));
    w.set_value("f64", scalar_f(ValueType::FLOAT64, 0.25));
    w.set_value("u16", scalar_u(ValueType::UINT16, 9));
    w.set_bool("flag", true);
    w.set_string("s", "x");
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());
    auto r = File::from_bytes(*bytes);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const File& f = **r;
    EXPECT_EQ(f.get_u32("neg"), std::nullopt);
    EXPECT_EQ(f.get_int("neg"), -1);
    EXPECT_EQ(f.get_u32("i8"), 100u);
    EXPECT_EQ(f.get_u32("big"), std::nullopt);
    EXPECT_EQ(f.get_int("big"), std::nullopt);
    EXPECT_EQ(f.get_u32("u64_small"), 12u);
    EXPECT_EQ(f.get_u32("over_u32"), std::nullopt);
    EXPECT_EQ(f.get_int("over_u32"), int64_t(1) << 32);
    EXPECT_EQ(f.get_f32("f64"), 0.25f);
    EXPECT_EQ(f.get_f32("u16"), std::nullopt);
    EXPECT_EQ(f.get_u32("f64"), std::nullopt);
    EXPECT_EQ(f.get_bool("flag"), true);
    EXPECT_EQ(f.get_bool("u16"), std::nullopt);
    EXPECT_EQ(f.get_string("u16"), std::nullopt);
    EXPECT_EQ(f.get_array("s"), nullptr);
    EXPECT_EQ(f.find("missing"), nullptr);
    EXPECT_TRUE(f.find("u16")->is_integer());
    EXPECT_FALSE(f.find("f64")->is_integer());
    EXPECT_TRUE(f.find("f64")->is_number());
    EXPECT_FALSE(f.find("s")->is_number());
    EXPECT_EQ(f.find("u16")->as_number(), 9.0);
    EXPECT_EQ(value_type_name(ValueType::FLOAT64), "FLOAT64");
}

TEST(GgufRoundTrip, LargeTensorIsStreamed) {
    // 64 MiB in two tensors: the fill callback sees one tensor's buffer at a time.
    Writer w;
    uint64_t calls = 0;
    for (int i = 0; i < 2; ++i) {
        w.add_tensor("big." + std::to_string(i), GgmlType::F32, {1024, 8192},
                     [&calls, i](uint8_t* dst, uint64_t n) {
                         ++calls;
                         EXPECT_EQ(n, 32u << 20);
                         std::memset(dst, 0x11 * (i + 1), n);
                     });
    }
    auto path = (test::temp_dir() / "big.gguf").string();
    Status s = w.write(path);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(calls, 2u);
    auto r = File::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const TensorInfo* t = (*r)->find_tensor("big.1");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ((*r)->tensor_data(*t)[t->n_bytes - 1], 0x22);
    std::filesystem::remove(path);
}

TEST(GgufRoundTrip, ZerosAreAHoleThatReadsAsZeros) {
    // A tensor of zeros between two with bytes, and one at the end (the file's length is set
    // without writing it): all read back, the zeros as zeros, in a file of the full size.
    Writer w;
    w.add_tensor("a", GgmlType::F32, {4}, std::vector<uint8_t>(16, 0x5a));
    w.add_zeros("hole", GgmlType::Q8_0, {4096, 1024});
    w.add_tensor("b", GgmlType::F32, {4}, std::vector<uint8_t>(16, 0x6b));
    w.add_zeros("tail", GgmlType::F32, {1000});
    auto path = (test::temp_dir() / "sparse.gguf").string();
    Status s = w.write(path);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto r = File::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const File& f = **r;
    const TensorInfo* hole = f.find_tensor("hole");
    const TensorInfo* b = f.find_tensor("b");
    const TensorInfo* tail = f.find_tensor("tail");
    ASSERT_TRUE(hole && b && tail);
    EXPECT_EQ(hole->n_bytes, 1024u * 4096 / 32 * 34);
    const uint8_t* h = f.tensor_data(*hole);
    EXPECT_TRUE(std::all_of(h, h + hole->n_bytes, [](uint8_t x) { return x == 0; }));
    EXPECT_EQ(f.tensor_data(*b)[15], 0x6b);
    EXPECT_EQ(f.tensor_data(*tail)[tail->n_bytes - 1], 0);
    EXPECT_GE(f.file_size(), f.data_offset() + tail->offset + tail->n_bytes);
    // In memory the same bytes.
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->size(), f.file_size());
    std::filesystem::remove(path);
}

Error write_error(const Writer& w, const std::string& path = "") {
    Status s;
    if (path.empty()) {
        auto r = w.to_bytes();
        if (!r.ok()) s = r.take_error();
    } else {
        s = w.write(path);
    }
    EXPECT_FALSE(s.ok());
    if (s.ok()) return {};
    EXPECT_FALSE(s.error().message.empty());
    return s.error();
}

TEST(GgufWriterErrors, BadPathAndFullDisk) {
    Writer w = make_writer();
    Error e = write_error(w, "/nonexistent/dir/out.gguf");
    EXPECT_EQ(e.code, "gguf.write_failed");
    EXPECT_NE(e.message.find("/nonexistent/dir/out.gguf"), std::string::npos) << e.message;

    if (std::filesystem::exists("/dev/full")) {
        Writer big;
        big.add_tensor("t", GgmlType::F32, {1 << 20}, pattern(0));
        Error full = write_error(big, "/dev/full");
        EXPECT_EQ(full.code, "gguf.write_failed");
        EXPECT_NE(full.message.find("/dev/full"), std::string::npos) << full.message;
        EXPECT_TRUE(std::filesystem::exists("/dev/full"));
    }
}

TEST(GgufWriterErrors, InvalidInputIsRefusedBeforeWriting) {
    {
        Writer w;
        w.add_tensor("t", GgmlType::Q4_0, {33}, pattern(0));  // not a multiple of 32
        EXPECT_NE(write_error(w).message.find("block size"), std::string::npos);
    }
    {
        Writer w;
        w.add_tensor("t", GgmlType::F32, {2}, pattern(0));
        w.add_tensor("t", GgmlType::F32, {2}, pattern(0));
        EXPECT_NE(write_error(w).message.find("duplicate"), std::string::npos);
    }
    {
        Writer w;
        w.add_tensor("t", GgmlType::F32, {3}, std::vector<uint8_t>(8));  // needs 12
        EXPECT_NE(write_error(w).message.find("12"), std::string::npos);
    }
    {
        Writer w;
        w.add_tensor("t", GgmlType::F32, {1, 1, 1, 1, 1}, pattern(0));
        write_error(w);
    }
    {
        Writer w;
        w.add_tensor("t", GgmlType::F32, {4, 0}, pattern(0));
        write_error(w);
    }
    {
        Writer w;
        w.add_tensor("t", GgmlType(4), {32}, pattern(0));  // removed Q4_2
        write_error(w);
    }
    {
        Writer w;
        w.set_alignment(48);
        write_error(w);
    }
    {
        Writer w;
        w.set_value("mixed", array(ValueType::STRING, {string("a"), boolean(true)}));
        EXPECT_NE(write_error(w).message.find("mixed"), std::string::npos);
    }
    {
        Writer w;
        w.set_value("range", scalar_u(ValueType::UINT8, 256));
        write_error(w);
    }
    {
        Value deep = array(ValueType::INT32, {});
        for (int i = 0; i < 8; ++i) deep = array(ValueType::ARRAY, {deep});  // 9 levels
        Writer w;
        w.set_value("deep", deep);
        write_error(w);
    }
    {
        // A refused write leaves no file behind.
        Writer w;
        w.set_alignment(3);
        auto path = test::temp_dir() / "refused.gguf";
        write_error(w, path.string());
        EXPECT_FALSE(std::filesystem::exists(path));
    }
}

}  // namespace

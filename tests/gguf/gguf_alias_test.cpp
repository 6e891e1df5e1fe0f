// Tensors that share bytes: identical aliases are read (and counted once); any other overlap is
// refused, naming both tensors. Paths that are not regular files are refused without blocking.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "test_util.h"

using namespace ember;
using namespace ember::gguf;

namespace {

// Two F32 tensors of 64 x 4, "a" and "b", and one view `name` described by the arguments.
Result<std::unique_ptr<File>> with_view(GgmlType type, std::vector<uint64_t> dims, const char* of,
                                        uint64_t byte_offset) {
    Writer w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("a", GgmlType::F32, {64, 4}, std::vector<uint8_t>(64 * 4 * 4, 1));
    w.add_tensor("b", GgmlType::F32, {64, 4}, std::vector<uint8_t>(64 * 4 * 4, 2));
    w.add_view("view", type, dims, of, byte_offset);
    auto bytes = w.to_bytes();
    EXPECT_TRUE(bytes.ok()) << bytes.error().message;
    return File::from_bytes(std::move(bytes).value(), "alias.gguf");
}

TEST(GgufAlias, IdenticalAliasIsReadAndCountedOnce) {
    auto f = with_view(GgmlType::F32, {64, 4}, "b", 0);
    ASSERT_TRUE(f.ok()) << f.error().message;
    const TensorInfo* b = (*f)->find_tensor("b");
    const TensorInfo* v = (*f)->find_tensor("view");
    ASSERT_TRUE(b && v);
    EXPECT_EQ(v->offset, b->offset);
    EXPECT_EQ((*f)->tensor_data(*v), (*f)->tensor_data(*b));
    const TensorTally t = tally_tensors(**f);
    EXPECT_EQ(t.n_bytes, 2u * 64 * 4 * 4);
    EXPECT_EQ(t.n_params, 2u * 64 * 4);
}

TEST(GgufAlias, OverlapsAreRefusedNamingBothTensors) {
    struct Case {
        const char* what;
        GgmlType type;
        std::vector<uint64_t> dims;
        const char* of;
        uint64_t at;
    };
    const Case cases[] = {
        {"inside a", GgmlType::F32, {32, 1}, "a", 256},
        {"across a and b", GgmlType::F32, {64, 4}, "a", 512},
        {"same offset, other shape", GgmlType::F32, {32, 8}, "b", 0},
        {"same offset, other type", GgmlType::F16, {64, 4}, "b", 0},
        {"same offset, shorter", GgmlType::F32, {64, 1}, "a", 0},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        auto f = with_view(c.type, c.dims, c.of, c.at);
        ASSERT_FALSE(f.ok());
        EXPECT_EQ(f.error().code, "gguf.overlap");
        EXPECT_NE(f.error().message.find("'view'"), std::string::npos) << f.error().message;
        EXPECT_NE(f.error().message.find(std::string("'") + c.of + "'"), std::string::npos)
            << f.error().message;
    }
}

TEST(GgufAlias, NonRegularPathsAreRefusedWithoutBlocking) {
    const auto dir = ember::test::temp_dir();
    const std::string fifo = (dir / "pipe.gguf").string();
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Nothing ever opens it for writing: an open(2) before the check would block for good.
    auto f = File::open(fifo);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message.find("is a FIFO (named pipe), not a regular file"),
              std::string::npos)
        << f.error().message;
    ::unlink(fifo.c_str());
    auto d = File::open(dir.string());
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("is a directory"), std::string::npos) << d.error().message;
    auto z = File::open("/dev/zero");
    ASSERT_FALSE(z.ok());
    EXPECT_NE(z.error().message.find("is a character device"), std::string::npos)
        << z.error().message;
}

}  // namespace

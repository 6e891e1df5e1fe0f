// Hostile model files, one defect each: a FIFO as the model path, tensors that overlap or alias
// the same bytes many times, a KV cache larger than the machine, and finite weights whose
// forward pass overflows to NaN logits.
#include <sys/stat.h>

#include <cfloat>

#include "bad_model_util.h"
#include "child_util.h"
#include "cpu/matmul.h"
#include "gguf/gguf.h"
#include "session/memory.h"

namespace ember::test {
namespace {

std::vector<std::string> generate_args(const std::string& path) {
    return {cli_path(), "generate", "-m", path,        "-p",  "Once",      "-n",
            "4",        "--temp",   "0",  "--backend", "cpu", "--threads", "1"};
}

// A FIFO blocks open(2) until a writer appears: the reader must look first and never block.
TEST(Hostile, FifoAsModelPathIsRefusedWithoutBlocking) {
    const std::string path = (temp_dir() / "model.gguf.fifo").string();
    ::unlink(path.c_str());
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    for (const auto& args :
         {std::vector<std::string>{cli_path(), "info", "-m", path}, generate_args(path)}) {
        SCOPED_TRACE(args[1]);
        const ChildResult r = run_child(args);
        EXPECT_EQ(misbehaviour(r), "") << r.err;
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("is a FIFO (named pipe), not a regular file"), std::string::npos)
            << r.err;
    }
    // In this process only once the children showed that it does not block.
    if (!HasFailure()) expect_load_error(path, "gguf.io", {"FIFO"});
    ::unlink(path.c_str());
}

// Tensors that share bytes other than as identical aliases read the same bytes as two things.
TEST(Hostile, OverlappingTensorRangesAreRefused) {
    struct Case {
        const char* name;
        std::string view, of;
        GgmlType type;
        std::vector<uint64_t> dims;
        uint64_t byte_offset;
    };
    const Case cases[] = {
        // ffn_up starts inside ffn_gate's bytes
        {"partial", "blk.0.ffn_up.weight", "blk.0.ffn_gate.weight", GgmlType::F32, {64, 128}, 256},
        // attn_output at ffn_down's offset with another shape ([128, 64] there)
        {"shape", "blk.0.attn_output.weight", "blk.0.ffn_down.weight", GgmlType::F32, {64, 64}, 0},
        // attn_v at attn_k's offset, the same shape in another type
        {"type", "blk.0.attn_v.weight", "blk.0.attn_k.weight", GgmlType::F16, {64, 64}, 0},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        TinyModel m = TinyModel::make(GgmlType::F32, 64, 128);
        m.remove(c.view);
        gguf::Writer w = m.writer();
        w.add_view(c.view, c.type, c.dims, c.of, c.byte_offset);
        const std::string path =
            (temp_dir() / (std::string("overlap-") + c.name + ".gguf")).string();
        ASSERT_TRUE(w.write(path).ok());
        expect_refused(path, "gguf.overlap",
                       {"'" + c.view + "'", "'" + c.of + "'", "overlaps", "identical aliases"});
        expect_cli_error({"info", "-m", path}, path, {"overlaps"});
    }
}

// Identical aliases are legal GGUF: they load, count once in `info`, and compute exactly what
// separate copies of the same bytes compute.
TEST(Hostile, IdenticalAliasesRunLikeCopies) {
    TinyModel aliased = TinyModel::make(GgmlType::Q8_0, 256, 256);
    aliased.alias_layers(6);
    aliased.views["output.weight"] = "token_embd.weight";
    aliased.remove("output.weight");
    TinyModel copied = aliased;
    for (const auto& [name, of] : copied.views) {
        TensorSpec t = copied.tensor(of);
        t.name = name;
        copied.tensors.push_back(t);
    }
    copied.views.clear();
    const std::string a = aliased.write("aliased.gguf"), c = copied.write("copied.gguf");
    auto fa = gguf::File::open(a);
    auto fc = gguf::File::open(c);
    ASSERT_TRUE(fa.ok() && fc.ok());
    EXPECT_EQ((*fa)->tensors().size(), (*fc)->tensors().size());
    EXPECT_LT(gguf::tally_tensors(**fa).n_bytes, gguf::tally_tensors(**fc).n_bytes / 4);
    EXPECT_EQ(gguf::tally_tensors(**fa).n_bytes, (*fa)->file_size() - (*fa)->data_offset());

    std::vector<std::vector<float>> logits;
    for (const std::string& path : {a, c}) {
        LoadParams p;
        p.backend = BackendKind::Cpu;
        p.n_ctx = 64;
        auto m = Model::load(path, p);
        ASSERT_TRUE(m.ok()) << m.error().message;
        auto s = Session::create(**m);
        ASSERT_TRUE(s.ok()) << s.error().message;
        const std::vector<int32_t> ids = {1, 100, 200, 299};
        auto l = (*s)->eval(ids);
        ASSERT_TRUE(l.ok()) << l.error().message;
        logits.emplace_back(l->begin(), l->end());
    }
    EXPECT_EQ(logits[0], logits[1]);
}

// 1,024 aliased layers of a 64-wide model make a small file whose KV cache for its 2^20-token
// context would take 512 GiB: refused with the numbers before anything is allocated.
TEST(Hostile, KvCacheLargerThanTheMachineIsRefusedBeforeAllocating) {
    TinyModel m = TinyModel::make(GgmlType::F32, 64, 64);
    m.alias_layers(1024);
    m.ctx = 1u << 20;
    const std::string path = m.write("kv-512g.gguf");
    LoadParams p;
    p.backend = BackendKind::Cpu;
    p.n_ctx = 1 << 20;
    auto model = Model::load(path, p);
    ASSERT_FALSE(model.ok()) << "a 512 GiB KV cache was accepted";
    EXPECT_EQ(model.error().code, "model.too_large");
    for (const char* s : {"KV cache for 1048576 tokens 512.00 GiB", "is available", path.c_str()})
        EXPECT_NE(model.error().message.find(s), std::string::npos) << model.error().message;

    // A session asking for more than its model was loaded with is checked too.
    p.n_ctx = 16;
    auto small = Model::load(path, p);
    ASSERT_TRUE(small.ok()) << small.error().message;
    SessionParams sp;
    sp.n_ctx = 1 << 20;
    auto s = Session::create(**small, sp);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, "model.too_large");

    // ember-cli under an address-space limit: refused with the limit named, not "out of memory".
    auto args = generate_args(path);
    args.insert(args.end(), {"--ctx", "1048576"});
    const ChildResult r = run_child(args);
    EXPECT_EQ(misbehaviour(r), "") << r.err;
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("KV cache for 1048576 tokens 512.00 GiB"), std::string::npos) << r.err;
    if (kAddressSpaceLimit) {
        EXPECT_NE(r.err.find("RLIMIT_AS"), std::string::npos) << r.err;
    }
}

// Finite weights can still overflow: q and k rows near FLT_MAX make every attention score
// infinite and the logits NaN. Generating must fail with the cause, not print garbage.
void overflow_weights(TinyModel& m) {
    for (const char* name : {"blk.0.attn_q.weight", "blk.0.attn_k.weight"}) {
        TensorSpec& t = m.tensor(name);
        for (size_t i = 0; i < t.bytes.size() / 4; i++) set_f32(t, i, i % 2 ? 3e38f : -3e38f);
    }
}

TEST(Hostile, OverflowingWeightsGiveAnErrorNotNaNLogits) {
    TinyModel m = TinyModel::make(GgmlType::F32, 64, 64);
    overflow_weights(m);
    const std::string path = m.write("overflow.gguf");
    LoadParams p;
    p.backend = BackendKind::Cpu;
    auto model = Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().message;  // every weight is finite
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok());
    const std::vector<int32_t> ids = {1, 100};
    auto l = (*s)->eval(ids);
    ASSERT_FALSE(l.ok()) << "logits[0] = " << (*l)[0];
    EXPECT_EQ(l.error().code, "session.nonfinite_logits");
    EXPECT_NE(l.error().message.find("'blk.0.attn_q.weight' holds values up to 3e+38"),
              std::string::npos)
        << l.error().message;
    (*s)->reset();
    auto t = (*s)->eval_argmax(ids);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code, "session.nonfinite_logits");

    for (const char* cmd : {"generate", "logits"}) {
        SCOPED_TRACE(cmd);
        auto args = generate_args(path);
        args[1] = cmd;
        if (std::string(cmd) == "logits") args.resize(6);  // no -n, --temp
        const ChildResult r = run_child(args);
        EXPECT_EQ(misbehaviour(r), "") << r.err;
        EXPECT_EQ(r.exit_code, 1) << r.out;
        EXPECT_NE(r.err.find("non-finite logits"), std::string::npos) << r.err;
        EXPECT_EQ(r.out.find("null"), std::string::npos) << r.out;
    }
}

// rope_freqs of 0 divide a position by 0. Refused at load or at the first evaluation, either
// way naming rope_freqs.
TEST(Hostile, ZeroRopeFreqsAreReported) {
    TinyModel m = TinyModel::make(GgmlType::F32, 64, 64);
    const uint32_t half = 64 / m.heads / 2;
    m.tensors.push_back(
        {"rope_freqs.weight", GgmlType::F32, {half}, f32_bytes(std::vector<float>(half, 0.0f))});
    const std::string path = m.write("rope-freqs-0.gguf");
    const ChildResult r = run_child(generate_args(path));
    EXPECT_EQ(misbehaviour(r), "") << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("rope_freqs"), std::string::npos) << r.err;
}

// The same on the Vulkan backend, whose greedy path takes the argmax on the device.
TEST(Hostile, OverflowingWeightsOnVulkan) {
    auto devices = list_devices();
    bool have = false;
    if (devices.ok())
        for (const auto& d : *devices) have |= d.name.find("llvmpipe") != std::string::npos;
    if (!have) GTEST_SKIP() << "no lavapipe Vulkan device";
    TinyModel m = TinyModel::make(GgmlType::F32, 64, 64);
    overflow_weights(m);
    LoadParams p;
    p.backend = BackendKind::Vulkan;
    p.device = "llvmpipe";
    auto model = Model::load(m.write("overflow-vk.gguf"), p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok());
    const std::vector<int32_t> ids = {1, 100};
    auto t = (*s)->eval_argmax(ids);
    ASSERT_FALSE(t.ok()) << "argmax " << *t;
    EXPECT_EQ(t.error().code, "session.nonfinite_logits");
    EXPECT_NE(t.error().message.find("'blk.0.attn_q.weight'"), std::string::npos)
        << t.error().message;
    (*s)->reset();
    auto l = (*s)->eval(ids);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.error().code, "session.nonfinite_logits");
}

}  // namespace
}  // namespace ember::test

// The prompt matmul on int8 dot products (matmul_idot.comp, Plan::matmul_idot): the path of
// GPUs without cooperative matrices. lavapipe has VK_KHR_shader_integer_dot_product (emulated,
// which is enough for correctness). Each quantized type against the CPU, in tiles whole and
// partial, with guard regions; then a Q4_K_M file's prompt through the public API.
//
// Tolerances: the activations are rounded to 8 bits per 32 values (absmax-scaled), as the
// CPU's quantized dot products do: for inputs uniform in [-1, 1] that is about 1.5e-5 NMSE
// against the exact product, and as much against the CPU (whose rounding is its own); 1e-4
// holds either with room, while one misread block (a scale, a nibble's offset, a high bit)
// costs 1e-3 and more.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cpu/matmul.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "host_weight.h"
#include "model/llama.h"
#include "quant/quant.h"
#include "small_models.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/forward.h"
#include "vulkan/weights.h"

namespace fs = std::filesystem;

namespace ember::vulkan::test {
namespace {

constexpr double kNmseBar = 1e-4;

// The plan of the test device with the int8 path on, or why it cannot be.
std::string no_idot_reason(const Adapter& a) {
    if (!a.integer_dot) return "the device has no shaderIntegerDotProduct";
    if (a.coopmat_nv) return "the device has cooperative matrices (the plan prefers those)";
    if (!make_plan(a).matmul_idot) return "the device's shared memory is too small";
    return "";
}

struct IdotCase {
    GgmlType type;
    int64_t rows, cols;  // rows not a multiple of the 64-row tile; cols of odd stage counts
    int n_tokens;        // one partial 32-token tile, or whole and partial
};

void PrintTo(const IdotCase& c, std::ostream* os) {
    *os << type_traits(c.type)->name << "_" << c.rows << "x" << c.cols << "_t" << c.n_tokens;
}

class MatmulIdot : public VulkanTest, public ::testing::WithParamInterface<IdotCase> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        const std::string why = no_idot_reason(shared_context().adapter());
        if (!why.empty()) GTEST_SKIP() << why;
    }
};

// W x through op_matmul at offsets into X and Y, against the exact product of the dequantized
// weights and against the CPU's matmul; Y's words before the offset and after the end untouched.
TEST_P(MatmulIdot, MatchesCpu) {
    const IdotCase& c = GetParam();
    Context& ctx = shared_context();
    const Plan plan = make_plan(ctx.adapter());
    ASSERT_TRUE(matmul_on_int_dot(plan, c.type, c.n_tokens));
    const char* name = type_traits(c.type)->name.data();

    auto w = make_weight(c.type, c.rows, c.cols, 300 + uint64_t(c.type) + uint64_t(c.rows));
    Tensor t = w.tensor("w");
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor* dt = (*store)->find(t);
    ASSERT_NE(dt, nullptr);

    // Token 0 all zeros (a zero scale), token 1 a hundred times larger than the rest.
    const size_t n = size_t(c.n_tokens), cols = size_t(c.cols), rows = size_t(c.rows);
    auto x = random_floats(cols * n, 77 + n, -1, 1);
    std::fill(x.begin(), x.begin() + cols, 0.0f);
    for (size_t i = cols; i < 2 * cols; ++i) x[i] *= 100.0f;
    const uint32_t x_off = 7, y_off = 11;
    HostBuffer bx(ctx, x_off + x.size()), by(ctx, y_off + rows * n);
    std::copy(x.begin(), x.end(), bx.f32() + x_off);

    std::vector<float> exact(rows * n);
    for (size_t tk = 0; tk < n; ++tk)
        for (size_t r = 0; r < rows; ++r) {
            double s = 0;
            for (size_t k = 0; k < cols; ++k) s += double(w.f[r * cols + k]) * x[tk * cols + k];
            exact[tk * rows + r] = float(s);
        }
    cpu::ThreadPool pool(1);
    cpu::MatmulScratch scratch;
    std::vector<float> ref(exact.size());
    cpu::matmul(pool, {w.type, w.rows, w.cols, w.data.data(), w.row_stride}, x.data(), c.n_tokens,
                ref.data(), scratch);

    // The dispatch is the int8 kernel's.
    std::vector<PlannedDispatch> listed;
    Recorder listing(ctx.adapter(), plan, &listed);
    ASSERT_TRUE(op_matmul(listing, *dt, bx.range(), x_off, by.range(), y_off, c.n_tokens).ok());
    ASSERT_EQ(listed.size(), dt->pieces.size());
    EXPECT_EQ(listed[0].kernel, std::string("matmul_idot_") + weight_type_suffix(c.type) + "_f32");

    ASSERT_TRUE(run_ops(ctx, plan, [&](Recorder& r) {
                    return op_matmul(r, *dt, bx.range(), x_off, by.range(), y_off, c.n_tokens);
                }).ok());
    const float* y = by.f32() + y_off;
    EXPECT_LT(nmse(y, exact.data(), exact.size()), kNmseBar) << name << " vs exact";
    EXPECT_LT(nmse(y, ref.data(), ref.size()), kNmseBar) << name << " vs the CPU";
    // Each token on its own (the zero token exactly, the large one at its own scale).
    for (size_t tk = 0; tk < n; ++tk) {
        const float* want = exact.data() + tk * rows;
        if (tk == 0) {
            EXPECT_TRUE(std::all_of(y, y + rows, [](float v) { return v == 0.0f; })) << name;
            continue;
        }
        EXPECT_LT(nmse(y + tk * rows, want, rows), 10 * kNmseBar) << name << " token " << tk;
    }
    for (uint32_t i = 0; i < y_off; ++i) EXPECT_EQ(by.words()[i], kSentinel) << name << " " << i;
    EXPECT_TRUE(by.guard_intact()) << name;
    EXPECT_TRUE(bx.guard_intact()) << name;
}

// Rows of 100 (a whole and a partial 64-row tile) or 37; columns in stages of 4 chunks, whole
// and partial, Q4_0 / Q8_0 rows not a multiple of 256 (7, 9 and 13 blocks), 1 to 5 K-quant
// superblocks; 8 tokens (the plan's smallest batch here), 37 (a whole and a partial 32-token
// tile) and 64.
const IdotCase kCases[] = {
    {GgmlType::Q4_0, 100, 288, 37}, {GgmlType::Q4_0, 37, 416, 8},   {GgmlType::Q8_0, 100, 224, 37},
    {GgmlType::Q8_0, 64, 288, 64},  {GgmlType::Q4_1, 100, 160, 37}, {GgmlType::Q5_0, 100, 288, 37},
    {GgmlType::Q5_1, 37, 96, 37},   {GgmlType::Q4_K, 100, 512, 37}, {GgmlType::Q4_K, 64, 256, 64},
    {GgmlType::Q5_K, 100, 256, 37}, {GgmlType::Q6_K, 100, 768, 37}, {GgmlType::Q6_K, 37, 1280, 8},
};

INSTANTIATE_TEST_SUITE_P(Types, MatmulIdot, ::testing::ValuesIn(kCases), [](const auto& info) {
    const IdotCase& c = info.param;
    return std::string(weight_type_suffix(c.type)) + "_" + std::to_string(c.rows) + "x" +
           std::to_string(c.cols) + "_t" + std::to_string(c.n_tokens);
});

// The plan takes the int8 path only for the quantized types from its smallest batch, and only
// where the adapter has the dot products and no tensor cores.
TEST(MatmulIdotPlan, PicksTheIntegerPathWhereItApplies) {
    EMBER_VK_REQUIRE_DEVICE();
    Adapter a = shared_context().adapter();
    a.integer_dot = true;
    a.coopmat_nv = false;
    a.props.limits.maxComputeSharedMemorySize = 32768;
    Plan p = make_plan(a);
    ASSERT_TRUE(p.matmul_idot);
    EXPECT_TRUE(matmul_on_int_dot(p, GgmlType::Q4_K, int(p.idot_min_tokens)));
    EXPECT_FALSE(matmul_on_int_dot(p, GgmlType::Q4_K, int(p.idot_min_tokens) - 1));
    EXPECT_FALSE(matmul_on_int_dot(p, GgmlType::F16, 64));
    EXPECT_FALSE(matmul_on_int_dot(p, GgmlType::F32, 64));
    a.coopmat_nv = true;
    EXPECT_FALSE(make_plan(a).matmul_idot);
    a.coopmat_nv = false;
    a.integer_dot = false;
    EXPECT_FALSE(make_plan(a).matmul_idot);
    a.integer_dot = true;
    a.props.limits.maxComputeSharedMemorySize = 16384;  // Vulkan's minimum: too small
    EXPECT_FALSE(make_plan(a).matmul_idot);
}

// A Q4_K_M file of the Qwen 2 shape (Q4_K, Q6_K, and Q5_0 / Q8_0 for its 384-wide down rows):
// a 40-token prompt in one batch (every matmul on int8 dot products), then two decode steps
// over the cache it wrote, against the CPU on the same file (8-bit activations there too).
// The CPU and the device round activations each their own way: measured 1e-2 apart on
// lavapipe; 3e-2 as test_quant_families.cpp allows the fused decode against the same CPU.
TEST(MatmulIdotModel, Q4KMPromptMatchesCpu) {
    EMBER_VK_REQUIRE_DEVICE();
    const std::string why = no_idot_reason(shared_context().adapter());
    if (!why.empty()) GTEST_SKIP() << why;
    if (!fs::exists(cli())) GTEST_SKIP() << "no ember-cli at " << cli();
    const fs::path dir = ember::test::temp_dir() / "matmul-idot-q4km";
    fs::create_directories(dir);
    const std::string path = (dir / "model.gguf").string();
    const auto made =
        make_small_model(path, "qwen2.5-7b", "q4_k_m", "11", {"--ffn", "384", "--layers", "2"});
    ASSERT_EQ(made.exit_code, 0) << made.err;

    // The prompt's plan: every matmul of layer 0 and the output on int8 dot products.
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto lm = load_model(**file);
    ASSERT_TRUE(lm.ok()) << lm.error().message;
    const Adapter& a = shared_context().adapter();
    const int n_prompt = 40;
    auto listed = planned_dispatches(*lm, a, make_plan(a), {n_prompt, Output::Logits, false}, 64);
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    int idot = 0;
    for (const PlannedDispatch& d : *listed) {
        if (d.kernel.rfind("matmul_idot_", 0) == 0) ++idot;
        EXPECT_FALSE(d.kernel.rfind("matmul_q", 0) == 0) << d.kernel << " in " << d.stage;
    }
    EXPECT_GE(idot, 7) << "q, k, v, o, gate, up, down";
    const std::string report = describe_plan(*lm, a, make_plan(a));
    EXPECT_NE(report.find("prompt matmuls: int8 dot products"), std::string::npos) << report;
    EXPECT_NE(report.find("int8 dot products, 64x32 tiles"), std::string::npos) << report;

    auto vk = load_on(path, BackendKind::Vulkan, 64);
    auto cpu = load_on(path, BackendKind::Cpu, 64);
    ASSERT_TRUE(vk && cpu);
    auto sv = Session::create(*vk), sc = Session::create(*cpu);
    ASSERT_TRUE(sv.ok() && sc.ok());
    std::vector<int32_t> prompt(n_prompt);
    for (int i = 0; i < n_prompt; ++i) prompt[size_t(i)] = int32_t((i * 131 + 7) % 512);
    const std::vector<std::vector<int32_t>> steps = {prompt, {5}, {310}};
    for (size_t i = 0; i < steps.size(); ++i) {
        auto lv = (*sv)->eval(steps[i]);
        ASSERT_TRUE(lv.ok()) << lv.error().message;
        const std::vector<float> v(lv->begin(), lv->end());
        auto lc = (*sc)->eval(steps[i]);
        ASSERT_TRUE(lc.ok()) << lc.error().message;
        const std::vector<float> want(lc->begin(), lc->end());
        ASSERT_EQ(v.size(), want.size());
        const double e = rel_l2(v, want);
        EXPECT_LE(e, 3e-2) << (i == 0 ? "the prompt" : "decode step ") << i;
        RecordProperty("rel_l2_" + std::to_string(i), std::to_string(e));
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace ember::vulkan::test

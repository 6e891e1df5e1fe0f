// The decode plan's choices for mat-vecs with few or short rows (ops_matvec.cpp) against the
// dequantized weights in double, with guard regions: groups of one row for a Store or an Add
// without column parts whose row pairs would not fill the GPU (Phi-3's QKV, the output
// projections of Phi-3 and Gemma 3), and one step of 3 blocks a lane for rows of the 2-block
// types that it covers (Phi-3's Q6_K head).
#include <cmath>
#include <string>

#include "host_weight.h"
#include "quant/quant.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/weights.h"

namespace ember::vulkan::test {
namespace {

struct Case {
    const char* what;
    GgmlType type;
    int64_t rows, cols;
    FusedMode mode;     // Store (normed) or Add (no norm, onto y0)
    uint32_t sm_count;  // > 0: the grid of that many SMs, where the one-row rule applies
};

void check(const Case& c) {
    SCOPED_TRACE(c.what);
    Context& ctx = shared_context();
    if (fused_matvec_f16_only(c.type) && !ctx.adapter().float16)
        GTEST_SKIP() << "no F16 arithmetic for " << type_traits(c.type)->name;
    const float eps = 1e-5f;
    const uint64_t stride = row_bytes(*type_traits(c.type), uint64_t(c.cols));
    std::vector<uint8_t> data(stride * uint64_t(c.rows));
    std::vector<float> wf(size_t(c.rows * c.cols));
    const auto v = random_floats(wf.size(), 91);
    for (int64_t r = 0; r < c.rows; ++r) {
        quantize_row(c.type, &v[r * c.cols], &data[r * stride], c.cols);
        dequantize_row(c.type, &data[r * stride], &wf[r * c.cols], c.cols);
    }
    Tensor t;
    t.name = "w";
    t.type = c.type;
    t.ne[0] = c.cols;
    t.ne[1] = c.rows;
    t.data = data.data();
    t.n_bytes = data.size();
    t.row_stride = stride;
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;

    const auto x = random_floats(size_t(c.cols), 92, -3, 3);
    const auto nw = random_floats(size_t(c.cols), 93, 0.5f, 1.5f);
    const auto y0 = random_floats(size_t(c.rows), 94, -1, 1);
    const bool norm = c.mode == FusedMode::Store;
    double ss = 0;
    for (float e : x) ss += double(e) * e;
    const double inv = norm ? 1.0 / std::sqrt(ss / double(c.cols) + eps) : 1.0;
    std::vector<float> want(size_t(c.rows));
    for (int64_t r = 0; r < c.rows; ++r) {
        double s = 0;
        for (int64_t k = 0; k < c.cols; ++k)
            s += double(wf[r * c.cols + k]) * x[k] * inv * (norm ? nw[k] : 1.0f);
        want[r] = float((norm ? 0.0 : y0[r]) + s);
    }

    Plan plan = make_plan(ctx.adapter());
    plan.sm_count = c.sm_count;
    HostBuffer bx(ctx, x.size()), bn(ctx, nw.size()), by(ctx, want.size());
    bx.fill(x.data(), x.size() * 4);
    bn.fill(nw.data(), nw.size() * 4);
    by.fill(y0.data(), y0.size() * 4);
    FusedMatvec f;
    f.mode = c.mode;
    f.w[0] = (*store)->find(t);
    f.x = bx.range();
    f.y = by.range();
    if (norm) f.norm = bn.range(), f.eps = eps;
    auto st = run_ops(ctx, plan, [&](Recorder& r) { return op_matvec_fused(r, f); });
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_LT(nmse(by.f32(), want.data(), want.size()), 2e-6);
    EXPECT_TRUE(by.guard_intact());
}

TEST(FusedMatvec, ShortRowsMatchExact) {
    EMBER_VK_REQUIRE_DEVICE();
    // 150 pairs of rows for 4 SMs' 16 workgroups: one row a group (normed Store; Add of rows too
    // short for column parts, each with an odd row count), then the pairs of the default grid.
    check({"store, one row a group", GgmlType::Q4_K, 301, 2560, FusedMode::Store, 4});
    check({"add, one row a group", GgmlType::Q8_0, 299, 256, FusedMode::Add, 4});
    check({"store, pairs", GgmlType::Q4_K, 301, 2560, FusedMode::Store, 0});
    // Rows of 24 blocks: one step of 3 a lane in subgroups of 8 (2 steps of 2 before), and of
    // 96 blocks in subgroups of 32 (the head of Phi-3).
    check({"Q6_K, one step", GgmlType::Q6_K, 300, 768, FusedMode::Store, 0});
    check({"Q6_K, 96 blocks", GgmlType::Q6_K, 300, 3072, FusedMode::Store, 0});
}

// A down projection wider than the x staging fits (Qwen2.5-32B's 27,648 columns, Gemma-2-27B's
// 36,864, past about 22,500 on NVIDIA's 48 KB of shared memory): column parts, each staging its
// share of x, keep it in matvec_fused_h.comp (and gate/up apart, SiLU(gate) * up read by down),
// where it took the generic decode before; against the dequantized weights in double, with
// guard regions.
TEST(FusedMatvec, WideDownTakesColumnParts) {
    EMBER_VK_REQUIRE_DEVICE();
    Context& ctx = shared_context();
    const Adapter& a = ctx.adapter();
    if (!a.float16 || !a.atomic_float_add) GTEST_SKIP() << "no F16 arithmetic or float atomics";
    // 16 blocks more than x's F16 staging (68 bytes a block with its sums) fits, in superblocks.
    const int64_t blocks = (a.props.limits.maxComputeSharedMemorySize / 68 + 16 + 7) / 8 * 8;
    const int64_t rows = 40, cols = 32 * blocks, n_ff = cols, n_embd = 256;
    const GgmlType type = GgmlType::Q4_K;
    const Weight wd = make_weight(type, rows, cols, 101), wg = make_weight(type, n_ff, n_embd, 102),
                 wu = make_weight(type, n_ff, n_embd, 103);
    const std::vector<float>& wf = wd.f;
    Tensor td = wd.tensor("down"), tg = wg.tensor("gate"), tu = wu.tensor("up");
    auto store = WeightStore::upload(ctx, {&td, &tg, &tu}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor &down = *(*store)->find(td), &gate = *(*store)->find(tg),
                       &up = *(*store)->find(tu);
    Plan plan = make_plan(a);
    EXPECT_FALSE(fused_matvec_supports(a, plan, {&down}));  // x whole does not fit
    EXPECT_TRUE(fused_matvec_add_supported(a, plan, down));

    // down: y = y0 + W (SiLU(g) * u), x = [g; u].
    const auto xgu = random_floats(size_t(2 * cols), 104, -3, 3);
    const auto y0 = random_floats(size_t(rows), 105, -1, 1);
    std::vector<float> want(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        double sum = y0[r];
        for (int64_t c = 0; c < cols; ++c) {
            const double g = xgu[c];
            sum += double(wf[r * cols + c]) * float(g / (1 + std::exp(-g)) * xgu[cols + c]);
        }
        want[r] = float(sum);
    }
    HostBuffer bx(ctx, xgu.size()), by(ctx, want.size());
    bx.fill(xgu.data(), xgu.size() * 4);
    by.fill(y0.data(), y0.size() * 4);
    FusedMatvec f;
    f.mode = FusedMode::Add;
    f.silu_in = true;
    f.w[0] = &down;
    f.x = bx.range();
    f.y = by.range();
    bool apart = false;
    auto st = run_ops(ctx, plan, [&](Recorder& r) {
        apart = fused_gate_up_apart(r, gate, up, down);
        return op_matvec_fused(r, f);
    });
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_TRUE(apart);
    EXPECT_LT(nmse(by.f32(), want.data(), want.size()), 2e-6);
    EXPECT_TRUE(by.guard_intact());
}

}  // namespace
}  // namespace ember::vulkan::test

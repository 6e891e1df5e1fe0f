// Mat-vec, mat-mat and embedding lookup for every weight type, against the CPU.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/matmul.h"
#include "host_weight.h"
#include "model/llama.h"
#include "quant/quant.h"
#include "vk_test_util.h"
#include "vulkan/weights.h"

namespace ember::vulkan::test {
namespace {

// The CPU's view of a host weight, for its reference ops.
cpu::WeightView view(const Weight& w) {
    return {w.type, w.rows, w.cols, w.data.data(), w.row_stride};
}

struct TypeCase {
    GgmlType type;
    int64_t cols;        // a multiple of the block size; for float types not of 32
    double nmse_vs_cpu;  // the CPU may quantize activations to 8 bits for quantized types
};

const TypeCase kTypes[] = {
    {GgmlType::F32, 100, 1e-10}, {GgmlType::F16, 72, 1e-10},  {GgmlType::BF16, 40, 1e-10},
    {GgmlType::Q8_0, 96, 1e-4},  {GgmlType::Q4_0, 64, 1e-4},  {GgmlType::Q4_1, 64, 1e-4},
    {GgmlType::Q5_0, 128, 1e-4}, {GgmlType::Q5_1, 64, 1e-4},  {GgmlType::Q4_K, 256, 1e-4},
    {GgmlType::Q5_K, 512, 1e-4}, {GgmlType::Q6_K, 256, 1e-4},
};

class Matmul : public VulkanTest, public ::testing::WithParamInterface<TypeCase> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

// Uploads w to ctx (through the staging path) and checks W x for n_tokens tokens.
void check_matmul(Context& ctx, const Weight& w, int n_tokens, double tol_cpu,
                  size_t min_pieces = 1) {
    Tensor t = w.tensor("w");
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor* dt = (*store)->find(t);
    ASSERT_NE(dt, nullptr);
    EXPECT_GE(dt->pieces.size(), min_pieces);

    auto x = random_floats(size_t(w.cols) * n_tokens, 99 + n_tokens, -1, 1);
    HostBuffer bx(ctx, x.size()), bxh(ctx, (x.size() + 1) / 2);
    bx.fill(x.data(), x.size() * 4);

    // Exact reference: the dequantized weights in double.
    const auto& wf = w.f;
    std::vector<float> exact(size_t(w.rows) * n_tokens);
    for (int t2 = 0; t2 < n_tokens; ++t2)
        for (int64_t r = 0; r < w.rows; ++r) {
            double s = 0;
            for (int64_t c = 0; c < w.cols; ++c)
                s += double(wf[r * w.cols + c]) * x[size_t(t2) * w.cols + c];
            exact[size_t(t2) * w.rows + r] = float(s);
        }
    cpu::ThreadPool pool(1);
    cpu::MatmulScratch scratch;
    std::vector<float> ref(exact.size());
    cpu::matmul(pool, view(w), x.data(), n_tokens, ref.data(), scratch);

    const char* name = type_traits(w.type)->name.data();
    // Batches on the tensor cores stage weights and activations as F16.
    const bool coopmat = n_tokens > 1 && matmul_on_tensor_cores(ctx.adapter(), w.type);
    // Other types go there through an F16 copy of their rows, given scratch for it.
    const bool via_f16 =
        n_tokens > 1 && dequant_scratch_bytes(ctx.adapter(), w.type, w.rows, w.cols) > 0;
    // Scratch for 16 rows: 37 rows take three rounds.
    HostBuffer bwh(ctx, size_t(w.cols) * 8);
    // Pass 1: from an F16 copy of x, where the matmul reads one (the tensor cores' 128-column
    // stages). Pass 2: with the weight scratch.
    // matmul.comp, where the plan would take int8 dot products (test_matmul_idot.cpp's).
    Plan plan = make_plan(ctx.adapter());
    plan.matmul_idot = false;
    // F32 rows take three F16 products there (weights and activations each split in a rounded
    // part and what the rounding dropped): near F32, where one product is ~4e-8 off.
    const double tol_via_f16 = w.type == GgmlType::F32 ? 3e-9 : 1e-6;
    for (int pass = 0; pass < 3; ++pass) {
        const double tol_exact = coopmat ? 1e-6 : pass == 2 && via_f16 ? tol_via_f16 : 1e-10;
        const double tol_ref = std::max(tol_cpu, tol_exact);
        HostBuffer by(ctx, size_t(w.rows) * n_tokens);
        bool half = false;
        ASSERT_TRUE(run_ops(ctx, plan, [&](Recorder& r) -> Status {
                        if (pass == 0)
                            return op_matmul(r, *dt, bx.range(), 0, by.range(), 0, n_tokens);
                        if (pass == 2)
                            return op_matmul(r, *dt, bx.range(), 0, by.range(), 0, n_tokens, {},
                                             bwh.range());
                        half = matmul_reads_f16(r, *dt, n_tokens);
                        if (!half) return {};
                        EMBER_TRY(op_convert_f16(r, bx.range(), bxh.range(), x.size()));
                        r.barrier();
                        return op_matmul(r, *dt, bx.range(), 0, by.range(), 0, n_tokens,
                                         bxh.range());
                    }).ok());
        if (pass == 1 && !half) continue;
        EXPECT_LT(nmse(by.f32(), exact.data(), exact.size()), tol_exact)
            << name << " tokens " << n_tokens << " pass " << pass;
        EXPECT_LT(nmse(by.f32(), ref.data(), ref.size()), tol_ref)
            << name << " tokens " << n_tokens << " pass " << pass;
        EXPECT_TRUE(by.guard_intact()) << name << " pass " << pass;
        EXPECT_TRUE(bxh.guard_intact()) << name;
        EXPECT_TRUE(bwh.guard_intact()) << name;
    }
}

TEST_P(Matmul, MatvecAndMatmulMatchCpu) {
    const TypeCase& tc = GetParam();
    Context& ctx = shared_context();
    auto w = make_weight(tc.type, 37, tc.cols, 7 + uint64_t(tc.type));
    for (int n_tokens : {1, 3, 9}) check_matmul(ctx, w, n_tokens, tc.nmse_vs_cpu);
}

// The F16 copy of a range of rows that prompts of types the tensor cores do not read go
// through (op_matmul), against the host's dequantization rounded to F16.
TEST_P(Matmul, DequantizesRowsToF16) {
    const TypeCase& tc = GetParam();
    if (tc.cols % 2 != 0) GTEST_SKIP() << "F16 pairs need an even number of columns";
    Context& ctx = shared_context();
    auto w = make_weight(tc.type, 21, tc.cols, 11 + uint64_t(tc.type));
    Tensor t = w.tensor("w");
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor* dt = (*store)->find(t);
    ASSERT_NE(dt, nullptr);
    const int64_t row0 = 5, nrows = 13;
    HostBuffer out(ctx, size_t(nrows * w.cols) / 2);
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                    return op_dequant_f16(r, *dt, 0, row0, nrows, out.range());
                }).ok());
    const auto& wf = w.f;
    const uint16_t* h = out.f16();
    size_t bad = 0;
    for (int64_t i = 0; i < nrows * w.cols; ++i) {
        const float want = wf[size_t(row0 * w.cols + i)];
        const float got = fp16_to_fp32(h[i]);
        if (std::fabs(got - want) > 1e-3f * std::fabs(want) + 1e-7f) ++bad;
    }
    EXPECT_EQ(bad, 0u) << type_traits(w.type)->name;
    EXPECT_TRUE(out.guard_intact());
    // A range past the piece is refused.
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& r) {
                     return op_dequant_f16(r, *dt, 0, 10, 12, out.range());
                 }).ok());
}

// Batches big enough for whole 64 x 64 tiles (the tensor cores store those directly) and
// partial ones, with rows of an odd number of quant blocks (the last 64- or 128-column stage
// partly empty), and F16 rows of 70 columns (activations not in 16-byte pieces). From 1,024
// rows Q4_0 and Q8_0 take 128-row tiles, and from 4 MiB the token order (ops.cpp). The last
// two Q4_0/Q8_0 cases have enough 128 x 128 tiles to fill a GPU of up to 132 SMs, which then
// takes those (whole, then partial in rows, tokens and the last stage), as do the other types'
// cases of 4,096 and 4,100 rows.
TEST(MatmulTiles, WholeAndPartialTilesMatch) {
    EMBER_VK_REQUIRE_DEVICE();
    Context& ctx = shared_context();
    struct Case {
        GgmlType type;
        int64_t rows, cols;
        int n_tokens;
    };
    for (Case c : {Case{GgmlType::Q4_0, 128, 288, 64}, Case{GgmlType::Q8_0, 100, 288, 70},
                   Case{GgmlType::Q4_0, 64, 4096, 128}, Case{GgmlType::Q8_0, 256, 128, 128},
                   Case{GgmlType::F16, 64, 70, 64}, Case{GgmlType::F16, 70, 70, 5},
                   Case{GgmlType::Q4_0, 1024, 288, 64}, Case{GgmlType::Q8_0, 1100, 544, 70},
                   Case{GgmlType::Q8_0, 1024, 4096, 64}, Case{GgmlType::Q4_0, 2048, 4096, 16},
                   Case{GgmlType::Q4_0, 4096, 256, 512}, Case{GgmlType::Q8_0, 4100, 288, 500},
                   // The other quantized types (staged from their nibbles): 64 x 64, 128 x 64
                   // and 128 x 128 tiles, whole and partial, rows of 9 blocks (Q4_1, Q5_x)
                   // and of 1 to 16 K-quant superblocks.
                   Case{GgmlType::Q4_K, 128, 256, 64}, Case{GgmlType::Q5_K, 100, 768, 70},
                   Case{GgmlType::Q6_K, 1024, 512, 64}, Case{GgmlType::Q4_K, 1100, 4096, 70},
                   Case{GgmlType::Q5_0, 1024, 288, 64}, Case{GgmlType::Q4_1, 4100, 288, 500},
                   Case{GgmlType::Q5_1, 64, 288, 20}, Case{GgmlType::Q6_K, 4096, 256, 512},
                   Case{GgmlType::Q5_K, 4100, 256, 500}}) {
        // (Elsewhere Types/Matmul covers the other types' batches; these sizes are slow there.)
        const bool other =
            c.type != GgmlType::Q4_0 && c.type != GgmlType::Q8_0 && c.type != GgmlType::F16;
        if (other && !matmul_on_tensor_cores(ctx.adapter(), c.type)) continue;
        auto w = make_weight(c.type, c.rows, c.cols, 80 + uint64_t(c.rows));
        check_matmul(ctx, w, c.n_tokens, 1e-4);
    }
}

TEST_P(Matmul, GetRowsMatchesCpu) {
    const TypeCase& tc = GetParam();
    Context& ctx = shared_context();
    auto w = make_weight(tc.type, 50, tc.cols, 17 + uint64_t(tc.type));
    Tensor t = w.tensor("w");
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const std::vector<uint32_t> tokens = {0, 49, 7, 7, 23};
    HostBuffer step(ctx, 2 + tokens.size()), out(ctx, tokens.size() * size_t(w.cols));
    step.words()[0] = 0;
    step.words()[1] = uint32_t(tokens.size());
    std::copy(tokens.begin(), tokens.end(), step.words() + 2);
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                    return op_get_rows(r, *(*store)->find(t), step.range(), out.range(),
                                       int(tokens.size()));
                }).ok());
    std::vector<float> want(tokens.size() * size_t(w.cols));
    for (size_t i = 0; i < tokens.size(); ++i)
        cpu::get_row(view(w), tokens[i], &want[i * size_t(w.cols)]);
    EXPECT_LT(nmse(out.f32(), want.data(), want.size()), 1e-14);
    EXPECT_TRUE(out.guard_intact());
}

std::string type_case_name(const ::testing::TestParamInfo<TypeCase>& info) {
    return std::string(type_traits(info.param.type)->name);
}

INSTANTIATE_TEST_SUITE_P(Types, Matmul, ::testing::ValuesIn(kTypes), type_case_name);

// F32 rows of a multiple of 8 columns, which the tensor cores take through F16 copies (kTypes'
// 100 columns do not): within 3e-9 NMSE of the exact product there too.
TEST(MatmulF32, TensorCoresKeepF32Precision) {
    EMBER_VK_REQUIRE_DEVICE();
    auto w = make_weight(GgmlType::F32, 37, 256, 8);
    for (int n_tokens : {9, 40}) check_matmul(shared_context(), w, n_tokens, 1e-10);
}

// A device that binds only 4 KiB per descriptor: tensors are split into row pieces.
TEST(MatmulPieces, SplitTensorsMatch) {
    EMBER_VK_REQUIRE_DEVICE();
    ContextOptions o;
    o.device = test_device();
    o.disk_pipeline_cache = false;
    o.max_range_override = 4096;
    auto ctx = Context::create(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message;
    uint64_t before = validation_error_count();
    auto w = make_weight(GgmlType::Q4_K, 100, 512, 5);  // 288 bytes a row: 14 rows a piece
    check_matmul(**ctx, w, 1, 1e-4, 7);
    check_matmul(**ctx, w, 10, 1e-4, 7);
    auto wf = make_weight(GgmlType::F32, 40, 100, 6);  // 400 bytes a row
    check_matmul(**ctx, wf, 2, 1e-10, 4);
    EXPECT_EQ(validation_error_count(), before);
}

// The fused decode mat-vecs on a tall matrix (more row groups than the 64 workgroups, so that
// each loops over several, the last group partial), with the norm folded in (Store, Silu, GateUp)
// and without (Add, also with SiLU(gate) * up as its input), against the dequantized weights in
// double: matvec_fused.comp (F32 arithmetic, near exact) and, where the device has F16
// arithmetic, matvec_fused_h.comp with 4, 8 and 16 rows a group, and with 3 workgroups that
// loop over all the groups (F16 dot products over x scaled below 1; x of magnitude 3000 checks
// that scaling).
//
// Every variant is a pipeline of its own (the shape is in its specialization constants), and
// compiling them is most of this test's time on a real GPU. So every type runs every mode on
// each kernel's main settings (the F32 kernel, the staged one with 8 rows a group, subgroups
// of 2 rows and 4 blocks a lane), and the other settings, whose code does not depend on the
// type, run on one type of each reader kind: Q4_0 (32-column blocks), Q4_K (256-column
// super-blocks with min terms) and Q6_K (without; its sums start negative).
// The plan's mat-vec fields (vulkan/plan.h) that reach each variant.
struct MatvecKernel {
    const char* h;     // "0": FusedKernel::Plain, "1": FusedKernel::Staged
    const char* rows;  // matvec_rows
    const char* wgs;   // matvec_grid: workgroups, each looping over row groups
    double tol;
    const char* warp = "0";  // matvec_max_unroll: most blocks per lane a step, 0 = off
    const char* wg = "256";  // matvec_threads (subgroup mode)
    // matvec_ksplit: column parts of a group in Add mode, added atomically where the device has
    // float atomics (0 = ops_matvec.cpp's rule; at most one part per 2 blocks a lane, so 32-wide
    // subgroups take 160 blocks in at most 2 parts).
    const char* ksplit = "0";
    // Every type, or only Q4_0, Q4_K and Q6_K (see below); every shape, or only the rows x
    // columns that the setting is about (many row groups, or many blocks a row).
    bool every_type = false;
    int64_t only_cols = 0;

    std::string describe() const {
        return std::string(" staged ") + h + " rows " + rows + " workgroups " + wgs + " warp " +
               warp + " wg " + wg + " ksplit " + ksplit;
    }
    // Whether this setting runs a matrix of the type and width in the mode.
    bool takes(GgmlType type, int64_t cols, FusedMode mode, bool silu_in) const {
        if (fused_matvec_f16_only(type) && std::string(h) == "0") return false;
        if (!every_type && type != GgmlType::Q4_0 && type != GgmlType::Q4_K &&
            type != GgmlType::Q6_K)
            return false;
        if (only_cols && only_cols != cols) return false;
        // Column parts are an Add's alone.
        if (std::string(ksplit) != "0" && mode != FusedMode::Add) return false;
        // Gate and up apart, and SiLU on the input, run only in the subgroup mode.
        return !((mode == FusedMode::GateUp || silu_in) && std::string(warp) == "0");
    }
    Plan plan(const Adapter& a) const {
        Plan p = make_plan(a);
        p.fused_kernel = std::string(h) == "1" ? FusedKernel::Staged : FusedKernel::Plain;
        p.matvec_rows = uint32_t(std::atoi(rows));
        p.matvec_grid = uint32_t(std::atoi(wgs));
        p.matvec_max_unroll = uint32_t(std::atoi(warp));
        p.matvec_threads = uint32_t(std::atoi(wg));
        p.matvec_ksplit = uint32_t(std::atoi(ksplit));
        return p;
    }
};

// (64 workgroups and 1,196 rows: as many rounds of row groups as 512 and 9,004 rows, the same
// partial last group, and an eighth of the workgroups, each of which stages and normalizes x: on
// lavapipe on a loaded 2-core machine one dispatch of 512 took 9 s.)
std::vector<MatvecKernel> matvec_kernels(const Adapter& a) {
    std::vector<MatvecKernel> k = {{"0", "8", "64", 1e-10, "0", "256", "0", true}};
    if (!a.float16) return k;
    k.push_back({"1", "8", "64", 2e-6, "0", "256", "0", true});
    for (const char* r : {"4", "16"})
        k.push_back({"1", r, "64", 2e-6, "0", "256", "0", false, 256});
    k.push_back({"1", "8", "3", 2e-6, "0", "256", "0", false, 256});
    // Subgroups owning their rows: at most 1-4 blocks per lane a step, 2-8 rows, 3 workgroups of
    // 64 threads looping over every group.
    k.push_back({"1", "2", "64", 2e-6, "4", "256", "0", true});
    k.push_back({"1", "4", "64", 2e-6, "1", "256", "0", false, 5120});
    k.push_back({"1", "8", "64", 2e-6, "2", "128"});
    k.push_back({"1", "2", "3", 2e-6, "3", "64", "0", false, 256});
    // Workgroups of a size that is no power of two (7B's gate/up on NVIDIA: 448 threads).
    k.push_back({"1", "2", "5", 2e-6, "4", "448"});
    // Uneven column parts where subgroups are narrow (5120 columns: 54, 54 and 52 blocks; 5
    // parts of 32), one step or several.
    k.push_back({"1", "2", "64", 2e-6, "2", "256", "3", false, 5120});
    k.push_back({"1", "2", "7", 2e-6, "1", "64", "5", false, 5120});
    return k;
}

// One tall matrix pair (wa, wb: gate and up where there are two) and its inputs, in double.
struct MatvecCase {
    const Weight &wa, &wb;
    std::vector<float> nw, y0, x, xgu, xsilu;  // xgu: [gate; up]; xsilu = SiLU(gate) * up
    double inv = 0;                            // 1 / rms(x)

    MatvecCase(const Weight& a, const Weight& b, float x_scale, float eps) : wa(a), wb(b) {
        const int64_t cols = a.cols;
        nw = random_floats(size_t(cols), 64, 0.5f, 1.5f);
        y0 = random_floats(size_t(a.rows), 65, -1, 1);
        x = random_floats(size_t(cols), 63, -x_scale, x_scale);
        xgu = random_floats(size_t(2 * cols), 66, -x_scale / 100, x_scale / 100);
        xsilu.resize(size_t(cols));
        for (int64_t c = 0; c < cols; ++c) {
            const double g = xgu[c];
            xsilu[c] = float(g / (1 + std::exp(-g)) * xgu[cols + c]);
        }
        double ss = 0;
        for (float v : x) ss += double(v) * v;
        inv = 1.0 / std::sqrt(ss / double(cols) + eps);
    }
    double dot(const Weight& w, int64_t r, bool norm, const std::vector<float>& xv) const {
        double s = 0;
        for (int64_t c = 0; c < w.cols; ++c)
            s += double(w.f[r * w.cols + c]) * xv[c] * (norm ? inv * nw[c] : 1.0);
        return s;
    }
    // The mode's output (Add: onto y0; silu_in: reading xsilu).
    std::vector<float> want(FusedMode mode, bool silu_in) const {
        const int64_t rows = wa.rows;
        std::vector<float> w(size_t(mode == FusedMode::GateUp ? 2 * rows : rows));
        for (int64_t r = 0; r < rows; ++r) {
            if (mode == FusedMode::Store) w[r] = float(dot(wa, r, true, x));
            if (mode == FusedMode::Add)
                w[r] = float(y0[r] + dot(wa, r, false, silu_in ? xsilu : x));
            if (mode == FusedMode::Silu) {
                double g = dot(wa, r, true, x);
                w[r] = float(g / (1 + std::exp(-g)) * dot(wb, r, true, x));
            }
            if (mode == FusedMode::GateUp) {
                w[r] = float(dot(wa, r, true, x));
                w[rows + r] = float(dot(wb, r, true, x));
            }
        }
        return w;
    }
};

// The mode on the device with the setting's plan, against want.
void check_fused(Context& ctx, const MatvecKernel& k, const MatvecCase& c, const DeviceTensor* a,
                 const DeviceTensor* b, FusedMode mode, bool silu_in, float eps) {
    const std::vector<float> want = c.want(mode, silu_in);
    std::vector<float> y_init(want.size(), 0.5f);
    std::copy(c.y0.begin(), c.y0.end(), y_init.begin());
    const std::vector<float>& xin = silu_in ? c.xgu : c.x;
    HostBuffer bx(ctx, xin.size()), bn(ctx, c.nw.size()), by(ctx, want.size());
    bx.fill(xin.data(), xin.size() * 4);
    bn.fill(c.nw.data(), c.nw.size() * 4);
    by.fill(y_init.data(), y_init.size() * 4);
    FusedMatvec f;
    f.mode = mode;
    f.w[0] = a;
    f.w[1] = mode == FusedMode::Silu || mode == FusedMode::GateUp ? b : nullptr;
    f.x = bx.range();
    f.y = by.range();
    f.silu_in = silu_in;
    if (mode != FusedMode::Add) f.norm = bn.range(), f.eps = eps;
    auto st =
        run_ops(ctx, k.plan(ctx.adapter()), [&](Recorder& r) { return op_matvec_fused(r, f); });
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_LT(nmse(by.f32(), want.data(), want.size()), k.tol);
    EXPECT_TRUE(by.guard_intact());
}

// The fused decode mat-vecs on a tall matrix (more row groups than the 64 workgroups, so that
// each loops over several, the last group partial), with the norm folded in (Store, Silu, GateUp)
// and without (Add, also with SiLU(gate) * up as its input), against the dequantized weights in
// double: matvec_fused.comp (F32 arithmetic, near exact) and, where the device has F16
// arithmetic, matvec_fused_h.comp with 4, 8 and 16 rows a group, and with 3 workgroups that
// loop over all the groups (F16 dot products over x scaled below 1; x of magnitude 3000 checks
// that scaling).
//
// Every variant is a pipeline of its own (the shape is in its specialization constants), and
// compiling them is most of this test's time on a real GPU. So every type runs every mode on
// each kernel's main settings (the F32 kernel, the staged one with 8 rows a group, subgroups
// of 2 rows and 4 blocks a lane), and the other settings, whose code does not depend on the
// type, run on one type of each reader kind: Q4_0 (32-column blocks), Q4_K (256-column
// super-blocks with min terms) and Q6_K (without; its sums start negative).
TEST(FusedMatvec, ManyRowGroupsMatchExact) {
    EMBER_VK_REQUIRE_DEVICE();
    Context& ctx = shared_context();
    const float eps = 1e-5f;
    const std::vector<MatvecKernel> kernels = matvec_kernels(ctx.adapter());
    // Also 160 blocks a row: more blocks than threads (a thread takes several). Types other
    // than Q4_0 and Q8_0 run only in matvec_fused_h.comp's subgroup mode.
    for (auto [type, rows, cols] : {std::tuple{GgmlType::Q4_0, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q8_0, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q4_K, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q5_K, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q6_K, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q4_1, int64_t(1196), int64_t(256)},
                                    std::tuple{GgmlType::Q4_0, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q8_0, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q4_K, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q5_K, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q6_K, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q4_1, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q5_0, int64_t(300), int64_t(5120)},
                                    std::tuple{GgmlType::Q5_1, int64_t(300), int64_t(5120)}}) {
        if (fused_matvec_f16_only(type) && !ctx.adapter().float16) continue;
        auto wa = make_weight(type, rows, cols, 61), wb = make_weight(type, rows, cols, 62);
        Tensor ta = wa.tensor("w"), tb = wb.tensor("w2");
        auto store = WeightStore::upload(ctx, {&ta, &tb}, nullptr, nullptr);
        ASSERT_TRUE(store.ok()) << store.error().message;
        for (float x_scale : {1.0f, 3000.0f}) {
            const MatvecCase c(wa, wb, x_scale, eps);
            for (int m = 0; m < 6; ++m) {
                // (5: Add with silu_in)
                const FusedMode mode = m == 5 ? FusedMode::Add : FusedMode(m);
                const bool silu_in = m == 5;
                if (mode == FusedMode::Qkv) continue;  // (Forward.FusedDecodeMatchesUnfused)
                for (const MatvecKernel& k : kernels) {
                    if (!k.takes(type, cols, mode, silu_in)) continue;
                    SCOPED_TRACE(std::string(type_traits(type)->name) + " cols " +
                                 std::to_string(cols) + " mode " + std::to_string(m) + " x_scale " +
                                 std::to_string(x_scale) + k.describe());
                    check_fused(ctx, k, c, (*store)->find(ta), (*store)->find(tb), mode, silu_in,
                                eps);
                }
            }
        }
    }
}

}  // namespace
}  // namespace ember::vulkan::test

#include "vulkan/ops.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

namespace ember::vulkan {
namespace {

// Workgroup sizes (specialization constant 0 of every shader).
constexpr uint32_t kWgRow = 64;    // one workgroup per matrix row / token
constexpr uint32_t kWgElem = 256;  // elementwise
constexpr uint32_t kWgNorm = 256;
constexpr uint32_t kWgAttn = 64;  // also the attention tile; head_dim <= 8 * kWgAttn
constexpr uint32_t kWgArgmax = 256;
constexpr int kMatmulTile = 8;         // TILE_T in matmul.comp
constexpr uint32_t kMaxBindings = 24;  // matvec_fused_h.comp HEADS binds 22

// matmul_idot.comp's threads, which own BM rows by BN tokens.
constexpr uint32_t kIdotWg = 128;
constexpr int64_t kIdotRows = 64, kIdotTokens = 32;

constexpr uint32_t kCoopmatWg = 128;     // 4 subgroups of 32 (twice that for WIDE and BIG)
constexpr int64_t kCoopmatTile = 64;     // BN and BM in matmul_coopmat.comp without WIDE or BIG
constexpr int kCoopmatAttnQueries = 64;  // SG * BQ in attention_coopmat.comp

bool use_coopmat(const Recorder& rec, GgmlType t) {
    return matmul_on_tensor_cores(rec.adapter(), t);
}

}  // namespace

bool matmul_on_tensor_cores(const Adapter& a, GgmlType t) {
    if (!a.coopmat_nv) return false;
    if (t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::F16) return true;
    // The other quantized types are staged from their nibbles too (faster than an F16 copy of
    // the weights first).
    return t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1 ||
           t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

bool matmul_on_int_dot(const Plan& plan, GgmlType t, int n_tokens) {
    if (!plan.matmul_idot || n_tokens < int(plan.idot_min_tokens)) return false;
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::Q4_1 ||
           t == GgmlType::Q5_0 || t == GgmlType::Q5_1 || t == GgmlType::Q4_K ||
           t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

const char* weight_type_suffix(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return "f32";
        case GgmlType::F16:
            return "f16";
        case GgmlType::BF16:
            return "bf16";
        case GgmlType::Q8_0:
            return "q8_0";
        case GgmlType::Q4_0:
            return "q4_0";
        case GgmlType::Q4_1:
            return "q4_1";
        case GgmlType::Q5_0:
            return "q5_0";
        case GgmlType::Q5_1:
            return "q5_1";
        case GgmlType::Q4_K:
            return "q4_k";
        case GgmlType::Q5_K:
            return "q5_k";
        case GgmlType::Q6_K:
            return "q6_k";
        default:
            return nullptr;
    }
}

Status Recorder::dispatch(const std::string& shader, std::initializer_list<BufferRange> bindings,
                          const void* push, uint32_t push_bytes, uint32_t wg_size, uint32_t gx,
                          uint32_t gy, uint32_t gz, const SpecConstants& spec) {
    if (m_listing) {
        list(shader, wg_size, gx, gy, gz, false);
        return {};
    }
    EMBER_ASSIGN_OR_RETURN(
        const Kernel* k,
        m_ctx->pipelines().get(shader, uint32_t(bindings.size()), push_bytes, wg_size, spec));
    if (!m_cmd || gx == 0 || gy == 0 || gz == 0) return {};
    const auto& lim = m_ctx->device().limits();
    if (gx > lim.maxComputeWorkGroupCount[0] || gy > lim.maxComputeWorkGroupCount[1] ||
        gz > lim.maxComputeWorkGroupCount[2])
        return make_error("vulkan.dispatch_too_large",
                          shader + ": dispatch of " + std::to_string(gx) + "x" +
                              std::to_string(gy) + "x" + std::to_string(gz) +
                              " workgroups exceeds the device's limit");
    bind(*k, bindings, push, push_bytes);
    vkCmdDispatch(m_cmd, gx, gy, gz);
    if (m_prof) m_prof->mark(m_cmd, m_tag ? m_tag : shader);
    return {};
}

Status Recorder::dispatch_indirect(const std::string& shader,
                                   std::initializer_list<BufferRange> bindings, const void* push,
                                   uint32_t push_bytes, uint32_t wg_size, BufferRange grid,
                                   const SpecConstants& spec) {
    if (m_listing) {
        list(shader, wg_size, 0, 0, 0, true);
        return {};
    }
    EMBER_ASSIGN_OR_RETURN(
        const Kernel* k,
        m_ctx->pipelines().get(shader, uint32_t(bindings.size()), push_bytes, wg_size, spec));
    if (!m_cmd) return {};
    assert(grid.buffer != VK_NULL_HANDLE && grid.offset % 4 == 0 && grid.size >= 12);
    bind(*k, bindings, push, push_bytes);
    vkCmdDispatchIndirect(m_cmd, grid.buffer, grid.offset);
    if (m_prof) m_prof->mark(m_cmd, m_tag ? m_tag : shader);
    return {};
}

void Recorder::list(const std::string& shader, uint32_t wg_size, uint32_t gx, uint32_t gy,
                    uint32_t gz, bool indirect) {
    m_listing->push_back({m_tag ? m_tag : "", shader, wg_size, gx, gy, gz, indirect});
}

void Recorder::bind(const Kernel& k, std::initializer_list<BufferRange> bindings, const void* push,
                    uint32_t push_bytes) {
    if (k.pipeline.handle() != m_bound) {
        vkCmdBindPipeline(m_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline.handle());
        m_bound = k.pipeline.handle();
    }
    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    uint32_t n = 0;
    for (const BufferRange& b : bindings) {
        assert(n < kMaxBindings && b.buffer != VK_NULL_HANDLE);
        infos[n] = {b.buffer, b.offset, b.size};
        writes[n] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[n].dstBinding = n;
        writes[n].descriptorCount = 1;
        writes[n].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[n].pBufferInfo = &infos[n];
        ++n;
    }
    vkCmdPushDescriptorSetKHR(m_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout.handle(), 0, n,
                              writes);
    if (push_bytes)
        vkCmdPushConstants(m_cmd, k.layout.handle(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                           push);
}

Status Recorder::dispatch_linear(const std::string& shader,
                                 std::initializer_list<BufferRange> bindings, const void* push,
                                 uint32_t push_bytes, uint32_t wg_size, uint64_t n_groups,
                                 uint32_t gz, const SpecConstants& spec) {
    uint64_t gx = std::min<uint64_t>(n_groups, 65535);
    uint64_t gy = gx ? (n_groups + gx - 1) / gx : 0;
    return dispatch(shader, bindings, push, push_bytes, wg_size, uint32_t(gx), uint32_t(gy), gz,
                    spec);
}

void Recorder::barrier() {
    if (!m_cmd) return;
    memory_barrier(m_cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void Recorder::fill_zero(BufferRange r) {
    if (!m_cmd) return;
    vkCmdFillBuffer(m_cmd, r.buffer, r.offset, r.size, 0);
    transfer_to_compute();
}

void Recorder::transfer_to_compute() {
    if (!m_cmd) return;
    memory_barrier(m_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void Recorder::barrier_to_transfer() {
    if (!m_cmd) return;
    memory_barrier(m_cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
}

void Recorder::barrier_to_host() {
    if (!m_cmd) return;
    memory_barrier(m_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

namespace {

// The tensor-core matmul's tile order: big weight matrices (Plan::coopmat_token_order_bytes,
// 4 MiB: every 7B matrix, TinyLlama's gate, up and down, and its Q and output projection in
// Q8_0) run the token tiles of a row tile side by side, so that each weight tile is read from
// memory about once and serves its token tiles from L2; smaller ones, which stay in L2 anyway,
// run the row tiles side by side.
bool coopmat_tokens_fast(const Plan& plan, const DeviceTensor& w) {
    uint64_t bytes = 0;
    for (const auto& p : w.pieces) bytes += p.range.size;
    return bytes >= plan.coopmat_token_order_bytes;
}

// The tensor-core matmul's tile for one weight piece. F16 activations take 128-row tiles of 8
// subgroups (WIDE in the shader), whose loads serve twice the rows, from 1,024 rows (below that
// they would leave most SMs idle); and 128 x 128 tiles of 8 subgroups of 64 x 32 (BIG), one
// workgroup per SM for their registers, where there are enough of those to fill 72% of the SMs
// (Plan::coopmat_sms): on the H200 Phi-3.5's 3,072-row wo and down (96 tiles of 512 tokens)
// made its pp512 12.7% faster in big tiles than in 128 x 64 ones.
// matmul_coopmat.comp's specialization constants, in constant_id order (1-3).
struct CoopmatSpec {
    uint32_t tokens_fast;  // workgroups of a row tile's token tiles side by side
    uint32_t diag;         // 0 (timing diagnostics left the product)
    uint32_t xload;        // when a stage's data is loaded
};

struct CoopmatTile {
    int64_t rows = kCoopmatTile, tokens = kCoopmatTile;
    uint32_t threads = kCoopmatWg;
    const char* name = "";  // the shader variant's part of the pipeline name
};

CoopmatTile coopmat_tile(const Plan& plan, int64_t rows, int n_tokens, bool half) {
    if (!half || rows < 1024) return {};
    const int64_t big_tiles = (rows + 127) / 128 * ((n_tokens + 127) / 128);
    if (25 * big_tiles >= 18 * int64_t(plan.coopmat_sms)) return {128, 128, 256, "big_"};
    return {128, kCoopmatTile, 2 * kCoopmatWg, "wide_"};
}

}  // namespace

bool matmul_reads_f16(const Recorder& rec, const DeviceTensor& w, int n_tokens) {
    // F16 activations and 128-column stages, loaded when stored.
    return n_tokens > 1 && use_coopmat(rec, w.type) && w.cols % 8 == 0 && w.type != GgmlType::F16;
}

Status op_convert_f16(Recorder& rec, BufferRange src, BufferRange dst, uint64_t n) {
    if (n > UINT32_MAX)
        return make_error("vulkan.unsupported_shape", "F16 copy of over 2^32 values");
    struct {
        uint32_t n;
    } pc{uint32_t(n)};
    return rec.dispatch_linear("cvt_f32_f16", {src, dst}, &pc, push_size<decltype(pc)>(), kWgElem,
                               (n + kWgElem - 1) / kWgElem);
}

uint64_t dequant_scratch_bytes(const Adapter& a, GgmlType type, int64_t rows, int64_t cols) {
    // Only where the tensor cores exist and do not read the type (F32, BF16); at most
    // kDequantScratchMax, fewer rows a round beyond that.
    if (!a.coopmat_nv || matmul_on_tensor_cores(a, type) || cols % 8 != 0 || rows <= 0) return 0;
    const uint64_t row = uint64_t(cols) * 2,
                   cap =
                       std::min<uint64_t>(kDequantScratchMax, a.props.limits.maxStorageBufferRange);
    if (row > cap) return 0;
    return std::min(uint64_t(rows), cap / row) * row;
}

namespace {
// Which F16 part of an F32 value a copy or a product takes (include/f16_split.glsl): all of it
// rounded (Whole), its 11 leading bits (Hi) or what they leave, scaled (Lo).
enum class Part { Whole, Hi, Lo };
// op_dequant_f16, or an F32 matrix's high or low part.
Status dequant_rows_f16(Recorder& rec, const DeviceTensor& w, size_t piece, int64_t row0,
                        int64_t nrows, BufferRange out, Part part) {
    const char* sfx = weight_type_suffix(w.type);
    if (part != Part::Whole && w.type != GgmlType::F32)
        return make_error("vulkan.unsupported_type", "F16 parts of a non-F32 matrix");
    if (!sfx || piece >= w.pieces.size() || row0 < 0 || nrows < 0 ||
        row0 + nrows > w.pieces[piece].nrows || w.cols % 2 != 0 ||
        uint64_t(nrows) * uint64_t(w.cols) * 2 > out.size)
        return make_error("vulkan.unsupported_shape",
                          "F16 copy of " + std::to_string(nrows) + " rows of " +
                              std::to_string(w.cols) + " columns from row " + std::to_string(row0) +
                              " does not fit the piece or the " + std::to_string(out.size) +
                              "-byte output");
    struct {
        uint32_t ncols, stride, row0, nrows;
    } pc{uint32_t(w.cols), w.stride_units, uint32_t(row0), uint32_t(nrows)};
    const uint64_t chunks = uint64_t(nrows) * uint64_t((w.cols + 31) / 32);
    const char* name = part == Part::Hi   ? "dequant_hi_"
                       : part == Part::Lo ? "dequant_lo_"
                                          : "dequant_";
    return rec.dispatch_linear(std::string(name) + sfx + "_f16", {w.pieces[piece].range, out}, &pc,
                               push_size<decltype(pc)>(), kWgElem,
                               (chunks + kWgElem - 1) / kWgElem);
}

// The products of an F32 matmul on the tensor cores, w the F16 rows of a part of the weights:
// y = Wh Xh (HiHi), then y += Wh Xl (HiLo) and Wl Xh (LoHi), scaled back. None: y = W X.
enum class Product { None, HiHi, HiLo, LoHi };
// op_matmul without the F16 copies.
Status matmul_pieces(Recorder& rec, const DeviceTensor& w, BufferRange x, uint32_t x_off,
                     BufferRange y, uint32_t y_off, int n_tokens, BufferRange xh, Product product);
}  // namespace

Status op_dequant_f16(Recorder& rec, const DeviceTensor& w, size_t piece, int64_t row0,
                      int64_t nrows, BufferRange out) {
    return dequant_rows_f16(rec, w, piece, row0, nrows, out, Part::Whole);
}

Status op_matmul(Recorder& rec, const DeviceTensor& w, BufferRange x, uint32_t x_off, BufferRange y,
                 uint32_t y_off, int n_tokens, BufferRange xh, BufferRange wh) {
    const char* sfx = weight_type_suffix(w.type);
    if (!sfx)
        return make_error("vulkan.unsupported_type",
                          "no Vulkan shader for weight type " + std::string(type_name(w.type)));
    // Types the tensor cores do not read (F32, BF16): their rows as F16 in wh, a range of rows
    // at a time, then the F16 tensor-core matmul (on the H200 a hundred times faster than
    // matmul.comp). F16 keeps BF16's 8 bits but not F32's 24, for weights or activations: F32
    // rows take three F16 products, Wh Xh + Wh Xl + Wl Xh (h: the 11 leading bits, l: what they
    // leave), so that an F32 file's prompts keep ~22 bits (one product moved a small Llama 3's
    // logits 1.5e-3, relative L2, from its reference on the H200). The barrier before a copy lets
    // the matmul before it, which may read wh, finish.
    const uint64_t wh_rows =
        n_tokens > 1 && wh.size && dequant_scratch_bytes(rec.adapter(), w.type, w.rows, w.cols)
            ? wh.size / (uint64_t(w.cols) * 2)
            : 0;
    if (wh_rows > 0) {
        const bool split = w.type == GgmlType::F32 && use_coopmat(rec, GgmlType::F16);
        for (size_t i = 0; i < w.pieces.size(); ++i) {
            const auto& p = w.pieces[i];
            for (int64_t r0 = 0; r0 < p.nrows; r0 += int64_t(wh_rows)) {
                const int64_t nr = std::min<int64_t>(int64_t(wh_rows), p.nrows - r0);
                const BufferRange part = wh.sub(0, uint64_t(nr) * uint64_t(w.cols) * 2);
                rec.barrier();
                EMBER_TRY(
                    dequant_rows_f16(rec, w, i, r0, nr, part, split ? Part::Hi : Part::Whole));
                rec.barrier();
                DeviceTensor half{
                    GgmlType::F16, w.rows, w.cols, uint32_t(w.cols), {{part, p.row0 + r0, nr}}};
                if (!split) {
                    EMBER_TRY(op_matmul(rec, half, x, x_off, y, y_off, n_tokens));
                    continue;
                }
                EMBER_TRY(
                    matmul_pieces(rec, half, x, x_off, y, y_off, n_tokens, {}, Product::HiHi));
                rec.barrier();
                EMBER_TRY(
                    matmul_pieces(rec, half, x, x_off, y, y_off, n_tokens, {}, Product::HiLo));
                rec.barrier();
                EMBER_TRY(dequant_rows_f16(rec, w, i, r0, nr, part, Part::Lo));
                rec.barrier();
                EMBER_TRY(
                    matmul_pieces(rec, half, x, x_off, y, y_off, n_tokens, {}, Product::LoHi));
            }
        }
        return {};
    }
    return matmul_pieces(rec, w, x, x_off, y, y_off, n_tokens, xh, Product::None);
}

namespace {
Status matmul_pieces(Recorder& rec, const DeviceTensor& w, BufferRange x, uint32_t x_off,
                     BufferRange y, uint32_t y_off, int n_tokens, BufferRange xh, Product product) {
    const char* sfx = weight_type_suffix(w.type);
    const bool parts = product != Product::None;
    if (parts && (w.type != GgmlType::F16 || n_tokens < 2 || !use_coopmat(rec, w.type)))
        return make_error("vulkan.unsupported_type",
                          "F32 matmuls are split in F16 parts on the tensor cores only");
    for (const auto& p : w.pieces) {
        if (n_tokens == 1) {
            struct {
                uint32_t ncols, stride, nrows, x_off, y_off;
            } pc{uint32_t(w.cols), w.stride_units, uint32_t(p.nrows), x_off,
                 y_off + uint32_t(p.row0)};
            EMBER_TRY(rec.dispatch_linear(std::string("matvec_") + sfx + "_f32", {p.range, x, y},
                                          &pc, push_size<decltype(pc)>(), kWgRow,
                                          uint64_t(p.nrows)));
        } else {
            struct {
                uint32_t ncols, stride, nrows, n_tokens, x_off, x_stride, y_off, y_stride;
            } pc{uint32_t(w.cols),         w.stride_units,  uint32_t(p.nrows),
                 uint32_t(n_tokens),       x_off,           uint32_t(w.cols),
                 y_off + uint32_t(p.row0), uint32_t(w.rows)};
            if (use_coopmat(rec, w.type)) {
                // F16 activations (xh mirrors x element for element): 128-column stages.
                const bool half = xh.size && x_off % 8 == 0 && matmul_reads_f16(rec, w, n_tokens);
                const bool tokens_fast = coopmat_tokens_fast(rec.plan(), w);
                const CoopmatTile tile = coopmat_tile(rec.plan(), p.nrows, n_tokens, half);
                // Whole tiles store their results directly (not the products of F32 parts).
                const bool direct =
                    !parts && p.nrows % tile.rows == 0 && n_tokens % tile.tokens == 0;
                const char* part_name = product == Product::HiHi   ? "xhi_"
                                        : product == Product::HiLo ? "lo_xlo_"
                                        : product == Product::LoHi ? "lo_xhi_"
                                                                   : "";
                std::string name = std::string("matmul_coopmat_") + part_name +
                                   (half ? "xh_" : "") + tile.name + (direct ? "direct_" : "") +
                                   sfx;
                // When a stage's data is loaded (XLOAD in the shader): with F16 activations,
                // loading them (2) and the weights too (3) only when stored frees registers for
                // more workgroups; 3 won in row order, 2 in token order, and the F32 kernel lost
                // either way. The 128-row kernels (128 x 64 and 128 x 128) prefetch everything
                // for Q4_0 (0) and the weights for the other types (2): on the H200, 128 x 128
                // tiles made Llama-2-7B's Q4_0 pp512 3% faster with 0 and its Q8_0 14% slower.
                const bool wide = tile.rows > kCoopmatTile;
                const uint32_t xload = wide   ? (w.type == GgmlType::Q4_0 ? 0 : 2)
                                       : half ? (tokens_fast ? 2 : 3)
                                              : 0;
                const uint32_t row_tiles = uint32_t((p.nrows + tile.rows - 1) / tile.rows),
                               tok_tiles = uint32_t((n_tokens + tile.tokens - 1) / tile.tokens);
                EMBER_TRY(rec.dispatch(
                    name, {p.range, half ? xh : x, y}, &pc, push_size<decltype(pc)>(), tile.threads,
                    tokens_fast ? tok_tiles : row_tiles, tokens_fast ? row_tiles : tok_tiles, 1,
                    SpecConstants::of(CoopmatSpec{tokens_fast ? 1u : 0u, 0u, xload})));
                continue;
            }
            if (matmul_on_int_dot(rec.plan(), w.type, n_tokens)) {
                EMBER_TRY(rec.dispatch(std::string("matmul_idot_") + sfx + "_f32", {p.range, x, y},
                                       &pc, push_size<decltype(pc)>(), kIdotWg,
                                       uint32_t((p.nrows + kIdotRows - 1) / kIdotRows),
                                       uint32_t((n_tokens + kIdotTokens - 1) / kIdotTokens), 1));
                continue;
            }
            EMBER_TRY(rec.dispatch_linear(std::string("matmul_") + sfx + "_f32", {p.range, x, y},
                                          &pc, push_size<decltype(pc)>(), kWgRow, uint64_t(p.nrows),
                                          uint32_t((n_tokens + kMatmulTile - 1) / kMatmulTile)));
        }
    }
    return {};
}
}  // namespace

Status op_get_rows(Recorder& rec, const DeviceTensor& table, BufferRange step, BufferRange out,
                   int n_tokens) {
    const char* sfx = weight_type_suffix(table.type);
    if (!sfx)
        return make_error("vulkan.unsupported_type", "no Vulkan shader for embedding type " +
                                                         std::string(type_name(table.type)));
    for (const auto& p : table.pieces) {
        struct {
            uint32_t ncols, stride, row0, nrows, out_off;
        } pc{uint32_t(table.cols), table.stride_units, uint32_t(p.row0), uint32_t(p.nrows), 0};
        // 8 threads a 32-column chunk (get_rows.comp); a workgroup row per token.
        const uint32_t chunks = uint32_t((table.cols + 31) / 32);
        EMBER_TRY(rec.dispatch(std::string("get_rows_") + sfx + "_f32", {p.range, out, step}, &pc,
                               push_size<decltype(pc)>(), kWgRow,
                               (8 * chunks + kWgRow - 1) / kWgRow, uint32_t(n_tokens)));
    }
    return {};
}

namespace {
struct NormPc {
    uint32_t n;
    float eps;
    uint32_t x_off, x_stride, out_off, out_stride;
};
}  // namespace

Status op_rms_norm(Recorder& rec, BufferRange x, uint32_t x_off, BufferRange w, BufferRange out,
                   uint32_t out_off, int n, int n_rows, int stride, float eps, bool out_f16) {
    NormPc pc{uint32_t(n), eps, x_off, uint32_t(stride), out_off, uint32_t(stride)};
    return rec.dispatch(out_f16 ? "rms_norm_f32_f16" : "rms_norm_f32_f32", {x, w, out}, &pc,
                        push_size<NormPc>(), kWgNorm, uint32_t(n_rows));
}

Status op_add_rms_norm(Recorder& rec, BufferRange x, BufferRange r, BufferRange w, BufferRange out,
                       int n, int n_rows, float eps, bool out_f16) {
    NormPc pc{uint32_t(n), eps, 0, uint32_t(n), 0, uint32_t(n)};
    return rec.dispatch(out_f16 ? "add_rms_norm_f32_f16" : "add_rms_norm_f32_f32", {x, w, out, r},
                        &pc, push_size<NormPc>(), kWgNorm, uint32_t(n_rows));
}

Status op_rms_norm_add(Recorder& rec, BufferRange x, BufferRange w, BufferRange out, int n,
                       int n_rows, float eps) {
    NormPc pc{uint32_t(n), eps, 0, uint32_t(n), 0, uint32_t(n)};
    return rec.dispatch("rms_norm_add_f32_f32", {x, w, out}, &pc, push_size<NormPc>(), kWgNorm,
                        uint32_t(n_rows));
}

Status op_rope_kv_store(Recorder& rec, BufferRange q, BufferRange k, BufferRange v,
                        BufferRange k_cache, BufferRange v_cache, BufferRange step, BufferRange ff,
                        int n_tokens, int n_head, int n_head_kv, int head_dim, int n_rot,
                        float freq_base) {
    if (head_dim % 2 != 0 || n_rot % 2 != 0 || n_rot > head_dim)
        return make_error("vulkan.unsupported_shape",
                          "RoPE needs an even head_dim and an even n_rot <= head_dim");
    struct {
        uint32_t n_tokens, n_heads, n_heads_kv, head_dim, n_rot;
        float base;
        uint32_t has_ff;
    } pc{uint32_t(n_tokens), uint32_t(n_head), uint32_t(n_head_kv), uint32_t(head_dim),
         uint32_t(n_rot),    freq_base,        ff.buffer ? 1u : 0u};
    BufferRange ffb = ff.buffer ? ff : q;  // a binding must be valid even when unused
    const uint64_t n = uint64_t(n_tokens) * (uint64_t(n_head) + 2 * n_head_kv) * head_dim / 2;
    return rec.dispatch_linear("rope_kv_f32_f16", {q, ffb, step, k, v, k_cache, v_cache}, &pc,
                               push_size<decltype(pc)>(), kWgElem, (n + kWgElem - 1) / kWgElem);
}

bool attention_on_tensor_cores(const Adapter& a, const AttentionShape& s) {
    return a.coopmat_nv && s.n_tokens >= 16 && s.head_dim % 16 == 0 && s.head_dim <= 128 &&
           s.n_head % s.n_head_kv == 0;
}

Status op_attention(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                    BufferRange out, BufferRange step, const AttentionShape& s, BufferRange k_batch,
                    BufferRange v_batch, bool keep_f32) {
    if (s.head_dim > int(8 * kWgAttn) || s.n_head % s.n_head_kv != 0)
        return make_error("vulkan.unsupported_shape",
                          "attention needs head_dim <= " + std::to_string(8 * kWgAttn) +
                              " and n_head a multiple of n_head_kv");
    uint32_t qdim = uint32_t(s.n_head * s.head_dim);
    struct {
        uint32_t n_head, n_head_kv, head_dim, q_off, q_stride, kv_stride, o_off, o_stride;
        float scale;
        uint32_t batch_kv;
    } pc{uint32_t(s.n_head),
         uint32_t(s.n_head_kv),
         uint32_t(s.head_dim),
         0,
         qdim,
         uint32_t(s.n_head_kv * s.head_dim),
         0,
         qdim,
         s.scale,
         k_batch.buffer && v_batch.buffer ? 1u : 0u};
    if (!keep_f32 && attention_on_tensor_cores(rec.adapter(), s)) {
        // Keys and values of every position from the F16 cache (the batch's are stored there
        // before attention runs).
        struct {
            uint32_t n_head, n_head_kv, q_stride, kv_stride, o_stride;
            float scale;
            uint32_t n_tokens;
        } pt{pc.n_head, pc.n_head_kv, qdim, pc.kv_stride, qdim, s.scale, uint32_t(s.n_tokens)};
        return rec.dispatch("attention_coopmat_f16_f32", {q, k_cache, v_cache, out, step}, &pt,
                            push_size<decltype(pt)>(), kCoopmatWg, uint32_t(s.n_head),
                            uint32_t((s.n_tokens + kCoopmatAttnQueries - 1) / kCoopmatAttnQueries),
                            1, {uint32_t(s.head_dim)});
    }
    // Unused batch bindings still need a buffer: the cache stands in.
    if (!pc.batch_kv) k_batch = k_cache, v_batch = v_cache;
    return rec.dispatch("attention_f16_f32", {q, k_cache, v_cache, out, k_batch, v_batch, step},
                        &pc, push_size<decltype(pc)>(), kWgAttn, uint32_t(s.n_head),
                        uint32_t(s.n_tokens));
}

namespace {
// The combine keeps two floats per head and run in shared memory (2 G n_split <= 8 threads).
constexpr uint32_t kMaxDecodeRuns = 128;
// Query heads per workgroup: a divisor of a KV head's, up to the plan's attn_max_group.
uint32_t heads_per_group(const Plan& p, const AttentionShape& s) {
    const uint32_t ratio = uint32_t(s.n_head / std::max(s.n_head_kv, 1));
    uint32_t g = std::clamp(p.attn_max_group, 1u, std::clamp(ratio, 1u, 4u));
    while (ratio % g) --g;
    return g;
}
// Positions per thread in a pass: fewer for larger groups, for the registers (G queries and
// outputs of 8 dimensions a thread beside PT keys and values), and G R PT <= 2 WG so that a
// pass's weights fit the shader's shared memory.
uint32_t positions_per_thread(const Plan& p, const AttentionShape& s, uint32_t group) {
    const uint32_t rows = p.attn_threads / std::max(uint32_t(s.head_dim) / 8, 1u);
    uint32_t pt = group <= 2 ? p.attn_positions : 4;
    while (pt > 1 && group * rows * pt > 2 * p.attn_threads) pt /= 2;
    return pt;
}
uint32_t passes_of(const Plan& p, const AttentionShape& s, uint32_t n_positions) {
    const uint32_t per_pass = p.attn_threads / (uint32_t(s.head_dim) / 8) *
                              positions_per_thread(p, s, heads_per_group(p, s));
    return (n_positions + per_pass - 1) / per_pass;
}
// The fewest passes a run takes: the plan's, at least 1 (the host's grid and the shader's runs()
// read this one value).
uint32_t min_passes(const Plan& p) {
    return std::max(p.attn_min_passes, 1u);
}
// Runs that n positions would be split into with no cap: passes / min_passes, rounded up.
uint32_t wanted_runs(const Plan& p, const AttentionShape& s, uint32_t n_positions) {
    return (passes_of(p, s, n_positions) + min_passes(p) - 1) / min_passes(p);
}
}  // namespace

bool decode_attention_supported(const Plan& p, const AttentionShape& s, bool fam) {
    // Each thread takes 8 dimensions of a position, so head_dim / 8 must divide the workgroup;
    // in the families' kernel a pass's last row of threads may be partial (Phi-3's 96).
    const uint32_t wg = p.attn_threads, tpp = uint32_t(s.head_dim) / 8;
    return s.n_tokens == 1 && s.n_head_kv > 0 && s.n_head % s.n_head_kv == 0 &&
           s.head_dim % 8 == 0 && s.head_dim > 0 && tpp <= wg && (fam || wg % tpp == 0);
}

uint32_t decode_attention_splits(const Plan& p, const AttentionShape& s, int n_ctx) {
    // Runs of at least min_passes passes, up to the plan's workgroups in all.
    const uint32_t groups = uint32_t(s.n_head) / heads_per_group(p, s);
    const uint32_t cap = std::clamp(p.attn_workgroups / groups, 1u, kMaxDecodeRuns);
    return std::clamp(wanted_runs(p, s, uint32_t(std::max(n_ctx, 1))), 1u, cap);
}

std::array<uint32_t, 3> decode_attention_grid(const Plan& p, const AttentionShape& s,
                                              uint32_t n_split, uint32_t n_kv) {
    // The shader's runs(): at most n_split runs of at least min_passes passes, evenly filled.
    const uint32_t passes = passes_of(p, s, n_kv);
    const uint32_t n = std::clamp(wanted_runs(p, s, n_kv), 1u, std::max(n_split, 1u));
    const uint32_t per = (passes + n - 1) / n;
    return {uint32_t(s.n_head) / heads_per_group(p, s), std::max(1u, (passes + per - 1) / per), 1};
}

uint64_t decode_attention_partials(const AttentionShape& s, uint32_t n_split) {
    return uint64_t(s.n_head) * n_split * (2 + uint64_t(s.head_dim));
}

namespace {

// attention.comp's specialization constants, in constant_id order (1-15). The shape constants
// (n_head ... min_passes) repeat push constants so that the compiler sees them; wo_* and nch,
// wo_loads are the WO variant's (0 elsewhere); group: query heads per workgroup.
struct AttentionSpec {
    uint32_t pt;  // positions a thread takes in a pass
    uint32_t nch, wo_loads;
    uint32_t diag;  // 0 (timing diagnostics left the product)
    uint32_t n_head, n_head_kv, head_dim, kv_stride;
    uint32_t wo_rows, wo_stride, slice_rows;
    uint32_t scale_bits, n_split, min_passes;
    uint32_t group = 1;  // the WO variant takes one head a workgroup
    // FAMILY: the q/k norms' division left by the Q/K/V (DecodeAttentionFamily::qk_norm)
    uint32_t qk_norm = 0, qk_eps_bits = 0;
};

}  // namespace

Status op_attention_decode(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                           BufferRange out, BufferRange step, const AttentionShape& s,
                           BufferRange partials, BufferRange counters, uint32_t n_split,
                           BufferRange grid, const DecodeAttentionFamily* fam) {
    const Plan& p = rec.plan();
    if (!decode_attention_supported(p, s, fam))
        return make_error("vulkan.unsupported_shape",
                          "decode attention needs one token, n_head a multiple of n_head_kv, and "
                          "head_dim a multiple of 8 with head_dim / 8 " +
                              std::string(fam ? "at most " : "dividing ") +
                              std::to_string(p.attn_threads));
    if (n_split == 0 || n_split > kMaxDecodeRuns)
        return make_error("vulkan.bad_argument", "decode attention needs 1 to " +
                                                     std::to_string(kMaxDecodeRuns) +
                                                     " runs, not " + std::to_string(n_split));
    const DecodeAttentionFamily f = fam ? *fam : DecodeAttentionFamily{};
    if (f.kv_ring && (f.window == 0 || f.kv_ring < f.window))
        return make_error("vulkan.bad_argument",
                          "decode attention over a cache ring of " + std::to_string(f.kv_ring) +
                              " rows needs a window of at most that many positions");
    struct {
        uint32_t n_head, n_head_kv, head_dim, kv_stride;
        float scale;
        uint32_t n_split, min_passes;
        float softcap;  // the family's three (FAMILY) last
        uint32_t window, kv_ring;
    } pc{uint32_t(s.n_head),
         uint32_t(s.n_head_kv),
         uint32_t(s.head_dim),
         uint32_t(s.n_head_kv * s.head_dim),
         s.scale,
         n_split,
         min_passes(p),
         f.softcap,
         f.window,
         f.kv_ring};
    const uint32_t group = heads_per_group(p, s), size = push_size<decltype(pc)>() - (fam ? 0 : 12);
    const SpecConstants spec = SpecConstants::of(AttentionSpec{
        positions_per_thread(p, s, group), 0, 0, 0, pc.n_head, pc.n_head_kv, pc.head_dim,
        pc.kv_stride, 0, 0, 0, std::bit_cast<uint32_t>(pc.scale), pc.n_split, pc.min_passes, group,
        f.qk_norm ? 1u : 0u, std::bit_cast<uint32_t>(f.qk_eps)});
    const uint32_t gx = uint32_t(s.n_head) / group;
    if (!fam) {
        const auto b = {q, k_cache, v_cache, out, partials, counters, step};
        const char* shader = "attention_split_f16_f32";
        if (grid.size)
            return rec.dispatch_indirect(shader, b, &pc, size, p.attn_threads, grid, spec);
        return rec.dispatch(shader, b, &pc, size, p.attn_threads, gx, n_split, 1, spec);
    }
    // 7 unused here (the WO variant's Wo), 8 and 9 the q/k norms' (any buffer without them).
    const BufferRange k_new = f.qk_norm ? f.k_new : q, ss = f.qk_norm ? f.qk_ss : q;
    const auto b = {q, k_cache, v_cache, out, partials, counters, step, q, k_new, ss};
    const char* shader = "attention_split_family_f16_f32";
    if (grid.size) return rec.dispatch_indirect(shader, b, &pc, size, p.attn_threads, grid, spec);
    return rec.dispatch(shader, b, &pc, size, p.attn_threads, gx, n_split, 1, spec);
}

bool decode_attention_one_run(const Plan& p, const AttentionShape& s, uint32_t n_kv) {
    return wanted_runs(p, s, n_kv) <= 1;
}

namespace {
// The types of attention.comp's fused output projection (include/fused_weights.glsl). Q5_K
// and Q6_K read too, but with their loads held across the attention a 7B decode was no faster
// on the H200 than with the separate dispatch.
bool fused_wo_type(GgmlType t) {
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::Q4_K;
}
}  // namespace

bool attention_wo_supported(const Recorder& rec, const AttentionShape& s, const DeviceTensor& wo,
                            bool fam) {
    // Its products are F16 like matvec_fused_h's, so it follows that kernel's switch too. A row's
    // head_dim / 32 blocks take that many lanes rounded up to a power of 2 (attention.comp's NL).
    const Adapter& a = rec.adapter();
    const uint32_t lanes = std::bit_ceil(uint32_t(std::max(s.head_dim / 32, 1)));
    return a.atomic_float_add && a.float16 && a.subgroup_shuffle && rec.plan().attn_wo &&
           rec.plan().fused_kernel != FusedKernel::Plain &&
           decode_attention_supported(rec.plan(), s, fam) && fused_wo_type(wo.type) &&
           wo.pieces.size() == 1 && wo.cols == int64_t(s.n_head) * s.head_dim &&
           s.head_dim % 32 == 0 && s.head_dim <= 256 && lanes <= a.subgroup_size &&
           rec.plan().attn_threads % lanes == 0;
}

Status op_attention_wo(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                       BufferRange x, BufferRange step, const AttentionShape& s,
                       const DeviceTensor& wo, const DecodeAttentionFamily* fam) {
    const Plan& p = rec.plan();
    if (!attention_wo_supported(rec, s, wo, fam))
        return make_error("vulkan.unsupported_shape",
                          "attention with the output projection fused needs float atomics, F16 "
                          "arithmetic, subgroup shuffles, Q4_0, Q8_0 or Q4_K Wo of n_head * "
                          "head_dim columns and head_dim 32, 64, ... 256");
    const DecodeAttentionFamily f = fam ? *fam : DecodeAttentionFamily{};
    if (f.kv_ring && (f.window == 0 || f.kv_ring < f.window))
        return make_error("vulkan.bad_argument",
                          "decode attention over a cache ring needs a window of at most its rows");
    // Plan::attn_wo_slices workgroups per head (8: the best of 2-16 on the H200 for 32 heads),
    // more where few heads would leave SMs idle (Plan::attn_wo_min_groups), each repeating the
    // head's attention and taking its share of Wo's rows.
    const uint32_t slices = std::clamp<uint32_t>(
        std::max(rec.plan().attn_wo_slices,
                 (rec.plan().attn_wo_min_groups + uint32_t(s.n_head) - 1) / uint32_t(s.n_head)),
        1, uint32_t(wo.rows));
    const uint32_t slice_rows = uint32_t((wo.rows + slices - 1) / slices);
    // The head's blocks in a row, their lanes, and the loads per thread that cover a slice (at
    // most 8 at once).
    const uint32_t nch = uint32_t(s.head_dim / 32);
    const uint32_t loads = std::clamp<uint32_t>(
        (slice_rows * std::bit_ceil(nch) + p.attn_threads - 1) / p.attn_threads, 1, 8);
    struct {
        uint32_t n_head, n_head_kv, head_dim, kv_stride;
        float scale;
        uint32_t n_split, min_passes, wo_rows, wo_stride, slice_rows;
        float softcap;  // the family's three (FAMILY) last
        uint32_t window, kv_ring;
    } pc{uint32_t(s.n_head),
         uint32_t(s.n_head_kv),
         uint32_t(s.head_dim),
         uint32_t(s.n_head_kv * s.head_dim),
         s.scale,
         1,
         min_passes(p),
         uint32_t(wo.rows),
         fused_row_stride(wo),
         slice_rows,
         f.softcap,
         f.window,
         f.kv_ring};
    // 4 positions a thread in a pass, not 8: half the registers (64, not 118), for the Wo loads
    // held across the attention (t4 tg128 1,210 vs 1,191).
    const SpecConstants spec = SpecConstants::of(
        AttentionSpec{std::min<uint32_t>(p.attn_positions, 4), nch, loads, 0, pc.n_head,
                      pc.n_head_kv, pc.head_dim, pc.kv_stride, pc.wo_rows, pc.wo_stride,
                      pc.slice_rows, std::bit_cast<uint32_t>(pc.scale), pc.n_split, pc.min_passes,
                      1, f.qk_norm ? 1u : 0u, std::bit_cast<uint32_t>(f.qk_eps)});
    const BufferRange w = wo.pieces[0].range;
    const uint32_t gy = uint32_t((wo.rows + slice_rows - 1) / slice_rows);
    if (!fam)
        return rec.dispatch("attention_wo_" + std::string(weight_type_suffix(wo.type)),
                            {q, k_cache, v_cache, x, x, x, step, w}, &pc,
                            push_size<decltype(pc)>() - 12, p.attn_threads, uint32_t(s.n_head), gy,
                            1, spec);
    // 8 and 9: the q/k norms' (any buffer without them).
    const BufferRange k_new = f.qk_norm ? f.k_new : w, ss = f.qk_norm ? f.qk_ss : w;
    return rec.dispatch("attention_wo_family_" + std::string(weight_type_suffix(wo.type)),
                        {q, k_cache, v_cache, x, x, x, step, w, k_new, ss}, &pc,
                        push_size<decltype(pc)>(), p.attn_threads, uint32_t(s.n_head), gy, 1, spec);
}

Status op_silu_mul(Recorder& rec, BufferRange g, BufferRange u, BufferRange out, uint32_t n,
                   bool out_f16) {
    struct {
        uint32_t n, g_off, u_off, o_off;
    } pc{n, 0, 0, 0};
    return rec.dispatch_linear(out_f16 ? "silu_mul_f32_f16" : "silu_mul_f32_f32", {g, u, out}, &pc,
                               push_size<decltype(pc)>(), kWgElem, (n + kWgElem - 1) / kWgElem);
}

Status op_add(Recorder& rec, BufferRange y, BufferRange x, uint32_t n) {
    struct {
        uint32_t n, y_off, x_off;
    } pc{n, 0, 0};
    return rec.dispatch_linear("add_f32_f32", {y, x}, &pc, push_size<decltype(pc)>(), kWgElem,
                               (n + kWgElem - 1) / kWgElem);
}

Status op_argmax(Recorder& rec, BufferRange x, uint32_t x_off, uint32_t n, BufferRange result) {
    struct {
        uint32_t n, x_off;
    } pc{n, x_off};
    return rec.dispatch("argmax_f32_u32", {x, result}, &pc, push_size<decltype(pc)>(), kWgArgmax,
                        1);
}

}  // namespace ember::vulkan

// Loading onto a Vulkan device (issue 48): the weight rearrangement on all cores gives the same
// bytes as the serial one it replaced, progress counts uploaded bytes up to 100 %, a cancel
// mid-load frees everything, and the file is read once, each page given back after its upload. The
// load tests run on lavapipe under the validation layer (ctest entry fault_vk_load).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "../badmodels/bad_model_util.h"
#include "ember/ember.h"
#include "quant/quant.h"
#include "test_util.h"
#include "vulkan/context.h"
#include "vulkan/instance.h"
#include "vulkan/weights.h"

namespace ember::vulkan {
namespace {

// The serial rearrangement the upload used before it ran on all cores (kept verbatim as the
// reference: the device layouts must not change).
namespace ref {
constexpr uint64_t kGroupBlocks = 8;

// The parts of a regrouped type's block, in the order a group holds them (n = 0: not
// regrouped); they add up to the GGUF block's bytes.
struct GroupParts {
    int n = 0;
    uint64_t bytes[3] = {};
};
GroupParts group_parts(GgmlType t) {
    switch (t) {
        case GgmlType::Q6_K:
            return {2, {208, 2}};
        case GgmlType::Q4_1:
            return {2, {16, 4}};
        case GgmlType::Q5_0:
            return {3, {16, 4, 2}};
        case GgmlType::Q5_1:
            return {3, {16, 4, 4}};
        default:
            return {};
    }
}
bool grouped(GgmlType t) {
    return group_parts(t).n > 0;
}

// Q4_0 and Q8_0 rows: quants, then scales (padded to 16 bytes).
bool quants_then_scales(GgmlType t) {
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
}
uint64_t device_row_bytes(GgmlType t, uint64_t stride) {
    if (!quants_then_scales(t)) return stride;
    const uint64_t nb = stride / type_traits(t)->block_bytes;
    return nb * (type_traits(t)->block_bytes - 2) + (2 * nb + 15) / 16 * 16;
}

uint64_t piece_bytes(GgmlType t, uint64_t nrows, uint64_t stride) {
    if (!grouped(t)) return nrows * device_row_bytes(t, stride);
    const uint64_t bb = type_traits(t)->block_bytes, blocks = nrows * (stride / bb);
    return (blocks + kGroupBlocks - 1) / kGroupBlocks * kGroupBlocks * bb;
}

// One K-quant sub-block's element e (0-31) -> its nibble byte and shift in Q4_0's order.
uint64_t nibble_byte(int e) {
    return uint64_t(e % 16);
}
int nibble_shift(int e) {
    return 4 * (e / 16);
}

// Q4_K's and Q5_K's superblock head: d, dmin and the repacked scales (above).
void repack_k4_head(const uint8_t* d_dmin, const uint8_t* scales, uint8_t* dst) {
    std::memcpy(dst, d_dmin, 4);
    uint8_t* s = dst + 4;
    std::memset(s, 0, K_SCALE_SIZE);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, mn;
        scale_min_k4(j, scales, sc, mn);
        s[j] = uint8_t(sc | (mn >> 4) << 6);
        s[8 + j / 2] |= uint8_t((mn & 15) << (4 * (j % 2)));
    }
}

// A Q4_K or Q5_K superblock's nibbles (qs: sub-blocks 2i and 2i + 1 share 32 bytes, low and
// high) as 8 sub-blocks of 16 bytes in Q4_0's order.
void repack_k4_nibbles(const uint8_t* qs, uint8_t* dst) {
    std::memset(dst, 0, QK_K / 2);
    for (int n = 0; n < QK_K; ++n) {
        const int j = n / 32, e = n % 32;
        const int q = (qs[32 * (j / 2) + e] >> (4 * (j % 2))) & 15;
        dst[16 * j + nibble_byte(e)] |= uint8_t(q << nibble_shift(e));
    }
}

void rearrange_q4_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ4_K& b = *reinterpret_cast<const BlockQ4_K*>(src);
    repack_k4_nibbles(b.qs, dst);
    repack_k4_head(src, b.scales, dst + QK_K / 2);
}

// Sub-block element e's bit in its uint of high bits (Q5_K). Nibble word k = (e % 16) / 4 is
// unpacked in four masks of two elements each; the shader shifts that uint left by 4 or 2 (k =
// 0, 1) or right by 4 or 6 (k = 2, 3), after which the high bits of elements (4k, 4k + 2) sit at
// bits 4 and 20, of (4k + 16, 4k + 18) at 8 and 24, and of the odd ones one bit above.
int q5_high_bit(int e) {
    const int k = (e % 16) / 4, i = e % 4;
    const int at = 4 + (i & 1) + 16 * (i >> 1) + 4 * (e / 16);
    const int shift[4] = {-4, -2, 4, 6};
    return at + shift[k];
}

// A block's 32 high bits (bit e: element e's, GGUF's Q5_0 and Q5_1) at q5_high_bit(e).
uint32_t q5_high_bits(uint32_t qh) {
    uint32_t out = 0;
    for (int e = 0; e < 32; ++e) out |= ((qh >> e) & 1u) << q5_high_bit(e);
    return out;
}

void rearrange_q5_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ5_K& b = *reinterpret_cast<const BlockQ5_K*>(src);
    repack_k4_nibbles(b.qs, dst);
    repack_k4_head(src, b.scales, dst + QK_K / 2);
    uint8_t* high = dst + sizeof(BlockQ4_K);
    std::memset(high, 0, QK_K / 8);
    for (int n = 0; n < QK_K; ++n) {
        const int j = n / 32, e = n % 32, bit = q5_high_bit(e);
        high[4 * j + bit / 8] |= uint8_t(((b.qh[e] >> j) & 1) << (bit % 8));
    }
}

void rearrange_q6_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ6_K& b = *reinterpret_cast<const BlockQ6_K*>(src);
    std::memset(dst, 0, 192);
    for (int n = 0; n < QK_K; ++n) {
        const int h = n / 128, l = n % 32, part = (n % 128) / 32;
        const int lo = (b.ql[64 * h + l + 32 * (part & 1)] >> (4 * (part >> 1))) & 15;
        const int hi = (b.qh[32 * h + l] >> (2 * part)) & 3;
        const int j = n / 32, e = n % 32;
        const uint64_t byte = nibble_byte(e);
        dst[16 * j + byte] |= uint8_t(lo << nibble_shift(e));
        const uint64_t k = byte / 4, i = byte % 4;
        const int bit = (k % 2 == 0 ? 4 : 0) + 2 * (e / 16);
        dst[128 + 8 * j + 4 * (k / 2) + i] |= uint8_t(hi << bit);
    }
    std::memcpy(dst + 192, b.scales, 16);
}

// GGUF blocks (rows of nb) -> the device layout; padding is zeroed.
void repack_blocks(GgmlType t, const uint8_t* src, uint64_t nrows, uint64_t nb,
                   std::vector<uint8_t>& out) {
    const uint64_t n_blocks = nrows * nb;
    if (quants_then_scales(t)) {
        const uint64_t bb = type_traits(t)->block_bytes, qb = bb - 2;
        const uint64_t row = device_row_bytes(t, nb * bb);
        out.assign(nrows * row, 0);
        for (uint64_t i = 0; i < n_blocks; ++i) {
            const uint8_t* b = src + i * bb;  // d, then the quants
            uint8_t* r = out.data() + (i / nb) * row;
            std::memcpy(r + (i % nb) * qb, b + 2, qb);
            std::memcpy(r + nb * qb + (i % nb) * 2, b, 2);
        }
        return;
    }
    if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
        const uint64_t bb = t == GgmlType::Q4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ5_K);
        out.resize(n_blocks * bb);
        for (uint64_t i = 0; i < n_blocks; ++i) {
            if (t == GgmlType::Q4_K)
                rearrange_q4_k(src + i * bb, out.data() + i * bb);
            else
                rearrange_q5_k(src + i * bb, out.data() + i * bb);
        }
        return;
    }
    const GroupParts gp = group_parts(t);
    const uint64_t bb = type_traits(t)->block_bytes, gb = kGroupBlocks * bb;
    out.assign((n_blocks + kGroupBlocks - 1) / kGroupBlocks * gb, 0);
    for (uint64_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * bb;
        // Part k of block j of the group.
        uint8_t* part[3] = {};
        uint8_t* at = out.data() + (i / kGroupBlocks) * gb;
        for (int k = 0; k < gp.n; ++k) {
            part[k] = at + (i % kGroupBlocks) * gp.bytes[k];
            at += kGroupBlocks * gp.bytes[k];
        }
        // GGUF's blocks: Q4_0 and Q8_0 d, quants; Q6_K 208 bytes, d; Q4_1 d, m, nibbles; Q5_0
        // d, high bits, nibbles; Q5_1 d, m, high bits, nibbles.
        switch (t) {
            case GgmlType::Q6_K:
                rearrange_q6_k(b, part[0]);
                std::memcpy(part[1], b + 208, 2);
                break;
            case GgmlType::Q4_1:
                std::memcpy(part[0], b + 4, 16);
                std::memcpy(part[1], b, 4);
                break;
            case GgmlType::Q5_0:
            case GgmlType::Q5_1: {
                const uint64_t dm = t == GgmlType::Q5_0 ? 2 : 4;
                std::memcpy(part[0], b + dm + 4, 16);
                uint32_t qh;
                std::memcpy(&qh, b + dm, 4);
                qh = q5_high_bits(qh);
                std::memcpy(part[1], &qh, 4);
                std::memcpy(part[2], b, dm);
                break;
            }
            default:
                assert(false && "group_parts and this switch name the same types");
        }
    }
}
bool device_layout_differs(GgmlType t) {
    return grouped(t) || quants_then_scales(t) || t == GgmlType::Q4_K || t == GgmlType::Q5_K;
}
}  // namespace ref

// Random bytes as GGUF blocks: the rearrangement moves bits and never reads values.
std::vector<uint8_t> random_blocks(uint64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng());
    return v;
}

TEST(Rearrange, MatchesTheSerialReferenceInAnyParts) {
    const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::Q4_0, GgmlType::Q8_0,
                              GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K,
                              GgmlType::Q5_K, GgmlType::Q6_K};
    std::mt19937 rng(7);
    uint32_t seed = 1;
    for (GgmlType t : types) {
        const auto tt = *type_traits(t);
        for (uint64_t nb : {1, 3, 8, 12}) {
            for (uint64_t nrows : {1, 5, 16, 37}) {
                SCOPED_TRACE(std::string(tt.name) + " nb " + std::to_string(nb) + " rows " +
                             std::to_string(nrows));
                const uint64_t stride = nb * tt.block_bytes;
                const std::vector<uint8_t> src = random_blocks(nrows * stride, seed++);
                std::vector<uint8_t> want;
                if (ref::device_layout_differs(t))
                    ref::repack_blocks(t, src.data(), nrows, nb, want);
                else
                    want = src;
                ASSERT_EQ(device_piece_bytes(t, nrows, stride), want.size());
                // In parts cut at random whole granules, as the upload cuts a tensor into
                // staging slots and tasks; unwritten bytes would show as 0xAB.
                const uint64_t g = rearrange_granule_rows(t, nb);
                std::vector<uint8_t> got(want.size(), 0xAB);
                for (uint64_t r0 = 0; r0 < nrows;) {
                    const uint64_t n = std::min(nrows - r0, g * (1 + rng() % 3));
                    rearrange_rows(t, src.data() + r0 * stride, n, nb,
                                   got.data() + device_piece_bytes(t, r0, stride));
                    r0 += n;
                }
                ASSERT_EQ(got, want);
            }
        }
    }
}

const char* kDevice = "llvmpipe";

bool have_lavapipe() {
    auto devs = list_devices();
    if (!devs.ok()) return false;
    for (const auto& d : *devs)
        if (d.name.find(kDevice) != std::string::npos) return true;
    return false;
}

uint64_t device_bytes() {
    auto a = Context::pick_adapter(kDevice);
    return a.ok() ? own_allocations(a->uuid) : 0;
}

// A one-layer Llama of the given type, written under the test's temp folder.
std::string tiny_model(GgmlType type, uint32_t embd, uint32_t ffn, const std::string& name) {
    return test::TinyModel::make(type, embd, ffn).write(name);
}

LoadParams vk_params() {
    LoadParams lp;
    lp.backend = BackendKind::Vulkan;
    lp.device = kDevice;
    lp.n_ctx = 64;
    return lp;
}

// Fails on validation errors (leaks) and on memory freed under work in flight.
class VkLoad : public ::testing::Test {
protected:
    void SetUp() override {
        if (!have_lavapipe()) GTEST_SKIP() << "no Vulkan device named " << kDevice;
        m_errors = validation_error_count();
        m_freed_in_flight = memory_freed_in_flight();
    }
    void TearDown() override {
        if (IsSkipped()) return;
        EXPECT_EQ(validation_error_count(), m_errors) << "the validation layer reported errors";
        EXPECT_EQ(memory_freed_in_flight(), m_freed_in_flight)
            << "device memory was freed while submitted work could still use it";
    }
    uint64_t m_errors = 0, m_freed_in_flight = 0;
};

// Progress counts the bytes uploaded: it never goes back, moves at least once per tensor (and
// per staging slot within a large one) and ends at exactly 1.
TEST_F(VkLoad, ProgressIsMonotonicAndReachesOne) {
    const std::string path = tiny_model(GgmlType::Q4_K, 512, 1024, "progress.gguf");
    std::vector<float> seen;
    LoadParams lp = vk_params();
    lp.progress = [&](float p) {
        seen.push_back(p);
        return true;
    };
    auto model = Model::load(path, lp);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    ASSERT_GE(seen.size(), 10u);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_GE(seen.front(), 0.0f);
    EXPECT_EQ(seen.back(), 1.0f);
    // The upload's share moves through the middle, not only at its ends.
    EXPECT_GT(std::count_if(seen.begin(), seen.end(), [](float p) { return p > 0.3f && p < 0.9f; }),
              2);
}

// A cancel mid-load (the flag, or the progress callback saying no) returns "model.cancelled"
// and leaves no device memory and nothing in flight; the next load works and gives the same
// logits as before.
TEST_F(VkLoad, CancelMidLoadFreesEverything) {
    const std::string path = tiny_model(GgmlType::Q6_K, 512, 1024, "cancel.gguf");
    const uint64_t before = device_bytes();
    test::expect_load_cancels_midway(path, vk_params(), [&] {
        EXPECT_EQ(device_bytes(), before) << "device memory of the cancelled load leaked";
    });
    auto model = Model::load(path, vk_params());
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    const std::vector<int32_t> ids = {1, 5, 9, 100};
    auto logits = (*s)->eval(ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
    s->reset();
    model->reset();
    EXPECT_EQ(device_bytes(), before);
}

// Pages of the file at path that the process has mapped in (the present bits of its page table
// in /proc/self/pagemap, over every mapping of the file), and the pages those mappings span.
struct MappedPages {
    int64_t present = 0, total = 0;
};
MappedPages mapped_pages(const std::string& path) {
    const std::string want = std::filesystem::canonical(path).string();
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    MappedPages out;
    std::ifstream maps("/proc/self/maps");
    std::ifstream pagemap("/proc/self/pagemap", std::ios::binary);
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long lo = 0, hi = 0;
        int name_at = -1;
        if (std::sscanf(line.c_str(), "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name_at) < 2 ||
            name_at < 0 || line.substr(size_t(name_at)) != want)
            continue;
        std::vector<uint64_t> entries((hi - lo) / page);
        pagemap.seekg(std::streamoff(lo / page * 8));
        pagemap.read(reinterpret_cast<char*>(entries.data()), std::streamsize(entries.size() * 8));
        out.total += int64_t(entries.size());
        for (uint64_t e : entries) out.present += int64_t(e >> 63);  // bit 63: present
    }
    return out;
}

// Each weight's file pages are read once, by the upload (which checks them for NaN/Inf as it
// rearranges them), and given back chunk by chunk: at no point of the load, from its first
// progress report (file parsed) to its last, does the process hold more than a quarter of the
// model file's pages. A check of the whole file before the upload would hold all of them.
TEST_F(VkLoad, FilePagesAreTouchedOnceAndReleasedChunkByChunk) {
    const std::string path = tiny_model(GgmlType::Q8_0, 2048, 4096, "pages.gguf");
    const int64_t file_pages =
        int64_t(std::filesystem::file_size(path) / uint64_t(sysconf(_SC_PAGESIZE)));
    ASSERT_GT(file_pages, 4096);
    int64_t most = -1, reports = 0;
    LoadParams lp = vk_params();
    lp.progress = [&](float p) {
        const MappedPages m = mapped_pages(path);
        // (At 1 the loaded model has unmapped the file.)
        if (p < 1.0f) EXPECT_GE(m.total, file_pages) << "the model file is not mapped";
        most = std::max(most, m.present);
        reports++;
        return true;
    };
    auto model = Model::load(path, lp);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    EXPECT_GE(reports, 5);
    EXPECT_LE(most, file_pages / 4) << "at most " << most << " of the file's " << file_pages
                                    << " pages were mapped in at once during the load";
    // Once loaded, the model holds none of the file.
    EXPECT_EQ(mapped_pages(path).total, 0);
}

// A NaN met by the upload ends the load with the checker's error (not a fall back to the CPU),
// naming the first bad block in file order, and frees what the upload had placed.
TEST_F(VkLoad, NonFiniteWeightFoundByTheUploadEndsTheLoad) {
    test::TinyModel m = test::TinyModel::make(GgmlType::Q4_0, 512, 1024);
    // Two bad blocks: in blk.0.ffn_up (block 700: row 43) and, later in the file, ffn_down.
    test::set_u16(m.tensor("blk.0.ffn_up.weight").bytes, 700 * sizeof(BlockQ4_0), test::kF16Inf);
    test::set_u16(m.tensor("blk.0.ffn_down.weight").bytes, 5 * sizeof(BlockQ4_0), test::kF16NaN);
    const std::string path = m.write("nan-upload.gguf");
    const uint64_t before = device_bytes();
    auto model = Model::load(path, vk_params());
    ASSERT_FALSE(model.ok()) << "loaded although a weight is Inf";
    EXPECT_EQ(model.error().code, "model.nonfinite_weights") << model.error().message;
    for (const char* s : {"'blk.0.ffn_up.weight' (Q4_0)", "Inf", "scale d of block 700", "row 43"})
        EXPECT_NE(model.error().message.find(s), std::string::npos) << model.error().message;
    EXPECT_NE(model.error().message.find(path), std::string::npos) << model.error().message;
    EXPECT_EQ(device_bytes(), before) << "device memory of the refused load leaked";
}

}  // namespace
}  // namespace ember::vulkan

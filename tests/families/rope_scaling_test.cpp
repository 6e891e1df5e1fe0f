// YaRN, Phi-3's LongRoPE and key_length != value_length on the CPU, against a float64 forward
// pass written here from the formulas: Hugging Face's rope frequencies for YaRN
// (_compute_yarn_parameters) and LongRoPE (_compute_longrope_parameters), with llama.cpp's
// choices where the two differ (the long or short factors are picked once per session by its
// context length, not per sequence length; YaRN's ext_factor weighs the ramp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cpu/backend_cpu.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/llama.h"
#include "session/memory.h"
#include "test_util.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

namespace fs = std::filesystem;

namespace {

using namespace ember;
using Vec = std::vector<double>;

// A tiny model: the architecture decides the layout (qwen2: q/k/v biases, NEOX pairs; phi3:
// fused qkv and gate/up, NEOX; llama: adjacent pairs); the rest is the rope under test.
struct Spec {
    std::string arch = "qwen2";
    int E = 32, H = 4, KVH = 2, HDK = 8, HDV = 8, F = 48, V = 64, L = 2, n_rot = 8;
    bool write_head_keys = false;  // attention.key_length / value_length / rope.dimension_count
    uint32_t ctx_train = 16384;
    double base = 10000.0;
    std::string type;        // rope.scaling.type ("" : absent)
    double factor = 0.0;     // rope.scaling.factor (0: absent)
    uint32_t orig_ctx = 0;   // rope.scaling.original_context_length (0: absent)
    double attn_factor = 0;  // rope.scaling.attn_factor (0: absent)
    std::optional<double> ext, beta_fast, beta_slow;  // rope.scaling.yarn_*
    bool longrope = false;                            // rope_factors_long/short tensors
};

struct Layer {
    Vec attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, gate, up, down;  // row-major [out][in]
};
struct Weights {
    Vec embd, out, out_norm, long_f, short_f;
    std::vector<Layer> layers;
};

// Values the file stores as F32, kept as the doubles they round to.
Vec randv(std::mt19937& rng, size_t n, double center, double spread) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    Vec v(n);
    for (double& x : v) x = double(float(center + spread * u(rng)));
    return v;
}

Weights make_weights(const Spec& s, uint32_t seed) {
    std::mt19937 rng(seed);
    const size_t QD = size_t(s.H) * s.HDK, KVD = size_t(s.KVH) * s.HDK, VD = size_t(s.KVH) * s.HDV;
    const size_t AD = size_t(s.H) * s.HDV;
    const double in = 1.0 / std::sqrt(double(s.E));
    Weights w;
    w.embd = randv(rng, size_t(s.V) * s.E, 0.0, 1.0);
    for (int l = 0; l < s.L; l++) {
        Layer L;
        L.attn_norm = randv(rng, s.E, 1.0, 0.1);
        L.wq = randv(rng, QD * s.E, 0.0, in);
        L.wk = randv(rng, KVD * s.E, 0.0, in);
        L.wv = randv(rng, VD * s.E, 0.0, in);
        if (s.arch == "qwen2") {
            L.bq = randv(rng, QD, 0.0, 0.1);
            L.bk = randv(rng, KVD, 0.0, 0.1);
            L.bv = randv(rng, VD, 0.0, 0.1);
        }
        L.wo = randv(rng, size_t(s.E) * AD, 0.0, 1.0 / std::sqrt(double(AD)));
        L.ffn_norm = randv(rng, s.E, 1.0, 0.1);
        L.gate = randv(rng, size_t(s.F) * s.E, 0.0, in);
        L.up = randv(rng, size_t(s.F) * s.E, 0.0, in);
        L.down = randv(rng, size_t(s.E) * s.F, 0.0, 1.0 / std::sqrt(double(s.F)));
        w.layers.push_back(std::move(L));
    }
    w.out_norm = randv(rng, s.E, 1.0, 0.1);
    w.out = randv(rng, size_t(s.V) * s.E, 0.0, in);
    if (s.longrope) {
        // Rising like Phi-3.5's: short 1..3, long 1..40.
        for (int i = 0; i < s.n_rot / 2; i++) {
            const double x = double(i) / (s.n_rot / 2 - 1);
            w.short_f.push_back(double(float(1.0 + 2.0 * x * x)));
            w.long_f.push_back(double(float(1.0 + 39.0 * x * x)));
        }
    }
    return w;
}

std::vector<uint8_t> f32_bytes(const Vec& v) {
    std::vector<uint8_t> b(v.size() * 4);
    for (size_t i = 0; i < v.size(); i++) {
        const float f = float(v[i]);
        std::memcpy(&b[i * 4], &f, 4);
    }
    return b;
}
Vec concat(std::initializer_list<const Vec*> parts) {
    Vec r;
    for (const Vec* p : parts) r.insert(r.end(), p->begin(), p->end());
    return r;
}

void write_model(const Spec& s, const Weights& w, const std::string& path) {
    gguf::Writer g;
    const std::string A = s.arch + ".";
    g.set_string("general.architecture", s.arch);
    g.set_u32(A + "block_count", s.L);
    g.set_u32(A + "context_length", s.ctx_train);
    g.set_u32(A + "embedding_length", s.E);
    g.set_u32(A + "feed_forward_length", s.F);
    g.set_u32(A + "attention.head_count", s.H);
    g.set_u32(A + "attention.head_count_kv", s.KVH);
    g.set_f32(A + "rope.freq_base", float(s.base));
    g.set_f32(A + "attention.layer_norm_rms_epsilon", 1e-5f);
    if (s.write_head_keys) {
        g.set_u32(A + "attention.key_length", s.HDK);
        g.set_u32(A + "attention.value_length", s.HDV);
        g.set_u32(A + "rope.dimension_count", s.n_rot);
    }
    if (!s.type.empty()) g.set_string(A + "rope.scaling.type", s.type);
    if (s.factor > 0) g.set_f32(A + "rope.scaling.factor", float(s.factor));
    if (s.orig_ctx) g.set_u32(A + "rope.scaling.original_context_length", s.orig_ctx);
    if (s.attn_factor > 0) g.set_f32(A + "rope.scaling.attn_factor", float(s.attn_factor));
    if (s.ext) g.set_f32(A + "rope.scaling.yarn_ext_factor", float(*s.ext));
    if (s.beta_fast) g.set_f32(A + "rope.scaling.yarn_beta_fast", float(*s.beta_fast));
    if (s.beta_slow) g.set_f32(A + "rope.scaling.yarn_beta_slow", float(*s.beta_slow));
    auto t = [&](const std::string& name, const Vec& v, uint64_t cols) {
        g.add_tensor(name, GgmlType::F32, {cols, v.size() / cols}, f32_bytes(v));
    };
    t("token_embd.weight", w.embd, s.E);
    t("output_norm.weight", w.out_norm, s.E);
    t("output.weight", w.out, s.E);
    if (!w.long_f.empty()) t("rope_factors_long.weight", w.long_f, w.long_f.size());
    if (!w.short_f.empty()) t("rope_factors_short.weight", w.short_f, w.short_f.size());
    for (int l = 0; l < s.L; l++) {
        const Layer& L = w.layers[size_t(l)];
        const std::string p = "blk." + std::to_string(l) + ".";
        t(p + "attn_norm.weight", L.attn_norm, s.E);
        if (s.arch == "phi3") {
            t(p + "attn_qkv.weight", concat({&L.wq, &L.wk, &L.wv}), s.E);
        } else {
            t(p + "attn_q.weight", L.wq, s.E);
            t(p + "attn_k.weight", L.wk, s.E);
            t(p + "attn_v.weight", L.wv, s.E);
        }
        if (!L.bq.empty()) {
            t(p + "attn_q.bias", L.bq, L.bq.size());
            t(p + "attn_k.bias", L.bk, L.bk.size());
            t(p + "attn_v.bias", L.bv, L.bv.size());
        }
        t(p + "attn_output.weight", L.wo, size_t(s.H) * s.HDV);
        t(p + "ffn_norm.weight", L.ffn_norm, s.E);
        if (s.arch == "phi3") {
            t(p + "ffn_up.weight", concat({&L.gate, &L.up}), s.E);  // gate rows, then up
        } else {
            t(p + "ffn_gate.weight", L.gate, s.E);
            t(p + "ffn_up.weight", L.up, s.E);
        }
        t(p + "ffn_down.weight", L.down, s.F);
    }
    ASSERT_TRUE(g.write(path).ok());
}

// --- The float64 reference ---

// Hugging Face's inverse frequencies [n_rot/2] and attention factor for a session of n_ctx.
struct RopeRef {
    Vec inv_freq;
    double attention_factor = 1.0;
};
RopeRef rope_ref(const Spec& s, const Weights& w, int n_ctx) {
    const int half = s.n_rot / 2;
    RopeRef r;
    r.inv_freq.resize(size_t(half));
    const uint32_t orig = s.orig_ctx ? s.orig_ctx : s.ctx_train;
    if (s.type == "yarn") {
        // find_correction_dim / find_correction_range / linear_ramp_factor
        auto corr = [&](double beta) {
            return s.n_rot * std::log(orig / (beta * 2 * M_PI)) / (2 * std::log(s.base));
        };
        const double low = std::max(0.0, std::floor(corr(s.beta_fast.value_or(32.0))));
        double high = std::min(double(s.n_rot - 1), std::ceil(corr(s.beta_slow.value_or(1.0))));
        if (low == high) high += 0.001;
        for (int i = 0; i < half; i++) {
            const double pos_freq = std::pow(s.base, 2.0 * i / s.n_rot);
            const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
            const double extrap = (1.0 - ramp) * s.ext.value_or(1.0);
            r.inv_freq[size_t(i)] =
                1.0 / (s.factor * pos_freq) * (1.0 - extrap) + 1.0 / pos_freq * extrap;
        }
        r.attention_factor = 0.1 * std::log(s.factor) + 1.0;
        if (s.attn_factor > 0) r.attention_factor *= s.attn_factor;
        return r;
    }
    const Vec* ext = nullptr;
    if (s.longrope) ext = uint32_t(n_ctx) > orig ? &w.long_f : &w.short_f;
    for (int i = 0; i < half; i++)
        r.inv_freq[size_t(i)] =
            1.0 / ((ext ? (*ext)[size_t(i)] : 1.0) * std::pow(s.base, 2.0 * i / s.n_rot));
    if (s.attn_factor > 0) r.attention_factor = s.attn_factor;
    return r;
}

Vec matvec(const Vec& W, const Vec& x, size_t rows) {
    const size_t cols = x.size();
    Vec y(rows, 0.0);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) y[r] += W[r * cols + c] * x[c];
    return y;
}
Vec rmsnorm(const Vec& x, const Vec& w) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double k = 1.0 / std::sqrt(ss / x.size() + 1e-5);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * k * w[i];
    return y;
}
void add_to(Vec& y, const Vec& x) {
    for (size_t i = 0; i < y.size(); i++) y[i] += x[i];
}

// Rotates the first n_rot dims of each head of size hd in place: NEOX pairs (i, i + half) as
// Hugging Face's rotate_half, or adjacent pairs for llama (the converter permutes its rows).
void apply_rope(const Spec& s, const RopeRef& r, Vec& x, int hd, int pos) {
    const int half = s.n_rot / 2;
    const bool neox = s.arch != "llama";
    for (size_t h = 0; h < x.size() / size_t(hd); h++)
        for (int i = 0; i < half; i++) {
            const double th = pos * r.inv_freq[size_t(i)];
            const double c = std::cos(th) * r.attention_factor;
            const double sn = std::sin(th) * r.attention_factor;
            double& a = x[h * hd + size_t(neox ? i : 2 * i)];
            double& b = x[h * hd + size_t(neox ? i + half : 2 * i + 1)];
            const double a0 = a, b0 = b;
            a = a0 * c - b0 * sn;
            b = a0 * sn + b0 * c;
        }
}

// Logits [T][V] of every position of `tokens` in a session of n_ctx.
std::vector<Vec> reference_logits(const Spec& s, const Weights& w, const std::vector<int>& tokens,
                                  int n_ctx) {
    const RopeRef r = rope_ref(s, w, n_ctx);
    const size_t T = tokens.size(), E = size_t(s.E);
    std::vector<Vec> x(T);
    for (size_t t = 0; t < T; t++)
        x[t] =
            Vec(w.embd.begin() + long(tokens[t] * E), w.embd.begin() + long((tokens[t] + 1) * E));
    const int group = s.H / s.KVH;
    for (const Layer& L : w.layers) {
        std::vector<Vec> q(T), k(T), v(T);
        for (size_t t = 0; t < T; t++) {
            const Vec xn = rmsnorm(x[t], L.attn_norm);
            q[t] = matvec(L.wq, xn, size_t(s.H) * s.HDK);
            k[t] = matvec(L.wk, xn, size_t(s.KVH) * s.HDK);
            v[t] = matvec(L.wv, xn, size_t(s.KVH) * s.HDV);
            if (!L.bq.empty()) add_to(q[t], L.bq), add_to(k[t], L.bk), add_to(v[t], L.bv);
            apply_rope(s, r, q[t], s.HDK, int(t));
            apply_rope(s, r, k[t], s.HDK, int(t));
        }
        for (size_t t = 0; t < T; t++) {
            Vec att(size_t(s.H) * s.HDV, 0.0);
            for (int h = 0; h < s.H; h++) {
                const int kvh = h / group;
                Vec sc(t + 1);
                double mx = -INFINITY;
                for (size_t j = 0; j <= t; j++) {
                    double d = 0;
                    for (int e = 0; e < s.HDK; e++)
                        d += q[t][size_t(h * s.HDK + e)] * k[j][size_t(kvh * s.HDK + e)];
                    sc[j] = d / std::sqrt(double(s.HDK));
                    mx = std::max(mx, sc[j]);
                }
                double sum = 0;
                for (double& e : sc) sum += (e = std::exp(e - mx));
                for (size_t j = 0; j <= t; j++)
                    for (int e = 0; e < s.HDV; e++)
                        att[size_t(h * s.HDV + e)] += sc[j] / sum * v[j][size_t(kvh * s.HDV + e)];
            }
            add_to(x[t], matvec(L.wo, att, E));
        }
        for (size_t t = 0; t < T; t++) {
            const Vec xn = rmsnorm(x[t], L.ffn_norm);
            Vec g = matvec(L.gate, xn, size_t(s.F));
            const Vec u = matvec(L.up, xn, size_t(s.F));
            for (size_t i = 0; i < g.size(); i++) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            add_to(x[t], matvec(L.down, g, E));
        }
    }
    std::vector<Vec> logits(T);
    for (size_t t = 0; t < T; t++)
        logits[t] = matvec(w.out, rmsnorm(x[t], w.out_norm), size_t(s.V));
    return logits;
}

// --- The test ---

class RopeScaling : public ::testing::Test {
protected:
    void SetUp() override {
        dir = ember::test::temp_dir() /
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }

    // Writes the model, runs a 5-token prompt in one batch then 3 tokens one by one in a
    // session of n_ctx, and compares every last-position logit with the reference.
    void expect_matches_reference(const Spec& s, int n_ctx, uint32_t seed = 7) {
        const Weights w = make_weights(s, seed);
        const std::string path = (dir / ("model-" + std::to_string(n_ctx) + ".gguf")).string();
        write_model(s, w, path);
        auto file = ember::gguf::File::open(path);
        ASSERT_TRUE(file.ok()) << file.error().message;
        auto model = ember::load_model(**file);
        ASSERT_TRUE(model.ok()) << model.error().message;
        auto backend = ember::cpu::create_backend_model(*model, 2);
        ASSERT_TRUE(backend.ok()) << backend.error().message;
        auto runner = (*backend)->create_runner(n_ctx);
        ASSERT_TRUE(runner.ok()) << runner.error().message;

        const std::vector<int> tokens = {1, 17, 42, 5, 63, 28, 9, 33};
        const auto want = reference_logits(s, w, tokens, n_ctx);
        std::vector<float> got(size_t(s.V));
        const int prompt = 5;
        for (int done = 0; done < int(tokens.size());) {
            const int n = done == 0 ? prompt : 1;
            std::vector<int32_t> batch(tokens.begin() + done, tokens.begin() + done + n);
            ASSERT_TRUE((*runner)->forward(batch, done, got.data()).ok());
            done += n;
            double max_abs = 0;
            for (int i = 0; i < s.V; i++)
                max_abs =
                    std::max(max_abs, std::abs(got[size_t(i)] - want[size_t(done - 1)][size_t(i)]));
            EXPECT_LE(max_abs, 1e-4) << "position " << done - 1;
        }
#ifdef EMBER_HAVE_VULKAN
        // The Vulkan backend runs the rope scalings (tests/vulkan_e2e compares it with the CPU)
        // but not value heads of another size than the keys: those it must refuse rather than
        // run wrong.
        ember::Status st = ember::vulkan::check_model_supported(*model);
        EXPECT_EQ(st.ok(), s.HDK == s.HDV);
#endif
    }

    fs::path dir;
};

// Qwen 2.5's long context: YaRN factor 4 from an original context of 4096 (config.json's
// rope_scaling {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": ...}).
TEST_F(RopeScaling, Qwen2YarnMatchesReference) {
    Spec s;
    s.type = "yarn";
    s.factor = 4.0;
    s.orig_ctx = 4096;
    expect_matches_reference(s, 64);
}

// YaRN's optional keys, partial rotary and adjacent pairs (llama), with value heads larger
// than key heads.
TEST_F(RopeScaling, LlamaYarnKeysAndValueLengthMatchReference) {
    Spec s;
    s.arch = "llama";
    s.write_head_keys = true;
    s.HDK = 8, s.HDV = 12, s.n_rot = 6;
    s.type = "yarn";
    s.factor = 2.0;
    s.orig_ctx = 2048;
    s.ext = 0.5;
    s.beta_fast = 16.0;
    s.beta_slow = 2.0;
    s.attn_factor = 0.9;
    expect_matches_reference(s, 64);
}

// key_length != value_length without any rope scaling, value heads smaller.
TEST_F(RopeScaling, QwenValueHeadsSmallerThanKeyHeads) {
    Spec s;
    s.write_head_keys = true;
    s.HDK = 12, s.HDV = 6, s.n_rot = 12;
    expect_matches_reference(s, 32);
}

// The CPU's memory estimate sizes the V half of the KV cache and the value buffers by the value
// heads (attention.value_length), not by the key heads: smaller and larger both.
TEST_F(RopeScaling, CpuMemoryNeedCountsValueHeadsOfTheirOwnSize) {
    for (const int hdv : {6, 20}) {
        Spec s;
        s.write_head_keys = true;
        s.HDK = 12, s.HDV = hdv, s.n_rot = 12;
        const std::string path = (dir / ("v" + std::to_string(hdv) + ".gguf")).string();
        write_model(s, make_weights(s, 1), path);
        auto file = ember::gguf::File::open(path);
        ASSERT_TRUE(file.ok()) << file.error().message;
        auto model = ember::load_model(**file);
        ASSERT_TRUE(model.ok()) << model.error().message;
        ASSERT_EQ(model->hp.v_head(), uint32_t(hdv));
        const int n_ctx = 100;
        const ember::CpuMemoryNeed need = ember::cpu_runtime_need(model->hp, n_ctx, 1);
        // [n_layer][n_ctx][KVH * HDK] F32 keys and [n_layer][n_ctx][KVH * HDV] F32 values.
        const uint64_t want = uint64_t(s.L) * n_ctx * s.KVH * (s.HDK + s.HDV) * sizeof(float);
        EXPECT_EQ(need.kv_cache, want) << "HDV " << hdv;
        // The buffers grow with the value heads too: the same model with HDV = HDK needs
        // (HDK - HDV) * (KVH + H) floats a token less or more.
        LlamaHParams same = model->hp;
        same.head_dim_v = same.head_dim;
        const ember::CpuMemoryNeed base = ember::cpu_runtime_need(same, n_ctx, 1);
        const int64_t per_token = int64_t(s.HDV - s.HDK) * (s.KVH + s.H);
        EXPECT_EQ(int64_t(need.buffers) - int64_t(base.buffers),
                  per_token * n_ctx * int64_t(sizeof(float)))
            << "HDV " << hdv;
    }
}

// Phi-3.5 mini's LongRoPE: the short factors while the session's context fits the original
// one, the long ones beyond it, and the converter's attention factor
// sqrt(1 + ln(ctx / orig) / ln(orig)) either way.
TEST_F(RopeScaling, Phi3LongRopeShortAndLongFactors) {
    Spec s;
    s.arch = "phi3";
    s.KVH = 4;  // Phi-3 mini has no grouped-query attention
    s.longrope = true;
    s.ctx_train = 128;
    s.orig_ctx = 32;
    s.attn_factor = std::sqrt(1.0 + std::log(128.0 / 32.0) / std::log(32.0));
    expect_matches_reference(s, 32);  // = orig: short
    expect_matches_reference(s, 64);  // > orig: long
}

TEST_F(RopeScaling, LongRopeNeedsBothFactorTensors) {
    Spec s;
    s.arch = "phi3";
    s.KVH = 4;
    s.longrope = true;
    s.orig_ctx = 32;
    Weights w = make_weights(s, 1);
    w.short_f.clear();
    const std::string path = (dir / "long-only.gguf").string();
    write_model(s, w, path);
    auto f2 = ember::gguf::File::open(path);
    ASSERT_TRUE(f2.ok());
    auto m = ember::load_model(**f2);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code, "model.missing_tensor");
    EXPECT_NE(m.error().message.find("rope_factors_short.weight"), std::string::npos)
        << m.error().message;
}

TEST_F(RopeScaling, UnknownScalingTypeIsRefusedByName) {
    Spec s;
    s.type = "dynamic";
    s.factor = 2.0;
    const Weights w = make_weights(s, 1);
    const std::string path = (dir / "dynamic.gguf").string();
    write_model(s, w, path);
    auto f = ember::gguf::File::open(path);
    ASSERT_TRUE(f.ok());
    auto m = ember::load_model(**f);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code, "model.unsupported_feature");
    EXPECT_NE(m.error().message.find("'dynamic'"), std::string::npos) << m.error().message;
}

}  // namespace

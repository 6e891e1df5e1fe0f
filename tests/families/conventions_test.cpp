// The conventions of ../shared/models/arch/README.md that no key states, or that hold when a key
// is absent, read from metadata alone (read_hparams), for values other than the reference
// models': so that files of other shapes and layer counts get them too. Each file here is only
// metadata (no tensors).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/hparams.h"

namespace ember {
namespace {

// The hyperparameters of a file of `arch` with these sizes, then whatever `more` writes.
Result<LlamaHParams> hparams_of(const std::string& arch, uint32_t embd, uint32_t layers,
                                uint32_t heads, uint32_t kv_heads,
                                const std::function<void(gguf::Writer&)>& more = {}) {
    gguf::Writer w;
    const std::string A = arch + ".";
    w.set_string("general.architecture", arch);
    w.set_u32(A + "embedding_length", embd);
    w.set_u32(A + "block_count", layers);
    w.set_u32(A + "attention.head_count", heads);
    w.set_u32(A + "attention.head_count_kv", kv_heads);
    w.set_u32(A + "feed_forward_length", 2 * embd);
    w.set_f32(A + "attention.layer_norm_rms_epsilon", 1e-6f);
    if (more) more(w);
    EMBER_ASSIGN_OR_RETURN(auto bytes, w.to_bytes());
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::from_bytes(std::move(bytes), arch));
    return read_hparams(*file);
}

float inv_sqrt(float d) {
    return 1.0f / std::sqrt(d);
}

// Gemma 2 as the converter writes it: no rope.freq_base (10000), soft-caps and window given or
// their defaults (50, 30, 4096); even layers slide; the scale is 1/sqrt(key_length).
TEST(FamilyConventions, Gemma2) {
    auto hp = hparams_of("gemma2", 96, 5, 3, 1, [](gguf::Writer& w) {
        w.set_u32("gemma2.attention.key_length", 48);
        w.set_u32("gemma2.attention.value_length", 48);
        w.set_u32("gemma2.attention.sliding_window", 7);
        w.set_f32("gemma2.attn_logit_softcapping", 20.0f);
        w.set_f32("gemma2.final_logit_softcapping", 15.0f);
    });
    ASSERT_TRUE(hp.ok()) << hp.error().message;
    EXPECT_EQ(hp->head_dim, 48u);
    EXPECT_EQ(hp->n_rot, 48u);
    EXPECT_FLOAT_EQ(hp->attention_scale(), inv_sqrt(48));
    EXPECT_FLOAT_EQ(hp->attn_softcap, 20.0f);
    EXPECT_FLOAT_EQ(hp->final_softcap, 15.0f);
    EXPECT_FLOAT_EQ(hp->rope_freq_base, 10000.0f);
    EXPECT_EQ(hp->n_swa, 7u);
    for (uint32_t l = 0; l < 5; ++l) {
        EXPECT_EQ(hp->layer_hp(l).swa, l % 2 == 0) << "layer " << l;
        EXPECT_FLOAT_EQ(hp->layer_hp(l).rope_base, 10000.0f) << "layer " << l;
    }

    auto d = hparams_of("gemma2", 64, 2, 2, 2);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_FLOAT_EQ(d->attn_softcap, 50.0f);
    EXPECT_FLOAT_EQ(d->final_softcap, 30.0f);
    EXPECT_EQ(d->n_swa, 4096u);
    EXPECT_EQ(d->head_dim, 32u);  // no key_length: embedding / heads
}

// Gemma 2 27B (46 layers) and Gemma 3 27B (62): the scale is 1/sqrt(n_embd / n_head), as
// llama.cpp decides it; any other layer count keeps 1/sqrt(key_length).
TEST(FamilyConventions, Gemma27BScale) {
    for (const auto& [arch, layers] : {std::pair<std::string, uint32_t>{"gemma2", 46},
                                       std::pair<std::string, uint32_t>{"gemma3", 62}}) {
        for (const uint32_t n : {layers, layers - 1}) {
            auto hp = hparams_of(arch, 5376, n, 32, 16, [&](gguf::Writer& w) {
                w.set_u32(arch + ".attention.key_length", 128);
                w.set_u32(arch + ".attention.value_length", 128);
                w.set_u32(arch + ".attention.sliding_window", 4096);
            });
            ASSERT_TRUE(hp.ok()) << hp.error().message;
            EXPECT_FLOAT_EQ(hp->attention_scale(), inv_sqrt(n == layers ? 168 : 128))
                << arch << " " << n << " layers";
        }
    }
}

// Gemma 3: layer il slides iff il % 6 < 5, at rope.freq_base_swa (10000 when absent) without
// the scaling; the global layers at rope.freq_base with it. No soft-caps even where keys say.
// A file without attention.sliding_window is refused.
TEST(FamilyConventions, Gemma3) {
    auto hp = hparams_of("gemma3", 64, 13, 4, 1, [](gguf::Writer& w) {
        w.set_u32("gemma3.attention.key_length", 32);
        w.set_u32("gemma3.attention.value_length", 32);
        w.set_u32("gemma3.attention.sliding_window", 9);
        w.set_f32("gemma3.rope.freq_base", 1e6f);
        w.set_string("gemma3.rope.scaling.type", "linear");
        w.set_f32("gemma3.rope.scaling.factor", 8.0f);
        w.set_f32("gemma3.attn_logit_softcapping", 20.0f);
    });
    ASSERT_TRUE(hp.ok()) << hp.error().message;
    EXPECT_EQ(hp->n_swa, 9u);
    EXPECT_FLOAT_EQ(hp->attention_scale(), inv_sqrt(32));
    EXPECT_EQ(hp->attn_softcap, 0.0f);
    EXPECT_EQ(hp->final_softcap, 0.0f);
    for (uint32_t l = 0; l < 13; ++l) {
        const LayerHParams lh = hp->layer_hp(l);
        const bool local = l % 6 < 5;
        EXPECT_EQ(lh.swa, local) << "layer " << l;
        EXPECT_FLOAT_EQ(lh.rope_base, local ? 10000.0f : 1e6f) << "layer " << l;
        EXPECT_FLOAT_EQ(lh.rope_freq_scale, local ? 1.0f : 0.125f) << "layer " << l;
    }

    auto base = hparams_of("gemma3", 64, 6, 4, 1, [](gguf::Writer& w) {
        w.set_u32("gemma3.attention.sliding_window", 512);
        w.set_f32("gemma3.rope.freq_base_swa", 20000.0f);
    });
    ASSERT_TRUE(base.ok()) << base.error().message;
    EXPECT_FLOAT_EQ(base->layer_hp(0).rope_base, 20000.0f);
    EXPECT_FLOAT_EQ(base->layer_hp(5).rope_base, 10000.0f);  // no rope.freq_base: the default

    auto none = hparams_of("gemma3", 64, 6, 4, 1);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().code, "model.missing_key");
}

// Qwen 2 and 3, Mistral and Llama: no layer slides whatever attention.sliding_window says
// (llama.cpp ignores it there); the head size is key_length where given (Mistral Nemo, Qwen 3),
// else embedding / heads; rope.dimension_count defaults to the head size.
TEST(FamilyConventions, NoWindowAndHeadSizes) {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
        auto hp = hparams_of(arch, 96, 3, 4, 2, [&](gguf::Writer& w) {
            w.set_u32(std::string(arch) + ".attention.sliding_window", 4);
        });
        ASSERT_TRUE(hp.ok()) << hp.error().message;
        EXPECT_EQ(hp->n_swa, 0u) << arch;
        for (uint32_t l = 0; l < 3; ++l) EXPECT_FALSE(hp->layer_hp(l).swa) << arch;
        EXPECT_EQ(hp->head_dim, 24u) << arch;
        EXPECT_EQ(hp->n_rot, 24u) << arch;
        EXPECT_FLOAT_EQ(hp->attention_scale(), inv_sqrt(24)) << arch;
    }
    auto mistral = hparams_of("llama", 96, 3, 4, 2, [](gguf::Writer& w) {
        w.set_u32("llama.attention.key_length", 32);
        w.set_u32("llama.attention.value_length", 32);
        w.set_u32("llama.rope.dimension_count", 32);
    });
    ASSERT_TRUE(mistral.ok()) << mistral.error().message;
    EXPECT_EQ(mistral->head_dim, 32u);
    EXPECT_EQ(mistral->n_rot, 32u);
    EXPECT_FLOAT_EQ(mistral->attention_scale(), inv_sqrt(32));
    auto qwen3 = hparams_of("qwen3", 96, 3, 4, 2, [](gguf::Writer& w) {
        w.set_u32("qwen3.attention.key_length", 48);
        w.set_u32("qwen3.attention.value_length", 48);
    });
    ASSERT_TRUE(qwen3.ok()) << qwen3.error().message;
    EXPECT_EQ(qwen3->head_dim, 48u);
    EXPECT_FLOAT_EQ(qwen3->attention_scale(), inv_sqrt(48));
}

// Phi-3: every layer slides when attention.sliding_window is positive (2047 in Phi-3-mini
// files); 0 (Phi-4's) means none. Partial rotary from rope.dimension_count.
TEST(FamilyConventions, Phi3) {
    for (const uint32_t window : {2047u, 5u, 0u}) {
        auto hp = hparams_of("phi3", 96, 3, 4, 4, [&](gguf::Writer& w) {
            w.set_u32("phi3.attention.sliding_window", window);
            w.set_u32("phi3.rope.dimension_count", 16);
        });
        ASSERT_TRUE(hp.ok()) << hp.error().message;
        EXPECT_EQ(hp->n_swa, window);
        for (uint32_t l = 0; l < 3; ++l) EXPECT_EQ(hp->layer_hp(l).swa, window > 0) << window;
        EXPECT_EQ(hp->head_dim, 24u);
        EXPECT_EQ(hp->n_rot, 16u);
    }
}

}  // namespace
}  // namespace ember

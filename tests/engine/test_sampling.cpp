#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ember/ember.h"

namespace {

std::vector<float> ramp(int n) {
    std::vector<float> l(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) l[size_t(i)] = float(i) * 0.1f;
    return l;
}

TEST(Sampling, GreedyPicksMax) {
    ember::SamplingParams p;
    p.temperature = 0;
    p.repeat_penalty = 1.0f;
    ember::Sampler s(p, 100);
    auto l = ramp(100);
    l[42] = 100;
    EXPECT_EQ(s.sample(l), 42);
}

TEST(Sampling, SeedIsReproducible) {
    ember::SamplingParams p;
    p.temperature = 1.5f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0;
    p.seed = 7;
    auto l = ramp(50);
    std::vector<int32_t> a, b, c;
    ember::Sampler s1(p, 50), s2(p, 50);
    p.seed = 8;
    ember::Sampler s3(p, 50);
    for (int i = 0; i < 64; i++) a.push_back(s1.sample(l)), b.push_back(s2.sample(l)), c.push_back(s3.sample(l));
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
}

TEST(Sampling, TopKRestricts) {
    ember::SamplingParams p;
    p.temperature = 5.0f;
    p.top_k = 3;
    p.top_p = 1.0f;
    p.min_p = 0;
    p.repeat_penalty = 1.0f;
    ember::Sampler s(p, 100);
    auto l = ramp(100);
    for (int i = 0; i < 500; i++) EXPECT_GE(s.sample(l), 97);
}

TEST(Sampling, TopPRestricts) {
    ember::SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 0.5f;
    p.min_p = 0;
    p.repeat_penalty = 1.0f;
    ember::Sampler s(p, 4);
    // Probabilities ~ 0.6, 0.3, 0.07, 0.03: top-p 0.5 keeps only the first.
    std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.07f), std::log(0.03f)};
    for (int i = 0; i < 200; i++) EXPECT_EQ(s.sample(l), 0);
}

TEST(Sampling, MinPRestricts) {
    ember::SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.4f;
    p.repeat_penalty = 1.0f;
    ember::Sampler s(p, 4);
    std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    std::map<int, int> seen;
    for (int i = 0; i < 400; i++) seen[s.sample(l)]++;
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[1], 0);
    EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
}

TEST(Sampling, RepeatPenaltyWindow) {
    ember::SamplingParams p;
    p.temperature = 0;
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 2;
    ember::Sampler s(p, 3);
    std::vector<float> l = {3.0f, 2.0f, 1.0f};
    EXPECT_EQ(s.sample(l), 0);
    s.accept(0);  // 3.0 -> 1.5: token 1 wins
    EXPECT_EQ(s.sample(l), 1);
    s.accept(1);  // both penalized: 1.5, 1.0, 1.0
    EXPECT_EQ(s.sample(l), 0);
    s.accept(2);
    s.accept(2);  // window of 2 holds only token 2 now: token 0 is free again
    EXPECT_EQ(s.sample(l), 0);
    std::vector<float> neg = {-1.0f, -1.5f, -3.0f};
    s.reset();
    s.accept(0);  // negative logits are multiplied: -1 -> -2
    EXPECT_EQ(s.sample(neg), 1);
}

}  // namespace

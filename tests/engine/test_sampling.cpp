#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "ember/ember.h"
#include "sampling/argmax.h"

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
    for (int i = 0; i < 64; i++)
        a.push_back(s1.sample(l)), b.push_back(s2.sample(l)), c.push_back(s3.sample(l));
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

// A vocabulary-sized draw: top-k must hold exactly the k largest logits (ties to the lower
// id), whatever the order they come in, and greedy the first largest.
TEST(Sampling, TopKOfAVocabularyMatchesASort) {
    const int n = 32000, k = 40;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    std::vector<float> l(static_cast<size_t>(n));
    // Whole numbers, so that many logits tie, some of them at the cut.
    for (auto& v : l) v = std::round(nd(rng));
    std::vector<int32_t> order(static_cast<size_t>(n));
    auto sort_order = [&] {
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
    };
    sort_order();
    // The last logits tie the k-th: they come after it and rank after it.
    for (int i = n - 3; i < n; i++) l[size_t(i)] = l[size_t(order[k - 1])];
    sort_order();
    const std::set<int32_t> want(order.begin(), order.begin() + k);
    ASSERT_EQ(l[size_t(order[k - 1])], l[size_t(order[k])]) << "the cut should fall in a tie";
    ASSERT_FALSE(want.count(n - 1));

    ember::SamplingParams p;
    p.temperature = 1000.0f;  // about uniform over the candidates
    p.top_k = k;
    p.top_p = 1.0f;
    p.min_p = 0;
    p.repeat_penalty = 1.0f;
    ember::Sampler s(p, n);
    std::set<int32_t> seen;
    for (int i = 0; i < 3000; i++) {
        const int32_t t = s.sample(l);
        ASSERT_TRUE(want.count(t)) << "token " << t << " is not among the " << k << " largest";
        seen.insert(t);
    }
    EXPECT_EQ(seen, want);

    p.temperature = 0;
    ember::Sampler g(p, n);
    EXPECT_EQ(g.sample(l), order[0]);
}

// The shared greedy pick (sampler and Session::eval_argmax) answers as std::max_element did:
// the first of tied maxima, wherever they fall against its 8-wide compares.
TEST(Sampling, ArgmaxTakesTheFirstLargest) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> small(-4, 4);
    for (int n = 1; n <= 70; n++) {
        for (int trial = 0; trial < 20; trial++) {
            std::vector<float> l(static_cast<size_t>(n));
            for (auto& v : l) v = float(small(rng));  // many ties
            if (trial == 1) l.back() = 9.0f;          // the largest in the scalar tail
            if (trial == 2) l.front() = 9.0f;
            const auto want = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
            ASSERT_EQ(ember::argmax(l), want) << "n " << n << " trial " << trial;
        }
    }
    EXPECT_EQ(ember::argmax({}), 0);
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

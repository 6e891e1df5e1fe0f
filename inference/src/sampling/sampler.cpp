// Sampling: repetition penalty, then top-k, top-p, min-p and temperature, as llama.cpp orders them.
#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <random>

#include "ember/ember.h"

namespace ember {

struct Sampler::Impl {
    SamplingParams p;
    int n_vocab;
    std::mt19937_64 rng;
    std::deque<int32_t> recent;  // the last repeat_last_n accepted tokens
    std::vector<std::pair<float, int32_t>> cand;  // reused: nothing allocated per token
    std::vector<float> penalized;
    std::vector<int32_t> uniq;
    std::vector<float> probs;
};

Sampler::Sampler(const SamplingParams& params, int n_vocab)
    : m_impl(new Impl{params, n_vocab, std::mt19937_64(params.seed), {}, {}, {}, {}, {}}) {
    m_impl->cand.reserve(size_t(n_vocab));
    m_impl->penalized.reserve(size_t(n_vocab));
}

Sampler::~Sampler() = default;

bool Sampler::is_greedy() const { return m_impl->p.temperature <= 0.0f; }

void Sampler::reset() {
    m_impl->recent.clear();
    m_impl->rng.seed(m_impl->p.seed);
}

void Sampler::accept(int32_t token) {
    Impl& s = *m_impl;
    if (s.p.repeat_last_n <= 0) return;
    s.recent.push_back(token);
    while (int(s.recent.size()) > s.p.repeat_last_n) s.recent.pop_front();
}

int32_t Sampler::sample(std::span<const float> logits_in) {
    Impl& s = *m_impl;
    const SamplingParams& p = s.p;
    const int n = int(logits_in.size());

    // Repetition penalty (CTRL-style, as llama.cpp): shrink the logits of recent tokens.
    const float* logits = logits_in.data();
    if (p.repeat_penalty != 1.0f && !s.recent.empty()) {
        s.penalized.assign(logits_in.begin(), logits_in.end());
        // Each distinct recent token is penalized once, however often it occurred.
        s.uniq.assign(s.recent.begin(), s.recent.end());
        std::sort(s.uniq.begin(), s.uniq.end());
        s.uniq.erase(std::unique(s.uniq.begin(), s.uniq.end()), s.uniq.end());
        for (int32_t t : s.uniq) {
            if (t < 0 || t >= n) continue;
            float& l = s.penalized[size_t(t)];
            l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
        }
        logits = s.penalized.data();
    }

    if (p.temperature <= 0.0f) {
        return int32_t(std::max_element(logits, logits + n) - logits);
    }

    // Candidates sorted by logit, cut by top-k.
    s.cand.clear();
    for (int i = 0; i < n; i++) s.cand.emplace_back(logits[i], int32_t(i));
    int k = (p.top_k > 0 && p.top_k < n) ? p.top_k : n;
    std::partial_sort(s.cand.begin(), s.cand.begin() + k, s.cand.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    s.cand.resize(size_t(k));

    // Softmax over the candidates (unscaled, for top-p and min-p as llama.cpp does).
    const float max_l = s.cand[0].first;
    std::vector<float>& probs = s.probs;
    probs.resize(s.cand.size());
    double sum = 0;
    for (size_t i = 0; i < s.cand.size(); i++) {
        probs[i] = std::exp(s.cand[i].first - max_l);
        sum += probs[i];
    }
    for (auto& pr : probs) pr = float(pr / sum);

    // Top-p: keep the smallest prefix whose mass reaches top_p.
    size_t keep = s.cand.size();
    if (p.top_p < 1.0f) {
        double cum = 0;
        for (size_t i = 0; i < probs.size(); i++) {
            cum += probs[i];
            if (cum >= p.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    // Min-p: drop tokens less likely than min_p times the most likely one.
    if (p.min_p > 0.0f) {
        const float thresh = probs[0] * p.min_p;
        size_t i = 1;
        while (i < keep && probs[i] >= thresh) i++;
        keep = i;
    }
    s.cand.resize(keep);

    // Temperature, then draw.
    double total = 0;
    probs.resize(keep);
    for (size_t i = 0; i < keep; i++) {
        probs[i] = std::exp((s.cand[i].first - max_l) / p.temperature);
        total += probs[i];
    }
    std::uniform_real_distribution<double> u(0.0, total);
    double r = u(s.rng);
    for (size_t i = 0; i < keep; i++) {
        r -= probs[i];
        if (r <= 0) return s.cand[i].second;
    }
    return s.cand[keep - 1].second;
}

}  // namespace ember

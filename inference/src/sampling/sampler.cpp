// Sampling: repetition penalty, then top-k, top-p, min-p and temperature, as llama.cpp orders them.
#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <random>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ember/ember.h"
#include "sampling/argmax.h"

namespace ember {

namespace {

using Cand = std::pair<float, int32_t>;

// Whether a ranks before b: the larger logit, then the lower id.
bool ranks_before(const Cand& a, const Cand& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// Index of the first element of [i, n) above t, or n: 8 at a time where SSE2 allows, since
// once k candidates are held almost every logit falls below the weakest of them.
int next_above(const float* l, int i, int n, float t) {
#if defined(__SSE2__)
    const __m128 tv = _mm_set1_ps(t);
    for (; i + 8 <= n; i += 8) {
        const __m128 a = _mm_cmpgt_ps(_mm_loadu_ps(l + i), tv);
        const __m128 b = _mm_cmpgt_ps(_mm_loadu_ps(l + i + 4), tv);
        if (_mm_movemask_ps(_mm_or_ps(a, b))) break;
    }
#endif
    for (; i < n; ++i)
        if (l[i] > t) return i;
    return n;
}

// The k (1 <= k <= n) largest of l[0, n) into out, best first (as ranks_before orders them), in one
// pass over the logits: a heap of the k best so far, whose weakest sets the bar for the rest. (A
// partial sort of all n candidates wrote and compared every one of them: 32,000 pairs a token.)
void select_top_k(const float* l, int n, int k, std::vector<Cand>& out) {
    out.clear();
    for (int i = 0; i < k; ++i) out.emplace_back(l[i], int32_t(i));
    std::make_heap(out.begin(), out.end(), ranks_before);  // front: the weakest held
    // Strictly above the weakest: an equal logit has a higher id, so it ranks after.
    for (int i = next_above(l, k, n, out.front().first); i < n;
         i = next_above(l, i + 1, n, out.front().first)) {
        std::pop_heap(out.begin(), out.end(), ranks_before);
        out.back() = {l[i], int32_t(i)};
        std::push_heap(out.begin(), out.end(), ranks_before);
    }
    std::sort_heap(out.begin(), out.end(), ranks_before);
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
    const float* l = logits.data();
    const int n = int(logits.size());
    int best = 0;
    for (int i = n > 0 ? next_above(l, 1, n, l[0]) : 0; i < n; i = next_above(l, i + 1, n, l[best]))
        best = i;
    return int32_t(best);
}

struct Sampler::Impl {
    SamplingParams p;
    int n_vocab;
    std::mt19937_64 rng;
    std::deque<int32_t> recent;                   // the last repeat_last_n accepted tokens
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

bool Sampler::is_greedy() const {
    return m_impl->p.temperature <= 0.0f;
}

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
    if (n <= 0) return 0;  // nothing to draw from (a caller's bug); as max_element answered

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

    // Greedy: the first largest logit.
    if (p.temperature <= 0.0f) return argmax({logits, size_t(n)});

    // Candidates sorted by logit, cut by top-k.
    const int k = (p.top_k > 0 && p.top_k < n) ? p.top_k : n;
    if (k < n) {
        select_top_k(logits, n, k, s.cand);
    } else {
        s.cand.clear();
        for (int i = 0; i < n; i++) s.cand.emplace_back(logits[i], int32_t(i));
        std::sort(s.cand.begin(), s.cand.end(), ranks_before);
    }

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

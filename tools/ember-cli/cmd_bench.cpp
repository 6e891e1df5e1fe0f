// bench: prompt processing and generation speed, measured the way llama-bench does.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "args.h"
#include "common.h"
#include "cpu/threadpool.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/bench/bandwidth.h"
#endif

namespace ember::cli {
namespace {

using Clock = std::chrono::steady_clock;
double secs_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

struct MeanSd {
    double mean = 0, sd = 0;
};
MeanSd mean_sd(const std::vector<double>& v) {
    MeanSd r;
    if (v.empty()) return r;
    r.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    if (v.size() > 1) {
        double ss = 0;
        for (double x : v) ss += (x - r.mean) * (x - r.mean);
        r.sd = std::sqrt(ss / double(v.size() - 1));
    }
    return r;
}

// Read bandwidth of this machine with the given threads: sums a 1 GiB buffer, best of 5.
double measure_read_bandwidth(int threads) {
    const size_t n = (size_t(1) << 30) / sizeof(uint64_t);
    std::vector<uint64_t> buf(n);
    for (size_t i = 0; i < n; i++) buf[i] = i;
    cpu::ThreadPool pool(threads);
    std::vector<uint64_t> sums(size_t(pool.size()) * 8);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        const auto t0 = Clock::now();
        const int tasks = pool.size() * 4;
        pool.parallel_for(tasks, [&](int task, int thread) {
            const size_t b = n * size_t(task) / size_t(tasks), e = n * size_t(task + 1) / size_t(tasks);
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            size_t i = b;
            for (; i + 4 <= e; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
            for (; i < e; i++) s0 += buf[i];
            sums[size_t(thread) * 8] += s0 + s1 + s2 + s3;
        });
        best = std::max(best, double(n * sizeof(uint64_t)) / secs_since(t0) / 1e9);
    }
    volatile uint64_t sink = std::accumulate(sums.begin(), sums.end(), uint64_t(0));
    (void)sink;
    return best;
}

// The GPU's read bandwidth for single dispatches of 2 MiB to 256 MiB, each followed by a
// barrier, as a decode step issues them; the largest size's rate is the roofline.
Result<std::pair<nlohmann::json, double>> measure_gpu_read_bandwidth(const std::string& device) {
#ifdef EMBER_HAVE_VULKAN
    vulkan::ContextOptions o;
    o.device = device;
    EMBER_ASSIGN_OR_RETURN(auto ctx, vulkan::Context::create(o));
    const std::vector<uint64_t> sizes = {2u << 20, 8u << 20, 32u << 20, 64u << 20, 256u << 20};
    // Random contents are what weights look like; a zeroed buffer is read too, because a GPU
    // that compresses memory reads zeros faster, and the difference says whether it does.
    EMBER_ASSIGN_OR_RETURN(auto points, vulkan::measure_read_bandwidth(*ctx, sizes, 20));
    EMBER_ASSIGN_OR_RETURN(
        auto zeros,
        vulkan::measure_read_bandwidth(*ctx, sizes, 20, uint64_t(1) << 30, vulkan::FillKind::Zero));
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < points.size(); ++i)
        rows.push_back({{"bytes", points[i].bytes},
                        {"us_per_dispatch", points[i].us_per_dispatch},
                        {"gb_s", points[i].gb_s},
                        {"zeroed_us_per_dispatch", zeros[i].us_per_dispatch},
                        {"zeroed_gb_s", zeros[i].gb_s}});
    return std::pair{rows, points.empty() ? 0.0 : points.back().gb_s};
#else
    return make_error("bench.no_vulkan", "this build has no Vulkan backend (device '" + device + "')");
#endif
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    std::set<std::string> valued = {"--n-prompt", "--n-gen", "--reps", "--depth"};
    valued.insert(kLoadOptions.begin(), kLoadOptions.end());
    Args a({"--json", "--membw", "--host-argmax", "--verbose"}, valued,
           {{"-m", "--model"},
            {"-v", "--verbose"},
            {"-p", "--n-prompt"},
            {"-n", "--n-gen"},
            {"-r", "--reps"},
            {"-t", "--threads"},
            {"-d", "--depth"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    if (a.has("--verbose")) set_log_level(LogLevel::Info);  // the load's phases, timed
    auto pp = a.get_int("--n-prompt", 512, 0, 1 << 20);
    auto tg = a.get_int("--n-gen", 128, 0, 1 << 20);
    auto reps = a.get_int("--reps", 3, 1, 1000);
    // Like llama-bench's -d: pp and tg run after this many context tokens (not timed).
    auto depth = a.get_int("--depth", 0, 0, 1 << 20);
    for (auto* r : {&pp, &tg, &reps, &depth}) if (!*r) return fail(r->error());
    const bool host_argmax = a.has("--host-argmax");
    // pp and tg each run after the depth's tokens: the session holds depth + the longer run.
    const int n_ctx = int(*depth + std::max(*pp, *tg));

    auto params = load_params(a);
    if (!params) return fail(params.error());
    params->n_ctx = std::max<int>(params->n_ctx, n_ctx);
    auto path = a.require("--model");
    if (!path) return fail(path.error());
    // Said in bench's terms before the load refuses the context: which options add up to it.
    if (auto info = inspect(*path); info && info->n_ctx_max && n_ctx > int64_t(info->n_ctx_max))
        return fail("bench: -d " + std::to_string(*depth) + " tokens of context, then -p " +
                    std::to_string(*pp) + " or -n " + std::to_string(*tg) +
                    " tokens, need a context of " + std::to_string(n_ctx) + " tokens, but " +
                    *path + " runs at most " + std::to_string(info->n_ctx_max) +
                    " tokens of context; lower -d, -p or -n so that -d plus the larger of -p "
                    "and -n is at most " +
                    std::to_string(info->n_ctx_max));
    auto model = Model::load(*path, *params);
    if (!model) return fail(model.error());
    Model& m = **model;
    auto session = Session::create(m, {n_ctx});
    if (!session) return fail(session.error());
    Session& s = **session;

    // Random tokens, as llama-bench uses.
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> dist(0, m.n_vocab() - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(*pp));
    for (auto& t : prompt) t = dist(rng);
    std::vector<int32_t> context(static_cast<size_t>(*depth));
    for (auto& t : context) t = dist(rng);
    auto start = [&]() -> Status {
        s.reset();
        if (context.empty()) return Status{};
        auto r = s.eval(context);
        if (!r) return r.error();
        return Status{};
    };

    std::vector<double> pp_rates, tg_rates;
    std::vector<float> last_logits;  // of the last tg step, for the sampler's cost
    // One untimed run of each warms caches, pipelines and clocks.
    for (int rep = -1; rep < *reps; rep++) {
        if (*pp > 0) {
            if (auto st = start(); !st) return fail(st.error());
            const auto t0 = Clock::now();
            auto r = s.eval(prompt);
            if (!r) return fail(r.error());
            const double dt = secs_since(t0);
            if (rep >= 0) pp_rates.push_back(double(*pp) / dt);
        }
        if (*tg > 0) {
            if (auto st = start(); !st) return fail(st.error());
            int32_t tok = dist(rng);
            std::span<const float> last;
            const auto t0 = Clock::now();
            for (int i = 0; i < *tg; i++) {
                const int32_t one[1] = {tok};
                auto r = s.eval(one);  // the logits reach the host, as llama.cpp copies them
                if (!r) return fail(r.error());
                // llama-bench draws the next token at random; --host-argmax takes the argmax
                // of the logits instead, a host pass over the vocabulary that the tokens/s
                // then include (what earlier builds measured by default).
                tok = host_argmax ? int32_t(std::max_element(r->begin(), r->end()) - r->begin())
                                  : dist(rng);
                last = *r;
            }
            const double dt = secs_since(t0);
            if (rep + 1 == *reps)
                last_logits.assign(last.begin(), last.end());  // until the next eval
            if (rep >= 0) tg_rates.push_back(double(*tg) / dt);
        }
    }
    const MeanSd ppm = mean_sd(pp_rates), tgm = mean_sd(tg_rates);
    // What the chat's default sampling (top-k 40, top-p, min-p, temperature) adds to a token
    // on this host, over the last step's logits; tg_tok_s leaves it out, as llama-bench does.
    double sample_us = 0;
    if (!last_logits.empty()) {
        Sampler sampler(SamplingParams{}, m.n_vocab());
        constexpr int kDraws = 200;
        const auto t0 = Clock::now();
        for (int i = 0; i < kDraws; i++) sampler.accept(sampler.sample(last_logits));
        sample_us = secs_since(t0) * 1e6 / kDraws;
    }
    const uint64_t wbytes = m.info().weight_bytes;

    nlohmann::json j;
    j["model"] = m.info().path;
    j["model_name"] = m.info().name;
    j["quantization"] = m.info().quantization;
    j["n_params"] = m.info().n_params;
    j["n_prompt"] = *pp;
    j["n_gen"] = *tg;
    j["tg_next_token"] = host_argmax ? "host_argmax" : "random";
    j["sample_us"] = sample_us;
    j["n_depth"] = *depth;
    j["reps"] = *reps;
    j["pp_tok_s"] = ppm.mean;
    j["pp_sd"] = ppm.sd;
    j["tg_tok_s"] = tgm.mean;
    j["tg_sd"] = tgm.sd;
    j["tg_ms_per_token"] = tgm.mean > 0 ? 1000.0 / tgm.mean : 0.0;
    j["weight_bytes"] = wbytes;
    j["tg_gb_s"] = tgm.mean * double(wbytes) / 1e9;
    add_backend_json(j, m);
    const BackendInfo& b = m.backend();
    j["features"] = {{"coopmat", b.coopmat}, {"subgroup_size", b.subgroup_size},
                     {"fused_kernels", b.fused_kernels}};
    if (a.has("--membw")) {
        double bw = 0;
        if (b.kind == BackendKind::Vulkan) {
            auto gpu = measure_gpu_read_bandwidth(b.device);
            if (!gpu) return fail(gpu.error());
            j["gpu_read"] = gpu->first;
            bw = gpu->second;
        } else {
            bw = measure_read_bandwidth(b.n_threads > 0 ? b.n_threads : cpu::physical_cores());
        }
        j["read_gb_s"] = bw;
        j["tg_roofline_tok_s"] = bw * 1e9 / double(wbytes);
        j["tg_pct_of_roofline"] = tgm.mean > 0 ? 100.0 * tgm.mean / (bw * 1e9 / double(wbytes)) : 0.0;
    }
    if (a.has("--json")) {
        std::printf("%s\n", safe_dump(j, 1).c_str());
    } else {
        std::printf("model: %s (%s, %.2f GiB of weights) on %s (%s)\n", m.info().path.c_str(),
                    m.info().quantization.c_str(), wbytes / 1073741824.0, backend_name(b.kind),
                    b.device.c_str());
        // Partial offload: where the layers ran (the JSON's "split").
        if (!b.split.empty()) std::printf("split: %s\n", b.split.c_str());
        char at[32] = "";
        if (*depth > 0) std::snprintf(at, sizeof at, " @ d%lld", *depth);
        if (*pp > 0)
            std::printf("pp%lld%s: %10.1f ± %.1f tok/s\n", *pp, at, ppm.mean, ppm.sd);
        if (*tg > 0)
            std::printf("tg%lld%s: %10.1f ± %.1f tok/s (%.2f ms/token, %.1f GB/s of weights)\n",
                        *tg, at, tgm.mean, tgm.sd, 1000.0 / tgm.mean,
                        tgm.mean * wbytes / 1e9);
        if (sample_us > 0)
            std::printf("sampling with the chat's defaults: %.1f us a token (not in tg)\n",
                        sample_us);
        if (j.contains("read_gb_s"))
            std::printf("read bandwidth %.1f GB/s: roofline %.1f tok/s, reached %.0f%%\n",
                        j["read_gb_s"].get<double>(), j["tg_roofline_tok_s"].get<double>(),
                        j["tg_pct_of_roofline"].get<double>());
    }
    return 0;
}

}  // namespace ember::cli

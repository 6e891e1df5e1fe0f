// bench: prompt processing and generation speed, measured the way llama-bench does.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "args.h"
#include "common.h"
#include "common/overrides.h"
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
            const size_t b = n * size_t(task) / size_t(tasks),
                         e = n * size_t(task + 1) / size_t(tasks);
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            size_t i = b;
            for (; i + 4 <= e; i += 4)
                s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
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
    return make_error("bench.no_vulkan",
                      "this build has no Vulkan backend (device '" + device + "')");
#endif
}

// What to run: the token counts of -p, -n, -d and the repetitions.
struct BenchPlan {
    long long pp = 0, tg = 0, reps = 0, depth = 0;
    bool host_argmax = false;
    int n_ctx = 0;  // pp and tg each run after the depth's tokens: depth + the longer run
};

Result<BenchPlan> read_plan(const Args& a) {
    auto pp = a.get_int("--n-prompt", 512, 0, 1 << 20);
    auto tg = a.get_int("--n-gen", 128, 0, 1 << 20);
    auto reps = a.get_int("--reps", 3, 1, 1000);
    // Like llama-bench's -d: pp and tg run after this many context tokens (not timed).
    auto depth = a.get_int("--depth", 0, 0, 1 << 20);
    for (auto* r : {&pp, &tg, &reps, &depth})
        if (!*r) return r->error();
    BenchPlan p;
    p.pp = *pp, p.tg = *tg, p.reps = *reps, p.depth = *depth;
    p.host_argmax = a.has("--host-argmax");
    p.n_ctx = int(p.depth + std::max(p.pp, p.tg));
    return p;
}

// Said in bench's terms before the load refuses the context: which options add up to it.
// Empty when the model's context holds the plan's.
std::string context_too_long(const std::string& path, const BenchPlan& p) {
    auto info = inspect(path);
    if (!info || !info->n_ctx_max || p.n_ctx <= int64_t(info->n_ctx_max)) return {};
    return "bench: -d " + std::to_string(p.depth) + " tokens of context, then -p " +
           std::to_string(p.pp) + " or -n " + std::to_string(p.tg) + " tokens, need a context of " +
           std::to_string(p.n_ctx) + " tokens, but " + path + " runs at most " +
           std::to_string(info->n_ctx_max) +
           " tokens of context; lower -d, -p or -n so that -d plus the larger of -p "
           "and -n is at most " +
           std::to_string(info->n_ctx_max);
}

struct Rates {
    std::vector<double> pp, tg;      // tokens/s of each timed repetition
    std::vector<float> last_logits;  // of the last tg step, for the sampler's cost
};

// Runs pp and tg reps times each, after one untimed run of each that warms caches,
// pipelines and clocks; each run starts from a reset session that has evaluated the
// depth's tokens. A GPU profile (EMBER_VULKAN_PROFILE) counts the timed runs only.
Result<Rates> run_reps(Session& s, const BenchPlan& p, int n_vocab) {
    // Random tokens, as llama-bench uses.
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> dist(0, n_vocab - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(p.pp));
    for (auto& t : prompt) t = dist(rng);
    std::vector<int32_t> context(static_cast<size_t>(p.depth));
    for (auto& t : context) t = dist(rng);
    auto start = [&]() -> Status {
        s.set_profiling(false);
        s.reset();
        if (context.empty()) return Status{};
        auto r = s.eval(context);
        if (!r) return r.error();
        return Status{};
    };

    Rates out;
    for (long long rep = -1; rep < p.reps; rep++) {  // -1: the warm-up
        if (p.pp > 0) {
            if (auto st = start(); !st) return st.error();
            s.set_profiling(rep >= 0);
            const auto t0 = Clock::now();
            auto r = s.eval(prompt);
            if (!r) return r.error();
            const double dt = secs_since(t0);
            if (rep >= 0) out.pp.push_back(double(p.pp) / dt);
        }
        if (p.tg > 0) {
            if (auto st = start(); !st) return st.error();
            int32_t tok = dist(rng);
            std::span<const float> last;
            s.set_profiling(rep >= 0);
            const auto t0 = Clock::now();
            for (long long i = 0; i < p.tg; i++) {
                const int32_t one[1] = {tok};
                auto r = s.eval(one);  // the logits reach the host, as llama.cpp copies them
                if (!r) return r.error();
                // llama-bench draws the next token at random; --host-argmax takes the argmax
                // of the logits instead, a host pass over the vocabulary that the tokens/s
                // then include (what earlier builds measured by default).
                tok = p.host_argmax ? int32_t(std::max_element(r->begin(), r->end()) - r->begin())
                                    : dist(rng);
                last = *r;
            }
            const double dt = secs_since(t0);
            if (rep + 1 == p.reps)
                out.last_logits.assign(last.begin(), last.end());  // until the next eval
            if (rep >= 0) out.tg.push_back(double(p.tg) / dt);
        }
    }
    return out;
}

// What the chat's default sampling (top-k 40, top-p, min-p, temperature) adds to a token
// on this host, over the last step's logits; tg_tok_s leaves it out, as llama-bench does.
double sampling_us(const std::vector<float>& last_logits, int n_vocab) {
    if (last_logits.empty()) return 0;
    Sampler sampler(SamplingParams{}, n_vocab);
    constexpr int kDraws = 200;
    const auto t0 = Clock::now();
    for (int i = 0; i < kDraws; i++) sampler.accept(sampler.sample(last_logits));
    return secs_since(t0) * 1e6 / kDraws;
}

nlohmann::json results_json(const Model& m, const BenchPlan& p, const MeanSd& ppm,
                            const MeanSd& tgm, double sample_us) {
    const uint64_t wbytes = m.info().weight_bytes;
    nlohmann::json j;
    j["model"] = m.info().path;
    j["model_name"] = m.info().name;
    j["quantization"] = m.info().quantization;
    j["n_params"] = m.info().n_params;
    j["n_prompt"] = p.pp;
    j["n_gen"] = p.tg;
    j["tg_next_token"] = p.host_argmax ? "host_argmax" : "random";
    j["sample_us"] = sample_us;
    j["n_depth"] = p.depth;
    j["reps"] = p.reps;
    j["pp_tok_s"] = ppm.mean;
    j["pp_sd"] = ppm.sd;
    j["tg_tok_s"] = tgm.mean;
    j["tg_sd"] = tgm.sd;
    j["tg_ms_per_token"] = tgm.mean > 0 ? 1000.0 / tgm.mean : 0.0;
    j["weight_bytes"] = wbytes;
    j["tg_gb_s"] = tgm.mean * double(wbytes) / 1e9;
    add_backend_json(j, m);
    const BackendInfo& b = m.backend();
    j["features"] = {{"coopmat", b.coopmat},
                     {"subgroup_size", b.subgroup_size},
                     {"fused_kernels", b.fused_kernels}};
    return j;
}

// --membw: the read bandwidth of the device that ran the model, and tg against its roofline.
Status add_roofline(nlohmann::json& j, const BackendInfo& b, uint64_t wbytes, double tg_tok_s) {
    double bw = 0;
    if (b.kind == BackendKind::Vulkan) {
        EMBER_ASSIGN_OR_RETURN(auto gpu, measure_gpu_read_bandwidth(b.device));
        j["gpu_read"] = gpu.first;
        bw = gpu.second;
    } else {
        bw = measure_read_bandwidth(b.n_threads > 0 ? b.n_threads : cpu::physical_cores());
    }
    j["read_gb_s"] = bw;
    j["tg_roofline_tok_s"] = bw * 1e9 / double(wbytes);
    j["tg_pct_of_roofline"] = tg_tok_s > 0 ? 100.0 * tg_tok_s / (bw * 1e9 / double(wbytes)) : 0.0;
    return Status{};
}

void print_text(const nlohmann::json& j, const Model& m, const BenchPlan& p, const MeanSd& ppm,
                const MeanSd& tgm, double sample_us) {
    const uint64_t wbytes = m.info().weight_bytes;
    const BackendInfo& b = m.backend();
    std::printf("model: %s (%s, %.2f GiB of weights) on %s (%s)\n", m.info().path.c_str(),
                m.info().quantization.c_str(), wbytes / 1073741824.0, backend_name(b.kind),
                b.device.c_str());
    // Partial offload: where the layers ran (the JSON's "split").
    if (!b.split.empty()) std::printf("split: %s\n", b.split.c_str());
    char at[32] = "";
    if (p.depth > 0) std::snprintf(at, sizeof at, " @ d%lld", p.depth);
    if (p.pp > 0) std::printf("pp%lld%s: %10.1f ± %.1f tok/s\n", p.pp, at, ppm.mean, ppm.sd);
    if (p.tg > 0)
        std::printf("tg%lld%s: %10.1f ± %.1f tok/s (%.2f ms/token, %.1f GB/s of weights)\n", p.tg,
                    at, tgm.mean, tgm.sd, 1000.0 / tgm.mean, tgm.mean * wbytes / 1e9);
    if (sample_us > 0)
        std::printf("sampling with the chat's defaults: %.1f us a token (not in tg)\n", sample_us);
    if (j.contains("read_gb_s"))
        std::printf("read bandwidth %.1f GB/s: roofline %.1f tok/s, reached %.0f%%\n",
                    j["read_gb_s"].get<double>(), j["tg_roofline_tok_s"].get<double>(),
                    j["tg_pct_of_roofline"].get<double>());
}

// EMBER_VULKAN_PROFILE: the runner prints its profile to stderr when the session goes; this
// says first what the profile covers.
void print_profile_scope(const BackendInfo& b, const BenchPlan& p) {
    if (b.kind != BackendKind::Vulkan || read_overrides().profile == Overrides::Profile::Off)
        return;
    std::fprintf(stderr,
                 "bench: the GPU profile below covers the timed runs only (%lld x pp%lld, %lld x "
                 "tg%lld), not the warm-up run of each nor the %lld tokens of -d context\n",
                 p.pp > 0 ? p.reps : 0, p.pp, p.tg > 0 ? p.reps : 0, p.tg, p.depth);
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
    auto plan = read_plan(a);
    if (!plan) return fail(plan.error());
    const BenchPlan& p = *plan;

    // Load the model with a context that holds the plan.
    auto params = load_params(a);
    if (!params) return fail(params.error());
    params->n_ctx = std::max<int>(params->n_ctx, p.n_ctx);
    auto path = a.require("--model");
    if (!path) return fail(path.error());
    if (auto msg = context_too_long(*path, p); !msg.empty()) return fail(msg);
    auto model = Model::load(*path, *params);
    if (!model) return fail(model.error());
    Model& m = **model;
    auto session = Session::create(m, {p.n_ctx});
    if (!session) return fail(session.error());

    // Time the runs, then the sampler.
    auto rates = run_reps(**session, p, m.n_vocab());
    if (!rates) return fail(rates.error());
    const MeanSd ppm = mean_sd(rates->pp), tgm = mean_sd(rates->tg);
    const double sample_us = sampling_us(rates->last_logits, m.n_vocab());

    // Report.
    nlohmann::json j = results_json(m, p, ppm, tgm, sample_us);
    if (a.has("--membw"))
        if (auto st = add_roofline(j, m.backend(), m.info().weight_bytes, tgm.mean); !st)
            return fail(st.error());
    if (a.has("--json"))
        std::printf("%s\n", safe_dump(j, 1).c_str());
    else
        print_text(j, m, p, ppm, tgm, sample_us);
    std::fflush(stdout);
    print_profile_scope(m.backend(), p);
    return 0;
}

}  // namespace ember::cli

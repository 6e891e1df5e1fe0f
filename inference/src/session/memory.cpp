// Host memory estimates for the CPU backend (see memory.h).
#include "session/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>
#include <unordered_set>

#include "common/log.h"
#include "cpu/matmul.h"

namespace ember {
namespace {

uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

void lower(HostMemory& m, uint64_t bytes, std::string source) {
    if (bytes < m.available) m.available = bytes, m.source = std::move(source);
}

// A cgroup v2 limit on this process (containers, systemd slices): memory.max less memory.current.
void cgroup_limit(HostMemory& m) {
    std::ifstream cg("/proc/self/cgroup");
    std::string line;
    while (std::getline(cg, line)) {
        if (line.rfind("0::", 0) != 0) continue;
        const std::string dir = "/sys/fs/cgroup" + line.substr(3);
        std::ifstream max_f(dir + "/memory.max"), cur_f(dir + "/memory.current");
        uint64_t max = 0, cur = 0;
        if (max_f >> max && cur_f >> cur)  // "max" (no limit) fails to parse as a number
            lower(m, max > cur ? max - cur : 0, "the cgroup's memory.max");
    }
}

}  // namespace

HostMemory host_memory() {
    HostMemory m;
    std::ifstream mi("/proc/meminfo");
    std::string key, unit;
    uint64_t kb = 0, avail = 0, swap = 0;
    bool found = false;
    while (mi >> key >> kb >> unit) {
        if (key == "MemAvailable:") avail = kb * 1024, found = true;
        if (key == "SwapFree:") swap = kb * 1024;
    }
    if (found) lower(m, avail + swap, swap ? "MemAvailable + SwapFree" : "MemAvailable");
    cgroup_limit(m);
    struct rlimit rl;
    if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        std::ifstream statm("/proc/self/statm");
        uint64_t pages = 0;
        statm >> pages;
        const uint64_t used = pages * uint64_t(::sysconf(_SC_PAGESIZE));
        lower(m, rl.rlim_cur > used ? rl.rlim_cur - used : 0,
              "RLIMIT_AS less the address space in use");
    }
    return m;
}

uint64_t CpuMemoryNeed::total() const {
    return sat_add(sat_add(repacked, kv_cache), buffers);
}

CpuMemoryNeed cpu_memory_need(const gguf::File& file, const LlamaModel& m, int n_ctx, int n_threads,
                              bool with_weights) {
    CpuMemoryNeed need = cpu_runtime_need(m.hp, n_ctx, n_threads);
    if (with_weights) {
        // The backend repacks matrices for its kernels, once per distinct range of the file
        // (identical aliases share a copy); the embedding table is read as it lies.
        std::unordered_set<uint64_t> seen;
        for (const gguf::TensorInfo& t : file.tensors()) {
            if (t.n_dims < 2 || t.name == "token_embd.weight") continue;
            if (!seen.insert(t.offset).second) continue;
            const uint64_t rows = t.ne[1] * t.ne[2] * t.ne[3];
            cpu::WeightView v{t.type, int64_t(rows), int64_t(t.ne[0]), nullptr, t.n_bytes / rows};
            if (cpu::should_pack(v)) need.repacked = sat_add(need.repacked, t.n_bytes);
        }
    }
    return need;
}

CpuMemoryNeed cpu_runtime_need(const LlamaHParams& hp, int n_ctx, int n_threads) {
    CpuMemoryNeed need;
    // KV cache, F32: [n_layer][n_ctx][n_kv_dim] for keys and [n_layer][n_ctx][n_v_dim] for
    // values (value heads may differ from key heads: attention.value_length).
    need.kv_cache = sat_mul(
        sat_mul(sat_mul(hp.n_layer, uint64_t(n_ctx)), uint64_t(hp.n_kv_dim()) + hp.n_v_dim()),
        sizeof(float));
    // Activations of a prefill batch (up to 256 tokens), attention scores and the logits.
    const uint64_t batch = uint64_t(std::clamp(n_ctx, 1, 256));
    const uint64_t qd = uint64_t(hp.n_q_dim()) + hp.n_att_dim();  // q, attention output
    const uint64_t per_token = sat_add(sat_add(3 * uint64_t(hp.n_embd), qd),
                                       sat_add(uint64_t(hp.n_kv_dim()) + hp.n_v_dim(),
                                               2 * uint64_t(std::max(hp.n_ff, hp.n_embd))));
    const uint64_t threads =
        uint64_t(n_threads > 0 ? n_threads : std::max(1u, std::thread::hardware_concurrency()));
    need.buffers =
        sat_mul(sat_add(sat_add(sat_mul(batch, per_token), sat_mul(threads, n_ctx)), hp.n_vocab),
                sizeof(float));
    return need;
}

Status check_host_memory(const CpuMemoryNeed& need, int n_ctx, const std::string& path,
                         const std::string& what) {
    const HostMemory host = host_memory();
    const uint64_t total = need.total();
    if (total <= host.available) return {};
    std::string msg = path + ": " + what + " on the CPU needs " + format_bytes(total) + " (";
    if (need.repacked) msg += "repacked weights " + format_bytes(need.repacked) + ", ";
    msg += "KV cache for " + std::to_string(n_ctx) + " tokens " + format_bytes(need.kv_cache) +
           ", buffers " + format_bytes(need.buffers) + ") but only " +
           format_bytes(host.available) + " is available (" + host.source + ")";
    if (need.kv_cache > need.repacked && n_ctx > 1) msg += "; a smaller context needs less";
    return make_error("model.too_large", std::move(msg));
}

}  // namespace ember

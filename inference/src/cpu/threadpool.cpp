#include "cpu/threadpool.h"

#include <sched.h>

#include <atomic>
#include <cassert>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_PAUSE() _mm_pause()
#else
#define EMBER_PAUSE() std::this_thread::yield()
#endif

namespace ember::cpu {
namespace {
// Spin iterations before sleeping (a pause is 10-140 cycles depending on the CPU): long
// enough to bridge the gap between the matmuls of one token, short enough not to burn a
// core while the app is idle or when the pool is larger than the cores it gets.
constexpr int kSpinIters = 2000;
}  // namespace

struct ThreadPool::Impl {
    int n_threads = 1;
    std::vector<std::thread> workers;

    std::mutex mu;
    std::condition_variable cv_work, cv_done;
    std::atomic<uint64_t> generation{0};
    std::atomic<int> sleepers{0};
    std::atomic<bool> caller_sleeping{false};
    std::atomic<bool> stop{false};

    // The job of the current generation; written by the caller before it bumps generation.
    const std::function<void(int, int)>* fn = nullptr;
    int n_tasks = 0;
    std::atomic<int> next_task{0};
    std::atomic<int> finished{0};

    void run_tasks(int thread) {
        for (;;) {
            int t = next_task.fetch_add(1, std::memory_order_relaxed);
            if (t >= n_tasks) break;
            (*fn)(t, thread);
        }
    }

    void worker_main(int thread) {
        uint64_t seen = 0;
        for (;;) {
            uint64_t g;
            int spins = 0;
            while ((g = generation.load(std::memory_order_acquire)) == seen) {
                if (++spins < kSpinIters) {
                    EMBER_PAUSE();
                    continue;
                }
                std::unique_lock lk(mu);
                sleepers.fetch_add(1);
                cv_work.wait(lk, [&] { return generation.load() != seen; });
                sleepers.fetch_sub(1);
            }
            seen = g;
            if (stop.load(std::memory_order_acquire)) return;
            run_tasks(thread);
            if (finished.fetch_add(1) + 1 ==
                    n_threads - 1 &&  // seq_cst: pairs with caller_sleeping
                caller_sleeping.load()) {
                std::lock_guard lk(mu);
                cv_done.notify_one();
            }
        }
    }

    void wake_workers() {
        generation.fetch_add(1);  // seq_cst: pairs with the sleepers check in worker_main
        if (sleepers.load() > 0) {
            std::lock_guard lk(mu);
            cv_work.notify_all();
        }
    }
};

ThreadPool::ThreadPool(int n_threads) : m_impl(std::make_unique<Impl>()) {
    m_impl->n_threads = n_threads < 1 ? 1 : n_threads;
    m_impl->workers.reserve(m_impl->n_threads - 1);
    for (int i = 1; i < m_impl->n_threads; ++i)
        m_impl->workers.emplace_back([impl = m_impl.get(), i] { impl->worker_main(i); });
}

ThreadPool::~ThreadPool() {
    m_impl->stop.store(true, std::memory_order_release);
    m_impl->wake_workers();
    for (auto& t : m_impl->workers) t.join();
}

int ThreadPool::size() const {
    return m_impl->n_threads;
}

void ThreadPool::parallel_for(int n_tasks, const std::function<void(int, int)>& fn) {
    Impl& p = *m_impl;
    if (n_tasks <= 0) return;
    if (p.n_threads == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; ++i) fn(i, 0);
        return;
    }
    p.fn = &fn;
    p.n_tasks = n_tasks;
    p.next_task.store(0, std::memory_order_relaxed);
    p.finished.store(0, std::memory_order_relaxed);
    p.wake_workers();
    p.run_tasks(0);

    // Every worker must have left run_tasks before fn (the caller's) goes out of scope.
    const int n_workers = p.n_threads - 1;
    for (int spins = 0; p.finished.load(std::memory_order_acquire) < n_workers; ++spins) {
        if (spins < kSpinIters) {
            EMBER_PAUSE();
            continue;
        }
        std::unique_lock lk(p.mu);
        p.caller_sleeping.store(true);
        p.cv_done.wait(lk, [&] { return p.finished.load() >= n_workers; });
        p.caller_sleeping.store(false);
        break;
    }
    p.fn = nullptr;
}

int physical_cores() {
    // Unique (package, core) pairs of the CPUs this process may run on.
    cpu_set_t set;
    CPU_ZERO(&set);
    int allowed = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = CPU_COUNT(&set);

    std::set<std::pair<int, int>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (allowed > 0 && !CPU_ISSET(cpu, &set)) continue;
        std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        std::ifstream core_f(base + "core_id"), pkg_f(base + "physical_package_id");
        int core = -1, pkg = -1;
        if (!(core_f >> core)) {
            if (allowed > 0) continue;
            break;
        }
        pkg_f >> pkg;
        cores.insert({pkg, core});
    }
    int n = int(cores.size());
    if (n == 0) {
        // No sysfs: /proc/cpuinfo's physical id / core id pairs.
        std::ifstream info("/proc/cpuinfo");
        std::string line;
        int pkg = 0;
        while (std::getline(info, line)) {
            auto value = [&] { return std::stoi(line.substr(line.find(':') + 1)); };
            if (line.rfind("physical id", 0) == 0) pkg = value();
            if (line.rfind("core id", 0) == 0) cores.insert({pkg, value()});
        }
        n = int(cores.size());
    }
    if (n == 0) n = int(std::thread::hardware_concurrency());
    if (allowed > 0 && n > allowed) n = allowed;
    return n < 1 ? 1 : n;
}

}  // namespace ember::cpu

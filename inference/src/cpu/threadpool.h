// A persistent worker pool: the engine's only threads.
#pragma once

#include <functional>
#include <memory>

namespace ember::cpu {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // n_threads includes the caller
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const;
    // Runs fn(i, thread_index) for i in [0, n_tasks) on all threads, the caller included;
    // returns when every task is done. Allocates nothing per call.
    void parallel_for(int n_tasks, const std::function<void(int task, int thread)>& fn);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// Number of physical cores (not hyper-threads), at least 1.
int physical_cores();

}  // namespace ember::cpu
